"""The classification input pipeline tokenises once (issue 24) and gives the batches of the per-epoch `map`
it replaced; evaluation through `Model.predict` gives the eager forward pass's predictions."""

import numpy as np
import pytest
import tensorflow as tf

from helpers import write_vocab
from electra_tf.data.tasks import Example
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.training.finetuning import make_dataset, predict


def reference_dataset(examples, tokenizer, seq_length, batch_size, regression=False, shuffle_seed=None):
    """The replaced pipeline: texts shuffled, batched, then packed in a `map` every epoch."""
    columns = {"text_a": [e.text_a for e in examples]}
    if examples[0].text_b is not None:
        columns["text_b"] = [e.text_b for e in examples]
    labels = np.array([0 if e.label is None else e.label for e in examples], "float32" if regression else "int32")
    ds = tf.data.Dataset.from_tensor_slices((columns, labels))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(examples), seed=shuffle_seed, reshuffle_each_iteration=True)

    def pack(texts, label):
        return tokenizer.pack(texts["text_a"], texts.get("text_b"), seq_length=seq_length), label

    return ds.batch(batch_size).map(pack)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return WordPieceTokenizer(write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", 300))


def examples(pair, n=37, seed=0):
    rng = np.random.RandomState(seed)
    text = lambda: " ".join(f"piece{i}" for i in rng.randint(0, 190, rng.randint(1, 30)))  # noqa: E731
    return [Example(text(), text() if pair else None, int(rng.randint(3))) for _ in range(n)]


def epochs(ds, count):
    """Every batch of `count` passes over `ds`, as numpy."""
    out = []
    for _ in range(count):
        out += [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in ds]
    return out


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("shuffle_seed", [None, 3])
def test_batches_equal_the_per_epoch_map(tokenizer, pair, shuffle_seed):
    data = examples(pair)
    got = epochs(make_dataset(data, tokenizer, 24, 8, shuffle_seed=shuffle_seed), 3)
    want = epochs(reference_dataset(data, tokenizer, 24, 8, shuffle_seed=shuffle_seed), 3)
    assert len(got) == len(want) == 3 * 5
    for (inputs, labels), (ref_inputs, ref_labels) in zip(got, want):
        np.testing.assert_array_equal(labels, ref_labels)
        assert sorted(inputs) == sorted(ref_inputs)
        for name in inputs:
            np.testing.assert_array_equal(inputs[name], ref_inputs[name])
    if shuffle_seed is not None:  # reshuffled each epoch
        assert not np.array_equal(got[0][1], got[5][1])


def test_predict_equals_the_eager_forward_pass(tokenizer):
    encoder = ElectraEncoder(vocab_size=300, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=32)
    classifier = ElectraClassifier(encoder, num_labels=3)
    data = examples(True, n=21)
    ds = make_dataset(data, tokenizer, 24, 8)
    predictions, labels = predict(classifier, ds)
    eager = np.concatenate([classifier(inputs, training=False).numpy().argmax(-1) for inputs, _ in ds])
    np.testing.assert_array_equal(predictions, eager)
    np.testing.assert_array_equal(labels, [e.label for e in data])
