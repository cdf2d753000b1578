"""Keras checkpoints (`--backend jax|torch` runs): written whole, restored by name, a damaged newest one skipped."""

import logging

import keras
import numpy as np
import pytest

from electra_tf.sources import keras_checkpoint
from electra_tf.sources.named_checkpoint import CheckpointMismatchError


def _model(width=3):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(width, name="dense")])
    return model


def _run(tmp_path, steps=(5, 10)):
    model = _model()
    paths = []
    for step in steps:
        model.get_layer("dense").kernel.assign(np.full((2, 3), float(step), np.float32))
        paths.append(keras_checkpoint.KerasCheckpoint(model).write(str(tmp_path / "checkpoints" / f"ckpt-{step}.npz")))
    keras_checkpoint.write_index(str(tmp_path), paths[::-1], "jax")
    return paths


def test_a_truncated_newest_checkpoint_falls_back_to_the_one_before_it(tmp_path, caplog):
    paths = _run(tmp_path)
    with open(paths[-1], "r+b") as f:
        f.truncate(100)
    model = _model()
    with caplog.at_level(logging.WARNING):
        restored = keras_checkpoint.restore_latest_good(keras_checkpoint.KerasCheckpoint(model).restore, str(tmp_path))
    assert restored == paths[0]
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model.get_layer("dense").kernel), 5.0)
    assert any("ckpt-10.npz is unreadable" in r.getMessage() for r in caplog.records)


def test_no_readable_checkpoint_names_each_and_a_mismatch_is_an_error_at_once(tmp_path):
    paths = _run(tmp_path)
    for path in paths:
        with open(path, "wb") as f:
            f.write(b"not a zip")
    with pytest.raises(ValueError, match="No readable checkpoint") as error:
        keras_checkpoint.restore_latest_good(keras_checkpoint.KerasCheckpoint(_model()).restore, str(tmp_path))
    assert all(p in str(error.value) for p in paths)
    _run(tmp_path)
    with pytest.raises(CheckpointMismatchError, match="mis-shaped"):  # the newest, not the one before it
        keras_checkpoint.restore_latest_good(keras_checkpoint.KerasCheckpoint(_model(4)).restore, str(tmp_path))
