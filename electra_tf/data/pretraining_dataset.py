"""Pre-training TFRecords (the official format) -> batches the pretrainer reads.

Records hold Int64[seq_length] `input_ids`, `input_mask`, `segment_ids`; the
model reads int32 `token_ids`, `padding_mask`, `segment_ids`. This is the one
place the names change.
"""

import tensorflow as tf

from electra_tf.data.records import FEATURES, SHARD_GLOB


def list_files(patterns, flag="data"):
    """Files matching comma-separated glob(s), sorted; an error names the flag and a pattern that matches none."""
    files = []
    for pattern in [p for p in patterns.split(",") if p]:
        if tf.io.gfile.isdir(pattern):
            raise IsADirectoryError(
                f"`--{flag}={pattern}` is a folder; give a glob of its record files, e.g. "
                f"`--{flag}={pattern.rstrip('/')}/{SHARD_GLOB}`."
            )
        matched = sorted(path for path in tf.io.gfile.glob(pattern) if not tf.io.gfile.isdir(path))
        if not matched:
            raise FileNotFoundError(f"No pre-training files match `--{flag}={pattern}`.")
        files.extend(matched)
    if not files:
        raise FileNotFoundError(f"No pre-training files given: `--{flag}={patterns!r}`.")
    return files


def check_record_format(path, seq_length):
    """Reads the first record of `path` and checks the official feature names and lengths."""
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.DataLossError as e:
        raise ValueError(f"{path} is not a readable TFRecord file: {e.message}") from None
    if first is None:
        raise ValueError(f"{path} holds no records.")
    example = tf.train.Example.FromString(first.numpy())
    features = example.features.feature
    missing = [name for name in FEATURES if name not in features]
    if missing:
        raise ValueError(
            f"{path}: records lack feature(s) {missing}; found {sorted(features)}. "
            f"Pre-training records need Int64 {list(FEATURES)} of length {seq_length}."
        )
    for name in FEATURES:
        length = len(features[name].int64_list.value)
        if length != seq_length:
            raise ValueError(
                f"{path}: feature `{name}` has length {length}, but `seq_length={seq_length}`."
            )


SEGMENT_CHECK_RECORDS = 100  # records read at the start of each file by `check_segment_ids`


def check_segment_ids(path, num_segments, flag="data"):
    """Refuses a file whose first records hold a segment id >= `num_segments` (the segment table's rows).

    Training would otherwise fail in its first steps with TensorFlow's gather error naming no flag.
    """
    for record in tf.data.TFRecordDataset(path).take(SEGMENT_CHECK_RECORDS):
        ids = tf.train.Example.FromString(record.numpy()).features.feature["segment_ids"].int64_list.value
        largest = max(ids, default=0)
        if largest >= num_segments:
            raise ValueError(
                f"`--num_segments={num_segments}` does not fit the records of `--{flag}`: {path} holds segment id "
                f"{largest} (the segment table has rows 0..{num_segments - 1}). Use --num_segments {largest + 1}, "
                "or records built for one segment.")


def pretraining_dataset(
    patterns,
    batch_size,
    seq_length,
    vocab_size,
    input_context=None,
    shuffle_buffer=1000,
    seed=None,
    repeat=True,
    skip_batches=0,
):
    """A `tf.data.Dataset` of pre-training batches.

    Files are listed, sharded per input pipeline (`input_context`: one per
    worker under MultiWorkerMirroredStrategy / TPUStrategy), shuffled,
    read by a parallel interleave, shuffled again, repeated, batched with
    `drop_remainder` and prefetched, as the official reader does.

    Args:
        patterns: str. Comma-separated file globs (local or `gs://`).
        batch_size: int. Global batch size; the per-replica share of it when
            `input_context` is given.
        seq_length: int. Record length.
        vocab_size: int. Token ids must be below it; a larger one stops
            training with an error instead of silently embedding zeros (GPUs).
        input_context: optional `tf.distribute.InputContext`.
        shuffle_buffer: int. Examples in the shuffle buffer.
        seed: optional int. Shuffle seed.
        repeat: bool. Repeat forever (training) or read once (evaluation).
        skip_batches: int. Start after this many batches (a resumed run's
            position). With a `seed` the stream is deterministic, so this is
            exactly where the interrupted run stopped.

    Why the position is replayed rather than saved: TF 2.21 cannot checkpoint
    the iterators of `tf.distribute` datasets (`DistributedIterator` is not
    `Trackable`), which every strategy but the default one uses; replaying
    works under all of them and per worker, costs nothing in the checkpoint,
    and skips raw records before parsing. (`benchmarks/data_position.py` at
    commit 8108a41, removed since, measured both ways with 1,000 files and a
    10,000-example buffer.)

    Returns:
        Dataset of dicts of int32 `(batch, seq_length)` tensors: `token_ids`,
        `segment_ids`, `padding_mask`.
    """
    files = list_files(patterns)
    check_record_format(files[0], seq_length)  # `pretraining.train` checks every file before it starts
    if input_context is not None:
        # `distribute_datasets_from_function` wants per-replica batches.
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) < input_context.num_input_pipelines:
            raise ValueError(
                f"{len(files)} file(s) for {input_context.num_input_pipelines} input "
                "pipelines: write at least one shard per worker."
            )
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if repeat:
        dataset = dataset.repeat().shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(4, len(files)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=seed is not None,
    )
    if repeat:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    if skip_batches:
        dataset = dataset.skip(skip_batches * batch_size)  # raw records: no parsing while replaying
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in FEATURES}

    def decode(records):
        parsed = tf.io.parse_example(records, spec)
        ids = _check_ids(tf.cast(parsed["input_ids"], tf.int32), vocab_size, patterns)
        return {
            "token_ids": ids,
            "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
            "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
        }

    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _check_ids(ids, vocab_size, patterns):
    with tf.control_dependencies(
        [
            tf.debugging.assert_less(
                ids,
                vocab_size,
                message=(
                    f"A token id is >= vocab_size={vocab_size} in `--data={patterns}`: "
                    "the records were built with a larger vocabulary than the model's."
                ),
            ),
            tf.debugging.assert_non_negative(ids, message=f"Negative token id in `--data={patterns}`."),
        ]
    ):
        return tf.identity(ids)
