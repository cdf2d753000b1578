"""A fine-tuning output as a model source: which task kind a folder or `.keras` file holds, and its model.

A `finetune` run's `--output_dir` (or its model's `.keras` file) is told by four signals, in
this order: the "kind" of its `finetune_config.json`; the model file of a kind in the folder
(a run of an earlier version wrote no "kind"); for a bare `.keras` file, the registered class
name its zip's `config.json` names (read without building the model); and, for a file whose
zip cannot be read that way, the class of the model Keras loads. `FinetunedOutput.kind_of`
is the one answer to "which kind is this"; `load` reads the model with it.

The form knows no kind by itself: the registry (`electra_tf.tasks.OUTPUTS`) builds it with its
fine-tuned kinds and its settings reader, so this layer names none.
"""

import collections
import json
import os
import zipfile

import keras
import tensorflow as tf
from absl import logging

from electra_tf import run_files
from electra_tf.sources.base import Source, check_finite
from electra_tf.sources.encoders import load_keras_model

Finetuned = collections.namedtuple("Finetuned", ["kind", "model", "vocab_file", "settings"])


class FinetunedOutput(Source):
    """A fine-tuning output (a folder, or its model's `.keras` file) of one of `kinds`.

    Args:
        kinds: dict. Name -> `TaskKind` of every kind that fine-tunes (`tasks.FINETUNED`).
        read_settings: callable. A folder -> its `finetune_config.json` checked, or None when absent
            (`tasks.read_finetune_config`).
    """

    form = run_files.FINETUNING_OUTPUT

    def __init__(self, kinds, read_settings):
        self.kinds = kinds
        self.read_settings = read_settings

    def recognises(self, path):
        return tf.io.gfile.isdir(path) and self.kind_of(path) is not None

    def model_files(self):
        """The file name of each kind's fine-tuned model, by kind name."""
        return {name: kind.model_file for name, kind in self.kinds.items()}

    def _named(self, name):
        if name not in self.kinds:
            raise ValueError(f"Unknown task kind {name!r}. Known kinds: {sorted(self.kinds)}.")
        return self.kinds[name]

    def kind_of(self, path, what=None):
        """The kind `path` holds: a folder's by the "kind" of its `finetune_config.json`, else the model file it
        holds; a `.keras` file's by the "kind" of the `finetune_config.json` beside it, else the class its config
        names. None when `path` holds no fine-tuned model (a folder) or cannot be read as a zip (a file).

        Raises:
            TypeError: a `.keras` file of another class (an encoder, a pretrainer), naming `what`.
        """
        if path.endswith(".keras"):
            settings = self.read_settings(os.path.dirname(path)) or {}
            if settings.get("kind"):
                return self._named(settings["kind"])
            saved = saved_class_name(path)
            return None if saved is None else self.kind_of_class(saved, what)
        found = next((kind for kind in self.kinds.values()
                      if tf.io.gfile.exists(os.path.join(path, kind.model_file))), None)
        if found is None:
            return None
        settings = self.read_settings(path) or {}
        return self._named(settings["kind"]) if settings.get("kind") else found

    def kind_of_class(self, registered_name, what=None):
        """The kind whose model class Keras registers as `registered_name` (`electra_tf>ElectraClassifier`, as a
        `.keras` file's config names it); a `TypeError` naming what is accepted otherwise (and `what`, the flag and
        file it came from, when given)."""
        for kind in self.kinds.values():
            if keras.saving.get_registered_name(kind.model_class) == registered_name:
                return kind
        names = ", ".join(kind.model_class.__name__ for kind in self.kinds.values())
        found = str(registered_name).rpartition(">")[2]
        found = f"{what} holds a {found}, which is" if what else f"A {found} is"
        raise TypeError(f"{found} not a fine-tuned model ({names}): fine-tune it first with "
                        "`python -m electra_tf.finetune`, or export a bare encoder with `--format encoder`.")

    def kind_of_model(self, model, settings=None, what=None):
        """The kind of a loaded `model`: the "kind" its `settings` (`finetune_config.json`) name, else its class's
        registered name."""
        if settings and settings.get("kind"):
            return self._named(settings["kind"])
        return self.kind_of_class(keras.saving.get_registered_name(type(model)), what)

    def load(self, path, flag="init", **options):
        """The model a `finetune` run left in `path` (a folder, or its model's `.keras` file), with its kind.

        Returns:
            `Finetuned(kind, model, vocab_file, settings)`: `settings` is the run's
            `finetune_config.json` (empty, with a warning, when it is missing).

        Raises:
            FileNotFoundError naming what was expected when `path` holds no fine-tuned model; TypeError
            when its model is of another class than its settings name; ValueError naming the first weight
            that is not finite.
        """
        is_file = path.endswith(".keras")
        folder = os.path.dirname(path) if is_file else path
        kind = None if is_file else self.kind_of(path)
        if kind is None and not is_file:
            hint = ""
            if tf.io.gfile.exists(os.path.join(path, run_files.CONFIG_FILE)):
                hint = " It looks like a pre-training run (config.json, no task head):"
            raise FileNotFoundError(
                f"No fine-tuned model in {path} (expected one of {', '.join(self.model_files().values())}).{hint} "
                "fine-tune it first with `python -m electra_tf.finetune`, or export the bare encoder with "
                "`python -m electra_tf.export --format encoder`.")
        model_path = path if is_file else os.path.join(path, kind.model_file)
        what = f"`--{flag}={model_path}`"
        kind = self.kind_of(path, what) if is_file else kind
        model = load_keras_model(model_path, flag)
        found = keras.saving.get_registered_name(type(model))
        if kind is None:  # a file Keras reads but `zipfile` does not: the class of the model it loaded
            kind = self.kind_of_class(found, what)
        if found != keras.saving.get_registered_name(kind.model_class) and self.kind_of_class(found, what) is not kind:
            raise TypeError(f"{what} holds a {type(model).__name__}, but {run_files.FINETUNE_CONFIG_FILE} beside it "
                            f"names the kind {kind.name!r} ({kind.model_class.__name__}).")
        check_finite(model, f"`--{flag}={path}`")
        settings = self.read_settings(folder)
        if settings is None:
            settings = {}
            logging.warning("WARNING: no %s beside %s: %s", run_files.FINETUNE_CONFIG_FILE, model_path,
                            kind.missing_settings(model))
        return Finetuned(kind, model, os.path.join(folder, run_files.VOCAB_FILE), settings)

    def vocabulary(self, path):
        folder = os.path.dirname(path) if path.endswith(".keras") else path
        return os.path.join(folder, run_files.VOCAB_FILE)


def saved_class_name(path):
    """The registered class name a `.keras` file's config names (read from the zip, no model built); None if
    unreadable."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    return config.get("registered_name") or config.get("class_name")
