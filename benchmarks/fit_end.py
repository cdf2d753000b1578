"""The fine-tuning command under TF's one-device strategy vs `HostStrategy`: what each epoch's `fit` costs after its last step.

The fine-tuning loop calls `fit` once per epoch (it scores dev and saves in
between). Keras distributes each epoch's dataset with the strategy and deletes
the iterator before `fit` returns. TF's `OneDeviceStrategy` reads the dataset
through a multi-device iterator whose per-device dataset has default tf.data
options, so tf.data's autotuning thread runs, and the deletion waits for it.
`electra_tf.training.distribute.HostStrategy` (what `--strategy cpu`, and
`auto` on a machine without accelerators, build) iterates the dataset directly.

Each run is `python -m electra_tf.finetune` on movie_polarity (the shared
tasks) from a random encoder of the `tiny` preset's size (2 layers, H 128; the
equal-compute experiment's fine-tuning), 3 epochs of 2,000 rows, in a fresh
process; the `tf` runs swap `HostStrategy` for TF's `OneDeviceStrategy` (a
patch in the worker, nothing else changes). The two alternate. Recorded per
run: the command's wall time (start to `results.json`), each epoch's end of
`fit` (last batch's end to `fit`'s return) and the median step.

    python -m benchmarks.fit_end --repeats 4 --output benchmarks/results/fit_end.md
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import common

REPO = common.REPO
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--repeats", type=int, default=4, help="Runs per strategy, alternated.")
parser.add_argument("--task_dir", default=common.shared_data("tasks", "movie_polarity"), help="A shared task.")
parser.add_argument("--vocab_file", default=common.shared_data("vocab", "bert_uncased_vocab.txt"))
parser.add_argument("--train_limit", type=int, default=2000, help="--train_limit of each run.")
parser.add_argument("--epochs", type=int, default=3, help="--epochs of each run.")
parser.add_argument("--output", default=None, help="Write the Markdown report here.")
parser.add_argument("--worker", default=None, help="Internal: 'host' or 'tf'; the finetune flags follow.")
FLAGS = None


def worker(kind, argv):
    """Runs `electra_tf.finetune` in this process; prints one JSON line of per-epoch timings."""
    from electra_tf import cli  # pylint: disable=import-outside-toplevel

    cli.prepare_tensorflow()  # as the command: before TensorFlow is imported
    import keras  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    from electra_tf import finetune  # pylint: disable=import-outside-toplevel
    from electra_tf.training import distribute  # pylint: disable=import-outside-toplevel

    if kind == "tf":
        built = distribute._build  # pylint: disable=protected-access

        def tf_one_device(name, *args):
            return tf.distribute.OneDeviceStrategy("/cpu:0") if name == "cpu" else built(name, *args)

        distribute._build = tf_one_device  # pylint: disable=protected-access
    epochs = []
    fit = keras.Model.fit

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

    def timed_fit(self, *args, callbacks=None, **kwargs):
        clock = Clock()
        out = fit(self, *args, callbacks=list(callbacks or []) + [clock], **kwargs)
        end = time.perf_counter()
        steps = [b - a for a, b in zip(clock.ends, clock.ends[1:])]
        epochs.append({"end_of_fit": end - clock.ends[-1], "step": statistics.median(steps),
                       "strategy": type(self.distribute_strategy).__name__})
        return out

    keras.Model.fit = timed_fit
    sys.argv = ["finetune"] + argv
    try:
        finetune.run()
    except SystemExit as exit_:
        if exit_.code:
            raise
    print("FIT_END " + json.dumps(epochs), flush=True)


def random_init(folder):
    """A random `tiny`-size ElectraEncoder .keras over `--vocab_file`, its vocab.txt beside it."""
    script = (
        "import sys, shutil, keras; from electra_tf import cli; cli.prepare_tensorflow();"
        "from electra_tf.models.encoder import ElectraEncoder; keras.utils.set_random_seed(0);"
        "n = sum(1 for _ in open(sys.argv[2], encoding='utf-8'));"
        "e = ElectraEncoder(vocab_size=n, num_layers=2, num_heads=2, hidden_dim=128, embedding_dim=64,"
        " intermediate_dim=512, max_sequence_length=128); e.build(); e.save(sys.argv[1] + '/encoder.keras');"
        "shutil.copyfile(sys.argv[2], sys.argv[1] + '/vocab.txt')")
    subprocess.run([sys.executable, "-c", script, folder, FLAGS.vocab_file], cwd=REPO, check=True,
                   capture_output=True, env=dict(os.environ, PYTHONPATH=REPO))
    return os.path.join(folder, "encoder.keras")


def run(kind, init, output_dir):
    argv = [f"--task={os.path.basename(FLAGS.task_dir)}", f"--data_dir={FLAGS.task_dir}", f"--init={init}",
            f"--output_dir={output_dir}", f"--epochs={FLAGS.epochs}", "--seq_length=64", "--batch_size=32",
            "--learning_rate=2e-3", f"--train_limit={FLAGS.train_limit}", "--num_trials=1", "--seed=0",
            "--verbose=0", "--strategy=auto"]
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "benchmarks.fit_end", f"--worker={kind}", "--", *argv], cwd=REPO,
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO))
    wall = time.perf_counter() - start
    lines = [line for line in out.stdout.splitlines() if line.startswith("FIT_END ")]
    if out.returncode or not lines:
        raise RuntimeError(f"{kind} run failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}")
    return wall, json.loads(lines[-1][len("FIT_END "):])


def main():
    global FLAGS  # pylint: disable=global-statement
    FLAGS, rest = parser.parse_known_args()
    if FLAGS.worker:
        worker(FLAGS.worker, [a for a in rest if a != "--"])
        return
    runs = {"tf": [], "host": []}
    with tempfile.TemporaryDirectory() as tmp:
        init = random_init(tmp)
        for repeat in range(FLAGS.repeats):
            for kind in runs:
                wall, epochs = run(kind, init, os.path.join(tmp, f"{kind}{repeat}"))
                runs[kind].append((wall, epochs))
                print(f"run {repeat} {kind} ({epochs[0]['strategy']}): {wall:.1f} s; end of fit "
                      + ", ".join(f"{e['end_of_fit']:.2f}" for e in epochs) + " s", flush=True)
    names = {"tf": "TF `OneDeviceStrategy`", "host": "`HostStrategy` (the default)"}
    lines = ["# The fine-tuning command under TF's `OneDeviceStrategy` vs `HostStrategy`", "",
             f"`{common.command_line('benchmarks.fit_end')}`",
             "",
             f"`python -m electra_tf.finetune` on {os.path.basename(FLAGS.task_dir)}, {FLAGS.train_limit} rows, "
             f"{FLAGS.epochs} epochs (one `fit` each), seq 64, batch 32, from a random encoder of the `tiny` "
             f"preset's size; {FLAGS.repeats} runs per strategy, alternated, each a fresh process. Machine: "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end.", "",
             "| strategy | command wall s (median) | end of `fit` s (median over epochs) | end of `fit` s, every epoch "
             "| step ms (median) |", "|---|---:|---:|---|---:|"]
    for kind, values in runs.items():
        ends = [e["end_of_fit"] for _, epochs in values for e in epochs]
        steps = [e["step"] for _, epochs in values for e in epochs]
        lines.append(f"| {names[kind]} | {statistics.median(w for w, _ in values):.1f} | {statistics.median(ends):.2f} "
                     f"| {', '.join(f'{e:.2f}' for e in ends)} | {1000 * statistics.median(steps):.1f} |")
    common.write_report("\n".join(lines) + "\n", FLAGS.output)


if __name__ == "__main__":
    main()
