"""The classification input pipeline tokenises once (issue 24) and gives the batches of packing each batch
in a `map`, epoch by epoch and from a resumed position."""

import numpy as np
import pytest
import tensorflow as tf

from helpers import write_vocab
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.finetuning.batching import epoch_order
from electra_tf.finetuning.classification import make_dataset
from electra_tf.finetuning.tasks import Example


def reference_batches(examples, tokenizer, seq_length, batch_size, shuffle_seed, epoch, skip=0):
    """The per-batch pipeline: the epoch's order, texts batched, each batch packed on its own."""
    order = np.arange(len(examples)) if shuffle_seed is None else epoch_order(len(examples), shuffle_seed, epoch)
    out = []
    for start in range(skip * batch_size, len(order), batch_size):
        rows = [examples[i] for i in order[start:start + batch_size]]
        texts_b = [e.text_b for e in rows] if rows[0].text_b is not None else None
        packed = tokenizer.pack(tf.constant([e.text_a for e in rows]),
                                None if texts_b is None else tf.constant(texts_b), seq_length=seq_length)
        out.append(({k: v.numpy() for k, v in packed.items()}, np.array([e.label for e in rows], np.int32)))
    return out


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return WordPieceTokenizer(write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", 300))


def examples(pair, n=37, seed=0):
    rng = np.random.RandomState(seed)
    text = lambda: " ".join(f"piece{i}" for i in rng.randint(0, 190, rng.randint(1, 30)))  # noqa: E731
    return [Example(text(), text() if pair else None, int(rng.randint(3))) for _ in range(n)]


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize("shuffle_seed", [None, 3])
@pytest.mark.parametrize("epoch,skip", [(0, 0), (2, 0), (1, 2)])
def test_batches_equal_packing_each_batch(tokenizer, pair, shuffle_seed, epoch, skip):
    data = examples(pair)
    got = [tf.nest.map_structure(lambda t: t.numpy(), b)
           for b in make_dataset(data, tokenizer, 24, 8, shuffle_seed=shuffle_seed, epoch=epoch, skip=skip)]
    want = reference_batches(data, tokenizer, 24, 8, shuffle_seed, epoch, skip)
    assert len(got) == len(want) == 5 - skip
    for (inputs, labels), (ref_inputs, ref_labels) in zip(got, want):
        np.testing.assert_array_equal(labels, ref_labels)
        assert sorted(inputs) == sorted(ref_inputs)
        for name in inputs:
            np.testing.assert_array_equal(inputs[name], ref_inputs[name])
