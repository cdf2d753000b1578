"""Classification features: every example packed once (`pack_examples`), and the training batches of an epoch
(`make_dataset`), each cut to its longest row."""

import numpy as np
import tensorflow as tf

from electra_tf.finetuning.batching import LENGTH_MULTIPLE, epoch_batches


def _labels(examples, regression):
    return np.array([0 if e.label is None else e.label for e in examples], "float32" if regression else "int32")


def pack_examples(examples, tokenizer, seq_length, chunk=4096):
    """`tokenizer.pack` of every example, `chunk` at a time: dict of int32 arrays `(len(examples), seq_length)`.

    Packing a row does not depend on its batch, so packing once before the
    first epoch gives the batches a per-batch `map` would, for one pass over
    the texts instead of one per epoch and no tokenizer graph competing with
    the train step for the cores.
    """
    pair = examples[0].text_b is not None
    parts = []
    for start in range(0, len(examples), chunk):
        rows = examples[start:start + chunk]
        texts_b = tf.constant([e.text_b for e in rows]) if pair else None
        packed = tokenizer.pack(tf.constant([e.text_a for e in rows]), texts_b, seq_length=seq_length)
        parts.append({name: value.numpy() for name, value in packed.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def make_dataset(examples, tokenizer, seq_length, batch_size, regression=False, shuffle_seed=None, epoch=0, skip=0,
                 packed=None, multiple=LENGTH_MULTIPLE):
    """`tf.data` of `(inputs dict, label)` training batches, tokenised once (`pack_examples`) before the first batch.

    Each batch is cut to its longest row (rounded up to `multiple`, `batching.length_multiple`):
    padding is masked, so this changes no output and saves the compute of padding on short
    sentences (dropout draws its masks for the cut batch).

    Args:
        examples: list of `data.Example` (the labelled rows of `tasks.classification.data`).
        tokenizer: `WordPieceTokenizer`.
        seq_length: int.
        batch_size: int.
        regression: bool. Float labels instead of int ids.
        shuffle_seed: int or None. The order of epoch `epoch` for this seed
            (`batching.epoch_order`); None keeps the file order.
        epoch, skip: int. The epoch, and its batches left out (a resumed run).
        packed: optional `pack_examples(examples, tokenizer, seq_length)`, computed once by the caller.
        multiple: int. What the cut is rounded up to.
    """
    if packed is None:
        packed = pack_examples(examples, tokenizer, seq_length)
    return epoch_batches((packed, _labels(examples, regression)), batch_size, shuffle_seed, epoch, skip, multiple)

