"""`inspect_records` checks the records' vocabulary as `pretrain` does and names ids outside it."""

import json

import pytest
import tensorflow as tf

from helpers import run_python, write_records, write_vocab
from electra_tf.data.tokenizer import vocab_digest
from electra_tf.pipelines import inspect_records as inspect_lib


def test_records_of_another_vocabulary_are_refused_naming_stats_json(tmp_path):
    data = write_records(tmp_path / "data", num_files=1, num_examples=4)
    other = write_vocab(tmp_path / "other_vocab.txt", vocab_size=500)  # not the records' vocabulary
    (tmp_path / "data" / "stats.json").write_text(json.dumps({"vocab_sha256": vocab_digest(str(tmp_path / "data" / "vocab.txt"))}))
    assert len(inspect_lib.decode_examples(data, str(tmp_path / "data" / "vocab.txt"), num=2)) == 2
    with pytest.raises(ValueError, match=r"built with another vocabulary than `--vocab_file=.*other_vocab.txt` "
                                         r"\(.*stats.json: vocab_sha256"):
        inspect_lib.decode_examples(data, other, num=2)
    result = run_python(["-m", "electra_tf.pipelines.inspect_records", "--data", data, "--vocab_file", other],
                        check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: The records in ")


@pytest.mark.parametrize("bad_id", [-5, 400, 10_000])
def test_ids_outside_the_vocabulary_are_named(tmp_path, bad_id):
    vocab = write_vocab(tmp_path / "vocab.txt", vocab_size=400)
    ids = [101, 200, bad_id, 102, 0]
    feature = {"input_ids": ids, "input_mask": [1, 1, 1, 1, 0], "segment_ids": [0] * 5}
    example = tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in feature.items()}))
    with tf.io.TFRecordWriter(str(tmp_path / "r.tfrecord")) as writer:
        writer.write(example.SerializeToString())
    with pytest.raises(ValueError, match=rf"r.tfrecord: record 0 holds token id\(s\) \[{bad_id}\] outside the "
                                         r"vocabulary .*vocab.txt \(ids 0..399\)"):
        inspect_lib.decode_examples(str(tmp_path / "r.tfrecord"), vocab, num=1)
