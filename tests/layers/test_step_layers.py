"""The pre-training step's cheaper layers compute what Keras' own layers compute.

`IntegerBitsDropout` against `keras.layers.Dropout` (same seed: identical masks,
outputs and gradients, call after call); `FlatEinsumDense` against
`keras.layers.EinsumDense` (same variables: the same products); and the encoder
uses both.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers.dropout import IntegerBitsDropout, keep_threshold
from electra_tf.layers.flat_projections import FlatEinsumDense
from electra_tf.models.encoder import ElectraEncoder


@pytest.mark.parametrize("rate", [0.1, 0.25, 1 / 3, 0.5, 0.9])
def test_the_threshold_is_where_keras_float_uniform_crosses_the_rate(rate):
    k = keep_threshold(rate)
    as_float = lambda bits: np.float32(bits) * np.float32(2.0**-23)  # Keras' uniform: mantissa bits * 2^-23
    assert as_float(k) >= np.float32(rate) > as_float(k - 1)


@pytest.mark.parametrize("rate,dtype", [(0.1, "float32"), (0.5, "float32"), (0.1, "bfloat16")])
def test_integer_bits_dropout_equals_keras_dropout_call_after_call(rate, dtype):
    x = tf.cast(tf.random.stateless_normal((4, 3, 33), seed=[1, 2]), dtype)
    upstream = tf.cast(tf.random.stateless_normal((4, 3, 33), seed=[3, 4]), dtype)
    reference = keras.layers.Dropout(rate, seed=7, dtype=dtype)
    ours = IntegerBitsDropout(rate, seed=7, dtype=dtype)

    @tf.function
    def step(layer, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            loss = tf.reduce_sum(tf.cast(y * upstream, tf.float32))
        return y, tape.gradient(loss, x)

    for _ in range(3):  # the seed generators advance alike
        y_ref, g_ref = step(reference, x)
        y, g = step(ours, x)
        np.testing.assert_array_equal(tf.cast(y, tf.float32).numpy(), tf.cast(y_ref, tf.float32).numpy())
        np.testing.assert_array_equal(tf.cast(g, tf.float32).numpy(), tf.cast(g_ref, tf.float32).numpy())
    np.testing.assert_array_equal(ours.seed_generator.state.numpy(), reference.seed_generator.state.numpy())
    np.testing.assert_array_equal(ours(x, training=False).numpy(), x.numpy())


@pytest.mark.parametrize("equation,output_shape,bias_axes,in_shape", [
    ("abc,cde->abde", (None, 3, 4), "de", (2, 5, 6)),
    ("abcd,cde->abe", (None, 6), "e", (2, 5, 3, 4)),
])
def test_flat_einsum_dense_equals_einsum_dense(equation, output_shape, bias_axes, in_shape):
    x = tf.random.stateless_normal(in_shape, seed=[5, 6])
    reference = keras.layers.EinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes,
                                         bias_initializer="random_normal")
    reference.build(in_shape)
    flat = FlatEinsumDense(equation, output_shape=output_shape, bias_axes=bias_axes)
    flat.build(in_shape)
    for a, b in zip(flat.weights, reference.weights):
        a.assign(b)
    results = []
    for layer in (reference, flat):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        results.append((y, *tape.gradient(loss, [x, *layer.trainable_variables])))
    for ours, ref in zip(results[1], results[0]):
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert [w.shape for w in flat.weights] == [w.shape for w in reference.weights]


def test_the_encoder_runs_its_attention_and_dropout_through_them():
    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=8, embedding_dim=8,
                             intermediate_dim=16)
    encoder.build()
    kinds = {type(layer) for layer in encoder._flatten_layers()}
    assert FlatEinsumDense in kinds and IntegerBitsDropout in kinds
    assert keras.layers.Dropout not in kinds and keras.layers.EinsumDense not in kinds
