"""A served model's signatures, run on batches of examples: `open_model(path)`.

One code path for every kind of `--init`: a TF Serving export is loaded with
`tf.saved_model.load` and its `signatures` called; a fine-tuning output dir is
turned into the `tf.Module` the export would save (`finetuning.kinds.serving_module`)
and its `signatures()` called; any other `--init` form (a pre-training run, `hf:`,
`official:`, ...) is a pre-trained discriminator whose replaced-token scores are served
by the module `export --kind rtd` would save (`replaced_tokens.ReplacedTokenKind`).
Either way the outputs are the served SavedModel's, formatted by the model's
served kind (`served_kinds`) as one JSON object per example
(`TaskKind.format_prediction`), led by the example's input `line`
(none for SQuAD JSON, whose records carry the question `id`); a skipped line
(blank) gives `{"line": n, "skipped": "blank line"}` without a signature call.
"""

import json
import os
import sys
import time

import tensorflow as tf

from electra_tf import run_files, sources
from electra_tf.finetuning import kinds
from electra_tf.finetuning.examples import Prediction
from electra_tf.predicting import served_kinds


def export_version(path):
    """The SavedModel folder of a serving export at `path` (a version, or the model / base folder), or None.

    A model folder holds numbered versions; the highest complete one (with
    `saved_model.pb`) is the one TF Serving serves. A base folder holding one
    model folder is read as that model folder.
    """
    if os.path.exists(os.path.join(path, run_files.SAVED_MODEL_FILE)):
        return path
    if not os.path.isdir(path):
        return None
    entries = sorted(os.listdir(path))
    versions = [int(e) for e in entries if e.isdigit()
                and os.path.exists(os.path.join(path, e, run_files.SAVED_MODEL_FILE))]
    if versions:
        return os.path.join(path, str(max(versions)))
    models = [e for e in entries if os.path.isdir(os.path.join(path, e)) and export_version_of_model(path, e)]
    if len(models) > 1:
        raise ValueError(f"--init {path} holds several served models ({', '.join(models)}); name one of them.")
    return export_version(os.path.join(path, models[0])) if models else None


def export_version_of_model(base, name):
    folder = os.path.join(base, name)
    return any(e.isdigit() and os.path.exists(os.path.join(folder, e, run_files.SAVED_MODEL_FILE))
               for e in os.listdir(folder))


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
        kind = served_kinds.get(_config_file(version).get("kind", "classification"), version)
        _check_options(kind, options, path)
        import tensorflow_text  # noqa: F401  (registers the ops the serving graph tokenizes with)

        loaded = tf.saved_model.load(version)
        return ServedPredictor(dict(loaded.signatures), _asset_config(loaded, version), version, keep=loaded)
    if path.endswith(".keras") or (os.path.isdir(path) and kinds.for_output_dir(path) is not None):
        _check_options(kinds.for_output_dir(path) if os.path.isdir(path) else None, options, path)
        finetuned = kinds.load_finetuned(path)
        sources.check_vocabulary(finetuned.vocab_file, finetuned.model.encoder.vocab_size, path, given=False,
                                 fix="put back the vocab.txt the model was fine-tuned with")
        module = kinds.serving_module(finetuned.model, finetuned.vocab_file, finetuned.settings)
        return ServedPredictor(module.signatures(), _asset_config(module, path), path, keep=module)
    try:
        sources.resolve(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"--init {path} is neither a fine-tuning output dir (no {', '.join(kinds.model_files().values())}), "
            f"a TF Serving export (no {run_files.SAVED_MODEL_FILE} in it or in a numbered version folder) nor a "
            "pre-trained ELECTRA for replaced-token scores (a pre-training run, hf:DIR, official:DIR): fine-tune "
            "with `python -m electra_tf.finetune` first.") from None
    kind = served_kinds.REPLACED_TOKENS
    _check_options(kind, options, path)
    module = kind.open(path, options)
    return ServedPredictor(module.signatures(), _asset_config(module, path), path, keep=module)


def _refuse_encoder_export(path, version):
    """Refuses an `export --kind encoder` SavedModel: a bare encoder serves no predictions."""
    config_file = os.path.join(version, run_files.ASSETS_DIR, run_files.ENCODER_CONFIG_ASSET)
    if os.path.exists(config_file):
        raise ValueError(f"`--init={path}` is an encoder export ({config_file}): a bare encoder, without a task "
                         "head, predicts nothing. Fine-tune it (`python -m electra_tf.finetune --init "
                         f"{path}`) and predict with the run's --output_dir, or its `export --kind serving`.")


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
        readers = [k.name for k in served_kinds.SERVED_KINDS.values() if refused[0] in k.predict_options]
        what = f"a {kind.name} model" if kind is not None else "a fine-tuned model"
        raise ValueError(f"`--{refused[0]}` applies to {', '.join(readers)} models (replaced-token scores of a "
                         f"pre-training run, hf:, official: or an `export --kind rtd`); --init {path} is {what}.")


def _asset_config(module, where):
    """The `serving_config.json` asset of a serving module (the same file, loaded or in-process)."""
    asset = getattr(module, "config_asset", None)
    if asset is None:
        raise ValueError(f"{where} is not a serving export of a fine-tuned model (no {run_files.SERVING_CONFIG_ASSET} "
                         "asset): export it with `python -m electra_tf.export --kind serving`.")
    with open(asset.asset_path.numpy().decode()) as f:
        config = json.load(f)
    config.setdefault("kind", "classification")  # exports of electra_tf 0.1 name no kind: they are classifiers
    return config


class ServedPredictor:
    """The signatures of one served model, its kind and its serving config.

    Args:
        signatures: dict name -> callable(**string tensors) -> dict of tensors.
        settings: dict. Its `serving_config.json`.
        path: str. Where it was read from.
        keep: the object holding the signatures' variables.
    """

    def __init__(self, signatures, settings, path, keep=None):
        self.signatures = signatures
        self.settings = settings
        self.kind = served_kinds.get(settings["kind"], path)
        self.path = path
        self._keep = keep

    def signature_of(self, example):
        """The example's signature, or `serving_default` where the model has not that one (an older export)."""
        return example.signature if example.signature in self.signatures else "serving_default"

    def predict(self, examples, batch_size=32, write=None, progress=False):
        """`Prediction`s of `examples`, `batch_size` per signature call; `write(output)` as each batch ends."""
        predictions = []
        bar = Progress(len(examples), enabled=progress and len(examples) > 3 * batch_size)
        for start in range(0, len(examples), batch_size):
            batch = self.predict_batch(examples[start:start + batch_size])
            predictions += batch
            if write is not None:
                for prediction in batch:
                    write(prediction.output)
            bar.update(len(batch))
        bar.close()
        return predictions

    def predict_batch(self, examples):
        """One signature call per signature the examples need; `Prediction`s in the examples' order."""
        out = [None] * len(examples)
        groups = {}
        for i, example in enumerate(examples):
            if example.skipped:
                out[i] = Prediction({"line": example.line, "skipped": example.skipped})
                continue
            groups.setdefault(self.signature_of(example), []).append(i)
        for name, indices in groups.items():
            args = {key: _input_tensor([examples[i].inputs[key] for i in indices])
                    for key in examples[indices[0]].inputs}
            values = {k: v.numpy() for k, v in self.signatures[name](**args).items()}
            for row, i in enumerate(indices):
                prediction = self.kind.format_prediction({k: v[row] for k, v in values.items()}, examples[i],
                                                         self.settings)
                if examples[i].line is not None:
                    prediction.output = {"line": examples[i].line, **prediction.output}
                out[i] = prediction
        return out


def _input_tensor(values):
    """A tensor of a batch's values: strings or ints `(batch,)`, or lists of strings padded with "" `(batch, n)`."""
    if values and isinstance(values[0], int):
        return tf.constant(values, tf.int64)
    if values and isinstance(values[0], (list, tuple)):
        width = max(len(v) for v in values)
        values = [list(v) + [""] * (width - len(v)) for v in values]
    return tf.constant(values, tf.string)


class Progress:
    """`done/total examples (rate/s)` on one stderr line, redrawn at most twice a second."""

    def __init__(self, total, enabled=True, stream=None):
        self.total, self.enabled, self.stream = total, enabled, stream or sys.stderr
        self.done, self.start, self.drawn = 0, time.perf_counter(), 0.0
        if enabled:  # at once: a long first batch shows that prediction started
            self.stream.write(f"predict: 0/{total} examples")
            self.stream.flush()

    def update(self, n):
        self.done += n
        now = time.perf_counter()
        if self.enabled and (now - self.drawn >= 0.5 or self.done == self.total):
            self.drawn = now
            rate = self.done / max(now - self.start, 1e-9)
            self.stream.write(f"\rpredict: {self.done}/{self.total} examples ({rate:.1f} examples/s)")
            self.stream.flush()

    def close(self):
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
