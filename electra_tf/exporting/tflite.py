"""A fine-tuned model as a LiteRT (TensorFlow Lite) model, for phones and other small devices.

`export_tflite` writes a folder (`python -m electra_tf.export --format tflite`):

    model.tflite         the model, one signature `serving_default`
    labels.txt           label i on line i (not for regression)
    vocab.txt            the WordPiece vocabulary, with electra_tokenizer.json (its normalisation):
                         what an `--ids` client tokenizes with (the raw-text model holds its own copy)
    tflite_config.json   task, kind, input, seq_length, pad_multiple, pair, label names,
                         quantization, the signature's inputs and outputs, the custom ops, the
                         special token ids

Signature `serving_default` of a classifier:

    raw text (default)  text string (batch,)  [+ text_b string (batch,) for pair tasks]
    --ids               token_ids, segment_ids, padding_mask  int32 (batch, length <= seq_length)
                        -> probabilities float32 (batch, num_labels), label_id int32 (batch,),
                           label string (batch,)   (regression tasks: -> score float32 (batch,))

A tagger exports `--ids` only: ids of one window `(batch, length)` -> `probabilities`
`(batch, length, num_labels)`, `label_id` and `label` `(batch, length)`, a tag per
piece, as the SavedModel's `predict_ids`. Its raw-text serving cuts words with tensorflow-text's
`RegexSplitWithOffsets` and TensorFlow string and loop ops, which have no LiteRT kernel; a
question-answering model's span search likewise, so it has no LiteRT export.

The encoder is computed as the served SavedModel computes it (`inference_graph.encoder_forward`,
where it describes the encoder exactly): each layer's query, key and value one `FULLY_CONNECTED`,
the attention mask one `ADD`. Against the Keras layers' graph, which the converter lowers to
nearly twice the ops in more XNNPACK partitions, that took 0.76x the CPU time at batch 1 and 0.82x
at batch 32 with int8 weights, 0.90x and 0.93x float (`git show 8108a41:benchmarks/results/litert_encoder.md`,
a benchmark removed since).

The raw-text model tokenizes in the graph with the tokenizer used in training: tensorflow-text's
`FastBertNormalize` and `FastWordpieceTokenizeWithOffsets`, the two custom ops tensorflow-text
ships LiteRT kernels for (`tflite_runtime.load_interpreter` registers them). The ids are
packed into `[CLS] a [SEP] (b [SEP])` with LiteRT builtin ops (`pack_ids`), the same ids as the
SavedModel's `tf.text` packing. The `--ids` model holds no custom op: the stock LiteRT runtime
runs it. `quantize="dynamic_int8"` stores the weights as int8 (dynamic-range quantization:
activations stay float).
"""

import os

import tensorflow as tf

from electra_tf import atomic, run_files
from electra_tf.data.tokenizer import LEGACY, copy_vocab, pair_lengths, padded_length
from electra_tf.exporting.tflite_runtime import TEXT_OP_REGISTRARS, custom_ops

QUANTIZATIONS = ("none", "dynamic_int8")
# A raw-text call is computed at its longest request's own length, not rounded up as the
# SavedModel's (`SERVING_PAD_MULTIPLE`): LiteRT builds no kernels per shape for the rounding to
# save, so each padded position is only work (against a multiple of 8: 0.93x-0.95x the CPU time
# at batch 1, 0.98x-0.99x at batch 32; `git show 8108a41:benchmarks/results/litert_padding.md`).
LITERT_PAD_MULTIPLE = 1
SIGNATURE = "serving_default"
ID_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def pack_ids(tokenizer, texts_a, texts_b=None, seq_length=128, pad_multiple=None):
    """`WordPieceTokenizer.pack` with LiteRT builtin ops: `[CLS] a [SEP] (b [SEP])`, truncated, padded.

    The same ids as `tokenizer.pack` (pairs truncated longest-first, `pair_lengths`),
    built from the pieces' flat values and row splits with gathers and selects
    instead of ragged ops (`RaggedGather`, `RaggedRange`, ... have no LiteRT kernel).

    Args:
        tokenizer: `WordPieceTokenizer`.
        texts_a: string tensor `(batch,)`.
        texts_b: optional string tensor `(batch,)`.
        seq_length: int. Longest output, special tokens included.
        pad_multiple: int or None. As `WordPieceTokenizer.pack`'s: None pads every row to
            `seq_length`; an int to the batch's longest row rounded up to a multiple of it.

    Returns:
        dict of int32 tensors `(batch, length)`: `token_ids`, `segment_ids`, `padding_mask`.

    Example:
        ```python
        import pathlib

        from electra_tf.data.tokenizer import WordPieceTokenizer
        from electra_tf.exporting.tflite import pack_ids

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        tokenizer = WordPieceTokenizer("vocab.txt")
        pack_ids(tokenizer, ["Hello world!"], ["world"], seq_length=8)["token_ids"].numpy()
        # [[2, 5, 6, 7, 3, 6, 3, 0]]
        ```
    """
    a_values, a_starts, len_a = _pieces(tokenizer, texts_a)
    if texts_b is None:
        keep_a, keep_b = tf.minimum(len_a, seq_length - 2), tf.zeros_like(len_a)
        b_values, b_starts = a_values, a_starts  # unused: no position is in b
    else:
        b_values, b_starts, len_b = _pieces(tokenizer, texts_b)
        keep_a, keep_b = pair_lengths(len_a, len_b, seq_length - 3)
    length = keep_a + 2 if texts_b is None else keep_a + keep_b + 3  # b's [SEP] stands also when b is empty
    if pad_multiple is None:
        width = seq_length
    else:  # an empty batch's max is int32's lowest
        width = padded_length(tf.maximum(tf.reduce_max(length), 0), seq_length, pad_multiple)
    position = tf.range(width)[None, :]
    keep_a, keep_b, length = keep_a[:, None], keep_b[:, None], length[:, None]
    in_a = (position >= 1) & (position <= keep_a)
    b_first = keep_a + 2  # [CLS] a [SEP] b
    in_b = (position >= b_first) & (position < b_first + keep_b)
    is_sep = position == keep_a + 1
    if texts_b is not None:
        is_sep |= position == b_first + keep_b
    ids = tf.where(in_a, _gather_pieces(a_values, a_starts, position - 1, in_a),
                   _gather_pieces(b_values, b_starts, position - b_first, in_b))
    ids = tf.where(position == 0, tokenizer.cls_id, tf.where(is_sep, tokenizer.sep_id, ids))
    padding_mask = position < length
    padding_mask = tf.cast(padding_mask, tf.int32)
    if texts_b is None:
        segment_ids = tf.zeros_like(padding_mask)
    else:
        segment_ids = tf.cast(position >= b_first, tf.int32) * padding_mask
    return {
        "token_ids": tf.where(padding_mask > 0, ids, tokenizer.pad_id),
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def _pieces(tokenizer, texts):
    """Flat piece ids, each text's first piece and piece count (int32)."""
    ragged = tokenizer.tokenize(texts)
    splits = tf.cast(ragged.row_splits, tf.int32)
    return tf.cast(ragged.flat_values, tf.int32), splits[:-1], splits[1:] - splits[:-1]


def _gather_pieces(values, starts, offsets, inside):
    """`values[starts + offsets]` where `inside`, else 0 (a gather that never reads out of range)."""
    padded = tf.concat([values, tf.zeros([1], tf.int32)], axis=0)
    return tf.gather(padded, tf.where(inside, starts[:, None] + offsets, tf.size(values)))


class TFLiteModule(tf.Module):
    """The functions a LiteRT export converts, over a serving module's model and outputs.

    Args:
        served: the `ServingModule` or `TaggingServingModule` of the model
            (its task kind's `tflite_module`): its variables, tokenizer, `seq_length`
            and `_outputs` (what its `predict_ids` returns).
        pair: bool. Raw text takes `text_b` too.
        pad_multiple: int. `serve_text` computes at the call's longest request rounded up to a
            multiple of it, at most `seq_length` (`seq_length` itself: every row padded to it).

    Functions (dynamic batch and length): `serve_text` (`text` [+ `text_b`] -> outputs, computed
    at the longest request's length, rounded up to `pad_multiple`), `serve_ids` (`token_ids`,
    `segment_ids`, `padding_mask` `(batch, length)`, any length up to `seq_length` -> outputs)
    and `preprocess` (raw text -> the ids `serve_text` feeds the model).
    """

    def __init__(self, served, pair=False, name=None, pad_multiple=LITERT_PAD_MULTIPLE):
        super().__init__(name=name)
        self.served = served
        self.pad_multiple = pad_multiple
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ID_INPUTS]
        self.serve_ids = tf.function(self._serve_ids, input_signature=ids)
        texts = [tf.TensorSpec([None], tf.string, name=n) for n in (("text", "text_b") if pair else ("text",))]
        self.serve_text = tf.function(self._serve_text, input_signature=texts)
        self.preprocess = tf.function(self._preprocess, input_signature=texts)

    def _serve_ids(self, token_ids, segment_ids, padding_mask):
        return self.served._outputs({"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask})

    def _serve_text(self, text, text_b=None):
        return self.served._outputs(self._preprocess(text, text_b))

    def _preprocess(self, text, text_b=None):
        return pack_ids(self.served.tokenizer, text, text_b, seq_length=self.served.seq_length,
                        pad_multiple=self.pad_multiple)


def convert(function, module, quantize=None, custom_ops_allowed=()):
    """The LiteRT flatbuffer of a `tf.function` with an input signature, checked for ops the runtime lacks.

    Args:
        function: `tf.function` of `module` (e.g. `TFLiteModule.serve_text`).
        module: `tf.Module` holding its variables.
        quantize: None, "none" or "dynamic_int8" (int8 weights, float activations).
        custom_ops_allowed: custom op names the model may hold (the raw-text tokenizer's).

    Returns:
        bytes.

    Raises:
        ValueError naming every custom op outside `custom_ops_allowed`.
    """
    quantize = _check_quantize(quantize)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = bool(custom_ops_allowed)
    if quantize == "dynamic_int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    content = _quietly(converter.convert)
    unsupported = sorted(set(custom_ops(content)) - set(custom_ops_allowed))
    if unsupported:
        raise ValueError(f"The LiteRT model would hold ops no LiteRT runtime here has a kernel for: {unsupported}.")
    return content


def _quietly(fn):
    """`fn()` with TensorFlow's Python INFO lines off: the converter logs each step of the SavedModel it saves
    in a temporary folder (its assets, its fingerprint, renamed resource inputs), which is none of the user's business."""
    from absl import logging

    verbosity, tf_level = logging.get_verbosity(), tf.get_logger().level
    logging.set_verbosity(logging.WARNING)
    tf.get_logger().setLevel("WARNING")
    try:
        return fn()
    finally:
        logging.set_verbosity(verbosity)
        tf.get_logger().setLevel(tf_level)


def export_tflite(served, vocab_file, output_dir, task="", kind=None, ids_only=False, quantize=None,
                  pad_multiple=LITERT_PAD_MULTIPLE):
    """Writes the model of a serving module as a LiteRT model folder (see the module docstring).

    `export_formats.export_tflite` calls it with the serving module a fine-tuned model's
    task kind gives for LiteRT (`TaskKind.tflite_module`: a classifier's, a tagger's for `--ids`).

    Args:
        served: the serving module (a kind's `ServedModel`: `tasks.classification.serving.ServingModule`,
            `tasks.tagging.serving.TaggingServingModule`): its variables, tokenizer, `seq_length`, `_outputs`.
        vocab_file: str. Its vocabulary.
        output_dir: str. A new or empty local folder; written as a whole (a hidden
            `.partial-<token>-<name>` folder beside it, renamed when complete: `atomic.staged_folder`).
        task: str. Recorded in `tflite_config.json`.
        kind: str. The model's task kind, recorded there too.
        ids_only: bool. Ids in, no custom op (else raw text in, tensorflow-text's two ops).
        quantize: None, "none" or "dynamic_int8".
        pad_multiple: int. Raw text: the call's longest request is rounded up to a multiple of it
            (`TFLiteModule`); 1, the default, computes at its own length.

    Returns:
        str, the path of `model.tflite`.
    """
    quantize = _check_quantize(quantize)
    tokenizer = served.tokenizer
    if not ids_only and tokenizer.normalization == LEGACY and tokenizer.lower_case != tokenizer.strip_accents:
        raise ValueError(f"{vocab_file}'s tokenizer settings {tokenizer.settings} normalise text as the previous "
                         "release did, with TensorFlow string ops that have no LiteRT kernel (tensorflow-text's "
                         "own FastBertNormalize lower-cases and strips accents together or not at all): export "
                         "it with --ids.")
    pair = bool(getattr(served, "pair", False))
    module = TFLiteModule(served, pair=pair, pad_multiple=pad_multiple)
    function = module.serve_ids if ids_only else module.serve_text
    allowed = () if ids_only else tuple(TEXT_OP_REGISTRARS)
    content = convert(function, module, quantize, custom_ops_allowed=allowed)
    outputs = sorted(function.get_concrete_function().structured_outputs)
    label_names = [] if _regression(served) else [name.decode("utf-8") for name in served.label_names.numpy()]
    description = {
        "task": task,
        "kind": "regression" if _regression(served) else kind,
        "input": "ids" if ids_only else "text",
        "signature": SIGNATURE,
        "inputs": list(ID_INPUTS) if ids_only else (["text", "text_b"] if pair else ["text"]),
        "outputs": outputs,
        "seq_length": served.seq_length,
        "pad_multiple": None if ids_only else module.pad_multiple,  # raw text: rounds the call's longest request
        "vocab_size": int(served._model.obj.encoder.vocab_size),
        "num_segments": int(served._model.obj.encoder.num_segments),
        "pair": pair,
        "label_names": label_names,
        "quantization": quantize,
        "custom_ops": custom_ops(content),
        "special_ids": tokenizer.special_ids,
        "tokenizer": tokenizer.settings,
    }
    return _write_folder(output_dir, content, description, vocab_file)


def _regression(served):
    return bool(getattr(served, "regression", False))


def _check_quantize(quantize):
    quantize = "none" if quantize is None else quantize
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"`quantize` must be one of {QUANTIZATIONS}. Received: `quantize={quantize!r}`")
    return quantize


def _write_folder(output_dir, content, description, vocab_file):
    """Writes the folder's files into a hidden sibling and renames it to `output_dir` (new or empty)."""
    output_dir = os.path.abspath(output_dir)
    with atomic.staged_folder(output_dir, "output_dir") as partial:  # renamed onto a new or empty `output_dir`
        with open(os.path.join(partial, run_files.TFLITE_MODEL_FILE), "wb") as f:
            f.write(content)
        if description["label_names"]:
            with open(os.path.join(partial, run_files.LABELS_ASSET), "w", encoding="utf-8") as f:
                f.write("".join(f"{label}\n" for label in description["label_names"]))
        copy_vocab(vocab_file, os.path.join(partial, run_files.VOCAB_FILE))
        atomic.write_json(os.path.join(partial, run_files.TFLITE_CONFIG_FILE), description)
    return os.path.join(output_dir, run_files.TFLITE_MODEL_FILE)
