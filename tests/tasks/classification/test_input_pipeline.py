"""The classification input pipeline tokenises each text once (not again every epoch) and gives the batches of
packing each batch in a `map`, each cut to its longest row, epoch by epoch and from a resumed position."""

import numpy as np
import pytest
import tensorflow as tf

from helpers import write_vocab
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.finetuning.batching import epoch_order
from electra_tf.tasks.classification.features import make_dataset
from electra_tf.tasks.classification.data import Example

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def reference_batches(examples, tokenizer, seq_length, batch_size, shuffle_seed, epoch, skip=0):
    """The per-batch pipeline: the epoch's order, texts batched, each batch packed on its own."""
    order = np.arange(len(examples)) if shuffle_seed is None else epoch_order(len(examples), shuffle_seed, epoch)
    out = []
    for start in range(skip * batch_size, len(order), batch_size):
        rows = [examples[i] for i in order[start:start + batch_size]]
        texts_b = [e.text_b for e in rows] if rows[0].text_b is not None else None
        packed = tokenizer.pack(tf.constant([e.text_a for e in rows]),
                                None if texts_b is None else tf.constant(texts_b), seq_length=seq_length)
        inputs = {k: v.numpy() for k, v in packed.items()}
        cut = min(int(inputs["padding_mask"].sum(1).max()), seq_length)  # the longest row
        out.append(({k: v[:, :cut] for k, v in inputs.items()}, np.array([e.label for e in rows], np.int32)))
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
           for b in make_dataset(data, tokenizer, 96, 8, shuffle_seed=shuffle_seed, epoch=epoch, skip=skip)]
    want = reference_batches(data, tokenizer, 96, 8, shuffle_seed, epoch, skip)
    assert any(inputs["token_ids"].shape[1] < 96 for inputs, _ in want)  # some batches are cut
    assert len(got) == len(want) == 5 - skip
    for (inputs, labels), (ref_inputs, ref_labels) in zip(got, want):
        np.testing.assert_array_equal(labels, ref_labels)
        assert sorted(inputs) == sorted(ref_inputs)
        for name in inputs:
            np.testing.assert_array_equal(inputs[name], ref_inputs[name])


def test_prediction_visits_rows_by_length_and_returns_them_in_order_with_one_trace():
    from electra_tf.finetuning.batching import compiled_predictor, predict_in_batches

    rng = np.random.RandomState(4)
    lengths = rng.randint(1, 61, 45)
    mask = (np.arange(64)[None] < lengths[:, None]).astype("int32")
    arrays = {"token_ids": rng.randint(1, 99, (45, 64)).astype("int32") * mask, "segment_ids": 0 * mask,
              "padding_mask": mask}
    seen = []

    def row_sums(inputs):  # per-row outputs whose shape does not depend on the cut
        return {"sum": tf.reduce_sum(inputs["token_ids"], 1), "width": tf.fill(tf.shape(inputs["token_ids"])[:1],
                                                                             tf.shape(inputs["token_ids"])[1])}

    predict = compiled_predictor(row_sums)
    out = predict_in_batches(lambda inputs: seen.append(inputs["token_ids"].shape) or predict(inputs), arrays, 8)
    np.testing.assert_array_equal(out["sum"], arrays["token_ids"].sum(1))  # the rows' own order
    assert (out["width"] >= lengths).all() and (out["width"] < 64).any()  # cut, never below a row's length
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)  # shortest rows first
    assert predict.experimental_get_tracing_count() == 1  # every batch size and length: one trace
