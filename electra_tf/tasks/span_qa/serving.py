"""A fine-tuned extractive QA model as a TensorFlow Serving model: raw question and context in, the
answer text and its character offsets in the context out. Tokenization, windowing and span selection
all run in the graph (tensorflow + tensorflow_text are all a client needs).

Layout as `electra_tf.tasks.classification.serving` (`<base_dir>/<model_name>/<version>/`, assets
`vocab.txt`, `tokenizer_config.json`, `serving_config.json`).

Signature `serving_default`: `question`, `context` string `(batch,)` ->

    answer      string  (batch,)   `context[start:end]`, whole words; "" when there is none
    start, end  int32   (batch,)   character offsets in `context`, end exclusive (-1: no answer)
    score       float32 (batch,)   log p(start) + log p(end | start) of the best span
    no_answer   bool    (batch,)   SQuAD 2.0 models: null score - span score > the threshold
    null_odds   float32 (batch,)   SQuAD 2.0 models: that difference

Signature `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32 `(windows, seq_len)`
(`[CLS] question [SEP] context window [SEP]`) -> the model's beam: `start_top_log_probs`,
`start_top_index` `(windows, start_n_top)`, `end_top_log_probs`, `end_top_index`
`(windows, start_n_top, end_n_top)` (+ `answerable_logit` `(windows,)`).

The same steps as training and `metrics.postprocess`: the question keeps its
first `max_query_length` pieces; the context is cut into windows of
`seq_length - len(question) - 3` pieces, `doc_stride` apart; each window's beam
proposes spans, kept when both ends are context pieces, the start is
predicted from this window (most context), `end >= start` and at most
`max_answer_length` pieces; the best span over all windows is the answer, as
whole words (from its first piece's word start to its last piece's word end,
as `features.word_offsets`). An
empty (or all-whitespace) question or context, or a context with no word
piece, is an `InvalidArgumentError` naming the input; an empty batch gives
empty outputs. The export refuses `max_query_length + 3 >= seq_length` (no room
left for the context).
"""

import tensorflow as tf

from electra_tf.data.tokenizer import pad_ragged
from electra_tf.exporting.assets import (SERVING_CONFIG_ASSET, ServedModel, add_assets, save_version,
                                      version_dir)
from electra_tf.exporting.word_windows import char_offset

NEG_INF = float("-inf")


class QAServingModule(ServedModel):
    """`tf.Module` with a question answerer, its tokenizer and the (question, context) -> answer function.

    Args:
        model: `ElectraQuestionAnswerer`.
        vocab_file: str.
        seq_length, doc_stride, max_query_length, max_answer_length: ints (see `features`).
        null_threshold: float or None. SQuAD 2.0 models: the tuned threshold (None: 0).
        task: str. Recorded in `serving_config.json`.
    """

    def __init__(self, model, vocab_file, seq_length=384, doc_stride=128, max_query_length=64,
                 max_answer_length=30, null_threshold=None, task="", name=None):
        if not max_query_length + 3 < seq_length:
            raise ValueError(f"`max_query_length={max_query_length}` leaves no room for the context in "
                             f"`seq_length={seq_length}`: need max_query_length + 3 < seq_length ([CLS] and two "
                             "[SEP]); lower --max_query_length or raise --seq_length.")
        if max_query_length < 1 or doc_stride < 1 or max_answer_length < 1:
            raise ValueError(f"Need `max_query_length`, `doc_stride` and `max_answer_length` >= 1. Received: "
                             f"{max_query_length}, {doc_stride}, {max_answer_length}.")
        super().__init__(model, vocab_file, seq_length, name=name)
        self.doc_stride = doc_stride
        self.max_query_length, self.max_answer_length = max_query_length, max_answer_length
        self.answerable = model.answerable
        self.null_threshold = 0.0 if null_threshold is None else float(null_threshold)
        self._tmp = add_assets(
            self, "electra_qa_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "kind": "span_qa", "seq_length": seq_length, "doc_stride": doc_stride,
             "max_query_length": max_query_length, "max_answer_length": max_answer_length,
             "answerable": self.answerable, "null_threshold": self.null_threshold})
        self.continues_word = tf.constant(self.tokenizer.continues_word())  # per id: a `##` piece
        self.serve = tf.function(self._serve, input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                                               tf.TensorSpec([None], tf.string, name="context")])
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)

    def _serve(self, question, context):
        question = tf.ensure_shape(question, [None], name="question_must_be_a_vector")
        context = tf.ensure_shape(context, [None], name="context_must_be_a_vector")
        checks = [tf.debugging.assert_equal(tf.size(question), tf.size(context),
                                            message="`question` and `context` must have the same batch size")]
        checks += [tf.debugging.assert_greater(tf.strings.length(tf.strings.strip(t)), 0, message=f"`{name}` must not "
                                              "be empty or whitespace (every row of the batch)")
                  for name, t in (("question", question), ("context", context))]
        with tf.control_dependencies(checks):
            question, context = tf.identity(question), tf.identity(context)
        tok = self.tokenizer
        query = tok.tokenize(question)[:, :self.max_query_length]
        pieces, byte_starts, byte_ends = tok.tokenize_with_offsets(context)
        n = pieces.row_lengths()
        with tf.control_dependencies([tf.debugging.assert_greater(
                n, tf.constant(0, n.dtype), message="`context` has no word piece (only control characters?)")]):
            n = tf.identity(n)
        query_length = query.row_lengths()
        max_pieces = self.seq_length - query_length - 3
        step = tf.minimum(max_pieces, self.doc_stride)
        num_windows = 1 + (tf.maximum(n - max_pieces, 0) + step - 1) // step  # the reference's loop, closed form
        example = tf.repeat(tf.range(tf.size(n, out_type=tf.int64)), num_windows)  # (W,)
        index = tf.ragged.range(num_windows).flat_values  # window index within its example
        w_start = index * tf.gather(step, example)
        w_length = tf.minimum(tf.gather(n, example) - w_start, tf.gather(max_pieces, example))
        flat = tf.gather(pieces.row_starts(), example)[:, None] + w_start[:, None] + tf.ragged.range(w_length)
        window_pieces = tf.gather(pieces.flat_values, flat)
        window_query = tf.gather(query, example)
        num = tf.size(example)
        cls = tf.fill([num, 1], tf.constant(tok.cls_id, tf.int32))
        sep = tf.fill([num, 1], tf.constant(tok.sep_id, tf.int32))
        ids = tf.concat([cls, window_query, sep, window_pieces, sep], axis=1)
        offset = tf.gather(query_length, example) + 2  # first context position of each window row
        segments = tf.ragged.range(ids.row_lengths()) >= offset[:, None]
        inputs = pad_ragged({"token_ids": ids, "segment_ids": tf.cast(segments, tf.int32)}, self.seq_length,
                            self.pad_multiple, pad_id=tok.pad_id)  # the longest window, rounded up (`tokenizer.padded_length`)
        out = self._predict(inputs)
        start_index = tf.cast(out["start_top_index"], tf.int64)  # (W, k)
        end_index = tf.cast(out["end_top_index"], tf.int64)  # (W, k, k2)
        # positions -> context piece within the window
        s_piece = start_index - offset[:, None]
        e_piece = end_index - offset[:, None, None]
        s_ok = tf.logical_and(s_piece >= 0, s_piece < w_length[:, None])
        e_ok = tf.logical_and(e_piece >= 0, e_piece < w_length[:, None, None])
        # max context of each start piece over its example's windows (first window on ties)
        doc = w_start[:, None] + s_piece  # (W, k)
        most = tf.maximum(tf.reduce_max(num_windows), 1)  # an empty batch: reduce_max is the lowest int64
        other = tf.range(most)[None, None, :]  # (1, 1, M)
        o_start = other * tf.gather(step, example)[:, None, None]
        o_length = tf.minimum(tf.gather(n, example)[:, None, None] - o_start,
                              tf.gather(max_pieces, example)[:, None, None])
        inside = (other < tf.gather(num_windows, example)[:, None, None]) & (o_start <= doc[..., None]) & (
            doc[..., None] < o_start + o_length)
        context_score = tf.cast(tf.minimum(doc[..., None] - o_start, o_start + o_length - 1 - doc[..., None]),
                                tf.float32) + 0.01 * tf.cast(o_length, tf.float32)
        context_score = tf.where(inside, context_score, NEG_INF)
        s_max = tf.equal(tf.argmax(context_score, axis=-1, output_type=tf.int64), index[:, None])
        valid = (s_ok & s_max)[:, :, None] & e_ok & (e_piece >= s_piece[:, :, None]) & (
            e_piece - s_piece[:, :, None] + 1 <= self.max_answer_length)
        scores = tf.where(valid, out["start_top_log_probs"][:, :, None] + out["end_top_log_probs"], NEG_INF)
        flat_scores = tf.reshape(scores, [num, -1])
        window_best = tf.reduce_max(flat_scores, axis=1)
        window_arg = tf.argmax(flat_scores, axis=1, output_type=tf.int64)
        batch = tf.size(n)
        example32 = tf.cast(example, tf.int32)
        # A question with no valid span in any window: its segment max is float32's lowest, not -inf.
        found = tf.math.unsorted_segment_max(tf.cast(tf.math.is_finite(window_best), tf.int32), example32, batch) > 0
        best = tf.where(found, tf.math.unsorted_segment_max(window_best, example32, batch), NEG_INF)
        is_best = tf.equal(window_best, tf.gather(best, example32))
        chosen = tf.math.unsorted_segment_min(tf.where(is_best, tf.range(num, dtype=tf.int64), tf.cast(num, tf.int64)),
                                              example32, batch)  # first window holding the best score
        chosen = tf.minimum(chosen, tf.cast(num, tf.int64) - 1)
        arg = tf.gather(window_arg, chosen)
        k2 = tf.shape(end_index, out_type=tf.int64)[2]
        i, j = arg // k2, arg % k2
        s_doc = tf.gather(w_start, chosen) + tf.gather_nd(s_piece, tf.stack([chosen, i], 1))
        e_doc = tf.gather(w_start, chosen) + tf.gather_nd(e_piece, tf.stack([chosen, i, j], 1))
        rows = pieces.row_starts()
        safe = lambda d: tf.clip_by_value(rows + d, 0, tf.maximum(tf.size(pieces.flat_values, tf.int64) - 1, 0))  # noqa: E731
        first_piece, last_piece = self._word_pieces(pieces)
        b_start = tf.gather(byte_starts.flat_values, tf.gather(first_piece, safe(s_doc)))
        b_end = tf.gather(byte_ends.flat_values, tf.gather(last_piece, safe(e_doc)))
        answer = tf.strings.substr(context, tf.cast(b_start, tf.int32), tf.cast(b_end - b_start, tf.int32))
        start = char_offset(context, b_start)
        end = char_offset(context, b_end)
        outputs = {"score": best}
        if self.answerable:
            null = tf.math.unsorted_segment_min(out["answerable_logit"], example32, batch)
            null_odds = tf.where(found, null - best, 1e9)
            no_answer = null_odds > self.null_threshold
            found = tf.logical_and(found, tf.logical_not(no_answer))
            outputs.update(no_answer=no_answer, null_odds=null_odds)
        outputs.update(answer=tf.where(found, answer, ""), start=tf.where(found, start, -1),
                       end=tf.where(found, end, -1))
        return outputs

    def _word_pieces(self, pieces):
        """For every piece of the ragged `pieces`, the flat index of its word's first and last piece."""
        flat = pieces.flat_values
        size = tf.size(flat, out_type=tf.int64)
        row_start = tf.equal(tf.ragged.range(pieces.row_lengths()).flat_values, 0)
        starts_word = tf.logical_or(tf.logical_not(tf.gather(self.continues_word, flat)), row_start)
        word = tf.cumsum(tf.cast(starts_word, tf.int64)) - 1
        num_words = tf.reduce_sum(tf.cast(starts_word, tf.int64))
        index = tf.range(size)
        first = tf.math.unsorted_segment_min(index, word, num_words)
        last = tf.math.unsorted_segment_max(index, word, num_words)
        return tf.gather(first, word), tf.gather(last, word)

    def _predict(self, inputs):
        """The model's outputs for the windows `inputs`; an empty batch (no window) gives empty outputs."""
        num = tf.shape(inputs["token_ids"])[0]
        tok = self.tokenizer
        one_window = {"token_ids": tf.constant([[tok.cls_id, tok.sep_id]], tf.int32),
                      "segment_ids": tf.zeros([1, 2], tf.int32), "padding_mask": tf.ones([1, 2], tf.int32)}
        # The model's gathers fail on a batch of 0: run it on one dummy window then and keep none of it.
        inputs = tf.cond(num > 0, lambda: inputs, lambda: one_window)
        return {k: v[:num] for k, v in self.model_outputs(inputs).items()}

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        return self._predict(self.check_ids(token_ids, segment_ids, padding_mask))

    def signatures(self):
        return {"serving_default": self.serve, "predict_ids": self.predict_ids}


def export_qa_serving(model, vocab_file, base_dir, model_name="electra", version=1, seq_length=384, doc_stride=128,
                      max_query_length=64, max_answer_length=30, null_threshold=None, task=""):
    """Writes `model` as `<base_dir>/<model_name>/<version>/` for TF Serving.

    Args:
        model: `ElectraQuestionAnswerer` (fine-tuned).
        vocab_file: str. Its vocabulary.
        base_dir: str. TF Serving model base folder's parent.
        model_name: str. Model name in TF Serving.
        version: int. Version folder; must not exist yet.
        seq_length, doc_stride, max_query_length, max_answer_length: the fine-tuning settings.
        null_threshold: float or None. SQuAD 2.0: the tuned threshold.
        task: str. Recorded in the assets.

    Returns:
        str, the version folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.tasks.span_qa.serving import export_qa_serving
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "in", "france", "?", "."]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=16,
                                 embedding_dim=16, intermediate_dim=32)
        model = ElectraQuestionAnswerer(encoder, start_n_top=2, end_n_top=2)  # fine-tuned, in practice
        model.build()
        path = export_qa_serving(model, "vocab.txt", "serving", "squad", 1, seq_length=32,
                                 doc_stride=8, max_query_length=8)  # 'serving/squad/1'
        serve = tf.saved_model.load(path).signatures["serving_default"]
        out = serve(question=tf.constant(["Where is Paris?"]), context=tf.constant(["Paris is in France."]))
        out["answer"].shape  # (1,): an untrained model's answer, a span of the context
        ```
    """
    module = qa_serving_module(model, vocab_file, seq_length, doc_stride, max_query_length, max_answer_length,
                               null_threshold, task)
    return save_version(module, version_dir(base_dir, model_name, version))


def qa_serving_module(model, vocab_file, seq_length=384, doc_stride=128, max_query_length=64, max_answer_length=30,
                      null_threshold=None, task=""):
    """The `QAServingModule` that `export_qa_serving` saves (same arguments), arguments checked."""
    if seq_length > model.encoder.max_sequence_length:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                         f"`max_sequence_length={model.encoder.max_sequence_length}`.")
    return QAServingModule(model, vocab_file, seq_length, doc_stride, max_query_length, max_answer_length,
                           null_threshold, task)
