"""The pre-training reader: names, dtypes, per-worker sharding and batch sizes."""

import tensorflow as tf

from electra_tf.data.pretraining_dataset import pretraining_dataset


def test_reader_renames_features_and_casts(write_records, tmp_path):
    data = write_records(tmp_path, num_files=2, num_examples=20, seq_length=16)
    batch = next(iter(pretraining_dataset(data, batch_size=8, seq_length=16, vocab_size=400, seed=0)))
    assert set(batch) == {"token_ids", "segment_ids", "padding_mask"}
    assert all(v.dtype == tf.int32 and v.shape == (8, 16) for v in batch.values())
    assert (batch["token_ids"][:, 0].numpy() == 101).all()


def test_each_worker_reads_its_own_files_at_the_per_replica_batch(write_records, tmp_path):
    data = write_records(tmp_path, num_files=4, num_examples=12, seq_length=16)
    seen = []
    for worker in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker,
                                             num_replicas_in_sync=4)  # 2 workers x 2 replicas
        dataset = pretraining_dataset(data, batch_size=16, seq_length=16, vocab_size=400,
                                      input_context=context, repeat=False)
        batches = list(dataset)
        assert all(b["token_ids"].shape == (4, 16) for b in batches)  # 16 / 4 replicas
        seen.append({tuple(row) for b in batches for row in b["token_ids"].numpy().tolist()})
    assert seen[0] and seen[1] and not (seen[0] & seen[1])  # disjoint files per worker
