"""Shared fixtures: a demo corpus built once, small pre-training records."""

import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The embedded demo corpus built once per session: dict(data=glob, vocab_file=path)."""
    from pipelines.demo_corpus import build_demo_data

    return build_demo_data(str(tmp_path_factory.mktemp("demo")), seq_length=128)


@pytest.fixture
def write_records():
    """Writes random pre-training records in the official format; returns their glob."""
    import numpy as np
    import tensorflow as tf

    def write(directory, num_files=2, num_examples=64, seq_length=32, vocab_size=400, seed=0,
              features=("input_ids", "input_mask", "segment_ids")):
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        rng = np.random.RandomState(seed)
        for f in range(num_files):
            with tf.io.TFRecordWriter(str(directory / f"records-{f}.tfrecord")) as writer:
                for _ in range(num_examples):
                    n = rng.randint(8, seq_length + 1)
                    ids = [101] + list(rng.randint(150, vocab_size, n - 2)) + [102] + [0] * (seq_length - n)
                    values = {"input_ids": ids, "input_mask": [1] * n + [0] * (seq_length - n),
                              "segment_ids": [0] * seq_length}
                    feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=values.get(name, values["segment_ids"])))
                               for name in features}
                    writer.write(tf.train.Example(
                        features=tf.train.Features(feature=feature)).SerializeToString())
        return str(directory / "records-*.tfrecord")

    return write
