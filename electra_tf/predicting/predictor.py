"""A served model's signatures, run on batches of examples: `ServedPredictor`.

`electra_tf.tasks.served.open_model(path)` builds one for every kind of `--init` (a TF
Serving export, a fine-tuning output dir, a pre-trained discriminator), with the served
kind it found. The outputs are the served SavedModel's, formatted by that
kind as one JSON object per example
(`TaskKind.format_prediction`), led by the example's input `line`
(none for SQuAD JSON, whose records carry the question `id`); a skipped line
(blank) gives `{"line": n, "skipped": "blank line"}` without a signature call.
"""

import os
import sys
import time

import tensorflow as tf

from electra_tf import run_files
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


class ServedPredictor:
    """The signatures of one served model, its kind and its serving config.

    Args:
        signatures: dict name -> callable(**string tensors) -> dict of tensors.
        settings: dict. Its `serving_config.json`.
        path: str. Where it was read from.
        kind: its served kind (`electra_tf.tasks.get(settings["kind"])`): what reads its inputs and formats its
            outputs (`TaskKind`'s post-training part).
        keep: the object holding the signatures' variables.
    """

    def __init__(self, signatures, settings, path, kind, keep=None):
        self.signatures = signatures
        self.settings = settings
        self.kind = kind
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
