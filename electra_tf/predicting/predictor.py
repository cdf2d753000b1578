"""A fine-tuned model's serving signatures, run on batches of examples: `open_model(path)`.

One code path for both kinds of `--init`: a TF Serving export is loaded with
`tf.saved_model.load` and its `signatures` called; a fine-tuning output dir is
turned into the `tf.Module` the export would save (`finetuning.kinds.serving_module`)
and its `signatures()` called. Either way the outputs are the served SavedModel's,
formatted by the model's task kind as one JSON object per example
(`TaskKind.format_prediction`), led by the example's input `line`
(none for SQuAD JSON, whose records carry the question `id`); a skipped line
(blank) gives `{"line": n, "skipped": "blank line"}` without a signature call.
"""

import json
import os
import sys
import time

import tensorflow as tf

from electra_tf import run_files
from electra_tf.finetuning import kinds
from electra_tf.finetuning.examples import Prediction


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


def open_model(path):
    """The `ServedPredictor` of a fine-tuning output dir or a serving export.

    Raises:
        FileNotFoundError: `path` is missing, or is neither kind of model.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"--init {path} does not exist.")
    version = export_version(path)
    if version is not None:
        import tensorflow_text  # noqa: F401  (registers the ops the serving graph tokenizes with)

        loaded = tf.saved_model.load(version)
        return ServedPredictor(dict(loaded.signatures), _asset_config(loaded, version), version, keep=loaded)
    if os.path.isdir(path) and kinds.for_output_dir(path) is None:
        raise FileNotFoundError(
            f"--init {path} is neither a fine-tuning output dir (no {', '.join(kinds.model_files().values())}) nor "
            f"a TF Serving export (no {run_files.SAVED_MODEL_FILE} in it or in a numbered version folder): fine-tune "
            "with `python -m electra_tf.finetune` first.")
    finetuned = kinds.load_finetuned(path)
    module = kinds.serving_module(finetuned.model, finetuned.vocab_file, finetuned.settings)
    return ServedPredictor(module.signatures(), _asset_config(module, path), path, keep=module)


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
        if settings["kind"] not in kinds.KINDS:
            raise ValueError(f"{path}: a served model of unknown kind {settings['kind']!r} (known: "
                             f"{sorted(kinds.KINDS)}).")
        self.kind = kinds.get(settings["kind"])
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
            args = {key: _strings_tensor([examples[i].inputs[key] for i in indices])
                    for key in examples[indices[0]].inputs}
            values = {k: v.numpy() for k, v in self.signatures[name](**args).items()}
            for row, i in enumerate(indices):
                prediction = self.kind.format_prediction({k: v[row] for k, v in values.items()}, examples[i],
                                                         self.settings)
                if examples[i].line is not None:
                    prediction.output = {"line": examples[i].line, **prediction.output}
                out[i] = prediction
        return out


def _strings_tensor(values):
    """A string tensor of a batch's values: strings `(batch,)`, or lists of strings padded with "" `(batch, n)`."""
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
