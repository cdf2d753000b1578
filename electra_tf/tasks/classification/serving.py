"""A fine-tuned classifier as a TensorFlow Serving model, raw text in.

Layout: `<base_dir>/<model_name>/<version>/` (a SavedModel; TF Serving's
`--model_base_path=<base_dir>/<model_name>` picks up the highest version):

    saved_model.pb, variables/
    assets/labels.txt          label i on line i
    assets/vocab.txt           the WordPiece vocabulary
    assets/electra_tokenizer.json its normalisation (lower_case, strip_accents, normalization)
    assets/serving_config.json kind, task, seq_length, label names, pair or single, headline metric

Signatures (batch dimension dynamic everywhere):

    serving_default  text  string (batch,)   [+ text_b string (batch,) for pair tasks]
                     -> probabilities float32 (batch, num_labels),
                        label_id int32 (batch,), label string (batch,)
                     (regression tasks: -> score float32 (batch,))
    predict_ids      token_ids, segment_ids, padding_mask  int32 (batch, seq_len)
                     -> the same outputs
    preprocess       text [+ text_b] -> token_ids, segment_ids, padding_mask
                     (what `serving_default` feeds the model; for debugging clients)

Texts are tokenised in the graph by the same `WordPieceTokenizer` as in
training, truncated to `seq_length` (pairs longest-first); an empty string is
a valid input (`[CLS] [SEP]`). A call is computed at the length of its longest
request, rounded up to a multiple of 8 and never past `seq_length`
(`tokenizer.padded_length`): the attention mask makes padding irrelevant, so
the outputs are those of full-length padding, at the cost of the request's own length.
"""

import tensorflow as tf

from electra_tf.exporting.assets import SERVING_CONFIG_ASSET, ServedModel, add_assets, check_texts


class ServingModule(ServedModel):
    """`tf.Module` with a classifier, its tokenizer and the two serving functions.

    Args:
        classifier: `ElectraClassifier`.
        vocab_file: str.
        label_names: list of str. One per output unit (ignored for regression).
        seq_length: int. Tokens per request text (pair), special tokens included.
        pair: bool. Whether `serving_default` takes `text_b` too.
        regression: bool. Output `score` instead of probabilities.
        task: str. Recorded in `serving_config.json`.
        metric: str or None. The task's headline metric, recorded there too.
    """

    def __init__(self, classifier, vocab_file, label_names, seq_length=128, pair=False, regression=False,
                 task="", metric=None, name=None):
        super().__init__(classifier, vocab_file, seq_length, name=name)
        self.pair = pair
        self.regression = regression
        self._tmp = add_assets(
            self, "electra_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "kind": "classification", "seq_length": seq_length, "pair": pair,
             "regression": regression, "label_names": list(label_names),
             "metric": metric or ("spearman" if regression else "accuracy")},
            label_names=label_names)
        self.label_names = tf.constant(list(label_names) or [""], tf.string)

        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)
        texts = [tf.TensorSpec([None], tf.string, name="text")]
        if pair:
            texts.append(tf.TensorSpec([None], tf.string, name="text_b"))
        self.serve_text = tf.function(self._serve_text, input_signature=texts)
        self.preprocess = tf.function(self._preprocess, input_signature=texts)

    def _outputs(self, inputs):
        logits = self.model_outputs(inputs)
        if self.regression:
            return {"score": logits[:, 0]}
        probabilities = tf.nn.softmax(logits, axis=-1)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self.check_ids(token_ids, segment_ids, padding_mask))

    def _serve_text(self, text, text_b=None):
        return self._outputs(self._preprocess(text, text_b))

    def _preprocess(self, text, text_b=None):
        text, text_b = check_texts(text, text_b)
        return self.tokenizer.pack(text, text_b, seq_length=self.seq_length, pad_multiple=self.pad_multiple)

    def signatures(self):
        return {"serving_default": self.serve_text, "predict_ids": self.predict_ids, "preprocess": self.preprocess}


def classification_serving_module(classifier, vocab_file, label_names=None, seq_length=128, pair=False, task="",
                                   metric=None):
    """The `ServingModule` of a fine-tuned `ElectraClassifier`, its arguments checked.

    Args:
        classifier: `ElectraClassifier` (fine-tuned).
        vocab_file: str. Its vocabulary.
        label_names: list of str or None. Default `["0", "1", ...]` (none for regression).
        seq_length: int. Truncation length for requests.
        pair: bool. Sentence-pair task (`serving_default` takes `text_b`).
        task: str. Recorded in the assets.
        metric: str or None. The task's headline metric (what `predict` reports first).

    `export_formats.export_serving` saves it (its example exports a classifier).
    """
    regression = classifier.num_labels == 1 and (label_names is None or len(label_names) <= 1)
    if label_names is None:
        label_names = [] if regression else [str(i) for i in range(classifier.num_labels)]
    if not regression and len(label_names) != classifier.num_labels:
        raise ValueError(
            f"{len(label_names)} label names for a classifier with `num_labels={classifier.num_labels}`. "
            f"Received: `label_names={label_names}`"
        )
    if seq_length > classifier.encoder.max_sequence_length:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                         f"`max_sequence_length={classifier.encoder.max_sequence_length}`.")
    return ServingModule(classifier, vocab_file, label_names, seq_length, pair, regression, task, metric)
