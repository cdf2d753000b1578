"""Embedding features: `[CLS] text [SEP]` of every text, packed once (`pack_texts`)."""

import numpy as np
import tensorflow as tf


def pack_texts(texts, tokenizer, seq_length, chunk=4096):
    """`[CLS] text [SEP]` of each text: dict of int32 arrays `(len(texts), seq_length)`."""
    parts = []
    for start in range(0, len(texts), chunk):
        packed = tokenizer.pack(tf.constant(texts[start:start + chunk]), seq_length=seq_length)
        parts.append({name: value.numpy() for name, value in packed.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}

