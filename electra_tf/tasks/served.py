"""What `predict` serves: an `--init` opened as a `ServedPredictor` of its served kind (the registry's name).

One code path for every kind of `--init`: a TF Serving export is loaded with
`tf.saved_model.load` and its `signatures` called (its kind: the "kind" of its
`serving_config.json`); a fine-tuning output dir is turned into the `tf.Module` the
export would save (its kind's `serving_module`) and its `signatures()` called; any other
`--init` form (a pre-training run, `hf:`, `official:`, ...) is a pre-trained
discriminator whose replaced-token scores are served by the module `export --format rtd`
would save (the registry's served-only kind `tasks.PRETRAINED`).
"""

import json
import os

import tensorflow as tf

from electra_tf import run_files, sources
from electra_tf import tasks
from electra_tf.predicting.predictor import ServedPredictor, export_version


def get(name, where):
    """The served kind `name` of the model at `where`; an error listing the known ones otherwise."""
    if name not in tasks.KINDS:
        raise ValueError(f"{where}: a served model of unknown kind {name!r} (known: {sorted(tasks.KINDS)}).")
    return tasks.KINDS[name]


def open_model(path, options=()):
    """The `ServedPredictor` of a fine-tuning output dir, a serving export or a pre-trained discriminator.

    Args:
        path: str. The `--init`.
        options: the `predict` flags given that only some served kinds read (`predict_options`,
            e.g. "corrupt"); a model whose kind reads none of them is refused, naming the flag,
            before it loads.

    Raises:
        FileNotFoundError: `path` is missing, or is no model `predict` serves. ValueError: a flag
            of `options` the model's kind does not read; a model without what it needs.
    """
    named = sources.init_inputs(path)
    if named == [path] and not os.path.exists(path):
        raise FileNotFoundError(f"--init {path} does not exist.")
    version = export_version(path) if named == [path] else None
    if version is not None:
        _refuse_encoder_export(path, version)
        kind = get(_config_file(version).get("kind", tasks.DEFAULT), version)
        _check_options(kind, options, path)
        import tensorflow_text  # noqa: F401  (registers the ops the serving graph tokenizes with)

        loaded = tf.saved_model.load(version)
        settings = _asset_config(loaded, version)
        return ServedPredictor(dict(loaded.signatures), settings, version, get(settings["kind"], version), keep=loaded)
    if path.endswith(".keras") or tasks.OUTPUTS.recognises(path):
        _check_options(tasks.OUTPUTS.kind_of(path) if os.path.isdir(path) else None, options, path)
        finetuned = tasks.OUTPUTS.load(path)
        sources.check_vocabulary(finetuned.vocab_file, finetuned.model.encoder.vocab_size, path, given=False,
                                 fix="put back the vocab.txt the model was fine-tuned with")
        module = finetuned.kind.serving_module(finetuned.model, finetuned.vocab_file, finetuned.settings)
        settings = _asset_config(module, path)
        return ServedPredictor(module.signatures(), settings, path, get(settings["kind"], path), keep=module)
    try:
        sources.resolve(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"--init {path} is neither a fine-tuning output dir (no {', '.join(tasks.OUTPUTS.model_files().values())}), "
            f"a TF Serving export (no {run_files.SAVED_MODEL_FILE} in it or in a numbered version folder) nor a "
            "pre-trained ELECTRA for replaced-token scores (a pre-training run, hf:DIR, official:DIR): fine-tune "
            "with `python -m electra_tf.finetune` first.") from None
    kind = tasks.KINDS[tasks.PRETRAINED]
    _check_options(kind, options, path)
    module = kind.open(path, options)
    settings = _asset_config(module, path)
    return ServedPredictor(module.signatures(), settings, path, get(settings["kind"], path), keep=module)


def _refuse_encoder_export(path, version):
    """Refuses an `export --format encoder` SavedModel: a bare encoder serves no predictions."""
    config_file = os.path.join(version, run_files.ASSETS_DIR, run_files.ENCODER_CONFIG_ASSET)
    if os.path.exists(config_file):
        raise ValueError(f"`--init={path}` is an encoder export ({config_file}): a bare encoder, without a task "
                         "head, predicts nothing. Fine-tune it (`python -m electra_tf.finetune --init "
                         f"{path}`) and predict with the run's --output_dir, or its `export --format serving`.")


def _config_file(version):
    """The `serving_config.json` of an export, read as a file (before the SavedModel loads); {} when absent."""
    config_file = os.path.join(version, run_files.ASSETS_DIR, run_files.SERVING_CONFIG_ASSET)
    if not os.path.exists(config_file):
        return {}
    with open(config_file) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{config_file} is not valid JSON ({e}): truncated or damaged.") from None


def _check_options(kind, options, path):
    """Refuses the flags of `options` that the served `kind` (None: a fine-tuned model) does not read."""
    refused = [option for option in options if kind is None or option not in kind.predict_options]
    if refused:
        readers = [k for k in tasks.KINDS.values() if refused[0] in k.predict_options]
        what = f"a {kind.name} model" if kind is not None else "a fine-tuned model"
        raise ValueError(f"`--{refused[0]}` applies to {' and '.join(map(_sources, readers))}; --init {path} is "
                         f"{what}.")


def _sources(kind):
    """The models of served `kind`, as `predict --init` takes them (for an error)."""
    if not kind.finetunes:
        return (f"{kind.name} models (replaced-token scores of a pre-training run, hf:, official: or an "
                f"`export --format {kind.name}`)")
    return (f"{kind.name} models (a `finetune --task_kind {kind.name}` output dir, or its "
            "`export --format serving`)")


def _asset_config(module, where):
    """The `serving_config.json` asset of a serving module (the same file, loaded or in-process)."""
    asset = getattr(module, "config_asset", None)
    if asset is None:
        raise ValueError(f"{where} is not a serving export of a fine-tuned model (no {run_files.SERVING_CONFIG_ASSET} "
                         "asset): export it with `python -m electra_tf.export --format serving`.")
    with open(asset.asset_path.numpy().decode()) as f:
        config = json.load(f)
    config.setdefault("kind", tasks.DEFAULT)  # exports of electra_tf 0.1 name no kind: they are classifiers
    return config


