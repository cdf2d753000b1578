r"""How to restore the input position on resume: tf.data iterator checkpoints vs replaying the step.

    python -m benchmarks.data_position --output benchmarks/results/data_position.md

1,000 TFRecord files of pre-training records (seq 128), the training
pipeline of `electra_tf.data.pretraining_dataset` with a 10,000-example
shuffle buffer, batch 128. Measured, medians of `--repeats`:
- iterator checkpoint: bytes written by `tf.train.Checkpoint(data=iterator)`
  after N batches, and the time to write and to restore it;
- replay: the time to rebuild the pipeline with `skip_batches=N` and get
  the next batch, per batch skipped;
- whether a `tf.distribute` iterator can be checkpointed at all.
Both give the same next batch (checked).
"""

import os
import statistics
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from electra_tf import cli  # noqa: E402
from electra_tf.data.pretraining_dataset import pretraining_dataset  # noqa: E402

flags.DEFINE_integer("files", 1000, "Input files.")
flags.DEFINE_integer("examples_per_file", 40, "Records per file.")
flags.DEFINE_integer("shuffle_buffer", 10000, "Examples in the shuffle buffer.")
flags.DEFINE_integer("batch_size", 128, "Global batch.")
flags.DEFINE_string("positions", "100,400,1600", "Batches already trained, comma-separated.")
flags.DEFINE_integer("repeats", 3, "Timings per measurement (median).")
flags.DEFINE_string("output", None, "Markdown report.")
FLAGS = flags.FLAGS
SEQ = 128


def write_files(directory, files, per_file):
    rng = np.random.RandomState(0)
    for f in range(files):
        with tf.io.TFRecordWriter(os.path.join(directory, f"data-{f:05d}.tfrecord")) as writer:
            for _ in range(per_file):
                n = rng.randint(64, SEQ + 1)
                ids = [101] + list(rng.randint(1000, 30000, n - 2)) + [102] + [0] * (SEQ - n)
                feature = {
                    "input_ids": ids, "input_mask": [1] * n + [0] * (SEQ - n), "segment_ids": [0] * SEQ,
                }
                example = tf.train.Example(features=tf.train.Features(feature={
                    k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feature.items()}))
                writer.write(example.SerializeToString())
    return os.path.join(directory, "data-*.tfrecord")


def dataset(pattern, skip=0):
    return pretraining_dataset(pattern, FLAGS.batch_size, SEQ, 30522, shuffle_buffer=FLAGS.shuffle_buffer,
                               seed=0, skip_batches=skip)


def median_time(fn):
    results = []
    times = common.timings(lambda: results.append(fn()), FLAGS.repeats, warmup=0, block=lambda _: None)
    return common.median(times), results[-1]


def distributed_iterator_checkpointable(pattern):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    iterator = iter(strategy.experimental_distribute_dataset(dataset(pattern)))
    try:
        tf.train.Checkpoint(data=iterator)
        return "yes"
    except ValueError as e:
        return f"no: {str(e).split('(')[0].strip()}"


def main(argv):
    del argv
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pattern = write_files(tmp, FLAGS.files, FLAGS.examples_per_file)
        for position in [int(p) for p in FLAGS.positions.split(",")]:
            iterator = iter(dataset(pattern))
            for _ in range(position):
                next(iterator)
            checkpoint = tf.train.Checkpoint(data=iterator)
            prefix = os.path.join(tmp, f"ckpt-{position}")
            write_s, path = median_time(lambda: checkpoint.write(prefix))
            size = sum(os.path.getsize(p) for p in tf.io.gfile.glob(path + "*"))
            expected = next(iterator)

            def restore():
                fresh = iter(dataset(pattern))
                tf.train.Checkpoint(data=fresh).read(path).assert_consumed()
                return next(fresh)

            restore_s, restored = median_time(restore)
            replay_s, replayed = median_time(lambda: next(iter(dataset(pattern, skip=position))))
            for got in (restored, replayed):
                assert all(np.array_equal(got[k], expected[k]) for k in expected), "not the same next batch"
            rows.append((position, size, write_s, restore_s, replay_s))
            print(f"position {position}: iterator checkpoint {size / 1e6:.1f} MB, write {write_s:.2f} s, "
                  f"restore {restore_s:.2f} s; replay {replay_s:.2f} s", flush=True)
        distributed = distributed_iterator_checkpointable(pattern)
    per_batch = statistics.median((r[4] - rows[0][4]) / (r[0] - rows[0][0]) for r in rows[1:]) if len(rows) > 1 else 0
    lines = [
        "# Restoring the input position: iterator checkpoint vs replay",
        "",
        f"`{common.command_line('benchmarks.data_position')}` ({FLAGS.files} files x {FLAGS.examples_per_file} records, "
        f"seq {SEQ}, shuffle buffer {FLAGS.shuffle_buffer}, batch {FLAGS.batch_size}, medians of "
        f"{FLAGS.repeats}; TF {tf.__version__}, {os.cpu_count()} CPUs). Both give the same next batch (asserted).",
        "",
        "| batches trained | iterator checkpoint size | write | restore + next batch | replay + next batch |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {p:,} | {s / 1e6:.1f} MB | {w:.2f} s | {r:.2f} s | {rp:.2f} s |" for p, s, w, r, rp in rows]
    lines += [
        "",
        f"Replay costs about {per_batch * 1e3:.2f} ms per batch skipped here, i.e. about "
        f"{per_batch * 1e6 / 3600:.1f} h per million steps at this batch on one input pipeline "
        "(records are skipped before parsing; each worker replays only its own shard).",
        f"Can a `tf.distribute` iterator be checkpointed (OneDeviceStrategy)? {distributed}.",
    ]
    text = "\n".join(lines) + "\n"
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
