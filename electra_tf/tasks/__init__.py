"""The task kinds by name: the one registry fine-tuning, export, predict and convert consult.

A task kind is one folder, `electra_tf/tasks/<kind>/` (its `TaskKind` subclass, see `base.py`;
its settings, readers, features, metrics, Keras model, serving module and Hugging Face head),
and one line of `FOLDERS` below. A kind is known by its name only: the "kind" of a run's
`finetune_config.json` and of an export's `serving_config.json`, read back here. Everything
else finds it here: `for_config` (which kind a fine-tuning run is), `finetune` (a fine-tuning
run of that kind), `FinetuneConfig` (the recipe's fields and every kind's own), `for_output_dir`
(which kind a fine-tuning output holds), `load_finetuned` and `serving_module` (export and
predict), `open_served` (what `predict` serves).

Example:
>>> from electra_tf import tasks
>>> tasks.get("tagging").model_file
'token_classifier.keras'
>>> tasks.for_config(tasks.FinetuneConfig(task="conll2003")).name
'tagging'
>>> tasks.for_config(tasks.FinetuneConfig(task="sst-2")).name, tasks.FinetuneConfig().doc_stride
('classification', 128)
"""

import collections
import importlib
import json
import os
import zipfile

# The recipe's settings (`electra_tf.finetuning.config`) and the readers (`electra_tf.finetuning.examples`) are
# imported where they are used: a kind's Keras model (`electra_tf.tasks.<kind>.model`) imports with Keras alone,
# on any backend, TensorFlow absent.

# One line per kind: its registry name (the "kind" a run and an export write) -> its folder under electra_tf/tasks/.
FOLDERS = {
    "classification": "classification",
    "tagging": "tagging",
    "span_qa": "span_qa",
    "multiple_choice": "multiple_choice",
    "embedding": "embedding",
    "rtd": "replaced_tokens",  # served only: a pre-trained discriminator's replaced-token scores
}
DEFAULT = next(iter(FOLDERS))  # the first line: what `--task_kind auto` gives a task no kind claims, an old export's

Finetuned = collections.namedtuple("Finetuned", ["kind", "model", "vocab_file", "settings"])

# Read on first use (`__getattr__`), so that what needs only the settings (`finetune --help`) imports no kind:
#   KINDS          name -> the kind's `TaskKind` subclass (its folder's `kind.py`)
#   FINETUNED      the kinds that fine-tune (the `--task_kind`s); the others are served only
#   PRETRAINED     the served-only kind `predict` reads an `--init` as that is no fine-tuned model nor an export
#   FinetuneConfig every setting of a fine-tuning run: the recipe's fields and each kind's `Config` (its folder's
#                  `config.py`), one flag each
#   ReadOptions    how `predict` reads its input: the column flags every reader shares and each kind's
#                  `PredictOptions` (its folder's `config.py`)
_LAZY = ("KINDS", "FINETUNED", "PRETRAINED", "FinetuneConfig", "ReadOptions")


def _settings_of(folder, name):
    """The `name` class (`Config`, `PredictOptions`) of the kind folder's `config.py`, or None."""
    module = f"{__name__}.{folder}.config"
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), name, None)


def _kind_class(name, folder):
    from electra_tf.tasks.base import TaskKind

    module = importlib.import_module(f"{__name__}.{folder}.kind")
    found = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, TaskKind)
             and v.__module__ == module.__name__]
    if len(found) != 1 or found[0].name != name:
        raise TypeError(f"{module.__name__} must define one TaskKind subclass named {name!r}; found {found}.")
    return found[0]


def _kinds():
    return __getattr__("KINDS")


def _finetuned():
    return __getattr__("FINETUNED")


def __getattr__(attribute):
    if attribute not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
    if attribute == "FinetuneConfig":
        from electra_tf.finetuning import config as finetuning_config

        configs = [_settings_of(folder, "Config") for folder in FOLDERS.values()]
        value = finetuning_config.FinetuneConfig.with_fields_of(*(c for c in configs if c is not None))
    elif attribute == "ReadOptions":
        from electra_tf.finetuning import examples

        options = [_settings_of(folder, "PredictOptions") for folder in FOLDERS.values()]
        value = examples.ReadOptions.with_fields_of(*(o for o in options if o is not None))
    elif attribute == "KINDS":
        value = {name: _kind_class(name, folder) for name, folder in FOLDERS.items()}
    elif attribute == "FINETUNED":
        value = {name: kind for name, kind in _kinds().items() if kind.finetunes}
    else:
        value = next(name for name, kind in _kinds().items() if not kind.finetunes)
    globals()[attribute] = value
    return value


def read_finetune_config(folder):
    """`finetuning.config.read_finetune_config` of `folder`, every kind's fields checked."""
    from electra_tf.finetuning import config as finetuning_config

    return finetuning_config.read_finetune_config(folder, __getattr__('FinetuneConfig'))


def input_formats():
    """Every `predict --input_format`: the generic ones, then each kind's own."""
    from electra_tf.predicting.inputs import FORMATS

    kinds_own = [f for kind in _kinds().values() for f in kind.predict_formats if f not in FORMATS]
    return [*FORMATS, *dict.fromkeys(kinds_own)]


def format_extensions():
    """File extension -> format, of every kind's own formats (`predict --input_format auto`)."""
    return {extension: name for kind in _kinds().values() for extension, name in kind.format_extensions.items()}


def get(name):
    """The kind registered as `name`; an error listing the kinds otherwise."""
    if name not in _kinds():
        raise ValueError(f"Unknown task kind {name!r}. Known kinds: {sorted(_kinds())}.")
    return _kinds()[name]


def for_config(config):
    """The kind of a fine-tuning `config`: `--task_kind`, or (auto) the kind that claims the task's name."""
    if config.task_kind not in (None, "auto"):
        if config.task_kind not in _finetuned():
            raise ValueError(f"Unknown `--task_kind={config.task_kind}`. Choose auto or one of {sorted(_finetuned())}.")
        return _finetuned()[config.task_kind]
    name = (config.task or "").lower()
    return next((kind for kind in _finetuned().values() if kind.claims(name)), _kinds()[DEFAULT])


def finetune(config, strategy=None):
    """`trials.run_trials` with the kind of `config`: what `python -m electra_tf.finetune` runs.

    Returns the results dict (`results.json`), or None when a SIGTERM stopped the run.
    """
    from electra_tf.finetuning import trials

    return trials.run_trials(config, for_config(config), strategy)


def for_class_name(registered_name, what=None):
    """The kind whose model class Keras registers as `registered_name` (`electra_tf>ElectraClassifier`, as a `.keras`
    file's config names it); a `TypeError` naming what is accepted otherwise (and `what`, the flag and file it came
    from, when given)."""
    import keras

    for kind in _finetuned().values():
        if keras.saving.get_registered_name(kind.model_class) == registered_name:
            return kind
    names = ", ".join(kind.model_class.__name__ for kind in _finetuned().values())
    found = str(registered_name).rpartition(">")[2]
    found = f"{what} holds a {found}, which is" if what else f"A {found} is"
    raise TypeError(f"{found} not a fine-tuned model ({names}): fine-tune it first with "
                    "`python -m electra_tf.finetune`, or export a bare encoder with `--format encoder`.")


def for_model(model, settings=None, what=None):
    """The kind of a loaded `model`: the "kind" its `settings` (`finetune_config.json`) name, else its class's
    registered name."""
    if settings and settings.get("kind"):
        return get(settings["kind"])
    import keras

    return for_class_name(keras.saving.get_registered_name(type(model)), what)


def _saved_class_name(path):
    """The registered class name a `.keras` file's config names (read from the zip, no model built); None if
    unreadable."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    return config.get("registered_name") or config.get("class_name")


def model_files():
    """The file name of each kind's fine-tuned model, by kind name."""
    return {name: kind.model_file for name, kind in _finetuned().items()}


def for_output_dir(path):
    """The kind of the fine-tuning output `path`: the "kind" of its `finetune_config.json`, else (a run of an earlier
    version) the kind whose model file it holds; None when it holds no fine-tuned model."""
    import tensorflow as tf

    found = next((kind for kind in _finetuned().values() if tf.io.gfile.exists(os.path.join(path, kind.model_file))),
                 None)
    if found is None:
        return None
    settings = read_finetune_config(path) or {}
    return get(settings["kind"]) if settings.get("kind") else found


def load_finetuned(path):
    """The model a `finetune` run left in `path` (a folder, or its model's `.keras` file), with its kind.

    Returns:
        `Finetuned(kind, model, vocab_file, settings)`: `settings` is the run's
        `finetune_config.json` (empty, with a warning, when it is missing).

    Raises:
        FileNotFoundError naming what was expected when `path` holds no fine-tuned model; ValueError
        naming the first weight that is not finite.
    """
    import tensorflow as tf
    from absl import logging

    from electra_tf import run_files, sources

    if path.endswith(".keras"):
        model_path, folder = path, os.path.dirname(path)
    else:
        folder, kind = path, for_output_dir(path)
        if kind is None:
            hint = ""
            if tf.io.gfile.exists(os.path.join(path, run_files.CONFIG_FILE)):
                hint = " It looks like a pre-training run (config.json, no task head):"
            raise FileNotFoundError(
                f"No fine-tuned model in {path} (expected one of {', '.join(model_files().values())}).{hint} "
                "fine-tune it first with `python -m electra_tf.finetune`, or export the bare encoder with "
                "`python -m electra_tf.export --format encoder`.")
        model_path = os.path.join(path, kind.model_file)
    import keras

    what = f"`--init={model_path}`"
    settings = read_finetune_config(folder)
    model = None
    if settings and settings.get("kind"):
        kind = get(settings["kind"])
    elif path.endswith(".keras"):  # no kind beside it: the class its config names
        saved = _saved_class_name(model_path)
        if saved is None:  # not a readable .keras file: loading it names what is wrong
            model = sources.load_keras_model(model_path)
            saved = keras.saving.get_registered_name(type(model))
        kind = for_class_name(saved, what)
    model = model or sources.load_keras_model(model_path)
    found = keras.saving.get_registered_name(type(model))
    if found != keras.saving.get_registered_name(kind.model_class):
        if for_class_name(found, what) is not kind:
            raise TypeError(f"{what} holds a {type(model).__name__}, but {run_files.FINETUNE_CONFIG_FILE} beside it "
                            f"names the kind {kind.name!r} ({kind.model_class.__name__}).")
    sources.check_finite(model, f"`--init={path}`")
    if settings is None:
        settings = {}
        logging.warning("WARNING: no %s beside %s: %s", run_files.FINETUNE_CONFIG_FILE, model_path,
                        kind.missing_settings(model))
    return Finetuned(kind, model, os.path.join(folder, run_files.VOCAB_FILE), settings)


def serving_module(model, vocab_file, settings, seq_length=None):
    """The `tf.Module` that `export --format serving` saves for a fine-tuned model, built in this process.

    Its `signatures()` are the exported SavedModel's, as `tf.function`s: calling them runs what
    TF Serving runs (`predict` does, on a fine-tuning output dir).

    Args:
        model: a fine-tuned model of any kind (`for_model`: the kind `settings` name, else its class's).
        vocab_file: str. Its vocabulary.
        settings: dict. Its `finetune_config.json` (`load_finetuned`).
        seq_length: int or None. Default: the fine-tuning `seq_length`.
    """
    return for_model(model, settings).serving_module(model, vocab_file, settings, seq_length)


def export_tflite(model, vocab_file, output_dir, settings=None, seq_length=None, ids_only=False, quantize=None):
    """Writes a fine-tuned `model` as a LiteRT model folder (`exporting.tflite`); returns the `model.tflite` path.

    Its task kind gives the serving module to convert (`TaskKind.tflite_module`: a classifier, raw
    text or ids in; a tagger, ids in) or refuses with the reason.

    Example:
        ```python
        # A tagger, ids in, int8 weights (`exporting.tflite_runtime.load_interpreter` runs the file).
        import json
        import pathlib

        from electra_tf.tasks import export_tflite
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.tagging.model import ElectraTokenClassifier

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "lives", "in", "paris"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        tagger = ElectraTokenClassifier(ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=1, hidden_dim=16,
                                                       embedding_dim=8, intermediate_dim=32), num_labels=3)
        tagger.build()  # fine-tuned, in practice
        path = export_tflite(tagger, "vocab.txt", "ner_tflite", {"label_names": ["O", "B-PER", "I-PER"],
                             "seq_length": 16}, ids_only=True, quantize="dynamic_int8")  # 'ner_tflite/model.tflite'
        config = json.loads(pathlib.Path("ner_tflite/tflite_config.json").read_text())
        assert config["inputs"] == ["token_ids", "segment_ids", "padding_mask"] and config["custom_ops"] == []
        ```
    """
    from electra_tf.exporting import tflite

    settings = settings or {}
    kind = for_model(model, settings)
    served = kind.tflite_module(model, vocab_file, settings, seq_length, ids_only)
    return tflite.export_tflite(served, vocab_file, output_dir, settings.get("task", ""), kind.name, ids_only,
                                quantize)


def export_serving(model, vocab_file, base_dir, model_name="electra", version=1, settings=None, seq_length=None):
    """Writes a fine-tuned `model` as `<base_dir>/<model_name>/<version>/` for TF Serving; returns that folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.tasks import export_serving
        from electra_tf.tasks.classification.model import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)  # fine-tuned, in practice
        classifier.build()
        path = export_serving(classifier, "vocab.txt", "serving", "movie", 1,
                              {"label_names": ["negative", "positive"], "seq_length": 16})
        tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(["a fine film"]))["label"]
        ```
    """
    from electra_tf.exporting.assets import save_version, version_dir

    module = serving_module(model, vocab_file, settings or {}, seq_length)
    return save_version(module, version_dir(base_dir, model_name, version))
