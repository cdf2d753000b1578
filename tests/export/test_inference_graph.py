"""The served graph's encoder (`inference_graph.encoder_forward`) against the Keras encoder it stands for."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.exporting import inference_graph
from electra_tf.models.encoder import ElectraEncoder


def inputs(lengths, width):
    rng = np.random.default_rng(0)
    mask = (np.arange(width)[None, :] < np.array(lengths)[:, None]).astype("int32")
    return {"token_ids": rng.integers(5, 100, (len(lengths), width)).astype("int32") * mask,
            "segment_ids": (rng.integers(0, 2, (len(lengths), width)) * mask).astype("int32"),
            "padding_mask": mask}


@pytest.mark.parametrize("activation, embedding_dim, constant_weights",
                         [("gelu", 16, False), ("gelu_approximate", 32, False), ("gelu", 16, True)])
def test_equals_the_keras_encoder_on_padded_rows(activation, embedding_dim, constant_weights):
    encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=4, hidden_dim=32, embedding_dim=embedding_dim,
                             intermediate_dim=64, activation=activation)
    batch = inputs([9, 3, 1], 16)
    expected = encoder(batch, training=False).numpy()
    assert inference_graph.supported(encoder)
    forward = tf.function(lambda x: inference_graph.encoder_forward(encoder, x, constant_weights=constant_weights))
    got = forward(batch).numpy()
    mask = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5, rtol=0)  # padding positions: any value
    # With constants, the graph reads no projection's variable: only the embeddings' and the layer norms'.
    read = {id(handle) for handle in forward.get_concrete_function(batch).captured_inputs}
    projections = [w for layer in inference_graph.projection_weights(encoder) for w in (layer.kernel, layer.bias)]
    assert len(projections) == 2 * (6 * 2 + (embedding_dim != 32))  # 6 dense layers per block; E != H: a projection
    held = [w for w in projections if id(w.value.handle) in read]
    assert len(held) == (0 if constant_weights else len(projections))


def test_an_encoder_it_does_not_describe_is_served_by_its_keras_layers():
    encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)
    encoder(inputs([4], 8))
    encoder.transformer_layers[0].normalize_first = True  # a pre-LN block: not BERT's post-LN order
    assert not inference_graph.supported(encoder)
