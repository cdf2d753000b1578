r"""Replaced-token scores of a tiny pre-training run: does the discriminator spot its own generator's replacements?

    python -m benchmarks.rtd_auc --model_dir runs/rtd_tiny --output benchmarks/results/rtd_held_out_auc.md
    python -m benchmarks.rtd_auc --steps 2 --every 2 --seeds 1 --output /tmp/rtd_auc.md  # smoke size

Pre-trains the `tiny` preset on the demo corpus (`python -m electra_tf.pretrain --config
tiny`, a checkpoint every `--every` steps up to the last of `--steps`), then for each of
`--steps` runs the command users run, `python -m electra_tf.predict --init <run at that
step> --corrupt --seed S`, on two texts: `held_out_prose.txt`, prose written for this check (no
six-word run of it is in the demo corpus), and as many lines of the demo corpus itself (text the run
trained on). `predict --corrupt` corrupts each line as pre-training does (masking, the
generator's samples) and reports the discriminator's AUC of replaced vs kept pieces
(`disc_auc`; [CLS] and [SEP] not counted) and of words. Beside them, pre-training's own
`disc_auc` (Keras' AUC over every real token of the training batches of the epoch that ends at
that step, from the run's TensorBoard logs). `--model_dir` reuses a run (pre-training resumes,
or does nothing when the run has its steps).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from absl import app, flags

from benchmarks import common
from electra_tf import cli

flags.DEFINE_string("steps", "100,200,400", "Steps at which the run is scored, comma-separated.")
flags.DEFINE_integer("every", 100, "Steps between checkpoints (each of --steps must be a multiple).")
flags.DEFINE_string("seeds", "1,2,3", "`predict --seed` values (corruptions), comma-separated.")
flags.DEFINE_string("model_dir", None, "The run (default: a temporary folder).")
flags.DEFINE_string("demo_dir", None, "Where the demo corpus is built (default: the commands' own cache).")
flags.DEFINE_string("output", None, "Markdown report.")
FLAGS = flags.FLAGS

# Prose written for this check, one text a line: none of it is in the demo corpus (no six-word run of it is).
HELD_OUT_FILE = os.path.join(common.REPO, "benchmarks", "held_out_prose.txt")


def run(args):
    """`python args...` from the repository root; its stderr's last line on failure."""
    result = subprocess.run([sys.executable, *args], cwd=common.REPO, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{' '.join(args[:3])} failed ({result.returncode}): {result.stderr[-2000:]}")
    return result


def at_step(run_dir, step, folder):
    """A view of `run_dir` whose latest checkpoint is the one of `step` (what `--init` restores)."""
    os.makedirs(os.path.join(folder, "checkpoints"), exist_ok=True)
    for name in ("config.json", "vocab.txt"):
        shutil.copyfile(os.path.join(run_dir, name), os.path.join(folder, name))
    prefix = os.path.abspath(os.path.join(run_dir, "checkpoints", f"ckpt-{step}"))
    with open(os.path.join(folder, "checkpoints", "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{prefix}"\n')
    return folder


def training_auc(run_dir, every):
    """Pre-training's `disc_auc` at the end of each epoch (`every` steps), by step (the run's TensorBoard logs)."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(os.path.join(run_dir, "logs", "train"), size_guidance={"tensors": 0}).Reload()
    tags = events.Tags()["tensors"]
    values = {}
    # Keras' metrics run over an epoch: the value logged at an epoch's last step (every `log_steps`) is the
    # epoch's, as is the epoch's own summary (epoch i ends at step (i + 1) * every).
    for tag, step in (("epoch_disc_auc", lambda s: (s + 1) * every), ("batch_disc_auc", lambda s: s)):
        if tag in tags:
            values.update({step(e.step): float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)})
    return values


def corpus_lines(demo_dir, count):
    """`count` lines of the demo corpus (what the run trains on), from its middle, each over 60 characters."""
    from electra_tf.pipelines.demo_corpus import CORPUS_FILE

    # The corpus of any build in the cache (one folder per build's settings): it does not depend on them.
    builds = sorted(glob.glob(os.path.join(demo_dir, "*", CORPUS_FILE)))
    with open(builds[0], encoding="utf-8") as f:
        lines = [line.strip() for line in f if len(line.strip()) > 60]
    middle = len(lines) // 2
    return lines[middle:middle + count]


def main(argv):
    del argv
    steps = sorted(int(s) for s in FLAGS.steps.split(","))
    seeds = [int(s) for s in FLAGS.seeds.split(",")]
    if any(step % FLAGS.every for step in steps):
        raise app.UsageError(f"--steps {FLAGS.steps}: each must be a multiple of --every {FLAGS.every}.")
    tmp = tempfile.mkdtemp(prefix="rtd_auc_")
    run_dir = FLAGS.model_dir or os.path.join(tmp, "run")
    demo_dir = FLAGS.demo_dir or os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "demo")
    run(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", run_dir, "--demo_dir", demo_dir,
         "--train_steps", str(steps[-1]), "--save_checkpoints_steps", str(FLAGS.every),
         "--keep_checkpoint_max", str(steps[-1] // FLAGS.every), "--verbose", "2"])
    with open(HELD_OUT_FILE, encoding="utf-8") as f:
        held_out = f.read().splitlines()
    texts = {"held-out prose": held_out, "training text": corpus_lines(demo_dir, len(held_out))}
    for name, lines in texts.items():
        with open(os.path.join(tmp, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    pretraining = training_auc(run_dir, FLAGS.every)
    rows = []
    for step in steps:
        init = at_step(run_dir, step, os.path.join(tmp, f"step-{step}"))
        scores = {}
        for name in texts:
            for seed in seeds:
                metrics = os.path.join(tmp, "metrics.json")
                run(["-m", "electra_tf.predict", "--init", init, "--input", os.path.join(tmp, f"{name}.txt"),
                     "--corrupt", "--seed", str(seed), "--output_file", os.path.join(tmp, "scores.jsonl"),
                     "--metrics_file", metrics])
                with open(metrics) as f:
                    scores.setdefault(name, []).append(json.load(f))
        rows.append((step, pretraining.get(step), scores))
        print(f"step {step}: pre-training disc_auc {pretraining.get(step)}; "
              + "; ".join(f"{name} disc_auc {[round(s['disc_auc'], 4) for s in values]}"
                          for name, values in scores.items()), flush=True)

    def cell(values, key):
        numbers = sorted(v[key] for v in values)
        return f"{common.median(numbers):.3f} ({numbers[0]:.3f}-{numbers[-1]:.3f})"

    replaced = {name: sum(v["replaced_pieces"] for v in rows[0][2][name]) // len(seeds) for name in texts}
    pieces = {name: rows[0][2][name][0]["pieces"] for name in texts}
    lines = [
        "# Replaced-token scores of a tiny run: its discriminator on its own generator's replacements",
        "",
        f"`{common.command_line('benchmarks.rtd_auc')}`, from the repository root.",
        "",
        f"The `tiny` preset pre-trained on the demo corpus; at each step `python -m electra_tf.predict --init <run> "
        f"--corrupt --seed S` (S in {FLAGS.seeds}) on {len(held_out)} lines of held-out prose "
        f"(`benchmarks/held_out_prose.txt`, {pieces['held-out prose']} pieces, about {replaced['held-out prose']} replaced "
        f"per corruption) and {len(held_out)} lines of the demo corpus it trained on ({pieces['training text']} "
        f"pieces, about {replaced['training text']} replaced). AUC of the discriminator's probability, replaced vs "
        "kept: pieces (`disc_auc`, [CLS] and [SEP] not counted) and words (a word is replaced when one of its "
        "pieces is; its probability is its pieces' highest). Median over the seeds (min-max). Pre-training's "
        "`disc_auc`: Keras' AUC over every real token ([CLS] and [SEP] included) of the training batches of the "
        "epoch ending at that step, from the run's TensorBoard logs.",
        "",
        "| step | pre-training `disc_auc` | training text: pieces | words | held-out prose: pieces | words |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for step, train_auc, scores in rows:
        lines.append(f"| {step} | {'n/a' if train_auc is None else f'{train_auc:.3f}'} | {cell(scores['training text'], 'disc_auc')} | "
                     f"{cell(scores['training text'], 'word_auc')} | {cell(scores['held-out prose'], 'disc_auc')} | "
                     f"{cell(scores['held-out prose'], 'word_auc')} |")
    lines += ["", f"Versions: {common.versions_text()}."]
    common.write_report("\n".join(lines) + "\n", FLAGS.output)
    shutil.rmtree(tmp, ignore_errors=True)  # the views, the texts (and the run, unless --model_dir)


if __name__ == "__main__":
    cli.run_script(main)
