"""The training step's element-wise work as XLA-fused kernels: GELU, LayerNorm, masked softmax, dropout masks.

Without XLA, TensorFlow runs each element-wise op of these layers as its own
kernel, forward and backward: the exact GELU's gradient alone is about ten
passes over the (batch * seq, intermediate) activations, LayerNorm's a dozen
over (batch * seq, hidden). Here each layer's forward and its analytic
gradient are one small `tf.function(jit_compile=True)` each, called from the
ordinary (oneDNN) graph with `tf.custom_gradient`, so the matmuls stay
oneDNN's while XLA fuses the element-wise passes around them. They compute
what Keras' layers compute (the same formulas; the last bits can differ, as
XLA orders the float operations its own way).

Only float32 inputs in training take these paths (`training=True`): inference
graphs, and so the exports and the model server's op allowlist, are Keras'
own ops, and 16-bit inputs keep Keras' ops as well. `use_fused_elementwise`
switches a built model's layers over in place; the variables are unchanged.
"""

import inspect
import math
import threading

import keras
import tensorflow as tf

from electra_tf.layers.dropout import IntegerBitsDropout, keep_threshold

_RSQRT2 = 1.0 / math.sqrt(2.0)
_RSQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_MANTISSA_MASK = (1 << 23) - 1  # the bits of a float32 uniform (see `electra_tf.layers.dropout`)
_MASKED = -1e9  # what Keras' `Softmax` writes at masked positions before normalising


def _xla(function):
    return tf.function(function, jit_compile=True, autograph=False, reduce_retracing=True)


def _rows(x):
    """The axes a per-feature sum (LayerNorm's gamma and beta gradients) runs over: all but the last."""
    return list(range(x.shape.rank - 1))


def _row_sum(x, weight=1.0):
    """`weight * reduce_sum(x, -1, keepdims=True)` as a product with a constant vector: XLA on CPU runs it as a
    matrix-vector kernel, where it rewrites a reduction over more than 32 entries into a `reduce-window`
    several times slower."""
    return tf.expand_dims(tf.linalg.matvec(x, tf.fill(tf.shape(x)[-1:], tf.cast(weight, x.dtype))), -1)


def _row_mean(x):
    return _row_sum(x, 1.0 / tf.cast(tf.shape(x)[-1], x.dtype))


@_xla
def _gelu_forward(x):
    cdf = 0.5 + 0.5 * tf.math.erf(x * _RSQRT2)
    return x * cdf, cdf


@_xla
def _gelu_backward(dy, x, cdf):
    return dy * (cdf + x * _RSQRT_2PI * tf.exp(-0.5 * x * x))


@tf.autograph.experimental.do_not_convert
@tf.custom_gradient
def gelu(x):
    """The exact (erf) GELU, `x * (1 + erf(x / sqrt(2))) / 2`, one fused kernel each way.

    Example:
        >>> import numpy as np
        >>> from electra_tf.layers.fused_elementwise import gelu
        >>> np.round(gelu(np.float32([[-1.0, 0.0, 2.0]])).numpy(), 4)
        array([[-0.1587,  0.    ,  1.9545]], dtype=float32)
    """
    y, cdf = _gelu_forward(x)
    return y, lambda dy: _gelu_backward(dy, x, cdf)


@_xla
def _layer_norm_forward(x, gamma, beta, epsilon):
    mean = _row_mean(x)
    centered = x - mean
    rstd = tf.math.rsqrt(_row_mean(centered * centered) + epsilon)
    return centered * rstd * gamma + beta, mean, rstd


@_xla
def _layer_norm_backward(dy, x, gamma, mean, rstd):
    normed = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - _row_mean(g) - normed * _row_mean(g * normed))
    return dx, dy * normed


def layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis, `(x - mean) / sqrt(var + epsilon) * gamma + beta`, fused both ways.

    Example:
        >>> import numpy as np
        >>> from electra_tf.layers.fused_elementwise import layer_norm
        >>> x = np.float32([[1.0, 2.0, 3.0]])
        >>> np.round(layer_norm(x, np.ones(3, "float32"), np.zeros(3, "float32"), 1e-12).numpy(), 4)
        array([[-1.2247,  0.    ,  1.2247]], dtype=float32)
    """
    x, gamma, beta = (tf.convert_to_tensor(t) for t in (x, gamma, beta))  # (values, not variables)
    epsilon = tf.constant(epsilon, x.dtype)

    @tf.autograph.experimental.do_not_convert
    @tf.custom_gradient
    def normalise(x, gamma, beta):
        y, mean, rstd = _layer_norm_forward(x, gamma, beta, epsilon)

        def backward(dy):
            dx, dy_normed = _layer_norm_backward(dy, x, gamma, mean, rstd)
            rows = _rows(dy)  # (the per-feature sums run faster as TensorFlow's reductions than in XLA)
            return dx, tf.reduce_sum(dy_normed, rows), tf.reduce_sum(dy, rows)

        return y, backward

    return normalise(x, gamma, beta)


@_xla
def _masked_softmax_forward(scores, keep):
    probs = tf.nn.softmax(tf.where(keep, scores, _MASKED))
    return tf.where(keep, probs, 0.0)


@_xla
def _softmax_backward(dy, probs):
    return probs * (dy - _row_sum(dy * probs))


@tf.autograph.experimental.do_not_convert
@tf.custom_gradient
def _softmax_kept(scores, keep):
    probs = _masked_softmax_forward(scores, keep)
    return probs, lambda dy: (_softmax_backward(dy, probs), None)


def masked_softmax(scores, keep):
    """Keras' masked `Softmax` over the last axis (masked entries 0, a fully masked row all 0), fused both ways.

    `keep` broadcasts to `scores`; as in Keras, a non-boolean `keep` keeps the entries above 0.5.

    Example:
        >>> import numpy as np
        >>> from electra_tf.layers.fused_elementwise import masked_softmax
        >>> masked_softmax(np.float32([[0.0, 0.0, 5.0]]), np.array([[True, True, False]])).numpy()
        array([[0.5, 0.5, 0. ]], dtype=float32)
    """
    keep = tf.convert_to_tensor(keep)
    if keep.dtype != tf.bool:
        keep = tf.cast(keep, tf.float32) > 0.5
    keep = tf.broadcast_to(keep, tf.shape(scores))
    return _softmax_kept(scores, keep)


@_xla
def _keep_and_scale(x, bits, threshold, scale):
    return x * tf.where(tf.bitwise.bitwise_and(bits, _MANTISSA_MASK) >= threshold, scale, 0.0)


def dropout_from_bits(x, bits, threshold, scale):
    """`x * scale` where `bits & 0x7FFFFF >= threshold`, else `x * 0`: `IntegerBitsDropout`'s mask, fused both ways.

    Example:
        >>> import numpy as np
        >>> from electra_tf.layers.fused_elementwise import dropout_from_bits
        >>> dropout_from_bits(np.float32([1.0, 1.0]), np.uint32([5, 2**23 + 9]), 8, 2.0).numpy()
        array([0., 2.], dtype=float32)
    """
    bits = tf.convert_to_tensor(bits, tf.uint32)
    threshold, scale = tf.constant(threshold, tf.uint32), tf.constant(scale, tf.float32)

    @tf.autograph.experimental.do_not_convert
    @tf.custom_gradient
    def drop(x):
        return _keep_and_scale(x, bits, threshold, scale), lambda dy: _keep_and_scale(dy, bits, threshold, scale)

    return drop(x)


def _fused(inputs, training):
    return bool(training) and inputs.dtype == tf.float32


class FusedGeluDense(keras.layers.Dense):
    """A `Dense` with the exact GELU, which runs as one fused kernel each way in training."""

    def call(self, inputs, training=None):
        inputs = tf.convert_to_tensor(inputs)
        if not _fused(inputs, training) or self.bias is None or getattr(self, "quantization_mode", None) or getattr(
            self, "lora_enabled", False
        ):
            return super().call(inputs, training=training)
        return gelu(keras.ops.add(keras.ops.matmul(inputs, self.kernel), self.bias))


class FusedIntegerBitsDropout(IntegerBitsDropout):
    """`IntegerBitsDropout` whose mask and multiply run as one fused kernel each way (the same bits, the same outputs)."""

    def _keep_and_scale(self, inputs, bits):
        return dropout_from_bits(inputs, bits, keep_threshold(self.rate), 1.0 / (1.0 - self.rate))


class FusedLayerNormalization(keras.layers.LayerNormalization):
    """A `LayerNormalization` over the last axis that runs as one fused kernel each way in training."""

    def call(self, inputs, training=None):
        inputs = tf.convert_to_tensor(inputs)
        plain = self.axis not in (-1, [-1], [inputs.shape.rank - 1]) or self.rms_scaling
        if plain or not _fused(inputs, training) or not (self.center and self.scale):
            return super().call(inputs)
        return layer_norm(inputs, self.gamma, self.beta, self.epsilon)


def _is_exact_gelu(activation):
    return activation is keras.activations.gelu


class _FusedSoftmaxAttention:
    """Mixed into a `keras.layers.MultiHeadAttention` (sub)class: its masked softmax fused in training."""

    def _compute_attention(self, query, key, value, attention_mask=None, training=None, *args, **kwargs):
        # `_masked_softmax` is not told `training`; this thread (replicas trace in threads of their own)
        # notes that this layer is computing a training attention.
        fusing = _TRAINING_ATTENTION.__dict__.setdefault("layers", set())
        if _fused(query, training):
            fusing.add(id(self))
        try:
            return super()._compute_attention(query, key, value, attention_mask, training, *args, **kwargs)
        finally:
            fusing.discard(id(self))

    def _masked_softmax(self, attention_scores, attention_mask=None):
        fusing = id(self) in _TRAINING_ATTENTION.__dict__.get("layers", ())
        if not fusing or attention_mask is None or len(self._attention_axes) != 1:  # (softmax over the last axis)
            return super()._masked_softmax(attention_scores, attention_mask)
        keep = attention_mask
        for _ in range(attention_scores.shape.rank - keep.shape.rank):  # as Keras expands it
            keep = tf.expand_dims(keep, axis=-len(self._attention_axes) * 2 - 1)
        return masked_softmax(attention_scores, keep)


_TRAINING_ATTENTION = threading.local()
_ATTENTION_CLASSES = {}


def _with_fused_softmax(cls):
    if cls not in _ATTENTION_CLASSES:
        _ATTENTION_CLASSES[cls] = type(cls.__name__, (_FusedSoftmaxAttention, cls), {"__module__": cls.__module__})
    return _ATTENTION_CLASSES[cls]


def use_fused_elementwise(layer):
    """Switches the element-wise layers under `layer` (itself included) to their fused training kernels, in place.

    Exact-GELU `Dense`s, last-axis `LayerNormalization`s, `IntegerBitsDropout`s
    and the masked softmax of every `keras.layers.MultiHeadAttention`; other layers, and
    everything outside training, are unchanged.
    """
    for sub in [layer, *layer._flatten_layers(include_self=False)]:
        if type(sub) is keras.layers.Dense and _is_exact_gelu(sub.activation):
            _switch(sub, FusedGeluDense)
        elif type(sub) is keras.layers.LayerNormalization:
            _switch(sub, FusedLayerNormalization)
        elif type(sub) is IntegerBitsDropout:
            _switch(sub, FusedIntegerBitsDropout)
        elif isinstance(sub, keras.layers.MultiHeadAttention) and not isinstance(sub, _FusedSoftmaxAttention):
            _switch(sub, _with_fused_softmax(type(sub)))


def _switch(layer, cls):
    layer.__class__ = cls
    # Keras reads `call`'s signature when the layer is made, to know whether to pass it `training`.
    layer._call_signature = inspect.signature(layer.call)
    layer.call_signature_parameters = list(layer._call_signature.parameters)
    takes_training = "training" in layer.call_signature_parameters
    layer._call_has_training_arg = takes_training
    layer._call_has_context_arg = {**getattr(layer, "_call_has_context_arg", {}), "training": takes_training}
