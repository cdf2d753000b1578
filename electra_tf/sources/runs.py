"""A pre-training run as a model: its checkpoints (the whole pretrainer) or `discriminator.keras`."""

import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf import run_files
from electra_tf.layers.initializers import weights_set_after_build
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources.base import Source
from electra_tf.sources import named_checkpoint
from electra_tf.sources.named_checkpoint import NamedCheckpoint


def restore_pretrainer(model_dir, checkpoint=None):
    """Rebuilds the `ElectraPretrainer` of a run from its `config.json` and restores every weight.

    The one way a run's checkpoint is read without its optimizer (`--init`,
    fine-tuning, exports, benchmarks). Every variable of the model must be in
    the checkpoint under its name, with its shape, or it raises
    `CheckpointMismatchError` naming them; a 0.1 positional checkpoint is
    mapped through the optimizer's order (see `NamedCheckpoint.restore`).

    Args:
        model_dir: str. A pre-training `model_dir`.
        checkpoint: optional str. A checkpoint prefix; default the latest readable one.

    Returns:
        `(pretrainer, config)`.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.run_files import write_config
        from electra_tf.sources import restore_pretrainer
        from electra_tf.sources.named_checkpoint import NamedCheckpoint

        # A run directory as `electra_tf.pretrain` leaves one: its config and a checkpoint.
        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        write_config(config, "runs/demo")
        ckpt = NamedCheckpoint(build_pretrainer(config)).checkpoint.write("runs/demo/checkpoints/ckpt-1")

        pretrainer, config = restore_pretrainer("runs/demo", checkpoint=ckpt)  # or its latest checkpoint
        encoder = pretrainer.discriminator
        ```
    """
    config = run_files.read_config(model_dir)
    pretrainer = build_pretrainer(config)
    if run_files.keras_checkpoint_index(model_dir) is not None:  # trained under JAX / PyTorch: Keras checkpoints
        from electra_tf.sources import keras_checkpoint

        restore, latest_good = keras_checkpoint.KerasCheckpoint(pretrainer).restore, keras_checkpoint.restore_latest_good
    else:
        restore, latest_good = NamedCheckpoint(pretrainer).restore, named_checkpoint.restore_latest_good
    if checkpoint:
        restore(checkpoint)
    elif latest_good(restore, model_dir) is None:
        raise FileNotFoundError(f"No checkpoint in {os.path.join(model_dir, run_files.CHECKPOINT_DIR)}.")
    return pretrainer, config


def load_discriminator(model_dir):
    """The trained discriminator of a run: `discriminator.keras`, else the latest checkpoint.

    Both give the same encoder: the `.keras` file is written from the live
    model at the end of training, the checkpoint restores every weight by name.

    Returns:
        `(ElectraEncoder, ElectraConfig)`.
    """
    config = run_files.read_config(model_dir)
    path = os.path.join(model_dir, run_files.DISCRIMINATOR_FILE)
    if tf.io.gfile.exists(path):
        try:
            with weights_set_after_build():  # Keras sets every weight from the file, or raises
                return keras.saving.load_model(path), config
        except Exception as e:  # a truncated zip, a damaged weights file: Keras names none of it
            if not run_files.kept_checkpoints(model_dir):
                raise ValueError(f"{path} cannot be read ({type(e).__name__}: {str(e)[:200]}) and "
                                 f"{model_dir} has no checkpoint to fall back to.") from None
            logging.warning("%s cannot be read (%s: %s); using the latest checkpoint instead.",
                            path, type(e).__name__, str(e)[:200])
    pretrainer, config = restore_pretrainer(model_dir)
    return pretrainer.discriminator, config


class PretrainingRun(Source):
    """`runs/x`: a pre-training `model_dir`; the whole pretrainer when it has checkpoints, else its discriminator."""

    form = "a pre-training model_dir"

    def recognises(self, path):
        from electra_tf.sources.converted import is_preset_folder

        return (run_files.artefact_in(path) == run_files.PRETRAINING_RUN
                and tf.io.gfile.exists(os.path.join(path, run_files.CONFIG_FILE))
                and not (is_preset_folder(path) and not run_files.is_run(path)))  # a keras-hub preset, weights lost

    def load(self, path, flag="init", **options):
        if run_files.kept_checkpoints(path):
            return restore_pretrainer(path)[0]
        return load_discriminator(path)[0]

    def detector(self, path, flag="init", generator_for=None):
        if not run_files.kept_checkpoints(path):
            raise FileNotFoundError(
                f"`--{flag}={path}`: no checkpoint in {os.path.join(path, run_files.CHECKPOINT_DIR)}, and its "
                f"{run_files.DISCRIMINATOR_FILE} is the encoder alone, without the replaced-token head: replaced-token "
                "scores read the run's checkpoints (the whole pretrainer).")
        return restore_pretrainer(path)[0]

    def vocabulary(self, path):
        return os.path.join(path, run_files.VOCAB_FILE)
