"""ElectraClassifier: head on [CLS] only, config round-trip, save/load."""

import keras
import numpy as np

from electra_tf.tasks.classification.model import ElectraClassifier
from electra_tf.models.encoder import ElectraEncoder


def tiny_encoder():
    return ElectraEncoder(vocab_size=60, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
                          intermediate_dim=64, max_sequence_length=16)


def inputs(seed=0):
    ids = np.random.RandomState(seed).randint(5, 60, (3, 10)).astype("int32")
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}


def test_logits_are_dense_of_cls_vector():
    classifier = ElectraClassifier(tiny_encoder(), num_labels=4)
    x = inputs()
    logits = classifier(x, training=False).numpy()
    cls = classifier.encoder(x, training=False).numpy()[:, 0]
    kernel, bias = classifier.head.get_weights()
    np.testing.assert_allclose(logits, cls @ kernel + bias, atol=1e-5)
    assert logits.shape == (3, 4)


def test_config_round_trip_and_save_load(tmp_path):
    classifier = ElectraClassifier(tiny_encoder(), num_labels=1, dropout=0.2)
    x = inputs(1)
    expected = classifier(x).numpy()
    config = classifier.get_config()
    assert (config["num_labels"], config["dropout"]) == (1, 0.2)
    clone = ElectraClassifier.from_config(config)
    assert clone.get_config() == config
    path = str(tmp_path / "classifier.keras")
    classifier.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, ElectraClassifier)
    np.testing.assert_allclose(restored(x).numpy(), expected, atol=1e-6)
