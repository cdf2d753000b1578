r"""Pre-training objectives at equal compute, scored by fine-tuning (paper Table 5 / Figure 4 analog).

    python benchmarks/efficiency.py --budget smoke --output_dir /tmp/efficiency_smoke
    python benchmarks/efficiency.py --budget full --output_dir runs/efficiency \
        --corpus '../shared/data/corpus/*.txt.gz' --vocab ../shared/data/vocab/bert_uncased_vocab.txt \
        --tasks ../shared/data/tasks/movie_polarity,../shared/data/tasks/trec6,../shared/data/tasks/sms_spam \
        --seeds 3 --fractions 0.25,0.5,1.0

What it does, top to bottom (`main`):

1. Records: the embedded demo corpus (`--corpus demo`) or packed TFRecords
   built once from `--corpus` with `--vocab` into `output_dir/data`.
2. Pre-training: one discriminator-sized encoder (the `tiny` preset with the
   budget's `model` overrides) per objective, all for the same analytic
   training FLOPs (`electra_tf.training.flops`): the budget is
   `electra_steps` steps of "electra", and
   `steps(objective) = round(budget / (train_flops_per_sequence(objective) x batch))`.
   Warmup is `warmup_fraction` of each run's own steps.
3. Budget fractions (Figure 4 analog) for `--curve_objectives`: ONE run per
   objective with its full LR schedule, checkpointed at the fraction steps;
   the discriminator of each checkpoint is exported afterwards. (Stopping and
   resuming with a larger `train_steps` would not do: the warmup/decay
   schedule follows `train_steps`, so each stage would decay to 0.)
4. A no-pre-training baseline: the same encoder, randomly initialised.
5. Fine-tuning: every encoder x every task x every seed
   (`electra_tf.training.finetuning.run_finetuning`, one trial per seed).
6. Report: `results.json` (every run), `results.md` (objective x task table
   beside the paper's Table 5, curve table, command, date, versions) and
   `efficiency.png` (average dev score vs pre-training FLOPs).

Resumable: each finished unit (records, pre-training run, exported encoder,
fine-tuning run) leaves a file that a re-run finds and skips; an interrupted
pre-training run resumes from its latest checkpoint. Numbers from `--budget
smoke` only prove the plumbing; they say nothing about the objectives.
"""

import datetime
import fractions
import json
import math
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging  # pylint: disable=wrong-import-position
import keras  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
import tensorflow as tf  # pylint: disable=wrong-import-position

from electra_tf.config import OBJECTIVES, get_config  # pylint: disable=wrong-import-position
from electra_tf.training.pretraining import resolve_data, train  # pylint: disable=wrong-import-position
from electra_tf.data.tasks import load_task  # pylint: disable=wrong-import-position
from electra_tf.models.pretrainer import build_pretrainer  # pylint: disable=wrong-import-position
from electra_tf.training import checkpoints, flops  # pylint: disable=wrong-import-position
from electra_tf.training.finetuning import run_finetuning  # pylint: disable=wrong-import-position

SHARED = os.path.join(REPO, "..", "shared", "data")

# --- Budgets: plain values. `model` overrides the `tiny` preset; steps are "electra" steps. ---
BUDGETS = {
    "smoke": dict(  # plumbing only: a few steps, one seed, 32 examples per task
        corpus="demo",
        model=dict(hidden_dim=128, num_layers=2, num_heads=2, intermediate_dim=512),
        electra_steps=4,  # the budget = 4 electra steps
        batch_size=8,
        learning_rate=5e-4,
        warmup_fraction=0.1,
        fractions="0.5,1.0",
        seeds=1,
        finetune=dict(epochs=1, batch_size=16, learning_rate=2e-3, max_seq_length=64,
                      train_limit=32, dev_limit=32),
    ),
    # About 2 h on an idle 2-core machine, from CPU seconds measured on this code (vocab 30522, batch 32):
    # pre-training ~2.0 CPU s per electra-step of budget over the five objectives (electra 0.44 s/step,
    # mlm 0.31, electra_15 0.43, replace_mlm 0.54, all_tokens_mlm 1.26, times their equal-FLOPs
    # step ratios 1, 1.08, 1, 0.75, 0.30) -> ~5.9k CPU s; fine-tuning ~24 CPU s per run x 90 runs
    # (10 encoders x 3 tasks x 3 seeds) -> ~2.2k CPU s; set-up ~0.3k. ~8.4k CPU s at 1.2-1.6 busy cores.
    "full": dict(
        corpus=os.path.join(SHARED, "corpus", "*.txt.gz"),  # 57,645 sequences of 128 (7.9M word pieces)
        model=dict(hidden_dim=128, num_layers=2, num_heads=2, intermediate_dim=512),
        electra_steps=3000,  # x 32 = 96k sequences, ~1.7 passes over the corpus
        batch_size=32,
        learning_rate=1e-3,
        warmup_fraction=0.1,
        fractions="0.25,0.5,1.0",
        seeds=3,
        # Tiny encoders need a larger fine-tuning LR than ELECTRA-Small's 3e-4: on trec6 (2000 examples,
        # 3 epochs) 2e-3 beat 1e-3 for both a random and a barely pre-trained encoder.
        finetune=dict(epochs=3, batch_size=32, learning_rate=2e-3, max_seq_length=64,
                      train_limit=2000, dev_limit=None),
    ),
}
# Paper Table 5 (GLUE dev, Base-sized); "mlm" is BERT. Section 7 of docs/electra-reference.md.
PAPER_TABLE5 = {"electra": 85.0, "all_tokens_mlm": 84.3, "replace_mlm": 82.4, "electra_15": 82.4, "mlm": 82.2}
BASELINE = "random_init"  # the encoder with no pre-training

FLAGS = flags.FLAGS
flags.DEFINE_enum("budget", "smoke", list(BUDGETS), "Size of the experiment.")
flags.DEFINE_string("output_dir", None, "Everything goes here; re-running with the same dir resumes.")
flags.DEFINE_string("corpus", None, "'demo' or a text glob (default: the budget's).")
flags.DEFINE_string("vocab", os.path.join(SHARED, "vocab", "bert_uncased_vocab.txt"),
                    "WordPiece vocabulary for --corpus (ignored for 'demo', which has its own).")
flags.DEFINE_list("tasks", [os.path.join(SHARED, "tasks", t) for t in ("movie_polarity", "trec6", "sms_spam")],
                  "Task folders (train/dev.tsv + labels.txt), comma-separated.")
flags.DEFINE_integer("seeds", None, "Fine-tuning seeds per encoder and task (default: the budget's).")
flags.DEFINE_string("fractions", None, "Budget fractions checkpointed for --curve_objectives (default: the budget's).")
flags.DEFINE_list("objectives", list(OBJECTIVES), "Pre-training objectives to compare.")
flags.DEFINE_list("curve_objectives", ["electra", "mlm"], "Objectives scored at every budget fraction.")
flags.DEFINE_integer("electra_steps", None, "Override the budget: this many electra steps of compute.")
flags.DEFINE_integer("train_limit", None, "Override the budget: fine-tuning examples per task.")
flags.DEFINE_integer("dev_limit", None, "Override the budget: dev examples per task.")
flags.DEFINE_integer("epochs", None, "Override the budget: fine-tuning epochs.")
flags.DEFINE_string("demo_dir", os.path.join("~", ".cache", "electra_tf", "demo"),
                    "Where the embedded demo corpus is built (--corpus demo).")


# === Small helpers ===

def read_json(path):
    """The JSON in `path`, or None when it is missing or truncated (an unfinished unit)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)


def cpu_seconds():
    """CPU time of this process, all threads (less skewed by other jobs than wall time)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def parse_fractions(text):
    values = sorted({float(f) for f in text.split(",") if f.strip()} | {1.0})
    if values[0] <= 0 or values[-1] > 1:
        raise ValueError(f"Fractions must be in (0, 1]. Received: `--fractions={text}`")
    return values


def checkpoint_steps(steps, fractions_):
    """Save interval and the step of each fraction: multiples of the fractions' common divisor."""
    exact = [fractions.Fraction(f).limit_denominator(1000) for f in fractions_]
    unit = exact[0]
    for f in exact[1:]:
        unit = fractions.Fraction(math.gcd(unit.numerator * f.denominator, f.numerator * unit.denominator),
                                  unit.denominator * f.denominator)
    every = max(1, round(steps * unit))
    at = {}
    for f, e in zip(fractions_, exact):
        at[f] = steps if f == 1.0 else min(steps, round(e / unit) * every)
    return every, at


class Units:
    """Counts units run and skipped, and logs one progress line per unit."""

    def __init__(self):
        self.ran, self.skipped, self.start = 0, 0, time.time()

    def skip(self, name):
        self.skipped += 1
        logging.info("[skip] %s: already done", name)

    def done(self, name, seconds):
        self.ran += 1
        logging.info("[done] %s in %.1f s (%.0f s elapsed)", name, seconds, time.time() - self.start)


# === 1. Records ===

def prepare_data(corpus, vocab, output_dir, seq_length, units):
    """`(data glob, vocab file)`: the demo corpus, or TFRecords built once into output_dir/data."""
    if corpus == "demo":
        config = resolve_data(get_config("tiny", seq_length=seq_length), FLAGS.demo_dir)
        return config.data, config.vocab_file
    from pipelines.build_pretraining_data import build_pretraining_data

    data_dir = os.path.join(output_dir, "data")
    marker = os.path.join(data_dir, "done.json")
    if read_json(marker):
        units.skip("records")
    else:
        start = time.time()
        stats = build_pretraining_data(corpus, vocab, data_dir, max_seq_length=seq_length, num_shards=8, seed=0,
                                       pipeline_args=["--direct_running_mode=in_memory"])
        write_json(marker, dict(corpus=corpus, vocab=vocab, examples=stats["examples"],
                                seconds=time.time() - start))
        units.done(f"records ({stats['examples']} examples)", time.time() - start)
    return os.path.join(data_dir, "pretrain_data.tfrecord-*"), vocab


# === 2. Equal-FLOPs pre-training ===

def plan_pretraining(base_config, objectives, electra_steps):
    """Steps, FLOPs per sequence and breakdown of each objective for the budget of `electra_steps`."""
    batch = base_config.batch_size
    budget = electra_steps * flops.train_flops_per_sequence(base_config.replace(objective="electra")) * batch
    plan = {}
    for objective in objectives:
        config = base_config.replace(objective=objective)
        per_sequence = flops.train_flops_per_sequence(config)
        steps = max(1, round(budget / (per_sequence * batch)))
        plan[objective] = dict(steps=steps, flops_per_sequence=per_sequence, batch_size=batch,
                               flops=steps * per_sequence * batch, budget_flops=budget,
                               breakdown=flops.breakdown(config))
    return plan


def log_plan(plan):
    parts = [k for k in next(iter(plan.values()))["breakdown"] if k not in ("forward", "train")]
    logging.info("Equal-FLOPs plan (budget %.3g training FLOPs; forward GFLOP per sequence by part):",
                 next(iter(plan.values()))["budget_flops"])
    logging.info("%-15s %6s %10s  %s", "objective", "steps", "train GF/seq",
                 "  ".join(p.replace("embeddings_project", "proj") for p in parts))
    for objective, p in plan.items():
        logging.info("%-15s %6d %10.3f  %s", objective, p["steps"], p["flops_per_sequence"] / 1e9,
                     "  ".join(f"{p['breakdown'][k] / 1e9:.3f}" for k in parts))


def pretrain(objective, config, output_dir, curve_fractions, units):
    """Runs (or resumes, or skips) one objective's pre-training; exports its encoders.

    Returns:
        dict encoder name -> {objective, fraction, step, flops, path}.
    """
    steps = config.train_steps
    if curve_fractions:
        every, at = checkpoint_steps(steps, curve_fractions)
    else:
        every, at = max(1, steps // 4), {1.0: steps}  # checkpoints only for resuming
    keep = math.ceil(steps / every) + 2 if curve_fractions else 2  # the fraction checkpoints must all survive
    config = config.replace(save_checkpoints_steps=every, keep_checkpoint_max=keep)
    model_dir = os.path.join(output_dir, "pretrain", objective)
    marker = os.path.join(model_dir, "done.json")
    record = read_json(marker)
    if record:
        units.skip(f"pretrain {objective}")
    else:
        logging.info("Pre-training %s for %d steps (checkpoints every %d) in %s", objective, steps, every, model_dir)
        start, cpu = time.time(), cpu_seconds()
        train(config, model_dir, verbose=2)
        record = dict(objective=objective, steps=steps, seconds=time.time() - start, cpu_seconds=cpu_seconds() - cpu)
        write_json(marker, record)
        units.done(f"pretrain {objective} ({steps} steps)", record["seconds"])

    per_step = flops.train_flops_per_sequence(config) * config.batch_size
    encoders = {}
    for fraction, step in sorted(at.items()):
        name = objective if fraction == 1.0 else f"{objective}@{fraction:g}"
        directory = os.path.join(output_dir, "encoders", name.replace("@", "_f"))
        info = dict(objective=objective, fraction=fraction, step=step, flops=step * per_step,
                    path=os.path.join(directory, "encoder.keras"))
        if read_json(os.path.join(directory, "encoder.json")):
            units.skip(f"export {name}")
        else:
            start = time.time()
            prefix = os.path.join(model_dir, checkpoints.CHECKPOINT_DIR, f"ckpt-{step}")
            if not tf.io.gfile.exists(prefix + ".index"):
                raise FileNotFoundError(f"No checkpoint at step {step} for {name}: {prefix}")
            pretrainer, _ = checkpoints.restore_pretrainer(model_dir, prefix)
            save_encoder(pretrainer.discriminator, directory, os.path.join(model_dir, checkpoints.VOCAB_FILE))
            write_json(os.path.join(directory, "encoder.json"), info)
            units.done(f"export {name} (step {step})", time.time() - start)
        encoders[name] = info
    return encoders


def save_encoder(encoder, directory, vocab_file):
    """`encoder.keras` + `vocab.txt` in `directory`: what `load_init` reads for an `init` ending in .keras."""
    os.makedirs(directory, exist_ok=True)
    encoder.save(os.path.join(directory, "encoder.tmp.keras"))
    os.replace(os.path.join(directory, "encoder.tmp.keras"), os.path.join(directory, "encoder.keras"))
    shutil.copyfile(vocab_file, os.path.join(directory, "vocab.txt"))


def random_encoder(config, output_dir, units):
    """The no-pre-training baseline: the discriminator as initialised (seed `config.seed`)."""
    directory = os.path.join(output_dir, "encoders", BASELINE)
    info = dict(objective=BASELINE, fraction=0.0, step=0, flops=0.0, path=os.path.join(directory, "encoder.keras"))
    if read_json(os.path.join(directory, "encoder.json")):
        units.skip(f"export {BASELINE}")
        return info
    keras.utils.set_random_seed(config.seed)
    encoder = build_pretrainer(config.replace(objective="mlm")).discriminator
    ones = tf.ones((1, 8), tf.int32)
    encoder({"token_ids": ones, "segment_ids": 0 * ones, "padding_mask": ones})  # build the weights
    save_encoder(encoder, directory, config.vocab_file)
    write_json(os.path.join(directory, "encoder.json"), info)
    units.done(f"export {BASELINE}", 0.0)
    return info


# === 3. Fine-tuning ===

def finetune(encoders, task_dirs, seeds, hparams, output_dir, units):
    """Every encoder x task x seed; returns a list of run records."""
    runs = []
    for name, info in encoders.items():
        for task_dir in task_dirs:
            task = os.path.basename(os.path.normpath(task_dir))
            spec = load_task(task, task_dir)
            for seed in range(seeds):
                unit = f"finetune {name}/{task}/seed{seed}"
                run_dir = os.path.join(output_dir, "finetune", name.replace("@", "_f"), task, f"seed{seed}")
                result = read_json(os.path.join(run_dir, "results.json"))
                if result:
                    units.skip(unit)
                else:
                    start, cpu = time.time(), cpu_seconds()
                    result = run_finetuning(spec, task_dir, info["path"], run_dir, num_trials=1, seed=seed,
                                            verbose=0, **hparams)
                    write_json(os.path.join(run_dir, "timing.json"),
                               dict(seconds=time.time() - start, cpu_seconds=cpu_seconds() - cpu))
                    # The classifier is not needed here and is the bulk of the disk use.
                    for leftover in ("classifier.keras", "vocab.txt"):
                        if os.path.exists(os.path.join(run_dir, leftover)):
                            os.remove(os.path.join(run_dir, leftover))
                    units.done(f"{unit}: dev {spec.metric} {result['trials'][0]['dev'][spec.metric]:.4f}",
                               result["trials"][0]["train_seconds"])
                trial = result["trials"][0]
                timing = read_json(os.path.join(run_dir, "timing.json")) or {}
                runs.append(dict(encoder=name, objective=info["objective"], fraction=info["fraction"],
                                 flops=info["flops"], task=task, seed=seed, metric=result["metric"],
                                 score=trial["dev"][result["metric"]], dev=trial["dev"],
                                 train_seconds=trial["train_seconds"], seconds=timing.get("seconds"),
                                 cpu_seconds=timing.get("cpu_seconds"),
                                 majority_class_accuracy=result["majority_class_accuracy"]))
    return runs


def summarize(runs, tasks, seeds):
    """Per encoder: task means over seeds, their average, and median/spread of per-seed averages (x100)."""
    summary = {}
    for name in dict.fromkeys(r["encoder"] for r in runs):
        mine = [r for r in runs if r["encoder"] == name]
        score = {(r["task"], r["seed"]): 100 * r["score"] for r in mine}
        per_task = {t: dict(mean=float(np.mean([score[t, s] for s in range(seeds)])),
                            std=float(np.std([score[t, s] for s in range(seeds)])))
                    for t in tasks}
        per_seed = [float(np.mean([score[t, s] for t in tasks])) for s in range(seeds)]
        summary[name] = dict(objective=mine[0]["objective"], fraction=mine[0]["fraction"], flops=mine[0]["flops"],
                             tasks=per_task, average=float(np.mean(per_seed)),
                             median=float(statistics.median(per_seed)), spread=float(np.std(per_seed)),
                             min=min(per_seed), max=max(per_seed), per_seed_average=per_seed)
    return summary


# === 4. Report ===

def versions():
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        commit += " (uncommitted changes)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return dict(python=platform.python_version(), tensorflow=tf.__version__, keras=keras.__version__,
                numpy=np.__version__, platform=platform.platform(), cpus=os.cpu_count(), electra_tf=commit)


def write_markdown(path, report):
    summary, plan, tasks = report["summary"], report["pretraining"], report["tasks"]
    b = report["budget"]
    lines = [
        f"# Pre-training efficiency: objectives at equal FLOPs (`--budget {report['budget_name']}`)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Date: {report['date']}. Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        f"Wall time: {report['seconds']:.0f} s this invocation ({report['units_run']} units run, "
        f"{report['units_skipped']} skipped).",
        "",
        f"Encoder: `tiny` preset + {b['model']}, seq 128, batch {b['batch_size']}, lr {b['learning_rate']}; "
        f"budget = {b['electra_steps']} electra steps = {next(iter(plan.values()))['budget_flops']:.3g} "
        f"training FLOPs (matmul-only count, `electra_tf.training.flops`). Fine-tuning: {report['finetune']}, "
        f"{report['seeds']} seed(s). Scores are dev {', '.join(sorted({r['metric'] for r in report['runs']}))} "
        "x 100, mean over seeds; Spread = std over seeds of the task average.",
        "",
    ]
    if report["budget_name"] == "smoke":
        lines += ["**Smoke budget: a few steps on tiny data. The numbers only show that every stage runs; "
                  "they carry no information about the objectives.**", ""]
    header = ["encoder", "steps", "PT FLOPs", *tasks, "Avg", "Median", "Spread", "Paper Table 5"]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    finals = [n for n, s in summary.items() if s["fraction"] in (1.0, 0.0)]
    for name in finals:
        s = summary[name]
        steps = plan[name]["steps"] if name in plan else 0
        cells = [name if name != "mlm" else "mlm (BERT)", str(steps), f"{s['flops']:.3g}"]
        cells += [f"{s['tasks'][t]['mean']:.1f} ± {s['tasks'][t]['std']:.1f}" for t in tasks]
        cells += [f"{s['average']:.1f}", f"{s['median']:.1f}", f"{s['spread']:.1f}",
                  str(PAPER_TABLE5.get(s["objective"], "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    majority = {r["task"]: 100 * r["majority_class_accuracy"] for r in report["runs"]}
    lines.append("| majority class | - | - | " + " | ".join(f"{majority[t]:.1f}" for t in tasks)
                 + f" | {np.mean([majority[t] for t in tasks]):.1f} | - | - | - |")
    lines += ["", "Paper reference (GLUE dev): Table 5, Base-sized: ELECTRA 85.0, All-Tokens MLM 84.3, "
              "Replace MLM 82.4, ELECTRA 15% 82.4, BERT 82.2; Table 1 at equal compute: ELECTRA-Small 79.9 vs "
              "BERT-Small 75.1.", "", "## Score vs pre-training FLOPs (Figure 4 analog, `efficiency.png`)", "",
              "| objective | fraction | step | PT FLOPs | Avg |", "|---|---:|---:|---:|---:|"]
    curve = sorted(summary.values(), key=lambda s: (s["objective"], s["fraction"]))
    for s in curve:
        if s["objective"] in report["curve_objectives"] or s["objective"] == BASELINE:
            step = round(s["flops"] / plan[s["objective"]]["flops_per_sequence"] / plan[s["objective"]]["batch_size"]) \
                if s["objective"] in plan else 0
            lines.append(f"| {s['objective']} | {s['fraction']:g} | {step} | {s['flops']:.3g} | {s['average']:.1f} |")
    lines += ["", "## Equal-FLOPs plan (forward GFLOP per sequence by part; training = 3 x forward)", "",
              "| objective | steps | train GFLOP/seq | " + " | ".join(k for k in plan[next(iter(plan))]["breakdown"]
                                                          if k not in ("forward", "train")) + " | wall s | CPU s |",
              "|---|---:|---:|" + "---:|" * len(plan[next(iter(plan))]["breakdown"])]
    for objective, p in plan.items():
        parts = [f"{v / 1e9:.3f}" for k, v in p["breakdown"].items() if k not in ("forward", "train")]
        lines.append(f"| {objective} | {p['steps']} | {p['flops_per_sequence'] / 1e9:.3f} | " + " | ".join(parts)
                     + f" | {p['seconds']:.0f} | {p['cpu_seconds'] or float('nan'):.0f} |")
    total = lambda key: sum(r[key] or 0.0 for r in report["runs"])  # noqa: E731
    lines += ["", f"Fine-tuning: {len(report['runs'])} runs, {total('seconds'):.0f} s wall / "
              f"{total('cpu_seconds'):.0f} CPU s in all ({total('train_seconds'):.0f} s of `fit`). "
              f"Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def plot(path, summary, curve_objectives):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for objective in dict.fromkeys(s["objective"] for s in summary.values()):
        points = sorted((s["flops"], s["average"]) for s in summary.values() if s["objective"] == objective)
        if objective == BASELINE:
            ax.axhline(points[0][1], color="grey", linestyle="--", label="no pre-training")
        elif objective in curve_objectives:
            ax.plot(*zip(*points), marker="o", label=objective)
        else:
            ax.plot(*zip(*points), marker="s", linestyle="none", label=objective)
    ax.set_xscale("log")
    ax.set_xlabel("pre-training FLOPs (matmul count)")
    ax.set_ylabel("average dev score (x100)")
    ax.set_title("Fine-tuned score vs pre-training compute")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# === main ===

def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    budget = dict(BUDGETS[FLAGS.budget])
    finetune_hparams = dict(budget["finetune"])
    for key in ("train_limit", "dev_limit", "epochs"):
        if FLAGS[key].value is not None:
            finetune_hparams[key] = FLAGS[key].value
    budget["electra_steps"] = FLAGS.electra_steps or budget["electra_steps"]
    seeds = FLAGS.seeds or budget["seeds"]
    curve_fractions = parse_fractions(FLAGS.fractions or budget["fractions"])
    corpus = FLAGS.corpus or budget["corpus"]
    unknown = sorted(set(FLAGS.objectives + FLAGS.curve_objectives) - set(OBJECTIVES))
    if unknown:
        raise app.UsageError(f"Unknown objective(s) {unknown}. Choose from {list(OBJECTIVES)}.")
    output_dir = os.path.abspath(FLAGS.output_dir)
    os.makedirs(output_dir, exist_ok=True)
    units = Units()

    # Settings that decide the results are fixed at the first invocation.
    settings = dict(budget=FLAGS.budget, corpus=corpus, electra_steps=budget["electra_steps"], seeds=seeds,
                    fractions=curve_fractions, finetune=finetune_hparams)
    previous = read_json(os.path.join(output_dir, "settings.json"))
    if previous and previous != json.loads(json.dumps(settings)):
        raise app.UsageError(f"{output_dir} holds a run with other settings {previous}; use a new --output_dir.")
    write_json(os.path.join(output_dir, "settings.json"), settings)

    data, vocab_file = prepare_data(corpus, FLAGS.vocab, output_dir, 128, units)
    base = get_config("tiny", data=data, vocab_file=vocab_file, batch_size=budget["batch_size"],
                      learning_rate=budget["learning_rate"], seq_length=128, log_steps=10, **budget["model"])
    base = resolve_data(base, FLAGS.demo_dir)

    plan = plan_pretraining(base, FLAGS.objectives, budget["electra_steps"])
    log_plan(plan)
    encoders = {BASELINE: random_encoder(base, output_dir, units)}
    for objective, p in plan.items():
        steps = p["steps"]
        config = base.replace(objective=objective, train_steps=steps,
                              warmup_steps=max(1, round(budget["warmup_fraction"] * steps)))
        found = pretrain(objective, config, output_dir,
                         curve_fractions if objective in FLAGS.curve_objectives else None, units)
        encoders.update(found)
        record = read_json(os.path.join(output_dir, "pretrain", objective, "done.json"))
        p.update(seconds=record["seconds"], cpu_seconds=record.get("cpu_seconds"))

    task_names = [os.path.basename(os.path.normpath(t)) for t in FLAGS.tasks]
    runs = finetune(encoders, FLAGS.tasks, seeds, finetune_hparams, output_dir, units)
    summary = summarize(runs, task_names, seeds)

    report = dict(
        command=" ".join(shlex.quote(a) for a in [os.path.relpath(sys.executable, REPO)
                                                   if sys.executable.startswith(REPO) else "python", *sys.argv]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=versions(), budget_name=FLAGS.budget, budget=budget, finetune=finetune_hparams, seeds=seeds,
        tasks=task_names, objectives=FLAGS.objectives, curve_objectives=FLAGS.curve_objectives,
        fractions=curve_fractions, paper_table5=PAPER_TABLE5, pretraining=plan, encoders=encoders,
        runs=runs, summary=summary, seconds=time.time() - units.start, units_run=units.ran,
        units_skipped=units.skipped,
    )
    write_json(os.path.join(output_dir, "results.json"), report)
    write_markdown(os.path.join(output_dir, "results.md"), report)
    plot(os.path.join(output_dir, "efficiency.png"), summary, FLAGS.curve_objectives)
    logging.info("Wrote results.json, results.md and efficiency.png to %s (%d units run, %d skipped, %.0f s).",
                 output_dir, units.ran, units.skipped, time.time() - units.start)
    with open(os.path.join(output_dir, "results.md"), encoding="utf-8") as f:
        print(f.read())


if __name__ == "__main__":
    app.run(main)
