"""What a pre-training run leaves in `model_dir`, and how to read it back.

    model_dir/config.json          the resolved `ElectraConfig`
    model_dir/vocab.txt            the vocabulary the records were built with
    model_dir/checkpoints/ckpt-N   model, optimizer and input position by name
                                   (`named_checkpoint`), every `save_checkpoints_steps`
    model_dir/logs/                TensorBoard
    model_dir/discriminator.keras  the trained discriminator (`ElectraEncoder`)
"""

import dataclasses
import json
import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf.config import ElectraConfig
from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registers the class)
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.training.named_checkpoint import CheckpointMismatchError, NamedCheckpoint

CONFIG_FILE = "config.json"
VOCAB_FILE = "vocab.txt"
CHECKPOINT_DIR = "checkpoints"
LOG_DIR = "logs"
DISCRIMINATOR_FILE = "discriminator.keras"


def read_config(model_dir):
    """The `ElectraConfig` a run in `model_dir` used."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No {CONFIG_FILE} in `model_dir={model_dir}`: not a pre-training run.")
    with tf.io.gfile.GFile(path) as f:
        try:
            values = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON ({e}): a truncated or damaged run config.") from None
    known = {f.name for f in dataclasses.fields(ElectraConfig)}
    return ElectraConfig(**{k: v for k, v in values.items() if k in known})


# Fields that decide the variables a run's checkpoints hold: a run resumes only with the same values.
ARCHITECTURE = ("vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
                "max_sequence_length", "num_segments", "generator_hidden_fraction", "objective", "optimizer",
                "activation")


def is_run(model_dir):
    """True when `model_dir` holds a pre-training run's results (a checkpoint or `discriminator.keras`)."""
    return bool(kept_checkpoints(model_dir)) or tf.io.gfile.exists(os.path.join(model_dir, DISCRIMINATOR_FILE))


def check_resumable(config, model_dir):
    """Refuses a config whose architecture differs from the run already in `model_dir`, before anything is written."""
    if not (tf.io.gfile.exists(os.path.join(model_dir, CONFIG_FILE)) and is_run(model_dir)):
        return
    saved = read_config(model_dir)
    differ = [f"--{name}={getattr(config, name)} vs {getattr(saved, name)}" for name in ARCHITECTURE
              if getattr(config, name) != getattr(saved, name)]
    if differ:
        raise ValueError(
            f"`--model_dir={model_dir}` holds a run of another model ({os.path.join(model_dir, CONFIG_FILE)}): "
            f"{', '.join(differ)} (given vs saved). Use a new --model_dir, or the run's own --config."
        )


def write_config(config, model_dir):
    tf.io.gfile.makedirs(model_dir)
    path = os.path.join(model_dir, CONFIG_FILE)
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(config.to_json())
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def latest_checkpoint(model_dir):
    return tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR))


def kept_checkpoints(model_dir):
    """The checkpoints the `checkpoint` state file lists, newest first (the latest at the head)."""
    state = tf.train.get_checkpoint_state(os.path.join(model_dir, CHECKPOINT_DIR))
    if state is None:
        return []
    paths = [state.model_checkpoint_path] + list(reversed(state.all_model_checkpoint_paths))
    return list(dict.fromkeys(p for p in paths if p))


# A damaged checkpoint: missing or truncated files ("not an sstable", "Read less bytes than requested").
DAMAGE = (tf.errors.OpError, IndexError)


def restore_latest_good(restore, model_dir):
    """Calls `restore(path)` on the newest readable checkpoint of `model_dir`, falling back over damaged ones.

    A checkpoint that cannot be read (truncated, files missing) is named in a
    warning and the one before it is tried; a checkpoint that reads but does
    not fit the model (`CheckpointMismatchError`) is an error at once.

    Returns:
        The restored path, or None when `model_dir` has no checkpoint.

    Raises:
        ValueError naming every damaged checkpoint when none can be read.
    """
    damaged = []
    for path in kept_checkpoints(model_dir):
        try:
            restore(path)
        except CheckpointMismatchError:
            raise
        except DAMAGE as e:
            reason = (getattr(e, "message", None) or str(e)).splitlines()[0][:200]
            damaged.append(f"{path} ({reason})")
            logging.warning("Checkpoint %s is unreadable (%s); falling back to the one before it.", path, reason)
            continue
        if damaged:
            logging.warning("Restored %s instead of the damaged %s.", path, "; ".join(damaged))
        return path
    if damaged:
        raise ValueError(f"No readable checkpoint in {os.path.join(model_dir, CHECKPOINT_DIR)}: "
                         + "; ".join(damaged))
    return None


def restore_pretrainer(model_dir, checkpoint=None):
    """Rebuilds the `ElectraPretrainer` of a run from its `config.json` and restores every weight.

    The one way a run's checkpoint is read without its optimizer (`--init`,
    fine-tuning, exports, benchmarks). Every variable of the model must be in
    the checkpoint under its name, with its shape, or it raises
    `CheckpointMismatchError` naming them; a 0.1 positional checkpoint is
    mapped through the optimizer's order (see `NamedCheckpoint.restore`).

    Args:
        model_dir: str. A pre-training `model_dir`.
        checkpoint: optional str. A checkpoint prefix; default the latest.

    Returns:
        `(pretrainer, config)`.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.training.checkpoints import restore_pretrainer, write_config
        from electra_tf.training.named_checkpoint import NamedCheckpoint

        # A run directory as `electra_tf.pretrain` leaves one: its config and a checkpoint.
        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        write_config(config, "runs/demo")
        ckpt = NamedCheckpoint(build_pretrainer(config)).checkpoint.write("runs/demo/checkpoints/ckpt-1")

        pretrainer, config = restore_pretrainer("runs/demo", checkpoint=ckpt)  # or its latest checkpoint
        encoder = pretrainer.discriminator
        ```
    """
    config = read_config(model_dir)
    pretrainer = build_pretrainer(config)
    if checkpoint:
        NamedCheckpoint(pretrainer).restore(checkpoint)
    elif restore_latest_good(NamedCheckpoint(pretrainer).restore, model_dir) is None:
        raise FileNotFoundError(f"No checkpoint in {os.path.join(model_dir, CHECKPOINT_DIR)}.")
    return pretrainer, config


def load_discriminator(model_dir):
    """The trained discriminator of a run: `discriminator.keras`, else the latest checkpoint.

    Both give the same encoder: the `.keras` file is written from the live
    model at the end of training, the checkpoint restores every weight by name.

    Returns:
        `(ElectraEncoder, ElectraConfig)`.
    """
    config = read_config(model_dir)
    path = os.path.join(model_dir, DISCRIMINATOR_FILE)
    if tf.io.gfile.exists(path):
        try:
            return keras.saving.load_model(path), config
        except Exception as e:  # a truncated zip, a damaged weights file: Keras names none of it
            if not kept_checkpoints(model_dir):
                raise ValueError(f"{path} cannot be read ({type(e).__name__}: {str(e)[:200]}) and "
                                 f"{model_dir} has no checkpoint to fall back to.") from None
            logging.warning("%s cannot be read (%s: %s); using the latest checkpoint instead.",
                            path, type(e).__name__, str(e)[:200])
    pretrainer, config = restore_pretrainer(model_dir)
    return pretrainer.discriminator, config
