"""TFRecord framing in one piece, against TensorFlow's own writer and reader."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.pipelines import tfrecord


def test_crc32c_check_value():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    assert tfrecord.crc32c(b"") == 0


def test_frames_are_byte_identical_to_tfrecordwriter(tmp_path):
    rng = np.random.default_rng(0)
    sizes = [0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 4099] + list(rng.integers(0, 3000, 40))
    records = [rng.bytes(int(n)) for n in sizes]
    reference = tmp_path / "reference.tfrecord"
    with tf.io.TFRecordWriter(str(reference)) as writer:
        for record in records:
            writer.write(record)
    offsets = np.cumsum([0] + [len(r) for r in records])
    framed = tfrecord.frame_records(np.frombuffer(b"".join(records), np.uint8), offsets)
    assert framed == reference.read_bytes()
    path = tmp_path / "ours.tfrecord"
    path.write_bytes(framed)
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
    assert tfrecord.frame_records(b"", [0]) == b""


def test_bad_offsets_are_rejected():
    with pytest.raises(ValueError, match="offsets"):
        tfrecord.frame_records(b"abc", [0, 5])
    with pytest.raises(ValueError, match="offsets"):
        tfrecord.frame_records(b"abc", [2, 1])
