"""ElectraQuestionAnswerer: an ELECTRA encoder with the official span-QA head (SQuAD 1.1 / 2.0)."""

import keras

from electra_tf.layers.replicas import all_reduce_sum
from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registered for `from_config`)

HEADS = ("official", "simple")
NEG = 1000.0  # the reference's mask: logits outside the context (and [CLS]) get -1000


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswerer(keras.Model):
    """Start and end of the answer span over the context pieces, and (SQuAD 2.0) whether there is one.

    `head="official"` is the ELECTRA QA head (google-research/electra
    `finetune/qa/qa_tasks.py`, from XLNet): start logits are a dense(1) over the
    encoder's sequence output; end logits are conditioned on the start, a dense
    layer (`joint_hidden_dim`, tanh-GELU) over `[h_start ; h_end]` then dense(1).
    In training the gold start's vector is used; at prediction the
    `start_n_top` best starts each get their `end_n_top` best ends (a beam).
    `head="simple"` is BERT's independent head: dense(2) -> start and end logits.
    Only context pieces and [CLS] (position 0) can be predicted: the others get
    -1000, as the reference.

    With `answerable=True` (SQuAD 2.0) a classifier over `[h_CLS ; sum_i
    softmax(start)_i h_i]` (dense `joint_hidden_dim` GELU, dense(1)) gives
    `answerable_logit`, trained with sigmoid cross-entropy on `is_impossible`
    (so a high logit means "no answer").

    Loss (the reference's): `(CE(start) + CE(end)) / 2 + answerable_weight *
    BCE(answerable)`, per window, averaged over the batch: compile with
    `losses()` and `loss_weights()`.

    Args:
        encoder: `ElectraEncoder`.
        head: "official" or "simple".
        answerable: bool. Add the answerability classifier (SQuAD 2.0).
        start_n_top: int. Starts kept at prediction.
        end_n_top: int. Ends kept per start at prediction.
        joint_hidden_dim: int. Hidden units of the end and answerability layers (reference: 512).
        answerable_weight: float. Weight of the answerability loss (reference: 0.5).
        initializer_range: float or None. Std of the simple head's initialiser
            (None: the encoder's); the official head uses Glorot-uniform, as
            the reference's `tf.layers.dense`.

    Call inputs: dict with int32 `token_ids`, `segment_ids` (1 on the context),
    `padding_mask` `(batch, seq_len)`, and `start_positions` `(batch,)` for
    training. With `start_positions` it returns the training outputs
    `start_logits`, `end_logits` `(batch, seq_len)` (and `answerable_logit`
    `(batch,)`); without, the beam: `start_top_log_probs`, `start_top_index`
    `(batch, start_n_top)`, `end_top_log_probs`, `end_top_index` `(batch,
    start_n_top, end_n_top)` (and `answerable_logit`). All float32. Indices
    past `seq_len` (beams wider than the sequence) have log-probability -1e4.

    Example:
    >>> import numpy as np
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=16,
    ...                          embedding_dim=16, intermediate_dim=32)
    >>> model = ElectraQuestionAnswerer(encoder, answerable=True, start_n_top=3, end_n_top=2)
    >>> ids = np.ones((2, 8), "int32"); segments = np.array([[0] * 4 + [1] * 4] * 2, "int32")
    >>> out = model({"token_ids": ids, "segment_ids": segments, "padding_mask": ids})
    >>> {k: tuple(v.shape) for k, v in sorted(out.items())}
    {'answerable_logit': (2,), 'end_top_index': (2, 3, 2), 'end_top_log_probs': (2, 3, 2), 'start_top_index': (2, 3), 'start_top_log_probs': (2, 3)}
    >>> out = model({"token_ids": ids, "segment_ids": segments, "padding_mask": ids,
    ...              "start_positions": np.array([5, 0])}, training=True)
    >>> tuple(out["end_logits"].shape)
    (2, 8)
    """

    def __init__(self, encoder, head="official", answerable=False, start_n_top=20, end_n_top=20,
                 joint_hidden_dim=512, answerable_weight=0.5, initializer_range=None, **kwargs):
        super().__init__(**kwargs)
        if head not in HEADS:
            raise ValueError(f"`head` must be one of {list(HEADS)}. Received: `head={head!r}`")
        for name, value in (("start_n_top", start_n_top), ("end_n_top", end_n_top),
                            ("joint_hidden_dim", joint_hidden_dim)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"`{name}` must be a positive int. Received: `{name}={value!r}`")
        if initializer_range is None:
            initializer_range = getattr(encoder, "initializer_range", 0.02)
        self.encoder = encoder
        policy = self.dtype_policy
        gelu = lambda x: keras.activations.gelu(x, approximate=True)  # noqa: E731  (the reference's tanh GELU)
        if head == "official":
            self.start_dense = keras.layers.Dense(1, dtype=policy, name="qa_start")
            self.joint_hidden = keras.layers.Dense(joint_hidden_dim, dtype=policy, name="qa_hidden")
            self.end_dense = keras.layers.Dense(1, dtype=policy, name="qa_logits")
        else:
            self.span_dense = keras.layers.Dense(
                2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range), dtype=policy,
                name="qa_outputs")
        if answerable:
            self.answerable_hidden = keras.layers.Dense(joint_hidden_dim, activation=gelu, dtype=policy,
                                                        name="answerable_hidden")
            self.answerable_dense = keras.layers.Dense(1, dtype=policy, name="answerable_logit")
        self._gelu = gelu
        self.head = head
        self.answerable = answerable
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.joint_hidden_dim = joint_hidden_dim
        self.answerable_weight = answerable_weight
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        if self.built:
            return
        if not self.encoder.built:
            self.encoder.build(input_shape)
        hidden = self.encoder.hidden_dim
        if self.head == "official":
            self.start_dense.build((None, None, hidden))
            self.joint_hidden.build((None, None, 2 * hidden))
            self.end_dense.build((None, None, self.joint_hidden_dim))
        else:
            self.span_dense.build((None, None, hidden))
        if self.answerable:
            self.answerable_hidden.build((None, 2 * hidden))
            self.answerable_dense.build((None, self.joint_hidden_dim))
        self.built = True

    @staticmethod
    def answer_mask(inputs):
        """1.0 at context pieces (segment 1, not padding) and at [CLS], 0.0 elsewhere, float32."""
        mask = keras.ops.cast(inputs["padding_mask"], "float32") * keras.ops.cast(inputs["segment_ids"], "float32")
        first = keras.ops.cast(keras.ops.equal(keras.ops.arange(keras.ops.shape(mask)[1]), 0), "float32")
        return keras.ops.minimum(mask + first[None, :], 1.0)

    def _end_logits(self, hidden, start_vectors):
        """End logits given start vectors `(batch, beam, hidden)`: `(batch, beam, seq_len)`.

        The dense layer over `[h_start ; h_end]` is computed as `W_s h_start +
        W_e h_end + b` (the same numbers), so the `(beam, seq_len, 2 * hidden)`
        concatenation is never built.
        """
        size = self.encoder.hidden_dim
        kernel = keras.ops.cast(self.joint_hidden.kernel, hidden.dtype)
        bias = keras.ops.cast(self.joint_hidden.bias, hidden.dtype)
        from_start = keras.ops.matmul(start_vectors, kernel[:size])  # (batch, beam, joint)
        from_end = keras.ops.matmul(hidden, kernel[size:])  # (batch, seq, joint)
        joint = self._gelu(from_start[:, :, None, :] + from_end[:, None, :, :] + bias)
        return keras.ops.cast(keras.ops.squeeze(self.end_dense(joint), -1), "float32")

    def call(self, inputs, training=None):
        return self.head_outputs(self.encoder(self.encoder_inputs(inputs), training=training), inputs, training)

    def encoder_inputs(self, inputs):
        """What `call` feeds the encoder: `inputs` themselves."""
        return inputs

    def head_outputs(self, hidden, inputs, training=None):
        """`call`'s outputs from `hidden`, the encoder's output on `inputs` (a served graph computes it its own way)."""
        mask = self.answer_mask(inputs)
        penalty = NEG * (mask - 1.0)
        if self.head == "official":
            start_logits = keras.ops.cast(keras.ops.squeeze(self.start_dense(hidden), -1), "float32") + penalty
        else:
            span = keras.ops.cast(self.span_dense(hidden), "float32")
            start_logits, end_logits = span[..., 0] + penalty, span[..., 1] + penalty
        outputs = {}
        if self.answerable:
            start_p = keras.ops.cast(keras.ops.softmax(start_logits, axis=-1), hidden.dtype)
            start_feature = keras.ops.sum(start_p[:, :, None] * hidden, axis=1)
            features = keras.ops.concatenate([hidden[:, 0], start_feature], axis=-1)
            logit = self.answerable_dense(self.answerable_hidden(features))
            outputs["answerable_logit"] = keras.ops.cast(keras.ops.squeeze(logit, -1), "float32")
        if "start_positions" in inputs:
            if self.head == "official":
                positions = keras.ops.cast(inputs["start_positions"], "int32")
                start_vectors = keras.ops.take_along_axis(hidden, positions[:, None, None], axis=1)
                end_logits = self._end_logits(hidden, start_vectors)[:, 0] + penalty
            outputs.update(start_logits=start_logits, end_logits=end_logits)
            return outputs
        start_log_probs = _pad_beam(keras.ops.log_softmax(start_logits, axis=-1), self.start_n_top)
        start_top_log_probs, start_top_index = keras.ops.top_k(start_log_probs, self.start_n_top)
        if self.head == "official":
            length = keras.ops.shape(hidden)[1]
            gather = keras.ops.minimum(start_top_index, length - 1)  # padded beam entries: any real vector
            start_vectors = keras.ops.take_along_axis(hidden, gather[:, :, None], axis=1)
            end_log_probs = keras.ops.log_softmax(self._end_logits(hidden, start_vectors) + penalty[:, None], axis=-1)
            end_top_log_probs, end_top_index = keras.ops.top_k(_pad_beam(end_log_probs, self.end_n_top),
                                                               self.end_n_top)
        else:
            end_log_probs = _pad_beam(keras.ops.log_softmax(end_logits, axis=-1), self.end_n_top)
            top_log_probs, top_index = keras.ops.top_k(end_log_probs, self.end_n_top)
            end_top_log_probs = keras.ops.repeat(top_log_probs[:, None], self.start_n_top, axis=1)
            end_top_index = keras.ops.repeat(top_index[:, None], self.start_n_top, axis=1)
        outputs.update(start_top_log_probs=start_top_log_probs, start_top_index=start_top_index,
                       end_top_log_probs=end_top_log_probs, end_top_index=end_top_index)
        return outputs

    def losses_and_weights(self):
        """`(loss, loss_weights)` dicts for `compile`: the reference loss over the training outputs."""
        loss = {"start_logits": GlobalMeanLoss("position"), "end_logits": GlobalMeanLoss("position")}
        weights = {"start_logits": 0.5, "end_logits": 0.5}
        if self.answerable:
            loss["answerable_logit"] = GlobalMeanLoss("binary")
            weights["answerable_logit"] = self.answerable_weight
        return loss, weights

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "head": self.head,
            "answerable": self.answerable,
            "start_n_top": self.start_n_top,
            "end_n_top": self.end_n_top,
            "joint_hidden_dim": self.joint_hidden_dim,
            "answerable_weight": self.answerable_weight,
            "initializer_range": self.initializer_range,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="electra_tf")
class GlobalMeanLoss(keras.losses.Loss):
    """Cross-entropy from logits averaged over the *global* batch: its `target` a position (softmax over
    the sequence) or a binary label (sigmoid).

    Under a `tf.distribute` strategy each replica divides its sum by the example
    count summed over replicas and the replicas' gradients are summed, so N
    replicas train like one device on the same global batch, uneven last batch
    included (as the tagger's masked cross-entropy is).
    """

    def __init__(self, target="position", name=None, **kwargs):
        if target not in ("position", "binary"):
            raise ValueError(f"`target` must be 'position' or 'binary'. Received: `target={target!r}`")
        super().__init__(name=name or f"{target}_cross_entropy", **kwargs)
        self.target = target

    def call(self, y_true, y_pred):
        y_pred = keras.ops.cast(y_pred, "float32")
        if self.target == "position":
            per_example = keras.losses.sparse_categorical_crossentropy(
                keras.ops.cast(y_true, "int32"), y_pred, from_logits=True)
        else:
            labels = keras.ops.cast(y_true, "float32")
            per_example = keras.ops.maximum(y_pred, 0.0) - y_pred * labels + keras.ops.log1p(
                keras.ops.exp(-keras.ops.abs(y_pred)))
        count = all_reduce_sum(keras.ops.cast(keras.ops.shape(per_example)[0], "float32"))
        return keras.ops.sum(per_example) / keras.ops.maximum(count, 1.0)

    def get_config(self):
        return dict(super().get_config(), target=self.target)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "kind" in config:  # a model file of an earlier version names the target `kind`
            config["target"] = config.pop("kind")
        return cls(**config)


def _pad_beam(log_probs, k):
    """Appends `k` columns of -1e4 on the last axis, so a top-k of width `k` exists at any length."""
    rank = len(log_probs.shape)
    return keras.ops.pad(log_probs, [[0, 0]] * (rank - 1) + [[0, k]], constant_values=-1e4)
