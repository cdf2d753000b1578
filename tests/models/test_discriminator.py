"""ElectraDiscriminator: its logits are the head's two dense layers over every hidden state, and it saves to a
`.keras` file that loads, without an optimizer, into a fresh object with the same variables and outputs."""

import keras
import numpy as np

from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder


def tiny_encoder():
    return ElectraEncoder(vocab_size=60, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
                          intermediate_dim=64, max_sequence_length=16)


def inputs(seed=0):
    ids = np.random.RandomState(seed).randint(5, 60, (3, 10)).astype("int32")
    mask = np.ones_like(ids)
    mask[0, 7:] = 0
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


def test_logits_are_the_heads_two_dense_layers_over_every_hidden_state():
    detector = ElectraDiscriminator(tiny_encoder(), activation="relu")
    x = inputs()
    logits = detector(x).numpy()
    hidden = detector.encoder(x).numpy()
    (w1, b1), (w2, b2) = detector.head.dense.get_weights(), detector.head.dense_prediction.get_weights()
    expected = (np.maximum(hidden @ w1 + b1, 0) @ w2 + b2)[..., 0]  # relu, then one score per token
    assert logits.shape == (3, 10) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected, atol=1e-5)


def test_saved_keras_file_restores_into_a_fresh_object_with_the_same_variables_and_outputs(tmp_path):
    detector = ElectraDiscriminator(tiny_encoder(), activation="relu", output_initializer="truncated_normal")
    detector.head.dense_prediction.set_weights([np.random.RandomState(1).normal(size=(32, 1)).astype("float32"),
                                                np.array([0.3], "float32")])
    x = inputs(2)
    expected = detector(x).numpy()
    path = tmp_path / "discriminator_with_head.keras"
    detector.save(path)
    restored = keras.saving.load_model(path, compile=False)
    assert isinstance(restored, ElectraDiscriminator) and restored is not detector
    assert getattr(restored, "optimizer", None) is None  # restored without an optimizer (compile=False)
    assert len(restored.weights) == len(detector.weights) == 2 + len(detector.encoder.weights) + 2
    for saved, loaded in zip(detector.weights, restored.weights):  # the same variables, in order, with their values
        assert saved.path.endswith(loaded.path.split("/", 1)[1]) and saved.shape == loaded.shape, (saved.path, loaded.path)
        np.testing.assert_array_equal(loaded.numpy(), saved.numpy())
    np.testing.assert_allclose(restored(x).numpy(), expected, atol=1e-6)
    assert restored.get_config() == detector.get_config() and restored.head.activation == "relu"
