r"""Fetches a real multiple-choice benchmark: wikiHow goal-step inference, from the PyPI `bigbench` sdist.

    python -m benchmarks.fetch_multiple_choice [--dest DIR]

BIG-bench's `goal_step_wikihow/step_inference` task (Zhang, Lyu and Callison-Burch
2020, "Reasoning about Goals, Steps, and Temporal Ordering with WikiHow"; BIG-bench,
Apache 2.0) asks which of four steps belongs to a wikiHow goal ("The most
reasonable step of 'Solve an Algebraic Expression' is" ... "Know the order of
operations"), three steps of other goals being the distractors: 2,250 questions.
They are split here, shuffled with seed 1234, into train / dev / test (1,450 /
400 / 400) and written in the JSON Lines layout `--task_kind multiple_choice`
reads (`{"question": ..., "choices": [...], "answer": i}`):

    DEST/goal_step_wikihow/train.jsonl, dev.jsonl, test.jsonl, README.md, _SUCCESS

DEST is `--dest`, else `$ELECTRA_TF_BENCHMARKS`, else `~/.cache/electra_tf/benchmarks`:
the folder the shared `fetch_finetune_benchmarks.sh` fills, whose download of the
sdist (`_downloads/bigbench-1.0.0.tar.gz`, 358 MB) is reused; without it, `pip
download bigbench==1.0.0` fetches it. Nothing here is committed: the text is
fetched and split on each machine.
"""

import json
import os
import random
import subprocess
import sys
import tarfile

from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string("dest", None, "Where to write (default: $ELECTRA_TF_BENCHMARKS or ~/.cache/electra_tf/benchmarks).")

SDIST = "bigbench-1.0.0.tar.gz"
MEMBER = "bigbench-1.0.0/bigbench/benchmark_tasks/goal_step_wikihow/step_inference/task.json"
TASK = "goal_step_wikihow"
SPLITS = (("train", 1450), ("dev", 400), ("test", 400))
SEED = 1234


def default_dest():
    return os.environ.get("ELECTRA_TF_BENCHMARKS") or os.path.join(os.path.expanduser("~"), ".cache", "electra_tf",
                                                                    "benchmarks")


def questions(task):
    """The task's examples as `{"question", "choices", "answer"}` records, in the file's order."""
    out = []
    for example in task["examples"]:
        choices = list(example["target_scores"])
        answers = [i for i, c in enumerate(choices) if example["target_scores"][c] == 1]
        if len(answers) != 1:
            continue
        out.append({"question": example["input"].strip(), "choices": choices, "answer": answers[0]})
    return out


def fetch(dest):
    """Writes the split task under `dest/goal_step_wikihow`; returns that folder."""
    folder = os.path.join(dest, TASK)
    if os.path.exists(os.path.join(folder, "_SUCCESS")):
        print(f"already there: {folder}")
        return folder
    downloads = os.path.join(dest, "_downloads")
    os.makedirs(downloads, exist_ok=True)
    sdist = os.path.join(downloads, SDIST)
    if not os.path.exists(sdist):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-build-isolation", "-d",
                        downloads, "bigbench==1.0.0"], check=True)
    with tarfile.open(sdist) as archive:
        task = json.load(archive.extractfile(MEMBER))
    records = questions(task)
    random.Random(SEED).shuffle(records)
    os.makedirs(folder, exist_ok=True)
    start = 0
    for split, size in SPLITS:
        with open(os.path.join(folder, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records[start:start + size])
        print(f"{TASK}/{split}.jsonl: {len(records[start:start + size])} questions")
        start += size
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write("Fetched by benchmarks/fetch_multiple_choice.py; do not commit these files.\n"
                "BIG-bench goal_step_wikihow/step_inference (Apache 2.0), from PyPI bigbench 1.0.0, "
                f"shuffled with seed {SEED} into train/dev/test {'/'.join(str(n) for _, n in SPLITS)}.\n")
    open(os.path.join(folder, "_SUCCESS"), "w").close()
    return folder


def main(argv):
    del argv
    print(fetch(FLAGS.dest or default_dest()))


if __name__ == "__main__":
    from electra_tf.cli import run_script

    run_script(main)
