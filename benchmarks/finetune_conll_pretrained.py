r"""CoNLL-2003 NER from an encoder pre-trained by `electra_tf.pretrain`, against the same encoder untrained.

    # a tiny ELECTRA pre-trained on the shared corpus (see the README's "Pre-training data")
    python -m electra_tf.pretrain --config tiny --model_dir runs/tiny_shared ...
    python -m benchmarks.finetune_conll_pretrained --model_dir runs/tiny_shared \
        --output benchmarks/results/finetune_conll_pretrained.md
    # smoke run
    python -m benchmarks.finetune_conll_pretrained --model_dir runs/demo --train_limit 64 --dev_limit 32 \
        --epochs 1 --num_trials 1

Two encoders of the same architecture and vocabulary are fine-tuned on CoNLL-2003 (`--task conll2003`
on `$BENCH_DATA/conll2003`) with the same recipe and seeds by `run_trials`, what `python -m
electra_tf.finetune` runs: `pretrained`, the run's discriminator (`--init MODEL_DIR`), and
`random_init`, the discriminator of the run's own `config.json` initialised under
`keras.utils.set_random_seed(--baseline_seed)`. Every recipe flag is the fine-tuning command's (its
defaults, the reference recipe; `--num_trials` 3). Reported: dev entity F1 and token accuracy, mean
± std over the trials' seeds, and the training time.
"""

import json
import os
import tempfile
import time

import numpy as np
from absl import flags

from benchmarks import common
from electra_tf import cli

cli.prepare_tensorflow()  # as the command: oneDNN's CPU kernels, TensorFlow's start-up lines left out
common.define_finetune_flags(task="conll2003", data_dir=common.bench_data("conll2003"), num_trials=3, verbose=0)
flags.DEFINE_string("model_dir", None, "A pre-training run (config.json, discriminator.keras, vocab.txt).")
flags.DEFINE_integer("baseline_seed", 0, "Initialisation seed of the untrained encoder.")
flags.DEFINE_string("workdir", None, "Where the fine-tuned models go (default: a temporary folder).")
flags.DEFINE_string("output", None, "Write the markdown report here.")
flags.mark_flag_as_required("model_dir")
FLAGS = flags.FLAGS


def report(rows, config, seconds):
    from electra_tf import run_files

    def stat(trials, key):
        values = [100 * t["dev"][key] for t in trials]
        return f"{np.mean(values):.2f} ± {np.std(values):.2f}"

    run = run_files.read_config(FLAGS.model_dir)
    lines = [
        "# CoNLL-2003 NER: an encoder pre-trained by `electra_tf.pretrain` vs the same encoder untrained", "",
        f"`{common.command_line('benchmarks.finetune_conll_pretrained')}`", "",
        f"Encoder: {run.hidden_dim} wide, {run.num_layers} layers, {run.num_heads} heads, FFN {run.intermediate_dim}, "
        f"embeddings {run.embedding_dim}, vocabulary {run.vocab_size}; pre-training: objective {run.objective}, "
        f"{run.train_steps} steps of batch {run.batch_size} x seq {run.seq_length}. Untrained: the same config's "
        f"discriminator initialised with seed {FLAGS.baseline_seed}.", "",
        f"Fine-tuning (both): {json.dumps(config.hparams())}. Dev: {rows[0][1]['num_dev_sentences']} sentences.", "",
        "| encoder | dev entity F1 | dev token accuracy | trials | train s (all trials) |", "|---|---:|---:|---:|---:|",
    ]
    for name, results in rows:
        trials = results["trials"]
        lines.append(f"| {name} | {stat(trials, 'entity_f1')} | {stat(trials, 'token_accuracy')} | {len(trials)} | "
                     f"{sum(t['train_seconds'] for t in trials):.0f} |")
    return "\n".join(lines + ["", "Scores x 100, mean ± std over fine-tuning seeds.", "",
                              f"Versions: {common.versions_text()}. Whole run {seconds / 60:.1f} min.", ""])


def main(argv):
    del argv
    from electra_tf import run_files, sources

    start, config = time.time(), common.finetune_config()
    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="conll_pretrained_")
    random_path = sources.save_encoder(
        sources.untrained_encoder(run_files.read_config(FLAGS.model_dir), FLAGS.baseline_seed),
        os.path.join(workdir, "random_init_encoder"), os.path.join(FLAGS.model_dir, run_files.VOCAB_FILE))
    rows = []
    for name, init in (("pretrained", FLAGS.model_dir), ("random_init", random_path)):
        results = common.run_electra_tf(config.replace(init=init, output_dir=os.path.join(workdir, name)), "tagging")
        rows.append((name, results))
        print(name, json.dumps(results["summary"]), flush=True)
    common.write_report(report(rows, config, time.time() - start), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
