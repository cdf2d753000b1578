"""The encoder guard: every encoder the experiment fine-tunes equals the live model that produced it.

Before an encoder is fine-tuned, its sequence outputs on a fixed held-out batch (dropout off) must be
within `GUARD_ATOL` of the outputs the live pre-training model gave at the same step
(`RecordLiveOutputs`, written beside the checkpoints), or of the model `train` returned; otherwise
`EncoderMismatch` stops the run. A restore or export that loses any variable differs by far more.
"""

import json
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from benchmarks.common import load_init, read_json, write_json
from electra_tf import run_files, sources

GUARD_FILE = "guard.npz"  # beside each exported encoder: the guard batch and its live outputs
GUARD_ATOL = 1e-5  # max |diff| of float32 sequence outputs; a restore that misses any variable is >> 1e-3
GUARD_DIR = "guard"  # in a pre-training model_dir: step-N.npz, the live discriminator's outputs at step N
GUARD_SEQUENCES = 8


class EncoderMismatch(RuntimeError):
    """An encoder about to be fine-tuned is not the model that pre-training produced."""


def encoder_outputs(encoder, batch):
    """Sequence output of `encoder` on `batch`, dropout off."""
    return np.asarray(encoder(batch, training=False), dtype=np.float32)


def write_reference(path, batch, outputs, **meta):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        np.savez(f, outputs=outputs, meta=json.dumps(meta), **batch)
    os.replace(path + ".tmp", path)


def read_reference(path):
    """`(batch, outputs, meta)` written by `write_reference`; FileNotFoundError when absent."""
    with np.load(path) as z:
        batch = {k: z[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        return batch, z["outputs"], json.loads(str(z["meta"]))


def check_encoder(encoder, batch, reference, name, atol=GUARD_ATOL):
    """Raises `EncoderMismatch` unless `encoder`'s outputs on `batch` are within `atol` of `reference`.

    Returns:
        float, the max |diff|.
    """
    found = encoder_outputs(encoder, batch)
    if found.shape != reference.shape:
        raise EncoderMismatch(f"{name}: outputs of shape {found.shape}, the pre-trained model's {reference.shape}.")
    diff = float(np.max(np.abs(found - reference)))
    if not diff <= atol:  # also catches NaN
        raise EncoderMismatch(
            f"{name} is not the model pre-training produced: max |output diff| {diff:.3g} > {atol:g} on the "
            f"guard batch (dropout off). The restore or export lost weights; refusing to fine-tune it."
        )
    return diff


class RecordLiveOutputs(keras.callbacks.Callback):
    """Writes the live discriminator's outputs on the guard batch at each of `steps` (`step-N.npz`).

    Why a callback: a budget-fraction checkpoint is written mid-run, so the only
    live model that ever had its weights is the training model at that step.
    `CheckpointEvery` saves in `on_train_batch_end` of the same update, so the
    outputs recorded here come from the very weights that checkpoint holds
    (no update runs between the two callbacks). They are written to files, so
    a resumed pre-training still has the references of the steps before it.
    """

    def __init__(self, steps, batch, directory):
        super().__init__()
        self.steps, self.batch, self.directory = set(steps), batch, directory

    def path(self, step):
        return os.path.join(self.directory, f"step-{step}.npz")

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step in self.steps and not os.path.exists(self.path(step)):
            write_reference(self.path(step), self.batch, encoder_outputs(self.model.discriminator, self.batch),
                            step=step, source="live pre-training model")



def live_reference(live, step, steps, guard_dir, name):
    """`(batch, outputs, source)`: what the encoder exported at `step` must reproduce.

    The final step: the model `train` returned, when it ran in this invocation.
    Otherwise the outputs `RecordLiveOutputs` recorded from the training model
    at that step.
    """
    path = os.path.join(guard_dir, f"step-{step}.npz")
    try:
        batch, outputs, meta = read_reference(path)
    except FileNotFoundError:
        raise EncoderMismatch(
            f"No live reference for {name} at step {step} ({path}): this pre-training ran without the guard "
            "(or stopped between checkpoint and record). Use a new --output_dir."
        ) from None
    if live is not None and step == steps:
        outputs = encoder_outputs(live.discriminator, batch)
        return batch, outputs, "the model train() returned"
    return batch, outputs, meta["source"] + f" at step {meta['step']}"



def guard_encoder(name, info, root=""):
    """Loads `info["path"]` (under `root`) as fine-tuning does and checks it against its live reference.

    Records the result in `info["guard"]`.
    """
    path = os.path.join(root, info["path"])
    try:
        batch, reference, meta = read_reference(os.path.join(os.path.dirname(path), GUARD_FILE))
    except FileNotFoundError:
        raise EncoderMismatch(f"No guard reference beside {path}: exported without the guard. "
                              "Use a new --output_dir.") from None
    encoder, _ = load_init(path)
    diff = check_encoder(encoder, batch, reference, f"encoder {name} ({path})")
    info["guard"] = dict(max_abs_diff=diff, atol=GUARD_ATOL, reference=meta["source"], step=meta["step"])
    logging.info("[guard] %s equals %s: max |diff| %.2g", name, meta["source"], diff)




def export_encoder(name, info, model_dir, live, final_step, directory, units):
    """Restores the checkpoint of `info["step"]`, checks it against the live model, exports its encoder.

    Args:
        name: str. The encoder's name (`electra`, `electra@0.5`).
        info: dict. What results.json records of it (objective, fraction, step, flops, path).
        model_dir: str. The pre-training run.
        live: the model `train` returned in this invocation, or None.
        final_step: int. The run's last step.
        directory: str. Where the encoder, `encoder.json` and its guard reference go.
        units: the harness's `Units` (progress lines; a finished export is skipped).

    Returns:
        dict: `info` with the restore's max |diff| (or the finished export's record).
    """
    found = read_json(os.path.join(directory, "encoder.json"))
    if found:
        units.skip(f"export {name}")
        return found
    start, step = time.time(), info["step"]
    prefix = os.path.join(model_dir, run_files.CHECKPOINT_DIR, f"ckpt-{step}")
    if not tf.io.gfile.exists(prefix + ".index"):
        raise FileNotFoundError(f"No checkpoint at step {step} for {name}: {prefix}")
    batch, reference, source = live_reference(live, step, final_step, os.path.join(model_dir, GUARD_DIR), name)
    pretrainer, _ = sources.restore_pretrainer(model_dir, prefix)
    diff = check_encoder(pretrainer.discriminator, batch, reference, f"{name} restored from {prefix}")
    sources.save_encoder(pretrainer.discriminator, directory, os.path.join(model_dir, run_files.VOCAB_FILE))
    write_reference(os.path.join(directory, GUARD_FILE), batch, reference, step=step, source=source)
    info = dict(info, restore_max_diff=diff)
    write_json(os.path.join(directory, "encoder.json"), info)
    units.done(f"export {name} (step {step}; restored = {source}, max |diff| {diff:.2g})", time.time() - start)
    return info
