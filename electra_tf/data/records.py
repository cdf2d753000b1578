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
    import os

    from electra_tf.data.tokenizer import built_with, load_vocab

    stats = read_stats(directory)
    if stats is None:
        return None
    stats_path = os.path.join(directory, STATS_FILE)
    if stats.get("vocab_sha256") is not None and not built_with(vocab_file, stats["vocab_sha256"]):
        sizes = (f"; {stats['vocab_size']} tokens there, {len(load_vocab(vocab_file))} in --vocab_file"
                 if "vocab_size" in stats else "")
        raise ValueError(
            f"The records in {directory} were built with another vocabulary than `--vocab_file="
            f"{vocab_file}` ({stats_path}: vocab_sha256 {stats['vocab_sha256'][:12]}...{sizes}). Pass the "
            "vocabulary they were built with."
        )
    return stats


def read_stats(directory):
    """The parsed `stats.json` of a build folder (None when there is none); a damaged one is an error naming it."""
    import json
    import os

    import tensorflow as tf

    stats_path = os.path.join(directory, STATS_FILE)
    if not tf.io.gfile.exists(stats_path):
        return None
    with tf.io.gfile.GFile(stats_path) as f:
        try:
            stats = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{stats_path} is not valid JSON ({e}): the build's statistics are damaged. Rebuild "
                             "the records, or delete that file to use them unchecked.") from None
    if not isinstance(stats, dict):
        raise ValueError(f"{stats_path} holds no JSON object: the build's statistics are damaged.")
    return stats
