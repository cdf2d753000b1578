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

from electra_tf.config import ElectraConfig
from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registers the class)
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.training.named_checkpoint import NamedCheckpoint

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
        values = json.load(f)
    known = {f.name for f in dataclasses.fields(ElectraConfig)}
    return ElectraConfig(**{k: v for k, v in values.items() if k in known})


def write_config(config, model_dir):
    tf.io.gfile.makedirs(model_dir)
    path = os.path.join(model_dir, CONFIG_FILE)
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(config.to_json())
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def latest_checkpoint(model_dir):
    return tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR))


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
        pretrainer, config = restore_pretrainer("runs/demo")
        encoder = pretrainer.discriminator
        ```
    """
    config = read_config(model_dir)
    checkpoint = checkpoint or latest_checkpoint(model_dir)
    if checkpoint is None:
        raise FileNotFoundError(f"No checkpoint in {os.path.join(model_dir, CHECKPOINT_DIR)}.")
    pretrainer = build_pretrainer(config)
    NamedCheckpoint(pretrainer).restore(checkpoint)
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
        return keras.saving.load_model(path), config
    pretrainer, config = restore_pretrainer(model_dir)
    return pretrainer.discriminator, config
