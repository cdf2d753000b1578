"""An `ElectraEncoder`'s forward pass for served graphs: the same arithmetic in fewer, fusable ops.

The Keras layers trace a general graph: rank-3 `Einsum`s and `MatMul`s with their biases added
after a reshape, the softmax masked by two selects, `tf.nn.gelu`'s `Erfc`, Keras' `moments`. At
batch 1 each unfused kernel and each op's dispatch counts. `encoder_forward` computes the same
function on the encoder's own variables, every projection a rank-2 `MatMul` + `BiasAdd` (the exact
GELU written as Grappler's remapper matches it, `0.5 * x * (1 + erf(x / sqrt(2)))`), which
TensorFlow fuses into one kernel (`_FusedMatMul`; with oneDNN, 25 fused kernels for a 6-layer
classifier where the Keras graph runs 24 `Einsum`s, 12 `MatMul`s, 18 `BiasAdd`s and 6 `Erfc`s), the
attention as two `BatchMatMulV2`s around a `Softmax` of the scores plus an additive mask. Each
layer's query, key and value projections are one `MatMul` on a kernel concatenated once
(`attention_projections`, the query's `1 / sqrt(head_dim)` folded in) and one `Transpose` to heads:
at batch 1 a (length, H) x (H, H) product runs on one oneDNN thread, a (length, H) x (H, 3H) one on
all of them, and each transpose is a kernel call. Its outputs are those of the Keras model up to
float rounding (the tests compare them at 1e-5).

The served SavedModels and the LiteRT exports use it (`ServedModel.encode`, under every kind's head:
`model_outputs`); training and the Keras model keep the layers' own `call`. For LiteRT the same form
converts to about half the ops of the Keras layers' graph (307 against 550 for a 6-layer classifier on
raw text, int8 weights) in 14 XNNPACK partitions instead of 51: one `FULLY_CONNECTED` for each layer's query,
key and value, the mask one `ADD`.
An encoder it does not describe exactly (another layer class, pre-LN blocks, a float16 or
quantized policy) is served through its Keras layers: `supported` says which.

Example:
    >>> import numpy as np
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> from electra_tf.exporting.inference_graph import attention_projections, encoder_forward, supported
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
    ...                          embedding_dim=16, intermediate_dim=64)
    >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
    >>> inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    >>> keras_output = encoder(inputs)  # builds it
    >>> supported(encoder)
    True
    >>> bool(np.allclose(encoder_forward(encoder, inputs), keras_output, atol=1e-5))
    True
    >>> projections = attention_projections(encoder)  # what a served model keeps as variables
    >>> [tuple(kernel.shape) for kernel, _ in projections]
    [(32, 96), (32, 96)]
    >>> bool(np.allclose(encoder_forward(encoder, inputs, projections), keras_output, atol=1e-5))
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
    attentions = [layer._self_attention_layer for layer in layers]
    if not all(a._value_dim == a.key_dim and a._query_dense.kernel.shape == a._value_dense.kernel.shape
               for a in attentions):
        return False  # the query, key and value are split from one product in equal thirds
    norms = [encoder.embeddings.layer_norm] + [n for layer in layers for n in (
        layer._self_attention_layer_norm, layer._feedforward_layer_norm)]
    if not all(n.center and n.scale and not n.rms_scaling and list(n.axis) in ([-1], [2])
               for n in norms):
        return False
    policies = [encoder.dtype_policy, encoder.embeddings.dtype_policy] + [layer.dtype_policy for layer in layers]
    return all(policy.name == "float32" and not getattr(policy, "quantization_mode", None) for policy in policies)


def attention_projections(encoder):
    """Per transformer layer, its query, key and value projections as one kernel and one bias.

    The kernel is `(hidden_dim, 3 * heads * head_dim)`: the query's columns (times `1 / sqrt(head_dim)`,
    the scale Keras applies to the query), then the key's, then the value's, each head by head.

    Args:
        encoder: `ElectraEncoder` (`supported(encoder)` true).

    Returns:
        list of `(kernel, bias)` float32 tensors, one pair per transformer layer.
    """
    projections = []
    for layer in encoder.transformer_layers:
        denses = _query_key_value_denses(layer)
        hidden = denses[0].kernel.shape[0]
        scales = (1.0 / math.sqrt(layer._self_attention_layer.key_dim), 1.0, 1.0)
        kernel = tf.concat([tf.reshape(d.kernel, [hidden, -1]) * s for d, s in zip(denses, scales)], axis=1)
        bias = tf.concat([tf.reshape(d.bias, [-1]) * s for d, s in zip(denses, scales)], axis=0)
        projections.append((kernel, bias))
    return projections


def query_key_value_weights(encoder):
    """The Keras variables `attention_projections` is computed from: every layer's query, key and value
    kernels and biases.

    Args:
        encoder: `ElectraEncoder`.

    Returns:
        list of Keras variables.
    """
    return [weight for layer in encoder.transformer_layers for dense in _query_key_value_denses(layer)
            for weight in (dense.kernel, dense.bias)]


def _query_key_value_denses(layer):
    """A keras-hub `TransformerEncoder`'s query, key and value `EinsumDense`s, in that order."""
    attention = layer._self_attention_layer
    return attention._query_dense, attention._key_dense, attention._value_dense


def encoder_forward(encoder, inputs, projections=None):
    """The sequence output of `encoder` on `inputs` (inference: no dropout), in the fused form.

    Args:
        encoder: `ElectraEncoder` (`supported(encoder)` true).
        inputs: dict of int32 `(batch, length)` tensors: `token_ids`, `segment_ids`, `padding_mask`.
        projections: `attention_projections(encoder)`, computed once (a served model keeps them as
            variables); None computes them in the graph, a concatenation per layer per call.

    Returns:
        float32 tensor `(batch, length, hidden_dim)`.
    """
    if projections is None:
        projections = attention_projections(encoder)
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
    mask = tf.expand_dims(tf.expand_dims(mask, 1), 1)  # (LiteRT has no kernel for a slice that adds axes)
    approximate = encoder.activation == "gelu_approximate"
    for layer, (kernel, bias) in zip(encoder.transformer_layers, projections):
        x = _transformer_layer(layer, kernel, bias, x, mask, batch, length, approximate)
    return tf.reshape(x, [batch, length, encoder.hidden_dim])


def _transformer_layer(layer, kernel, bias, x, mask, batch, length, approximate):
    """One post-LN keras-hub `TransformerEncoder` block on `x` `(batch * length, hidden)`; `kernel`, `bias`:
    its `attention_projections`."""
    attention = layer._self_attention_layer
    hidden = x.shape[-1]
    heads, head_dim = attention.num_heads, attention.key_dim
    projected = tf.reshape(_dense(x, kernel, bias), [batch, length, 3, heads, head_dim])
    # (3, batch, heads, length, head_dim): the scaled query, the key and the value, each a contiguous third
    # (unstacking the first axis copies nothing; a split of the second would copy every element at batch > 1).
    query, key, value = tf.unstack(tf.transpose(projected, [2, 0, 3, 1, 4]), 3, axis=0)
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
