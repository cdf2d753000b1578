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


@pytest.mark.parametrize("activation, embedding_dim", [("gelu", 16), ("gelu_approximate", 32)])
def test_equals_the_keras_encoder_on_padded_rows(activation, embedding_dim):
    encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=4, hidden_dim=32, embedding_dim=embedding_dim,
                             intermediate_dim=64, activation=activation)
    batch = inputs([9, 3, 1], 16)
    expected = encoder(batch, training=False).numpy()
    assert inference_graph.supported(encoder)
    got = tf.function(lambda x: inference_graph.encoder_forward(encoder, x))(batch).numpy()
    mask = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5, rtol=0)  # padding positions: any value


def test_an_encoder_it_does_not_describe_is_served_by_its_keras_layers():
    encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)
    encoder(inputs([4], 8))
    encoder.transformer_layers[0].normalize_first = True  # a pre-LN block: not BERT's post-LN order
    assert not inference_graph.supported(encoder)
