"""ElectraTokenClassifier: the head is dropout + dense over every token, config round-trip, save/load."""

import doctest

import keras
import numpy as np

from electra_tf.tasks.tagging import model as token_classifier
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.tagging.model import ElectraTokenClassifier


def tiny_encoder():
    return ElectraEncoder(vocab_size=60, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
                          intermediate_dim=64, max_sequence_length=16)


def inputs(seed=0):
    ids = np.random.RandomState(seed).randint(5, 60, (3, 10)).astype("int32")
    mask = np.ones_like(ids)
    mask[0, 7:] = 0
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


def test_logits_are_dense_of_every_hidden_state():
    tagger = ElectraTokenClassifier(tiny_encoder(), num_labels=5)
    x = inputs()
    logits = tagger(x, training=False).numpy()
    hidden = tagger.encoder(x, training=False).numpy()
    kernel, bias = tagger.head.get_weights()
    assert logits.shape == (3, 10, 5) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, hidden @ kernel + bias, atol=1e-5)


def test_dropout_only_in_training():
    tagger = ElectraTokenClassifier(tiny_encoder(), num_labels=3, dropout=0.5)
    x = inputs(2)
    np.testing.assert_array_equal(tagger(x, training=False).numpy(), tagger(x, training=False).numpy())
    assert not np.allclose(tagger(x, training=True).numpy(), tagger(x, training=False).numpy())


def test_config_round_trip_and_save_load(tmp_path):
    tagger = ElectraTokenClassifier(tiny_encoder(), num_labels=9, dropout=0.2)
    x = inputs(1)
    expected = tagger(x).numpy()
    config = tagger.get_config()
    assert (config["num_labels"], config["dropout"], config["initializer_range"]) == (9, 0.2, 0.02)
    clone = ElectraTokenClassifier.from_config(config)
    assert clone.get_config() == config
    path = str(tmp_path / "token_classifier.keras")
    tagger.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, ElectraTokenClassifier)
    np.testing.assert_allclose(restored(x).numpy(), expected, atol=1e-6)


def test_docstring_example_runs():
    result = doctest.testmod(token_classifier, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
