r"""How long a command takes to end once its work is done: without the interpreter's teardown (the default) and with
it (`ELECTRA_TF_FULL_EXIT=1`), alternated.

    python -m benchmarks.command_exit --rounds 5 --output benchmarks/results/command_exit.md
    python -m benchmarks.command_exit --rounds 1 --train_limit 32   # smoke size

Each round runs two commands as a user types them, each once per exit (the order alternated from round
to round), in a process of their own:

- `python -m electra_tf.convert --from bert --input $MINILM --to keras` (MiniLM to a `.keras` file);
- `python -m electra_tf.finetune --task movie_polarity` from that file (`--train_limit` rows, 1 epoch,
  `--dev_limit 32`).

Figures: the end, from the command's last byte of output (its last line: the file it wrote, the results'
path) to the process's end as its parent sees it, and the command's whole wall time; medians over rounds.
`electra_tf/cli/process_exit.py` says what the end runs and what it leaves out.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from absl import flags

from benchmarks import common
from electra_tf import cli

flags.DEFINE_integer("rounds", 5, "Rounds; each runs every command once per exit.")
flags.DEFINE_integer("train_limit", 256, "movie_polarity training rows of the fine-tuning command.")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS

EXITS = {"without the teardown (default)": "0", "with it (`ELECTRA_TF_FULL_EXIT=1`)": "1"}


def timed(command, full_exit):
    """(seconds from the last output byte to the process's end, wall seconds) of `command`."""
    env = dict(os.environ, PYTHONPATH=common.REPO, TF_CPP_MIN_LOG_LEVEL="2", ELECTRA_TF_FULL_EXIT=full_exit)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=common.REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    last, output = start, []
    for chunk in iter(lambda: process.stdout.read1(65536), b""):
        last = time.perf_counter()
        output.append(chunk)
    code = process.wait()
    end = time.perf_counter()
    if code != 0:
        raise RuntimeError(f"{command} failed ({code}):\n{b''.join(output)[-3000:].decode(errors='replace')}")
    return end - last, end - start


def commands(scratch, n, exit_name):
    """name -> command line of round `n` for `exit_name`, in the order they run (the fine-tuning reads the convert's file)."""
    folder = os.path.join(scratch, f"{n}-{EXITS[exit_name]}")
    init = os.path.join(folder, "minilm.keras")
    return {
        "convert (MiniLM to .keras)": [sys.executable, "-m", "electra_tf.convert", "--from", "bert", "--input",
                                       common.minilm_dir(), "--to", "keras", "--output_dir", init],
        f"finetune (movie_polarity, {FLAGS.train_limit} rows)": [
            sys.executable, "-m", "electra_tf.finetune", "--task", "movie_polarity", "--data_dir",
            common.shared_data("tasks", "movie_polarity"), "--init", init, "--vocab_file",
            os.path.join(common.minilm_dir(), "vocab.txt"), "--output_dir", os.path.join(folder, "run"),
            "--train_limit", str(FLAGS.train_limit), "--dev_limit", "32", "--epochs", "1", "--verbose", "0"],
    }


def main(argv):
    del argv
    scratch = tempfile.mkdtemp(prefix="command_exit_")
    started = common.machine()
    times = {}  # (command, exit) -> list of (end, wall)
    try:
        for n in range(FLAGS.rounds):
            order = list(EXITS) if n % 2 == 0 else list(reversed(EXITS))
            for exit_name in order:
                for name, command in commands(scratch, n, exit_name).items():
                    times.setdefault((name, exit_name), []).append(timed(command, EXITS[exit_name]))
                    print(f"round {n + 1}: {name}, {exit_name}: end {times[name, exit_name][-1][0]:.3f} s",
                          flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lines = ["# A command's end: without the interpreter's teardown and with it", "",
             f"`{common.command_line('benchmarks.command_exit')}`", "",
             f"Commit {common.commit()}. {FLAGS.rounds} round(s); in each, every command ran once per exit, in a "
             "process of its own, the order of the exits alternated. Medians over rounds; the end is the time from "
             "the command's last byte of output to its process's end.", "",
             f"Machine: {started} at the start, {os.getloadavg()[0]:.1f} at the end; "
             f"{common.versions_text()}.", "",
             "| command | exit | end, s (median) | rounds' ends, s | wall s (median) |", "|---|---|---:|---|---:|"]
    for name in dict.fromkeys(name for name, _ in times):  # the commands, in the order they ran
        for exit_name in EXITS:
            ends, walls = zip(*times[name, exit_name])
            lines.append(f"| {name} | {exit_name} | {common.median(ends):.3f} | "
                         f"{', '.join(f'{e:.3f}' for e in ends)} | {common.median(walls):.1f} |")
    common.write_report("\n".join(lines) + "\n", FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
