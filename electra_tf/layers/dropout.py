"""Dropout from integer random bits: Keras' masks, bit for bit, in fewer passes.

Keras' `Dropout` on TensorFlow (`tf.nn.experimental.stateless_dropout`) draws
one float32 uniform per element, keeps it where `u >= rate`, and computes
`where(keep, x * scale, 0)`, whose gradient is another select and multiply.
A float32 uniform is `(bits & 0x7FFFFF) * 2**-23` of one 32-bit Philox
output, so `u >= rate` is the integer test `(bits & 0x7FFFFF) >= threshold`
on the same bits (`tf.random.stateless_uniform(..., dtype=uint32)` with the
same seed returns them). `IntegerBitsDropout` keeps every element Keras
keeps, from the same seed generator, and multiplies by one mask
`where(keep, scale, 0)`, whose gradient is a single multiply: the same
outputs and gradients as `keras.layers.Dropout` (a dropped element is
`x * 0`, so a dropped inf or NaN stays NaN, where Keras writes 0). Only
float32 inputs take this path: a 16-bit float uniform is made from other
bits, so `bfloat16` / `float16` inputs keep Keras' own dropout. A TensorFlow
speed path: `use_integer_bits_dropout` switches layers over on the TensorFlow
backend only (other backends keep `keras.layers.Dropout`).
"""

import math

import keras
import numpy as np

from electra_tf import backends

_MANTISSA = 1 << 23


def keep_threshold(rate):
    """The least `k` with `float32(k * 2**-23) >= float32(rate)`: Keras keeps `u` iff `bits & 0x7FFFFF >= k`.

    Example:
        >>> from electra_tf.layers.dropout import keep_threshold
        >>> keep_threshold(0.1)
        838861
    """
    rate32 = float(np.float32(rate))
    return min(_MANTISSA, math.ceil(rate32 * _MANTISSA))


class IntegerBitsDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with its float draws replaced by the same integer bits (identical masks).

    Swapped in for the `keras.layers.Dropout` layers of a built model by
    `use_integer_bits_dropout`; the seed generator (and its checkpointed
    state) is the layer's own, advanced once per call as Keras does.

    Example:
        ```python
        import numpy as np

        from electra_tf.layers.dropout import IntegerBitsDropout

        layer = IntegerBitsDropout(0.5, seed=1)
        y = layer(np.ones((4, 8), "float32"), training=True)
        sorted(set(np.asarray(y).ravel().tolist()))  # [0.0, 2.0]
        ```
    """

    def call(self, inputs, training=False):
        import tensorflow as tf

        inputs = tf.convert_to_tensor(inputs)
        if not training or not 0 < self.rate < 1 or self.noise_shape is not None or inputs.dtype != tf.float32:
            return super().call(inputs, training=training)  # (16-bit floats draw other bits)
        seed = self.seed_generator.next()
        if seed.dtype != tf.int32:  # as Keras' TensorFlow backend casts it (`random._cast_seed`)
            seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        bits = tf.random.stateless_uniform(tf.shape(inputs), seed, minval=None, maxval=None, dtype=tf.uint32)
        return self._keep_and_scale(inputs, bits)

    def _keep_and_scale(self, inputs, bits):
        """`inputs` times 1 / (1 - rate) where Keras' uniform from `bits` is >= rate, else times 0."""
        import tensorflow as tf

        keep = tf.bitwise.bitwise_and(bits, _MANTISSA - 1) >= keep_threshold(self.rate)
        scale = tf.constant(1.0 / (1.0 - self.rate), tf.float32)
        return inputs * tf.where(keep, scale, 0.0)


def use_integer_bits_dropout(layer):
    """Switches every `keras.layers.Dropout` under `layer` (itself included) to `IntegerBitsDropout` in place, on
    the TensorFlow backend (elsewhere the layers are left as they are)."""
    if not backends.is_tensorflow():
        return
    for sub in [layer, *layer._flatten_layers(include_self=False)]:
        if type(sub) is keras.layers.Dropout:
            sub.__class__ = IntegerBitsDropout
