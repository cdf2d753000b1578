"""Batches for fine-tuning: an epoch's order as a function of (seed, epoch), and trimmed prediction batches.

Every task kind keeps its training rows as arrays (token ids, texts, labels)
and trains on `epoch_batches`: epoch `e` of trial seed `s` visits the rows in
`epoch_order(n, s, e)`, whatever ran before, so a resumed run skips the
batches it already trained on and continues with exactly the next one.
Prediction runs one compiled function over batches cut to their longest row
(`predict_in_batches`), padding being masked.
"""

import numpy as np
import tensorflow as tf

INPUTS = ("token_ids", "segment_ids", "padding_mask")
LENGTH_MULTIPLE = 16  # batches are cut to their longest row, rounded up to this (few XLA shapes)


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


def epoch_batches(arrays, batch_size, seed, epoch, skip=0):
    """`tf.data` of epoch `epoch`'s batches of `arrays` (a nest of equal-length arrays), the first `skip` left out.

    Args:
        arrays: nest (dict / tuple) of numpy arrays with the same first dimension.
        batch_size: int. Global batch.
        seed: int or None. The trial's seed; None keeps the file order (evaluation).
        epoch: int. 0-based.
        skip: int. Batches of this epoch already trained on.
    """
    num_rows = len(tf.nest.flatten(arrays)[0])
    order = np.arange(num_rows) if seed is None else epoch_order(num_rows, seed, epoch)
    with tf.device("/cpu:0"):  # the input pipeline's copy, off any accelerator
        tensors = tf.nest.map_structure(tf.convert_to_tensor, arrays)
    rows = tf.data.Dataset.from_tensor_slices(order[skip * batch_size:].astype(np.int64)).batch(batch_size)
    return rows.map(lambda index: tf.nest.map_structure(lambda t: tf.gather(t, index), tensors))


def trim(inputs, *rest):
    """Cuts the `INPUTS` of a batch (and any `(batch, seq)` labels) to its longest row, rounded up."""
    length = tf.reduce_max(tf.reduce_sum(tf.cast(inputs["padding_mask"], tf.int32), axis=1))
    length = tf.minimum(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, tf.shape(inputs["token_ids"])[1])
    cut = {k: (v[:, :length] if k in INPUTS else v) for k, v in inputs.items()}
    rest = tuple(r[:, :length] if getattr(r, "shape", None) is not None and r.shape.rank == 2 else r for r in rest)
    return (cut, *rest)


def predict_in_batches(predict, arrays, batch_size):
    """`predict(inputs)` over the rows of `arrays` in batches cut to their longest row; numpy nest of rows.

    Args:
        predict: a (compiled) function of an `INPUTS` dict, returning a tensor or a dict of tensors
            whose shapes do not depend on the cut (pad per-piece outputs back inside `predict`).
        arrays: dict with the `INPUTS` arrays `(num_rows, seq_length)`.
        batch_size: int.
    """
    chunks = []
    num_rows, seq_length = arrays["token_ids"].shape
    for start in range(0, num_rows, batch_size):
        rows = slice(start, start + batch_size)
        length = int(arrays["padding_mask"][rows].sum(1).max())
        length = min(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, seq_length)
        out = predict({k: tf.constant(arrays[k][rows, :length]) for k in INPUTS})
        chunks.append(tf.nest.map_structure(lambda t: t.numpy(), out))
    if not chunks:
        return {}
    return tf.nest.map_structure(lambda *parts: np.concatenate(parts), *chunks)
