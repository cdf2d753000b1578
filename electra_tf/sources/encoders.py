"""The project's own model files: a `.keras` file (or a folder with `encoder.keras`) and an encoder export.

`save_encoder` writes a standalone encoder (`encoder.keras` + `vocab.txt`, e.g. an
experiment's untrained baseline from `untrained_encoder`); `load_encoder` rebuilds the
encoder of an `export --format encoder` SavedModel.
"""

import importlib
import json
import os

import keras
import tensorflow as tf

from electra_tf import atomic, run_files
from electra_tf.data.tokenizer import copy_vocab
from electra_tf.layers.initializers import weights_set_after_build
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources.base import Source


def load_keras_model(path, flag="init"):
    """`keras.saving.load_model(path)` with every electra_tf model class registered; one-line errors.

    Reads the project's own `.keras` files (`discriminator.keras`, `encoder.keras`, a fine-tuned
    `classifier.keras`, ...) whatever the caller imported before.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"`--{flag}={path}` does not exist.")
    if tf.io.gfile.isdir(path):
        raise IsADirectoryError(f"`--{flag}={path}` is a folder without {run_files.ENCODER_FILE}: a .keras model is "
                                "a file. Name the .keras file itself" + _folder_hint(path, flag) + ".")
    register_models()
    try:
        with weights_set_after_build():  # Keras sets every weight from the file, or raises
            return keras.saving.load_model(path, compile=False)  # a fine-tuned model's optimizer is not needed
    except Exception as e:  # Keras reports a damaged zip as "File not found"
        if "safe_mode" in str(e):
            raise ValueError(f"`--{flag}={path}` holds Python code (a Lambda layer's function, or another callable "
                             "saved as bytecode), which Keras loads only with safe_mode off: electra_tf does not run "
                             "code from a model file. Save the model without it.") from None
        raise ValueError(f"`--{flag}={path}` cannot be read ({type(e).__name__}: {str(e)[:200]}): a truncated "
                         "or damaged .keras file.") from None


def _folder_hint(path, flag):
    """How a folder that is no .keras file is given instead (a run, a fine-tuning output: without `keras:`)."""
    artefact = run_files.artefact_in(path)
    return f", or, since it holds {artefact}, the folder as `--{flag} {path}` (no keras: form)" if artefact else ""


SAVED_CLASSES_MODULE = "electra_tf.saved_classes"


def register_models():
    """Imports `electra_tf.saved_classes`, by name at run time (it sits above the sources): every class a saved model
    names registers itself for `load_model`, each task kind's model and loss included."""
    importlib.import_module(SAVED_CLASSES_MODULE)


def load_encoder(export_dir):
    """A trainable `ElectraEncoder` rebuilt from an `export_encoder` SavedModel.

    Returns:
        `(encoder, vocab_file)`; `vocab_file` is the exported asset's path.
    """
    config_file = os.path.join(export_dir, run_files.ASSETS_DIR, run_files.ENCODER_CONFIG_ASSET)
    if not tf.io.gfile.exists(config_file):
        raise FileNotFoundError(
            f"{export_dir} is not an electra_tf encoder export (no assets/{run_files.ENCODER_CONFIG_ASSET})."
        )
    with tf.io.gfile.GFile(config_file) as f:
        config = json.load(f)["encoder"]
    with weights_set_after_build():  # each weight is assigned below, all of them or an error
        encoder = ElectraEncoder.from_config(config)
        encoder.build()
    loaded = tf.saved_model.load(export_dir)
    if len(loaded.encoder_weights) != len(encoder.weights):
        raise ValueError(
            f"{export_dir} holds {len(loaded.encoder_weights)} encoder weights; an encoder with its "
            f"config has {len(encoder.weights)}."
        )
    for target, source in zip(encoder.weights, loaded.encoder_weights):
        target.assign(source)
    return encoder, os.path.join(export_dir, run_files.ASSETS_DIR, run_files.VOCAB_ASSET)


def save_encoder(encoder, directory, vocab_file):
    """Writes `directory/encoder.keras` (atomically) and a copy of `vocab_file` beside it; returns the path.

    The result is a fine-tuning `--init` (`load_init`).
    """
    tf.io.gfile.makedirs(directory)
    path = os.path.join(directory, run_files.ENCODER_FILE)
    with atomic.staged(path) as partial:
        encoder.save(partial)
    copy_vocab(vocab_file, os.path.join(directory, run_files.VOCAB_FILE))
    return path


def untrained_encoder(config, seed):
    """The discriminator `build_pretrainer(config)` makes under `keras.utils.set_random_seed(seed)`, built.

    The no-pre-training baseline of an experiment: the same encoder before any update. The draw
    depends on everything `config` builds (e.g. its objective's generator), so callers keep theirs.
    """
    keras.utils.set_random_seed(seed)
    encoder = build_pretrainer(config).discriminator
    encoder.build()
    return encoder


class KerasFile(Source):
    """`m.keras` (`keras:m.keras`), or a folder holding `encoder.keras`: an encoder, pretrainer or fine-tuned model."""

    prefix = "keras"
    form = "a .keras file (or a folder with encoder.keras)"

    def _file(self, path):
        folder_file = os.path.join(path, run_files.ENCODER_FILE)
        return folder_file if tf.io.gfile.isdir(path) and tf.io.gfile.exists(folder_file) else path

    def recognises(self, path):
        path = self._file(path)
        return path.endswith(".keras") and tf.io.gfile.exists(path)

    def load(self, path, flag="init", **options):
        return load_keras_model(self._file(path), flag)

    def vocabulary(self, path):
        return os.path.join(os.path.dirname(self._file(path)), run_files.VOCAB_FILE)


class EncoderExport(Source):
    """`exports/encoder`: an `export --format encoder` SavedModel (its `assets/encoder_config.json`)."""

    form = "an exported encoder (assets/encoder_config.json)"

    def recognises(self, path):
        return tf.io.gfile.exists(os.path.join(path, run_files.ASSETS_DIR, run_files.ENCODER_CONFIG_ASSET))

    def load(self, path, flag="init", **options):
        return load_encoder(path)[0]

    def vocabulary(self, path):
        return os.path.join(path, run_files.ASSETS_DIR, run_files.VOCAB_ASSET)
