"""Batches for fine-tuning: an epoch's order as a function of (seed, epoch), and trimmed prediction batches.

Every task kind keeps its training rows as arrays (token ids, texts, labels)
and trains on `epoch_batches`: epoch `e` of trial seed `s` visits the rows in
`epoch_order(n, s, e)`, whatever ran before, so a resumed run skips the
batches it already trained on and continues with exactly the next one.
Training batches are cut to their longest row, as HF's padding collators do
(`length_multiple`: rounded up to 16 under XLA, one compilation per length).
Prediction runs one compiled function (`compiled_predictor`: one trace for
every batch shape) over rows sorted by length, in batches cut to their longest
row (`predict_in_batches`), padding being masked; a long one logs its progress.
A kind whose examples hold several sequences each (multiple choice) may keep its
inputs as `tf.RaggedTensor`s `(rows, None, seq)`: each batch is padded to its own
widest row (`dense_rows`), never the whole split to the widest of all.
"""

import contextlib
import contextvars
import time

import numpy as np
import tensorflow as tf
from absl import logging

INPUTS = ("token_ids", "segment_ids", "padding_mask")
LENGTH_MULTIPLE = 1  # batches are cut to their longest row, not rounded: no compute spent on padding
XLA_LENGTH_MULTIPLE = 16  # under XLA, rounded up to this: each length is one compilation of the train step
PROGRESS_SECONDS = 10  # a prediction pass of more batches than `PROGRESS_BATCHES` logs this often
PROGRESS_BATCHES = 50


def epoch_order(num_rows, seed, epoch):
    """The order in which epoch `epoch` of a trial with seed `seed` visits `num_rows` rows.

    Example:
    >>> from electra_tf.finetuning.batching import epoch_order
    >>> epoch_order(5, seed=0, epoch=1).tolist() == epoch_order(5, seed=0, epoch=1).tolist()
    True
    >>> sorted(epoch_order(5, seed=0, epoch=1).tolist())
    [0, 1, 2, 3, 4]
    """
    return np.random.default_rng([seed, epoch]).permutation(num_rows)


def num_batches(num_rows, batch_size):
    """Batches of an epoch (the last one may be partial)."""
    return -(-num_rows // batch_size)


def length_multiple(jit_compile):
    """The multiple a training batch's length is rounded up to: `XLA_LENGTH_MULTIPLE` when the train step is
    XLA-compiled (`jit_compile`), else `LENGTH_MULTIPLE`: padding up to a multiple costs the compute of
    real positions (`benchmarks/results/finetune_end_to_end.md`, "Training batches cut to their longest row").
    """
    return XLA_LENGTH_MULTIPLE if jit_compile else LENGTH_MULTIPLE


def epoch_batches(arrays, batch_size, seed, epoch, skip=0, multiple=LENGTH_MULTIPLE):
    """`tf.data` of epoch `epoch`'s batches of `arrays`, each cut to its longest row (`trim`), the first `skip` left out.

    Args:
        arrays: `(inputs, *labels)`: an `INPUTS` dict and labels, numpy arrays with the same first dimension.
        batch_size: int. Global batch.
        seed: int or None. The trial's seed; None keeps the rows' order.
        epoch: int. 0-based.
        skip: int. Batches of this epoch already trained on.
        multiple: int. The cut is rounded up to a multiple of it (`length_multiple`).
    """
    num_rows = _num_rows(tf.nest.flatten(arrays)[0])
    order = np.arange(num_rows) if seed is None else epoch_order(num_rows, seed, epoch)
    with tf.device("/cpu:0"):  # the input pipeline's copy, off any accelerator
        tensors = tf.nest.map_structure(
            lambda a: a if isinstance(a, tf.RaggedTensor) else tf.convert_to_tensor(a), arrays)
    rows = tf.data.Dataset.from_tensor_slices(order[skip * batch_size:].astype(np.int64)).batch(batch_size)

    def gather(index):  # and cut, in one map
        return trim(*tf.nest.map_structure(lambda t: dense_rows(t, index), tensors), multiple=multiple)

    # No tf.data autotuning: nothing here needs tuning, and its model thread, which wakes up to a
    # minute apart, held every epoch's end (`fit` returns once the iterator is gone) for 0-60 s.
    options = tf.data.Options()
    options.autotune.enabled = False
    return rows.map(gather).prefetch(2).with_options(options)


def _num_rows(array):
    return int(array.nrows()) if isinstance(array, tf.RaggedTensor) else len(array)


def dense_rows(array, index):
    """The rows `index` of `array` (an array, a tensor, or a `tf.RaggedTensor` `(rows, None, ...)` padded with zeros
    to the widest of these rows).

    Example:
    >>> import tensorflow as tf
    >>> from electra_tf.finetuning.batching import dense_rows
    >>> ragged = tf.RaggedTensor.from_row_lengths(tf.ones([7, 2], tf.int32), [2, 4, 1])
    >>> tuple(dense_rows(ragged, [0, 2]).shape), tuple(dense_rows(ragged, [1]).shape)
    ((2, 2, 2), (1, 4, 2))
    """
    if isinstance(array, tf.RaggedTensor):
        return tf.gather(array, index).to_tensor()
    if tf.is_tensor(array):
        return tf.gather(array, index)
    return np.asarray(array)[np.asarray(index)]


def rounded_length(longest, multiple=LENGTH_MULTIPLE):
    """`longest` (an int or an int tensor) rounded up to `multiple`: the length a batch is cut to.

    Example:
    >>> from electra_tf.finetuning.batching import rounded_length
    >>> rounded_length(27), rounded_length(27, multiple=16)
    (27, 32)
    """
    return -(-longest // multiple) * multiple


def trim(inputs, *rest, multiple=LENGTH_MULTIPLE):
    """Cuts the `INPUTS` of a batch (and any `(batch, seq)` labels) to its longest row, rounded up to `multiple`.

    The `INPUTS` are `(batch, seq)` or, for a kind that scores several sequences per example, `(batch, n, seq)`: the last axis is cut.
    """
    length = tf.reduce_max(tf.reduce_sum(tf.cast(inputs["padding_mask"], tf.int32), axis=-1))
    length = tf.minimum(rounded_length(length, multiple), tf.shape(inputs["token_ids"])[-1])
    cut = {k: (v[..., :length] if k in INPUTS else v) for k, v in inputs.items()}
    rest = tuple(r[:, :length] if getattr(r, "shape", None) is not None and r.shape.rank == 2 else r for r in rest)
    return (cut, *rest)


def compiled_predictor(function, rank=2):
    """`function` (of an `INPUTS` dict) compiled once for int32 batches of any size and length (no retrace).

    `rank`: 2 for `(batch, seq)` inputs, 3 for `(batch, n, seq)` (several sequences per example).
    On JAX and PyTorch `function` runs eagerly on numpy inputs (no gradient kept), its outputs as
    TensorFlow tensors, so the callers (`predict_in_batches`, a kind's own padding) read them alike.
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return _eager_predictor(function, keras.backend.backend())
    return tf.function(function, input_signature=[{name: tf.TensorSpec([None] * rank, tf.int32, name=name)
                                                   for name in INPUTS}])


def _eager_predictor(function, backend):
    import contextlib

    import keras

    no_grad = contextlib.nullcontext
    if backend == "torch":
        import torch

        no_grad = torch.no_grad

    def predict(inputs):
        with no_grad():
            out = function({k: np.asarray(v, np.int32) for k, v in inputs.items()})
            return tf.nest.map_structure(
                lambda t: t if tf.is_tensor(t) else tf.convert_to_tensor(keras.ops.convert_to_numpy(t)), out)

    return predict


# (requested, error) of the innermost `stopping_when`, or None.
_STOP = contextvars.ContextVar("predict_in_batches_stop", default=None)


@contextlib.contextmanager
def stopping_when(requested, error):
    """Inside: `predict_in_batches` raises `error()` before its next batch once `requested()` is true.

    The state is polled, not raised from a signal handler: an exception a handler raises while Python
    runs a garbage-collector callback (JAX registers one) or a `__del__` is printed and dropped.
    """
    token = _STOP.set((requested, error))
    try:
        yield
    finally:
        _STOP.reset(token)


def predict_in_batches(predict, arrays, batch_size):
    """`predict(inputs)` over the rows of `arrays`, by length, in batches cut to their longest row; numpy nest of rows.

    Rows are visited shortest first, so a batch holds rows of about one length
    and is cut to it; the outputs come back in
    the rows' order. Padding is masked, so the order and cut change no output.

    A pass of more than `PROGRESS_BATCHES` batches logs `predicting N rows in B batches` when it
    starts and `predicted n / N rows` every `PROGRESS_SECONDS`. It runs batch by batch in Python; inside
    `stopping_when(requested, error)` (the fine-tuning loop's SIGTERM) it raises `error()` after the
    batch during which `requested()` came true.

    Args:
        predict: a (compiled, `compiled_predictor`) function of an `INPUTS` dict, returning a tensor or a
            dict of tensors whose shapes do not depend on the cut (pad per-piece outputs back inside `predict`).
        arrays: dict with the `INPUTS` arrays `(num_rows, seq_length)` (or `(num_rows, n, seq_length)`, or
            `tf.RaggedTensor`s `(num_rows, None, seq_length)`: a batch is padded to its widest row).
        batch_size: int.
    """
    chunks = []
    num_rows, seq_length = _num_rows(arrays["token_ids"]), arrays["token_ids"].shape[-1]
    mask = arrays["padding_mask"]
    if isinstance(mask, tf.RaggedTensor):  # rows of several sequences: by width, then length
        lengths = tf.reduce_max(tf.reduce_sum(mask, axis=-1), axis=-1).numpy()
        order = np.lexsort((lengths, mask.row_lengths().numpy()))
    else:
        lengths = np.asarray(mask).sum(-1).reshape(num_rows, -1).max(-1)
        order = np.argsort(lengths, kind="stable")
    batches = num_batches(num_rows, batch_size)
    logged = time.monotonic() if batches > PROGRESS_BATCHES else None
    if logged is not None:
        logging.info("predicting %d rows in %d batches of %d", num_rows, batches, batch_size)
    stop = _STOP.get()
    for start in range(0, num_rows, batch_size):
        if stop is not None and stop[0]():
            raise stop[1]()
        rows = order[start:start + batch_size]
        length = min(rounded_length(int(lengths[rows].max())), seq_length)
        out = predict({k: tf.cast(dense_rows(arrays[k], rows)[..., :length], tf.int32) for k in INPUTS})
        chunks.append(tf.nest.map_structure(lambda t: t.numpy(), out))
        if logged is not None and time.monotonic() - logged >= PROGRESS_SECONDS:
            logging.info("predicted %d / %d rows", min(start + batch_size, num_rows), num_rows)
            logged = time.monotonic()
    if not chunks:
        return {}
    inverse = np.empty_like(order)
    inverse[order] = np.arange(num_rows)
    return tf.nest.map_structure(lambda *parts: np.concatenate(parts)[inverse], *chunks)
