"""The pre-training record format and the files of a data build: the one schema.

A record is a `tf.train.Example` with Int64[seq_length] features `input_ids`,
`input_mask` and `segment_ids` (the official ELECTRA format), written by
`electra_tf.pipelines` (`packing.encode_examples`) and read by
`electra_tf.data.pretraining_dataset`. A build folder holds the shards, a
`stats.json` (counts, `vocab_sha256`, tokenizer settings) and, last, `_SUCCESS`.
"""

FEATURES = ("input_ids", "input_mask", "segment_ids")  # sorted: the proto's deterministic order
SHARD_PREFIX = "pretrain_data.tfrecord-"
SHARD_PATTERN = SHARD_PREFIX + "{index:05d}-of-{num_shards:05d}"
SHARD_GLOB = SHARD_PREFIX + "*"
STATS_FILE = "stats.json"
SUCCESS_FILE = "_SUCCESS"


def check_vocabulary(directory, vocab_file):
    """Refuses a build folder whose `stats.json` says it was built with another vocabulary than `vocab_file`.

    Returns the parsed `stats.json` (None when there is none: other tools, older builds are not checked).
    """
    import json
    import os

    import tensorflow as tf

    from electra_tf.data.tokenizer import vocab_digest

    stats_path = os.path.join(directory, STATS_FILE)
    if not tf.io.gfile.exists(stats_path):
        return None
    with tf.io.gfile.GFile(stats_path) as f:
        stats = json.load(f)
    if stats.get("vocab_sha256") not in (None, vocab_digest(vocab_file)):
        raise ValueError(
            f"The records in {directory} were built with another vocabulary than `--vocab_file="
            f"{vocab_file}` ({stats_path}: vocab_sha256 {stats['vocab_sha256'][:12]}...). Pass the "
            "vocabulary they were built with."
        )
    return stats
