"""An `ElectraEncoder`'s forward pass for served graphs: the same arithmetic in fewer, fusable ops.

The Keras layers trace a general graph: rank-3 `Einsum`s and `MatMul`s with their biases added
after a reshape, the softmax masked by two selects, `tf.nn.gelu`'s `Erfc`, Keras' `moments`. At
batch 1 each unfused kernel and each op's dispatch counts. `encoder_forward` computes the same
function on the encoder's own variables, every projection a rank-2 `MatMul` + `BiasAdd` (the exact
GELU written as Grappler's remapper matches it, `0.5 * x * (1 + erf(x / sqrt(2)))`), which
TensorFlow fuses into one kernel (`_FusedMatMul`; with oneDNN, 37 fused kernels for a 6-layer
classifier where the Keras graph runs 24 `Einsum`s, 12 `MatMul`s, 18 `BiasAdd`s and 6 `Erfc`s), the
attention as two `BatchMatMulV2`s around a `Softmax` of the scores plus an additive mask. Its
outputs are those of the Keras model up to float rounding (the tests compare them at 1e-5).

Only the served SavedModels use it (`ServedModel.encode`, under every kind's head: `model_outputs`);
training, the Keras model and the LiteRT export (whose converter fuses the Keras graph itself) keep the
layers' own `call`.
An encoder it does not describe exactly (another layer class, pre-LN blocks, a float16 or
quantized policy) is served through its Keras layers: `supported` says which.

Example:
    >>> import numpy as np
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> from electra_tf.exporting.inference_graph import encoder_forward, supported
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
    ...                          embedding_dim=16, intermediate_dim=64)
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    >>> keras_output = encoder(inputs)  # builds it
    >>> supported(encoder)
    True
    >>> bool(np.allclose(encoder_forward(encoder, inputs), keras_output, atol=1e-5))
    True
"""

import math

import tensorflow as tf

_MASKED = -1e9  # added to the scores of padding keys: exp() of it is 0 in float32, as the Keras mask gives


def supported(encoder):
    """Whether `encoder_forward` computes exactly what `encoder` does (else serve its Keras layers).

    Args:
        encoder: `ElectraEncoder`.

    Returns:
        bool.
    """
    from keras_hub.layers import TransformerEncoder

    if getattr(encoder, "activation", None) not in ("gelu", "gelu_approximate"):
        return False
    layers = list(getattr(encoder, "transformer_layers", ()))
    if not layers or not all(type(layer) is TransformerEncoder and layer.built and not layer.normalize_first
                             for layer in layers):
        return False  # (an unbuilt encoder has no sublayers to read yet)
    norms = [encoder.embeddings.layer_norm] + [n for layer in layers for n in (
        layer._self_attention_layer_norm, layer._feedforward_layer_norm)]
    if not all(n.center and n.scale and not n.rms_scaling and list(n.axis) in ([-1], [2])
               for n in norms):
        return False
    policies = [encoder.dtype_policy, encoder.embeddings.dtype_policy] + [layer.dtype_policy for layer in layers]
    return all(policy.name == "float32" and not getattr(policy, "quantization_mode", None) for policy in policies)


def encoder_forward(encoder, inputs):
    """The sequence output of `encoder` on `inputs` (inference: no dropout), in the fused form.

    Args:
        encoder: `ElectraEncoder` (`supported(encoder)` true).
        inputs: dict of int32 `(batch, length)` tensors: `token_ids`, `segment_ids`, `padding_mask`.

    Returns:
        float32 tensor `(batch, length, hidden_dim)`.
    """
    token_ids = tf.convert_to_tensor(inputs["token_ids"])
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    embeddings = encoder.embeddings
    x = (tf.gather(embeddings.token_embedding.embeddings, token_ids)
         + embeddings.position_embedding.position_embeddings[:length]
         + tf.gather(embeddings.segment_embedding.embeddings, inputs["segment_ids"]))
    x = tf.reshape(_layer_norm(x, embeddings.layer_norm), [-1, embeddings.embedding_dim])  # (batch * length, E)
    if encoder.embeddings_project is not None:
        x = _dense(x, encoder.embeddings_project.kernel, encoder.embeddings_project.bias)
    # (batch, 1, 1, length): 0 for a real key, a large negative number for padding.
    mask = (1.0 - tf.cast(inputs["padding_mask"], tf.float32)) * _MASKED
    mask = mask[:, None, None, :]
    approximate = encoder.activation == "gelu_approximate"
    for layer in encoder.transformer_layers:
        x = _transformer_layer(layer, x, mask, batch, length, approximate)
    return tf.reshape(x, [batch, length, encoder.hidden_dim])


def _transformer_layer(layer, x, mask, batch, length, approximate):
    """One post-LN keras-hub `TransformerEncoder` block on `x` `(batch * length, hidden)`."""
    attention = layer._self_attention_layer
    hidden = x.shape[-1]
    heads, head_dim = attention.num_heads, attention.key_dim

    def heads_of(einsum_dense):  # (batch * length, H) -> (batch, heads, length, head_dim)
        projected = _dense(x, tf.reshape(einsum_dense.kernel, [hidden, heads * head_dim]),
                           tf.reshape(einsum_dense.bias, [heads * head_dim]))
        return tf.transpose(tf.reshape(projected, [batch, length, heads, head_dim]), [0, 2, 1, 3])

    query = heads_of(attention._query_dense) * (1.0 / math.sqrt(head_dim))  # Keras scales the query
    key, value = heads_of(attention._key_dense), heads_of(attention._value_dense)
    weights = tf.nn.softmax(tf.matmul(query, key, transpose_b=True) + mask, axis=-1)
    context = tf.reshape(tf.transpose(tf.matmul(weights, value), [0, 2, 1, 3]), [-1, heads * head_dim])
    output = attention._output_dense
    attended = _dense(context, tf.reshape(output.kernel, [heads * head_dim, hidden]), output.bias)
    x = _layer_norm(attended + x, layer._self_attention_layer_norm)
    intermediate = layer._feedforward_intermediate_dense
    h = _gelu(_dense(x, intermediate.kernel, intermediate.bias), approximate)
    h = _dense(h, layer._feedforward_output_dense.kernel, layer._feedforward_output_dense.bias)
    return _layer_norm(h + x, layer._feedforward_layer_norm)


def _dense(x, kernel, bias):
    """Rank-2 `MatMul` + `BiasAdd`: the pair Grappler fuses into one kernel."""
    return tf.nn.bias_add(tf.matmul(x, kernel), bias)


def _gelu(x, approximate):
    if approximate:
        return tf.nn.gelu(x, approximate=True)
    return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))  # the form the remapper fuses


def _layer_norm(x, layer):
    """Keras `LayerNormalization` over the last axis (its mean, biased variance, epsilon, gamma, beta)."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
    scale = tf.math.rsqrt(variance + layer.epsilon) * layer.gamma
    return x * scale + (layer.beta - mean * scale)
