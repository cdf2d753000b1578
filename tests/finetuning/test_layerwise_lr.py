"""Layer-wise LR decay: multipliers = lr * decay^(L + 2 - depth), applied to Adam's update."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW, layer_depth
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

ElectraClassifier = task_kind("classification").model_class

NUM_LAYERS, DECAY, LR = 3, 0.8, 1e-3


def tiny_classifier(num_labels=2):
    encoder = ElectraEncoder(vocab_size=50, num_layers=NUM_LAYERS, num_heads=2, hidden_dim=16,
                             embedding_dim=8, intermediate_dim=32, max_sequence_length=16, dropout=0.0)
    classifier = ElectraClassifier(encoder, num_labels=num_labels, dropout=0.0)
    classifier.build()
    return classifier


def reference_multipliers(classifier, num_layers, decay):
    """Depths from which Python object owns each variable (not from names), then the reference formula."""
    encoder = classifier.encoder
    depth = {}
    for layer in (encoder.embeddings, encoder.embeddings_project):
        for v in layer.weights:
            depth[id(v)] = 0
    for i, layer in enumerate(encoder.transformer_layers):
        for v in layer.weights:
            depth[id(v)] = i + 1
    for v in classifier.head.weights:
        depth[id(v)] = num_layers + 2
    assert len(depth) == len(classifier.trainable_variables)
    return {v.path: decay ** (num_layers + 2 - depth[id(v)]) for v in classifier.trainable_variables}


def test_multipliers_equal_reference_formula_for_every_variable():
    classifier = tiny_classifier()
    optimizer = LayerwiseAdamW(LR, num_layers=NUM_LAYERS, layerwise_decay=DECAY)
    classifier.compile(optimizer=optimizer, loss="mse")
    optimizer.build(classifier.trainable_variables)
    expected = reference_multipliers(classifier, NUM_LAYERS, DECAY)
    got = optimizer.multipliers()
    assert set(got) == set(expected)
    for path, value in expected.items():
        assert got[path] == pytest.approx(value, rel=1e-12), path
    # Spot values: embeddings decay^(L+2), layer 0 decay^(L+1), head 1.
    assert got[classifier.encoder.embeddings.token_embedding.embeddings.path] == pytest.approx(DECAY ** 5)
    assert got[classifier.encoder.transformer_layers[0].weights[0].path] == pytest.approx(DECAY ** 4)
    assert got[classifier.head.kernel.path] == 1.0


def test_first_adam_step_moves_each_variable_by_its_scaled_rate():
    """Adam's first update is lr * g / (|g| + eps) ~ lr * sign(g): the step size reveals the rate used."""
    keras.utils.set_random_seed(0)
    classifier = tiny_classifier()
    optimizer = LayerwiseAdamW(LR, num_layers=NUM_LAYERS, layerwise_decay=DECAY, epsilon=1e-12)
    classifier.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ids = np.random.RandomState(0).randint(5, 50, (8, 16)).astype("int32")
    x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
    y = np.arange(8) % 2
    before = {v.path: v.numpy().copy() for v in classifier.trainable_variables}
    with tf.GradientTape() as tape:
        loss = classifier.compute_loss(x=x, y=y, y_pred=classifier(x, training=True))
    # Dense gradients: with IndexedSlices (the token table) Keras squares per slice before
    # summing duplicate rows, so Adam's first step is not exactly lr there.
    grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, classifier.trainable_variables)]
    optimizer.apply_gradients(zip(grads, classifier.trainable_variables))
    expected = reference_multipliers(classifier, NUM_LAYERS, DECAY)
    checked = set()
    for v, g in zip(classifier.trainable_variables, grads):
        g = g.numpy()
        moved = np.abs(v.numpy() - before[v.path])
        big = np.abs(g) > 1e-6  # (attention key biases have exactly zero gradient)
        if big.any():
            np.testing.assert_allclose(moved[big], LR * expected[v.path], rtol=1e-3, err_msg=v.path)
            checked.add(expected[v.path])
    assert len(checked) == NUM_LAYERS + 2  # every depth (embeddings, each layer, head) was seen


def test_config_round_trip():
    # (`compile` + `fit` with this optimizer runs in tests/exporting/test_docs_script.py.)
    optimizer = LayerwiseAdamW(LR, num_layers=NUM_LAYERS, layerwise_decay=DECAY, epsilon=1e-6)
    config = optimizer.get_config()
    assert config["num_layers"] == NUM_LAYERS and config["layerwise_decay"] == DECAY and config["weight_decay"] == 0.0
    restored = LayerwiseAdamW.from_config(config)
    assert (restored.num_layers, restored.layerwise_decay, restored.epsilon) == (NUM_LAYERS, DECAY, 1e-6)
    assert keras.optimizers.deserialize(keras.optimizers.serialize(optimizer)).get_config() == config


def test_layer_depth_rules_and_errors():
    assert layer_depth("clf/discriminator/embeddings/token_embedding/embeddings", 12) == 0
    assert layer_depth("clf/discriminator/embeddings_project/kernel", 12) == 0
    assert layer_depth("clf/discriminator/transformer_layer_11/query/kernel", 12) == 12
    assert layer_depth("clf/task_head/kernel", 12) == 14
    with pytest.raises(ValueError, match="belongs to layer 12, but `num_layers=12`"):
        layer_depth("clf/enc/transformer_layer_12/query/kernel", 12)
    with pytest.raises(ValueError, match="layerwise_decay=1.5"):
        LayerwiseAdamW(1e-3, num_layers=2, layerwise_decay=1.5)
