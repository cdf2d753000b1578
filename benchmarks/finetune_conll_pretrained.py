r"""CoNLL-2003 NER from an encoder pre-trained by `electra_tf.pretrain`, against the same encoder untrained.

    # a tiny ELECTRA pre-trained on the shared corpus (see the README's "Pre-training data")
    python -m electra_tf.pretrain --config tiny --model_dir runs/tiny_shared ...
    python -m benchmarks.finetune_conll_pretrained --model_dir runs/tiny_shared \
        --output benchmarks/results/finetune_conll_pretrained.md
    # smoke run
    python -m benchmarks.finetune_conll_pretrained --model_dir runs/demo --train_limit 64 --dev_limit 32 \
        --epochs 1 --num_trials 1

Two encoders of the same architecture and vocabulary are fine-tuned on CoNLL-2003
(train = eng.train, dev = eng.testa) with the same recipe and seeds, by the same
`electra_tf.finetuning.trials.run_trials` that `python -m electra_tf.finetune
--task conll2003` runs:

- `pretrained`: the run's discriminator (`--init MODEL_DIR`, i.e. `discriminator.keras`).
- `random_init`: the discriminator of a freshly built pre-trainer of the run's own
  `config.json`, initialised under `keras.utils.set_random_seed(--baseline_seed)`.

Reported: dev entity F1 (CoNLL semantics) and token accuracy, mean ± std over
`--num_trials` fine-tuning seeds, training time and examples/s.
"""

import json
import os
import tempfile
import time

from absl import flags

from benchmarks import common
from electra_tf import cli


DEFAULT_DATA = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003")
flags.DEFINE_string("model_dir", None, "A pre-training run (config.json, discriminator.keras, vocab.txt).")
flags.DEFINE_string("data_dir", DEFAULT_DATA, "CoNLL-2003 folder (train.txt/dev.txt or eng.train/eng.testa).")
flags.DEFINE_integer("epochs", 3, "Training epochs (reference: 3).")
flags.DEFINE_integer("batch_size", 32, "Batch size (reference: 32).")
flags.DEFINE_float("learning_rate", 3e-4, "Peak learning rate (reference, small models: 3e-4).")
flags.DEFINE_float("layerwise_lr_decay", 0.8, "Layer-wise LR decay (reference: 0.8).")
flags.DEFINE_integer("max_seq_length", 128, "Pieces per window (reference: 128).")
flags.DEFINE_integer("num_trials", 3, "Fine-tuning seeds per encoder.")
flags.DEFINE_integer("baseline_seed", 0, "Initialisation seed of the untrained encoder.")
flags.DEFINE_integer("train_limit", None, "Use the first N training sentences.")
flags.DEFINE_integer("dev_limit", None, "Use the first N dev sentences.")
flags.DEFINE_string("workdir", None, "Where the fine-tuned models go (default: a temporary folder).")
flags.DEFINE_string("output", None, "Write the markdown report here.")
flags.mark_flag_as_required("model_dir")
FLAGS = flags.FLAGS


def finetune(init, output_dir):
    from electra_tf.finetuning.trials import run_trials
    from electra_tf.finetuning.config import FinetuneConfig

    config = FinetuneConfig(
        task="conll2003", data_dir=FLAGS.data_dir, init=init, output_dir=output_dir, epochs=FLAGS.epochs,
        batch_size=FLAGS.batch_size, learning_rate=FLAGS.learning_rate, layerwise_lr_decay=FLAGS.layerwise_lr_decay,
        seq_length=FLAGS.max_seq_length, num_trials=FLAGS.num_trials, train_limit=FLAGS.train_limit,
        dev_limit=FLAGS.dev_limit, verbose=0)
    start = time.time()
    results = run_trials(config, "tagging")
    results["seconds"] = time.time() - start
    return config, results


def report(rows, config, seconds):
    def stat(trials, key):
        import numpy as np

        values = [t["dev"][key] for t in trials]
        return f"{100 * np.mean(values):.2f} ± {100 * np.std(values):.2f}"

    from electra_tf import run_files, sources

    run = run_files.read_config(FLAGS.model_dir)
    lines = [
        "# CoNLL-2003 NER: an encoder pre-trained by `electra_tf.pretrain` vs the same encoder untrained", "",
        f"`python -m benchmarks.finetune_conll_pretrained --model_dir {FLAGS.model_dir}`", "",
        f"Encoder: {run.hidden_dim} wide, {run.num_layers} layers, {run.num_heads} heads, "
        f"FFN {run.intermediate_dim}, embeddings {run.embedding_dim}, vocabulary {run.vocab_size}; "
        f"pre-training: objective {run.objective}, {run.train_steps} steps of batch "
        f"{run.batch_size} x seq {run.seq_length}. Untrained: the same config's discriminator "
        f"initialised with seed {FLAGS.baseline_seed}.", "",
        f"Fine-tuning (both): {json.dumps(config.hparams())}. Train: eng.train; dev: eng.testa "
        f"({rows[0][1]['num_dev_sentences']} sentences).", "",
        "| encoder | dev entity F1 | dev token accuracy | trials | train s (all trials) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, results in rows:
        trials = results["trials"]
        lines.append(f"| {name} | {stat(trials, 'entity_f1')} | {stat(trials, 'token_accuracy')} | {len(trials)} | "
                     f"{sum(t['train_seconds'] for t in trials):.0f} |")
    lines += ["", "Scores x 100, mean ± std over fine-tuning seeds.", "",
              f"Versions: {', '.join(f'{k} {v}' for k, v in common.versions().items())}. Whole run {seconds / 60:.1f} min.", ""]
    return "\n".join(lines)


def main(argv):
    del argv
    from electra_tf import run_files, sources

    start = time.time()
    workdir = FLAGS.workdir or tempfile.mkdtemp(prefix="conll_pretrained_")
    rows = []
    random_path = sources.save_encoder(
        sources.untrained_encoder(run_files.read_config(FLAGS.model_dir), FLAGS.baseline_seed),
        os.path.join(workdir, "random_init_encoder"), os.path.join(FLAGS.model_dir, run_files.VOCAB_FILE))
    for name, init in (("pretrained", FLAGS.model_dir), ("random_init", random_path)):
        config, results = finetune(init, os.path.join(workdir, name))
        rows.append((name, results))
        print(name, json.dumps(results["summary"]), flush=True)
    text = report(rows, config, time.time() - start)
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
