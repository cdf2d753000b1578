r"""Decodes pre-training TFRecords once into numpy arrays, which train with no TensorFlow to read them.

    python -m electra_tf.pipelines.records_to_arrays --data 'pretrain/pretrain_data.tfrecord-*' \
        --output_dir pretrain_arrays

Writes one `shard-NNNNN.npy` per record file (int32 `(examples, 3, seq_length)`), the records' `vocab.txt`
(and `electra_tokenizer.json`, `stats.json`) and, last, `arrays.json`: the folder is then a `--data` of
`electra_tf.pretrain` under any `--backend` (`electra_tf.data.arrays` reads it with numpy memory maps).
The folder is written whole or not at all (under a temporary name, renamed when complete); an existing
non-empty `--output_dir` is refused, nothing overwritten. Reading the records needs TensorFlow; training
on the arrays does not.
"""

if __name__ == "__main__":  # a program: quiet TensorFlow's start-up before it is imported (electra_tf.cli)
    from electra_tf import cli as _cli

    _cli.prepare_tensorflow()


import os
import shutil

import numpy as np
from absl import flags

from electra_tf import atomic, cli, run_files
from electra_tf.data import arrays
from electra_tf.data.records import FEATURES, STATS_FILE
from electra_tf.data.tokenizer import SETTINGS_FILE, VOCAB_FILE

FLAGS = flags.FLAGS
ALIASES = {}


def decode_file(path, seq_length=None):
    """The records of one TFRecord file as int32 `(examples, 3, seq_length)` (`arrays.FEATURES` order)."""
    import tensorflow as tf

    from electra_tf.data.pretraining_dataset import check_record_format

    first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    if first is None:
        raise ValueError(f"{path} holds no records.")
    if seq_length is None:
        seq_length = len(tf.train.Example.FromString(first.numpy()).features.feature[FEATURES[0]].int64_list.value)
    check_record_format(path, seq_length)
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in FEATURES}
    rows = []
    try:
        for batch in tf.data.TFRecordDataset(path).batch(1024):
            parsed = tf.io.parse_example(batch, spec)
            rows.append(np.stack([parsed[name].numpy() for name in arrays.FEATURES], axis=1))
    except tf.errors.DataLossError as e:
        raise ValueError(f"{path} is not a readable TFRecord file: {e.message}") from None
    except tf.errors.InvalidArgumentError as e:
        raise ValueError(f"{path}: a record is not {seq_length} tokens of {list(FEATURES)} ({e.message.splitlines()[0]})"
                         ) from None
    values = np.concatenate(rows)
    if values.size and (values.max() > np.iinfo(np.int32).max or values.min() < 0):
        raise ValueError(f"{path}: a value outside 0..2**31-1: not pre-training records.")
    return values.astype(np.int32), seq_length


def convert(data, output_dir):
    """Writes the arrays of the records `data` (comma-separated globs) into `output_dir`; returns the manifest."""
    from electra_tf.data.pretraining_dataset import list_files

    files = list_files(data)
    run_files.guard_output(output_dir, "output_dir", None, inputs=files)
    beside = sorted({os.path.dirname(path) for path in files})
    with atomic.staged_folder(output_dir, "output_dir") as folder:
        shards, seq_length = [], None
        for path in files:
            rows, seq_length = decode_file(path, seq_length)
            shards.append(rows)
        manifest = arrays.write_folder(folder, shards, seq_length, files)
        for name in (VOCAB_FILE, SETTINGS_FILE, STATS_FILE):
            found = [os.path.join(d, name) for d in beside if os.path.isfile(os.path.join(d, name))]
            if found:
                shutil.copyfile(found[0], os.path.join(folder, name))
    return manifest


def define_flags():
    """Defines the CLI flags (only when run as a script)."""
    flags.DEFINE_string("data", None, "Glob(s) of pre-training TFRecord files, comma-separated.")
    cli.define_output_dir("Folder to write the arrays into (new or empty).")
    flags.mark_flags_as_required(["data", "output_dir"])


def main(argv):
    del argv
    manifest = convert(FLAGS.data, FLAGS.output_dir)
    print(f"Wrote {manifest['examples']:,} examples of {manifest['seq_length']} tokens in "
          f"{len(manifest['shards'])} shard(s) to {FLAGS.output_dir}: train on them with --data {FLAGS.output_dir}.")


def run():
    define_flags()
    cli.run(main, aliases=ALIASES)


if __name__ == "__main__":
    run()
