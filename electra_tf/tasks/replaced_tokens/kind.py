"""Replaced-token scores: what `predict` makes of a pre-trained discriminator (the served kind "rtd").

Not a fine-tuning task (nothing is fine-tuned): `ReplacedTokenKind` implements the
post-training part of `tasks.base.TaskKind` (`serving_module`, `read_examples`,
`format_prediction`, `score`, ...) for the served module of `tasks.replaced_tokens.serving`, and
The registry `electra_tf.tasks.KINDS` lists it beside the fine-tuned kinds (served only). The model is read through the
`--init` registry (`sources.load_detector`: a pre-training run with its checkpoints, an `hf:`
`ElectraForPreTraining` folder or `DISC,GEN` pair, an `official:` checkpoint), or is an
`export --format rtd` SavedModel.

Input: text lines, or JSON Lines `{"text": ..., "id": ...}` (`id` optional, written back).
Output, one record per line:

    {"line": 1, "text": "The cat sat.", "words": [
        {"text": "The", "start": 0, "end": 3, "p_replaced": 0.02, "pieces": ["the"], "piece_p_replaced": [0.02]},
        ...], "max_p_replaced": 0.91, "mean_p_replaced": 0.31, "num_flagged": 1}

`p_replaced` is the probability that the word was replaced: the highest of its WordPieces'
(`piece_p_replaced`, sigmoid of the discriminator head's logit; null for a piece past the end
of the window it is read from, only in a word longer than a window). `start` / `end` are
character offsets into the line (`text[start:end]` is the word). `num_flagged` counts the words
above 0.5, the discriminator's own threshold in pre-training.

`--corrupt` (a model with its generator) first corrupts each text as pre-training does
(masking, the generator's samples; `--seed`) and scores the corrupted text: each word adds
`replaced` (the generator changed one of its pieces), `corrupted` (a replaced word as the
discriminator saw it: its pieces joined, `##` dropped; else the word) and `corrupted_pieces`, the record `corrupted_text` and `num_replaced`; and the predictions are
scored against the generator's replacements, as pre-training's metrics score them: AUC over
the pieces (`disc_auc`, the headline; [CLS] and [SEP], never replaced, are not counted), accuracy,
precision and recall at 0.5, and the words' AUC.
"""

import numpy as np

from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.replaced_tokens.description import DESCRIPTION
from electra_tf.tasks.replaced_tokens.config import PredictOptions
from electra_tf.tasks.replaced_tokens.metrics import auc
from electra_tf.tasks.replaced_tokens.serving import CORRUPT_SIGNATURE, KIND, rtd_serving_module
from electra_tf.finetuning.examples import SERVING_DEFAULT, Example, Prediction, each_line, field, json_object

CORRUPTED = "the generator's replacements"  # the gold of a `--corrupt` example: known once it is predicted
THRESHOLD = 0.5  # a word is flagged above it (the discriminator's accuracy threshold in pre-training)


class ReplacedTokenKind(TaskKind):
    """The served kind "rtd": replaced-token scores of a pre-trained discriminator (see the module docstring)."""

    name = KIND
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    finetunes = False
    predict_formats = ("jsonl", "text")
    predict_options = ("corrupt",)  # the `predict` flags only this kind reads
    PredictOptions = PredictOptions

    @classmethod
    def open(cls, init, options=()):
        """The serving module of the detector `init` holds (any `--init` form), built in this process.

        Args:
            init: str. An `--init` (`sources.load_detector`).
            options: the `predict_options` given: with "corrupt", a source without its generator
                is refused naming `--corrupt` (a Hugging Face folder before any weight is read).
        """
        from electra_tf import sources

        detector = sources.load_detector(init, generator_for="`--corrupt`" if "corrupt" in options else None)
        return cls.serving_module(detector, detector.vocab_file, {"source": init})

    @classmethod
    def export_pretrained(cls, init, output_dir, model_name, version, vocab_file=None, seq_length=None, finetuned=None):
        """`export --format rtd`: the replaced-token detector `init` holds as a TF Serving version; returns its folder.

        `finetuned`: the task kind of the fine-tuning output `init` is (the caller asks the registry), or None; a
        fine-tuned model is refused, naming the pre-trained model to export instead.
        """
        from electra_tf import sources
        from electra_tf.tasks.replaced_tokens.serving import export_rtd_serving

        if finetuned is not None:
            raise ValueError(f"`--init={init}` is a fine-tuning output ({finetuned.model_file}): a fine-tuned model "
                             "has no replaced-token head. Export it with --format serving; --format rtd takes the "
                             "pre-training run (or hf:, official:) it was fine-tuned from.")
        detector = sources.load_detector(init, vocab_file=vocab_file)
        return export_rtd_serving(detector.discriminator, detector.vocab_file, output_dir, model_name, version,
                                  seq_length, pretrainer=detector.pretrainer, source=init)

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        """The `ReplacedTokenServingModule` of a `sources.Detector` (`export --format rtd` saves it)."""
        return rtd_serving_module(model.discriminator, vocab_file, seq_length or settings.get("seq_length"),
                                  settings.get("stride"), model.pretrainer, settings.get("source", ""))

    @classmethod
    def sniff_format(cls, text):
        return None

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """Text lines, or JSON Lines `{"text", "id"}`; with `options.corrupt`, for the `serve_corrupted` signature."""
        if options.corrupt and not settings.get("generator"):
            raise ValueError(f"`--corrupt` needs the generator: {settings.get('source') or 'the export'} holds the "
                             "discriminator alone (exported from an ElectraForPreTraining folder). Export a "
                             "pre-training run or an hf:DISC,GEN pair, or leave out --corrupt.")

        def example(line, value, example_id=None):
            inputs, signature, gold = {"text": value}, SERVING_DEFAULT, None
            if options.corrupt:
                inputs, signature, gold = {"text": value, "seed": options.seed or 0}, CORRUPT_SIGNATURE, CORRUPTED
            return Example(inputs, gold, line, signature=signature, id=example_id)

        if input_format == "jsonl":
            def parse(line, raw):
                record = json_object(name, line, raw)
                example_id = record.get("id")
                return example(line, field(record, ("text",), name, line),
                               None if example_id is None else str(example_id))

            return each_line(name, text, parse)
        return each_line(name, text, lambda line, raw: example(line, raw))

    @classmethod
    def format_prediction(cls, row, example, settings):
        text = example.inputs["text"]
        n, m = int(row["num_words"]), int(row["num_pieces"])
        word_p = row["word_p_replaced"][:n].astype(float)
        piece_p = row["piece_p_replaced"][:m].astype(float)
        piece_word = row["piece_word"][:m]
        pieces = _strings(row["pieces"][:m])
        corrupt = "corrupted_pieces" in row
        words = []
        for i, (word, start, end) in enumerate(zip(_strings(row["words"][:n]), row["word_start"][:n].tolist(),
                                                   row["word_end"][:n].tolist())):
            own = np.flatnonzero(piece_word == i)
            words.append({"text": word, "start": start, "end": end, "p_replaced": _probability(word_p[i]),
                          "pieces": [pieces[j] for j in own],
                          "piece_p_replaced": [_probability(piece_p[j]) for j in own]})
        output = {"text": text} if example.id is None else {"id": example.id, "text": text}
        output["words"] = words
        output.update(max_p_replaced=_probability(word_p.max()) if n else None,
                      mean_p_replaced=_probability(word_p.mean()) if n else None,
                      num_flagged=int((word_p > THRESHOLD).sum()))
        scored = ~np.isnan(piece_p)
        extra = {"piece_p": piece_p[scored], "word_p": word_p}
        if corrupt:
            seen = _strings(row["corrupted_pieces"][:m])
            piece_replaced = row["piece_replaced"][:m].astype(bool)
            word_replaced = row["word_replaced"][:n].astype(bool)
            corrupted_words = _strings(row["corrupted_words"][:n])
            for i, word in enumerate(words):
                word.update(corrupted=corrupted_words[i] if word_replaced[i] else word["text"],
                            replaced=bool(word_replaced[i]),
                            corrupted_pieces=[seen[j] for j in np.flatnonzero(piece_word == i)])
            output.update(corrupted_text=_corrupted_text(text, words), num_replaced=int(word_replaced.sum()))
            extra.update(piece_replaced=piece_replaced[scored], word_replaced=word_replaced)
        return Prediction(output, extra)

    @classmethod
    def score(cls, settings, examples, predictions):
        """Of `--corrupt` predictions: the discriminator against the generator's replacements (pieces and words)."""
        del settings, examples
        p = np.concatenate([prediction.extra["piece_p"] for prediction in predictions])
        y = np.concatenate([prediction.extra["piece_replaced"] for prediction in predictions])
        word_p = np.concatenate([prediction.extra["word_p"] for prediction in predictions])
        word_y = np.concatenate([prediction.extra["word_replaced"] for prediction in predictions])
        flagged = p > THRESHOLD
        scores = {
            "disc_auc": auc(y, p),
            "disc_accuracy": float(np.mean(flagged == y)) if len(y) else None,
            "disc_precision": float(np.mean(y[flagged])) if flagged.any() else 0.0,
            "disc_recall": float(np.mean(flagged[y])) if y.any() else 0.0,
            "word_auc": auc(word_y, word_p),
            "replaced_pieces": int(y.sum()), "pieces": int(len(y)),
            "replaced_words": int(word_y.sum()), "words": int(len(word_y)), "texts": len(predictions),
        }
        # AUC needs replaced and kept pieces; without both the headline is the accuracy.
        return {"metric": "disc_auc" if scores["disc_auc"] is not None else "disc_accuracy", **scores}


def _corrupted_text(text, words):
    """`text` with each replaced word's characters swapped for the word as the generator left it."""
    out, end = [], 0
    for word in words:
        if word["replaced"]:
            out += [text[end:word["start"]], word["corrupted"]]
            end = word["end"]
    return "".join(out) + text[end:]


def _probability(value):
    """A probability for JSON: 6 decimals; None for NaN (a piece not scored)."""
    return None if np.isnan(value) else round(float(value), 6)


def _strings(values):
    return [v.decode() for v in np.asarray(values).tolist()]
