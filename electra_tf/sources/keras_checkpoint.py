"""Checkpoints of runs trained under `--backend jax` or `torch`: every variable by name, in a numpy `.npz`.

TensorFlow's checkpoints (`named_checkpoint`) hold TensorFlow variables; Keras' variables on JAX and
PyTorch are saved here instead, under the same names (`named_checkpoint.checkpoint_names`):

    model/<layer>/.../<variable>            weights, and the dropout seed generators' states
    optimizer/slots/<variable>/<slot>       Adam moments, ...
    optimizer/state/<name>                  iterations (the step), learning rate, ...
    metrics/<metric>/<variable>             the epoch's metric totals so far
    loss_scale/<name>                       a loss scaler's state (mixed_float16)
    position/batches_read                   the input position (batches read; a function of the step)

`model_dir/checkpoints/ckpt-N.npz` is written whole under a temporary name and renamed (`atomic`); then
`checkpoints.json` (the backend, the kept checkpoints newest first), also whole, so a run killed mid-save
resumes from the checkpoint before. Restoring checks names and shapes as `NamedCheckpoint.restore` does
(`CheckpointMismatchError`); an unreadable file is skipped for the one before it (`restore_latest_good`).
The arrays are backend-neutral: a TensorFlow model reads them as well (`sources.restore_pretrainer`).
"""

import os
import zipfile

import keras
import numpy as np

from electra_tf import atomic, run_files
from electra_tf.sources import named_checkpoint
from electra_tf.sources.named_checkpoint import (CheckpointMismatchError, _OPTIONAL, _describe,
                                                 checkpoint_names)

POSITION = "position/batches_read"
FORMAT = "electra_tf keras checkpoint"
# An unreadable checkpoint file: missing, truncated, not a zip.
DAMAGE = (OSError, EOFError, zipfile.BadZipFile, KeyError, ValueError)


class KerasCheckpoint:
    """The variables of a model (and optionally its optimizer, metrics, loss scaler), saved and restored by name.

    Args: as `NamedCheckpoint`'s.

    Example:
        ```python
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.sources.keras_checkpoint import KerasCheckpoint

        encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=8, embedding_dim=8,
                                 intermediate_dim=16)
        encoder.build()
        KerasCheckpoint(encoder).write("keras_example/ckpt-1.npz")
        KerasCheckpoint(encoder).restore("keras_example/ckpt-1.npz")
        ```
    """

    def __init__(self, model, optimizer=None, metrics=(), loss_scale=None):
        self.names = checkpoint_names(model, optimizer, metrics, loss_scale)

    def arrays(self):
        return {f"{section}/{name}": keras.ops.convert_to_numpy(variable)
                for section, variables in self.names.items() for name, variable in variables.items()}

    def write(self, path, position=None, flag="model_dir"):
        """Writes every variable (and the input position) to `path` whole; returns `path`."""
        values = self.arrays()
        if position is not None:
            values[POSITION] = np.asarray(position, np.int64)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with atomic.open_write(path, "wb", flag) as f:
            np.savez(f, **values)
        return path

    def restore(self, path):
        """Restores every variable of this object's sections from `path`, or raises `CheckpointMismatchError`
        naming what is missing, unexpected or mis-shaped (an unreadable file: one of `DAMAGE`)."""
        with np.load(path, allow_pickle=False) as stored_file:
            stored = {name: stored_file[name] for name in stored_file.files}
        sections = {s: v for s, v in self.names.items()
                    if s not in _OPTIONAL or any(k.startswith(s + "/") for k in stored)}
        problems = []
        for section, variables in sections.items():
            expected = {f"{section}/{name}": v for name, v in variables.items()}
            missing = [k for k in expected if k not in stored]
            unexpected = [k for k in stored if k.startswith(section + "/") and k not in expected]
            shapes = [f"{k} {list(stored[k].shape)} != {list(v.shape)}" for k, v in expected.items()
                      if k in stored and tuple(stored[k].shape) != tuple(v.shape)]
            problems += _describe("missing", missing) + _describe("unexpected", unexpected)
            problems += _describe("mis-shaped (checkpoint != model)", shapes)
        if problems:
            raise CheckpointMismatchError(
                f"Checkpoint {path} does not match the model it is restored into: " + "; ".join(problems))
        for section, variables in sections.items():
            for name, variable in variables.items():
                variable.assign(stored[f"{section}/{name}"].astype(keras.backend.standardize_dtype(variable.dtype)))
        return int(stored[POSITION]) if POSITION in stored else None


def write_index(model_dir, kept, backend):
    """Writes `checkpoints.json`: the backend and the kept checkpoints' file names, newest first."""
    path = os.path.join(model_dir, run_files.CHECKPOINT_DIR, run_files.KERAS_CHECKPOINT_INDEX)
    atomic.write_json(path, {"format": FORMAT, run_files.BACKEND_KEY: backend,
                             "kept": [os.path.basename(p) for p in kept]}, flag="model_dir")


def restore_latest_good(restore, model_dir):
    """`named_checkpoint.restore_latest_good` for Keras checkpoints: the newest readable one, falling back over
    damaged ones (named in a warning); a checkpoint that does not fit the model is an error at once."""
    return named_checkpoint.restore_latest_good(restore, model_dir, damage=DAMAGE)


def all_finite(variables):
    """True when every float variable holds only finite values (any backend)."""
    for variable in variables:
        if "float" in keras.backend.standardize_dtype(variable.dtype):
            if not np.isfinite(keras.ops.convert_to_numpy(variable)).all():
                return False
    return True
