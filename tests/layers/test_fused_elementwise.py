"""The training step's fused element-wise kernels compute what Keras' layers compute.

Each kernel (exact GELU, LayerNorm, masked softmax) against Keras' own op,
values and gradients; the fused dropout against `IntegerBitsDropout`, bit for
bit; an encoder in training against the same encoder on Keras' layers; only
training graphs hold XLA-compiled calls (inference graphs, which exports are
made from, hold none); the pretrainer's config field switches them.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import get_config
from electra_tf.layers import fused_elementwise
from electra_tf.layers.dropout import IntegerBitsDropout
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import build_pretrainer


def _value_and_gradients(function, inputs, upstream):
    variables = [tf.Variable(x) for x in inputs]

    @tf.function
    def run():
        with tf.GradientTape() as tape:
            y = function(*variables)
        return [y, *tape.gradient(y, variables, output_gradients=upstream)]

    return [t.numpy() for t in run()]


def _assert_equal_to_float_rounding(ours, reference):
    for a, b in zip(ours, reference, strict=True):
        # (a gradient that is zero in exact arithmetic, such as a bias's just before a LayerNorm, is rounding noise)
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=max(2e-5 * np.abs(b).max(), 1e-6))


def _normal(shape, seed, scale=1.0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32") * scale


def test_gelu_equals_keras_exact_gelu_and_its_gradient():
    x = _normal((3, 5, 64), 0, scale=3.0)
    upstream = _normal(x.shape, 1)
    ours = _value_and_gradients(fused_elementwise.gelu, [x], upstream)
    reference = _value_and_gradients(lambda x: keras.activations.gelu(x, approximate=False), [x], upstream)
    _assert_equal_to_float_rounding(ours, reference)


def test_layer_norm_equals_keras_layer_normalization_and_its_gradients():
    x, gamma, beta = _normal((3, 5, 32), 2, scale=4.0) + 1.5, _normal(32, 3), _normal(32, 4)
    upstream = _normal(x.shape, 5)
    ours = _value_and_gradients(lambda x, g, b: fused_elementwise.layer_norm(x, g, b, 1e-12), [x, gamma, beta],
                                upstream)
    reference = _value_and_gradients(lambda x, g, b: keras.ops.layer_normalization(x, g, b, -1, 1e-12),
                                     [x, gamma, beta], upstream)
    _assert_equal_to_float_rounding(ours, reference)


def test_masked_softmax_equals_keras_softmax_with_its_mask_and_gradient():
    scores = _normal((2, 3, 6, 6), 6, scale=3.0)
    keep = np.random.default_rng(7).random((2, 1, 6, 6)) > 0.3
    keep[0, 0, 2] = False  # a fully masked row: Keras gives zeros
    upstream = _normal(scores.shape, 8)
    ours = _value_and_gradients(lambda s: fused_elementwise.masked_softmax(s, keep), [scores], upstream)
    reference = _value_and_gradients(lambda s: keras.layers.Softmax()(s, mask=tf.constant(keep)), [scores], upstream)
    _assert_equal_to_float_rounding(ours, reference)
    assert not ours[0][0, :, 2].any()


def _encoder(fused=True):
    keras.utils.set_random_seed(11)  # the same weights and dropout seeds for each encoder built
    encoder = ElectraEncoder(vocab_size=50, num_layers=2, num_heads=2, hidden_dim=16, embedding_dim=8,
                             intermediate_dim=32, dropout=0.1)
    encoder.build()
    if fused:
        fused_elementwise.use_fused_elementwise(encoder)
    return encoder


_INPUTS = {
    "token_ids": tf.constant([[2, 5, 7, 9, 0, 0], [2, 11, 13, 17, 19, 3]]),
    "segment_ids": tf.constant([[0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 1]]),
    "padding_mask": tf.constant([[True] * 4 + [False] * 2, [True] * 6]),
}


def _training_pass(encoder):
    upstream = tf.constant(_normal((2, 6, 16), 12))

    @tf.function
    def run():
        with tf.GradientTape() as tape:
            y = encoder(_INPUTS, training=True)
        gradients = tape.gradient(y, encoder.trainable_variables, output_gradients=upstream)
        return [y, *(tf.convert_to_tensor(g) for g in gradients)]  # (the embedding's are IndexedSlices)

    return [t.numpy() for t in run()]


def test_an_encoder_in_training_equals_the_same_encoder_on_keras_layers():
    fused, plain = _encoder(), _encoder(fused=False)
    kinds = {type(layer) for layer in fused._flatten_layers()}
    assert {fused_elementwise.FusedGeluDense, fused_elementwise.FusedLayerNormalization,
            fused_elementwise.FusedIntegerBitsDropout} <= kinds
    assert not any(isinstance(layer, fused_elementwise._FusedSoftmaxAttention) for layer in plain._flatten_layers())
    ours, reference = _training_pass(fused), _training_pass(plain)
    assert len(ours) == 1 + len(fused.trainable_variables)
    _assert_equal_to_float_rounding(ours, reference)


def _xla_calls(encoder, training):
    graph = tf.function(lambda: encoder(_INPUTS, training=training)).get_concrete_function().graph
    calls = []
    for op in graph.get_operations():
        try:
            if op.get_attr("_XlaMustCompile"):
                calls.append(op.name)
        except ValueError:
            pass
    return calls


def test_only_training_graphs_call_the_fused_kernels():
    encoder = _encoder()
    training_calls = _xla_calls(encoder, True)
    # Per layer: the GELU, the masked softmax, two LayerNorms, three dropouts (attention
    # probabilities, attention output, feed-forward output); the embeddings' LayerNorm and dropout.
    assert len(training_calls) == 2 * (2 + 2 + 3) + 2, training_calls
    assert _xla_calls(encoder, False) == []
    assert _xla_calls(encoder, None) == []


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_encoders_keep_keras_ops(dtype):
    keras.utils.set_random_seed(11)
    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=8,
                             intermediate_dim=32, dtype=keras.dtype_policies.DTypePolicy(f"mixed_{dtype}"))
    encoder.build()
    fused_elementwise.use_fused_elementwise(encoder)
    assert _xla_calls(encoder, True) == []


def test_fused_dropout_keeps_integer_bits_dropout_masks_bit_for_bit():
    x = tf.constant(_normal((4, 3, 33), 13))
    upstream = tf.constant(_normal((4, 3, 33), 14))
    plain, fused = IntegerBitsDropout(0.1, seed=7), IntegerBitsDropout(0.1, seed=7)
    fused_elementwise.use_fused_elementwise(fused)
    assert type(fused) is fused_elementwise.FusedIntegerBitsDropout

    @tf.function
    def step(layer):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
        return y, tape.gradient(y, x, output_gradients=upstream)

    for _ in range(3):  # call after call, the seed generators advance alike
        for ours, reference in zip(step(fused), step(plain)):
            np.testing.assert_array_equal(ours.numpy(), reference.numpy())


@pytest.mark.parametrize("fused", [True, False])
def test_the_pretrainer_config_field_switches_its_encoders(fused):
    config = get_config("tiny", vocab_size=200, hidden_dim=16, embedding_dim=8, intermediate_dim=32,
                        fused_elementwise=fused)
    pretrainer = build_pretrainer(config)
    for encoder in (pretrainer.discriminator, pretrainer.generator):
        kinds = {type(layer) for layer in encoder._flatten_layers()}
        assert (fused_elementwise.FusedGeluDense in kinds) is fused
        assert (fused_elementwise.FusedLayerNormalization in kinds) is fused
    assert pretrainer.get_config()["fused_elementwise"] is fused
    assert type(pretrainer).from_config(pretrainer.get_config()).fused_elementwise is fused
