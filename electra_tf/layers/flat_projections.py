"""Attention projections as 2-D matmuls: the same weights and sums, a cheaper gradient.

Keras' `MultiHeadAttention` projects with `EinsumDense` layers
(`"abc,cde->abde"` for query/key/value, `"abcd,cde->abe"` for the output).
On TensorFlow Keras runs them as a `BatchMatMulV2` of the rank-3 input with
the kernel broadcast over the batch, and adds the bias by broadcasting:
their gradients then compute one kernel gradient per sequence and sum them
(`Sum` over the batch), and the bias gradient is another broadcast `Sum`.
`FlatEinsumDense` computes the same product as one `(batch * seq, in) @
(in, out)` `MatMul` plus a `BiasAdd` (oneDNN fuses the two), whose gradients
are one `MatMul` per operand and a `BiasAddGrad`. The variables (names,
shapes, values) are the `EinsumDense`'s own, so checkpoints and the
serving graphs read them unchanged. A TensorFlow speed path:
`flatten_attention_projections` switches layers over on the TensorFlow backend
only (XLA under JAX compiles the `EinsumDense` as it is).
"""

import math

import keras
from keras import ops

from electra_tf import backends

# Equation -> how the input's trailing axes and the kernel's axes group into (in, out).
_FLAT = {
    "abc,cde->abde": 1,  # query/key/value: (b, s, H) x (H, heads, dh) -> (b, s, heads, dh)
    "abcd,cde->abe": 2,  # output: (b, s, heads, dh) x (heads, dh, H) -> (b, s, H)
}


class FlatEinsumDense(keras.layers.EinsumDense):
    """An `EinsumDense` whose supported equations run as one 2-D matmul plus bias.

    Other equations (and any activation) are `EinsumDense`'s own. Use
    `flatten_attention_projections` to switch a built attention layer's
    projections over.

    Example:
        ```python
        import numpy as np

        from electra_tf.layers.flat_projections import FlatEinsumDense

        layer = FlatEinsumDense("abc,cde->abde", output_shape=(None, 2, 4), bias_axes="de")
        layer(np.ones((3, 5, 6), "float32")).shape  # (3, 5, 2, 4)
        ```
    """

    def call(self, inputs, training=None):
        in_axes = _FLAT.get(self.equation)
        if in_axes is None or getattr(self, "quantization_mode", None) or getattr(self, "lora_enabled", False):
            return super().call(inputs, training=training)
        kernel = self.kernel
        kernel_shape = tuple(kernel.shape)
        fan_in, fan_out = math.prod(kernel_shape[:in_axes]), math.prod(kernel_shape[in_axes:])
        lead = ops.shape(inputs)[: len(inputs.shape) - in_axes]
        x = ops.matmul(ops.reshape(inputs, (-1, fan_in)), ops.reshape(kernel, (fan_in, fan_out)))
        if self.bias is not None:
            x = ops.add(x, ops.reshape(self.bias, (fan_out,)))
        x = ops.reshape(x, tuple(lead) + kernel_shape[in_axes:])
        if self.activation is not None:
            x = self.activation(x)
        return x


def flatten_attention_projections(attention):
    """Switches a built `keras.layers.MultiHeadAttention`'s four projections to `FlatEinsumDense` in place, on the
    TensorFlow backend (elsewhere they are left as they are)."""
    if not backends.is_tensorflow():
        return
    for name in ("_query_dense", "_key_dense", "_value_dense", "_output_dense"):
        layer = getattr(attention, name)
        if type(layer) is keras.layers.EinsumDense and layer.equation in _FLAT:
            layer.__class__ = FlatEinsumDense
