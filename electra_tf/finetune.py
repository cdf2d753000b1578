r"""Fine-tunes a pre-trained ELECTRA discriminator on a classification task.

    python -m electra_tf.finetune --task movie_polarity \
        --data_dir ../shared/data/tasks/movie_polarity --init electra_runs/small \
        --output_dir runs/movie_polarity --epochs 3 --batch_size 32 \
        --learning_rate 3e-4 --layerwise_lr_decay 0.8 --max_seq_length 128 --num_trials 5

`--init` is a pre-training `model_dir` (config.json + discriminator.keras or
checkpoints), an `ElectraEncoder` `.keras` file (with `--vocab_file`), or a
folder written by `python -m electra_tf.export --kind encoder`. `--task` is a
GLUE name (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) or any name
for a TSV/CSV read with `--text_a_column/--text_b_column/--label_column`.

The recipe is the reference's (section 5), in `electra_tf.training.finetuning`.
Each trial restarts from `--init` with seed `seed + trial`;
the dev metric of every trial and their mean / median / std / min / max go to
`output_dir/results.json`. The best trial's model is saved as
`output_dir/classifier.keras` with `vocab.txt` and `finetune_config.json`,
which `python -m electra_tf.export --kind serving` reads.
"""

import os

from absl import app, flags

from electra_tf import cli
from electra_tf.data import tasks as tasks_lib
from electra_tf.training.finetune_files import RESULTS_FILE
from electra_tf.training.finetuning import run_finetuning

flags.DEFINE_string("task", None, "GLUE task name, or a name for a generic TSV/CSV task.")
flags.DEFINE_string("data_dir", None, "Folder with train/dev(/test).tsv (+ labels.txt).")
flags.DEFINE_string("init", None, "Pre-training model_dir, encoder .keras file, or exported encoder.")
flags.DEFINE_string("vocab_file", None, "Vocabulary; default: the one beside --init.")
flags.DEFINE_string("output_dir", None, "Results, the best classifier, its vocab and config.")
flags.DEFINE_integer("epochs", 3, "Training epochs (reference: 3; 10 for RTE and STS-B).")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_float("learning_rate", 3e-4, "Peak LR of the task head (3e-4 small, 1e-4 base, 5e-5 large).")
flags.DEFINE_float("layerwise_lr_decay", 0.8, "Layer-wise LR decay (0.8 small/base, 0.9 large; 1 = off).")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay (reference: 0).")
flags.DEFINE_float("clip_norm", 1.0, "Global-norm gradient clipping; 0 disables.")
flags.DEFINE_float("dropout", 0.1, "Dropout on the [CLS] vector.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per example, [CLS]/[SEP] included.")
flags.DEFINE_integer("num_trials", 1, "Fine-tuning runs from the same checkpoint (reference: 10).")
flags.DEFINE_integer("seed", 0, "Seed of trial 0; trial i uses seed + i.")
flags.DEFINE_string("text_a_column", "sentence", "Generic tasks: first text column (name or index).")
flags.DEFINE_string("text_b_column", None, "Generic tasks: second text column, for pairs.")
flags.DEFINE_string("label_column", "label", "Generic tasks: label column.")
flags.DEFINE_bool("regression", False, "Generic tasks: float labels (Pearson/Spearman).")
flags.DEFINE_enum("file_format", "tsv", ["tsv", "csv"], "Generic tasks: file format.")
flags.DEFINE_bool("both_orders", None, "Also train on (b, a) pairs; default on for MRPC and STS-B.")
flags.DEFINE_integer("train_limit", None, "Use only the first N training examples (smoke runs).")
flags.DEFINE_integer("dev_limit", None, "Use only the first N dev examples (smoke runs).")
flags.DEFINE_integer("verbose", 2, "Keras progress: 0 silent, 1 bar, 2 a line per epoch.")

FLAGS = flags.FLAGS


def _column(value):
    return int(value) if value is not None and value.isdigit() else value


def main(argv):
    del argv
    for name in ("task", "data_dir", "init", "output_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    generic = {}
    if not tasks_lib.is_glue_task(FLAGS.task):
        generic = dict(
            text_a_column=_column(FLAGS.text_a_column),
            text_b_column=_column(FLAGS.text_b_column),
            label_column=_column(FLAGS.label_column),
            regression=FLAGS.regression,
            file_format=FLAGS.file_format,
        )
    spec = tasks_lib.load_task(FLAGS.task, FLAGS.data_dir, **generic)
    results = run_finetuning(
        spec, FLAGS.data_dir, FLAGS.init, FLAGS.output_dir, vocab_file=FLAGS.vocab_file,
        epochs=FLAGS.epochs, batch_size=FLAGS.batch_size, learning_rate=FLAGS.learning_rate,
        layerwise_lr_decay=FLAGS.layerwise_lr_decay, warmup_proportion=FLAGS.warmup_proportion,
        weight_decay=FLAGS.weight_decay, clip_norm=FLAGS.clip_norm, dropout=FLAGS.dropout,
        max_seq_length=FLAGS.max_seq_length, num_trials=FLAGS.num_trials, seed=FLAGS.seed,
        both_orders=FLAGS.both_orders, train_limit=FLAGS.train_limit, dev_limit=FLAGS.dev_limit,
        verbose=FLAGS.verbose,
    )
    for trial in results["trials"]:
        print(f"trial {trial['trial']} seed {trial['seed']}: dev {results['metric']} = "
              f"{trial['dev'][results['metric']]:.4f}")
    s = results["summary"][f"dev_{results['metric']}"]
    print(f"dev {results['metric']}: mean {s['mean']:.4f} median {s['median']:.4f} std {s['std']:.4f} "
          f"min {s['min']:.4f} max {s['max']:.4f} ({len(results['trials'])} trials)")
    print(f"results: {os.path.join(FLAGS.output_dir, RESULTS_FILE)}")


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
