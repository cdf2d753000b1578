"""A fine-tuned model's serving signatures, run on batches of examples: `open_model(path)`.

One code path for both kinds of `--init`: a TF Serving export is loaded with
`tf.saved_model.load` and its `signatures` called; a fine-tuning output dir is
turned into the `tf.Module` the export would save
(`electra_tf.export.serving.serving_module`) and its `signatures()` called.
Either way the outputs are the served SavedModel's, formatted as one JSON
object per example (`Prediction.output`), led by the example's input `line`
(none for SQuAD JSON, whose records carry the question `id`); a skipped line
(blank) gives `{"line": n, "skipped": "blank line"}` without a signature call.
"""

import dataclasses
import json
import os
import sys
import time
import typing

import numpy as np
import tensorflow as tf

from electra_tf import run_files
from electra_tf.predicting.inputs import CLASSIFICATION, SPAN_QA, TAGGING

WORDS_SIGNATURE = "serve_words"  # tagging: whitespace-separated words, taken as they are
MODEL_FILES = (run_files.CLASSIFIER_FILE, run_files.TOKEN_CLASSIFIER_FILE, run_files.QUESTION_ANSWERER_FILE)


@dataclasses.dataclass
class Prediction:
    """`output`: the JSON object written for one example; `word_starts`: tagging, each word's first character."""

    output: dict
    word_starts: typing.Optional[list] = None


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
    if os.path.isdir(path) and not any(os.path.exists(os.path.join(path, f)) for f in MODEL_FILES):
        raise FileNotFoundError(
            f"--init {path} is neither a fine-tuning output dir (no {', '.join(MODEL_FILES)}) nor a TF Serving "
            f"export (no {run_files.SAVED_MODEL_FILE} in it or in a numbered version folder): fine-tune with "
            "`python -m electra_tf.finetune` first.")
    from electra_tf.export.serving import load_finetuned, serving_module

    model, vocab_file, config = load_finetuned(path)
    module = serving_module(model, vocab_file, config)
    return ServedPredictor(module.signatures(), _asset_config(module, path), path, keep=module)


def _asset_config(module, where):
    """The `serving_config.json` asset of a serving module (the same file, loaded or in-process)."""
    asset = getattr(module, "config_asset", None)
    if asset is None:
        raise ValueError(f"{where} is not a serving export of a fine-tuned model (no {run_files.SERVING_CONFIG_ASSET} "
                         "asset): export it with `python -m electra_tf.export --kind serving`.")
    with open(asset.asset_path.numpy().decode()) as f:
        config = json.load(f)
    config.setdefault("kind", CLASSIFICATION)
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
        self.kind = settings["kind"]
        self.path = path
        self._keep = keep
        if self.kind not in (CLASSIFICATION, TAGGING, SPAN_QA):
            raise ValueError(f"{path}: a served model of unknown kind {self.kind!r}.")

    def signature_of(self, example):
        return WORDS_SIGNATURE if example.words is not None and WORDS_SIGNATURE in self.signatures \
            else "serving_default"

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
            args = {key: tf.constant([examples[i].inputs[key] for i in indices])
                    for key in examples[indices[0]].inputs}
            values = {k: v.numpy() for k, v in self.signatures[name](**args).items()}
            for row, i in enumerate(indices):
                prediction = self.format({k: v[row] for k, v in values.items()}, examples[i])
                if examples[i].line is not None:
                    prediction.output = {"line": examples[i].line, **prediction.output}
                out[i] = prediction
        return out

    def format(self, row, example):
        """The JSON object of one example from its row of the signature's outputs (its `line` aside)."""
        if self.kind == CLASSIFICATION:
            if "score" in row:
                return Prediction({"score": float(row["score"])})
            names = self.settings["label_names"]
            return Prediction({"label": row["label"].decode(),
                               "probabilities": dict(zip(names, row["probabilities"].astype(float).tolist()))})
        if self.kind == TAGGING:
            n = int(row["num_words"])
            output = {"text": example.inputs["text"], "words": _strings(row["words"][:n]),
                      "tags": _strings(row["tags"][:n])}
            if "num_entities" in row:
                m = int(row["num_entities"])
                output["entities"] = [
                    {"text": t, "type": y, "start": int(s), "end": int(e)}
                    for t, y, s, e in zip(_strings(row["entity_text"][:m]), _strings(row["entity_type"][:m]),
                                          row["entity_start"][:m], row["entity_end"][:m])]
            return Prediction(output, word_starts=row["word_start"][:n].tolist())
        output = {"id": example.id if example.id is not None else str(example.line),
                  "answer": row["answer"].decode(), "start": int(row["start"]), "end": int(row["end"]),
                  "score": float(row["score"]), "no_answer": bool(row.get("no_answer", row["start"] < 0))}
        if "null_odds" in row:
            output["null_odds"] = float(row["null_odds"])
        return Prediction(output)


def _strings(values):
    return [v.decode() for v in np.asarray(values).tolist()]


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
