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
