"""ELECTRA example packing (reference section 4) and the `tf.train.Example` encoder.

`pack_document` is the official `build_pretraining_dataset.ExampleBuilder`
applied to one document, with its own RNG:

1. Sentences (lists of word-piece ids) accumulate until their total length
   reaches `target_length`; the end of the document flushes what is left.
2. After each example, with probability 5 % the next `target_length` is
   `randint(5, max_seq_length)`, otherwise `max_seq_length`. Because each
   document has its own RNG, the draw that the official code makes after the
   previous document's last example is made at the start of the document.
3. With probability 10 % the example has a single segment; otherwise the
   A-segment target is `(target_length - 3) // 2`.
4. A sentence goes to A if A is empty, or if it keeps A under its target, or
   (50 % of the time) if B is still empty and A is under its target;
   otherwise to B. **Quirk kept for fidelity**: once B has started, a later
   short sentence that still fits A's target joins A, so A and B are not
   always contiguous in the source (A can hold a sentence that comes after
   B's). The RNG draws happen in exactly the official order (the 50 % draw
   only when the first two conditions fail and B is empty and A is short).
5. A is truncated to `max_seq_length - 2`, B to `max_seq_length - len(A) - 3`;
   layout `[CLS] A [SEP] B [SEP]` (no B: `[CLS] A [SEP]`), segment id 0 up to
   and including the first [SEP], 1 after; zero padding.

Sentences with no word pieces are skipped (the official code would append an
empty list, which changes nothing but may shift one RNG draw).
"""

import hashlib
import random

import numpy as np

FEATURES = ("input_ids", "input_mask", "segment_ids")  # sorted: the proto's deterministic order
SHORT_TARGET_PROB = 0.05
SINGLE_SEGMENT_PROB = 0.1


def document_rng(seed, doc_key):
    """The per-document RNG: `random.Random` seeded from sha256("<seed>:<doc_key>").

    Args:
        seed: int. Build seed.
        doc_key: str. Stable document key.

    Example:
        >>> document_rng(0, "a.txt:0").random() == document_rng(0, "a.txt:0").random()
        True
    """
    digest = hashlib.sha256(f"{seed}:{doc_key}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _next_target(rng, max_seq_length):
    if rng.random() < SHORT_TARGET_PROB:
        return rng.randint(5, max_seq_length), True
    return max_seq_length, False


class PackedExample(tuple):
    """One packed example as spans: `(a, b, single_segment, short_target, truncated)`.

    `a` and `b` are lists of `(sentence_index, num_ids)` pieces, after
    truncation (the last piece of a cut segment is a prefix of its sentence).
    """

    __slots__ = ()

    a = property(lambda self: self[0])
    b = property(lambda self: self[1])
    single_segment = property(lambda self: self[2])
    short_target = property(lambda self: self[3])
    truncated = property(lambda self: self[4])


def pack_lengths(lengths, max_seq_length, rng, offset=0):
    """Packs one document given only its sentence lengths (the fast path).

    Args:
        lengths: list of int. Word pieces per sentence, in order (0 = skipped).
        max_seq_length: int. Example length including [CLS]/[SEP].
        rng: `random.Random`, the document's RNG (`document_rng`).
        offset: int. Added to the sentence indices in the returned spans.

    Returns:
        list of `PackedExample` spans.

    Example:
        >>> pack_lengths([2, 1], 8, document_rng(0, "doc:0"))
        [([(0, 2)], [(1, 1)], False, False, 0)]
    """
    examples = []
    target, short = _next_target(rng, max_seq_length)
    current, length = [], 0
    for index, num in enumerate(lengths, offset):
        if not num:
            continue
        current.append((index, num))
        length += num
        if length >= target:
            examples.append(_create_example(current, target, short, max_seq_length, rng))
            current, length = [], 0
            target, short = _next_target(rng, max_seq_length)
    if current:
        examples.append(_create_example(current, target, short, max_seq_length, rng))
    return examples


def _create_example(sentences, target, short, max_seq_length, rng):
    single = rng.random() < SINGLE_SEGMENT_PROB
    first_target = 100000 if single else (target - 3) // 2
    first, second, len_a, len_b = [], [], 0, 0
    for piece in sentences:
        num = piece[1]
        if len_a == 0 or len_a + num < first_target or (
            len_b == 0 and len_a < first_target and rng.random() < 0.5
        ):
            first.append(piece)
            len_a += num
        else:
            second.append(piece)
            len_b += num
    keep_a = min(len_a, max_seq_length - 2)
    keep_b = min(len_b, max(0, max_seq_length - keep_a - 3))
    if keep_a < len_a:
        first = _take(first, keep_a)
    if keep_b < len_b:
        second = _take(second, keep_b)
    return PackedExample((first, second, single, short, len_a + len_b - keep_a - keep_b))


def _take(pieces, budget):
    """The leading pieces holding `budget` ids, the last one cut short."""
    out = []
    for index, num in pieces:
        if budget <= 0:
            break
        out.append((index, min(num, budget)))
        budget -= num
    return out


def pack_document(sentences, max_seq_length, rng, cls_id, sep_id):
    """Packs one document's tokenized sentences into examples (lists of ids).

    Args:
        sentences: list of list of int. Word-piece ids per sentence, in order.
        max_seq_length: int. Example length including [CLS]/[SEP].
        rng: `random.Random`, the document's RNG (`document_rng`).
        cls_id: int. Id of [CLS].
        sep_id: int. Id of [SEP].

    Returns:
        list of dicts: `input_ids` (list of int, unpadded), `num_a`, `num_b`
        (segment lengths without specials), `single_segment` (the 10 % draw
        fired), `short_target` (the 5 % draw fired), `truncated` (ids cut).

    Example:
        >>> rng = document_rng(0, "doc:0")
        >>> [e["input_ids"] for e in pack_document([[5, 6], [7]], 8, rng, 1, 2)]
        [[1, 5, 6, 2, 7, 2]]
    """
    out = []
    for example in pack_lengths([len(s) for s in sentences], max_seq_length, rng):
        first = [i for index, num in example.a for i in sentences[index][:num]]
        second = [i for index, num in example.b for i in sentences[index][:num]]
        input_ids = [cls_id] + first + [sep_id] + (second + [sep_id] if second else [])
        out.append(dict(input_ids=input_ids, num_a=len(first), num_b=len(second),
                        single_segment=example.single_segment, short_target=example.short_target,
                        truncated=example.truncated))
    return out


def spans_to_arrays(examples, sentence_starts, flat_ids, max_seq_length, cls_id, sep_id):
    """Materializes packed spans of many documents into padded arrays, vectorized.

    Args:
        examples: list of `PackedExample`; sentence indices are global, i.e.
            index into `sentence_starts`.
        sentence_starts: int array, start of each sentence in `flat_ids`.
        flat_ids: int array, the word-piece ids of all sentences back to back.
        max_seq_length: int.
        cls_id: int. Id of [CLS].
        sep_id: int. Id of [SEP].

    Returns:
        dict of `(n, max_seq_length)` int64 arrays `input_ids`, `input_mask`, `segment_ids`.
    """
    n = len(examples)
    src, num, row, col = [], [], [], []
    len_a = np.zeros((n,), np.int64)
    len_b = np.zeros((n,), np.int64)
    for i, example in enumerate(examples):
        pos = 1
        for index, count in example[0]:
            src.append(index)
            num.append(count)
            row.append(i)
            col.append(pos)
            pos += count
        len_a[i] = pos - 1
        pos += 1
        for index, count in example[1]:
            src.append(index)
            num.append(count)
            row.append(i)
            col.append(pos)
            pos += count
        len_b[i] = pos - len_a[i] - 2
    num = np.asarray(num, np.int64)
    within = np.arange(int(num.sum())) - np.repeat(np.cumsum(num) - num, num)
    input_ids = np.zeros((n, max_seq_length), np.int64)
    input_ids[np.repeat(np.asarray(row, np.int64), num), np.repeat(np.asarray(col, np.int64), num) + within] = (
        flat_ids[np.repeat(np.asarray(sentence_starts)[np.asarray(src, np.int64)], num) + within]
    )
    rows = np.arange(n)
    input_ids[:, 0] = cls_id
    input_ids[rows, len_a + 1] = sep_id
    has_b = len_b > 0
    input_ids[rows[has_b], (len_a + len_b + 2)[has_b]] = sep_id
    total = len_a + 2 + np.where(has_b, len_b + 1, 0)
    positions = np.arange(max_seq_length)[None, :]
    input_mask = (positions < total[:, None]).astype(np.int64)
    segment_ids = ((positions >= (len_a + 2)[:, None]) & (input_mask == 1)).astype(np.int64)
    return dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)


def _encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL_VARINTS = [_encode_varint(i) for i in range(1 << 14)]


def _varint(value):
    """Protobuf base-128 varint of a non-negative int (table lookup below 16384)."""
    return _SMALL_VARINTS[value] if value < 16384 else _encode_varint(value)


def _varint_rows(values):
    """Varint-encodes each row of a non-negative int array: (concatenated bytes, row byte lengths)."""
    v = values.astype(np.uint64)
    nbytes = np.ones(v.shape, np.int64)
    for k in range(1, 10):
        more = v >= np.uint64(1 << (7 * k))
        if not more.any():
            break
        nbytes += more
    width = int(nbytes.max()) if v.size else 1
    out = np.empty(v.shape + (width,), np.uint8)
    for k in range(width):
        byte = ((v >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        out[..., k] = byte | ((nbytes > k + 1).astype(np.uint8) << 7)
    valid = np.arange(width) < nbytes[..., None]
    return out[valid].tobytes(), nbytes.sum(axis=-1)


def to_arrays(examples, max_seq_length):
    """Pads `pack_document` outputs into `(n, max_seq_length)` int64 arrays.

    Returns:
        dict of numpy arrays `input_ids`, `input_mask`, `segment_ids`.
    """
    n = len(examples)
    input_ids = np.zeros((n, max_seq_length), np.int64)
    lengths = np.empty((n,), np.int64)
    first_len = np.empty((n,), np.int64)
    for i, example in enumerate(examples):
        ids = example["input_ids"]
        input_ids[i, : len(ids)] = ids
        lengths[i] = len(ids)
        first_len[i] = example["num_a"] + 2
    positions = np.arange(max_seq_length)[None, :]
    input_mask = (positions < lengths[:, None]).astype(np.int64)
    segment_ids = ((positions >= first_len[:, None]) & (input_mask == 1)).astype(np.int64)
    return dict(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids)


def _entry_prefix(key, payload_len):
    """Framing of one `features` map entry up to its packed payload."""
    int64_list = 1 + len(_varint(payload_len)) + payload_len
    feature = 1 + len(_varint(int64_list)) + int64_list
    entry = 1 + len(_varint(len(key))) + len(key) + 1 + len(_varint(feature)) + feature
    return (b"\x0a" + _varint(entry) + b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(feature)
            + b"\x1a" + _varint(int64_list) + b"\x0a" + _varint(payload_len))


def serialize_examples(arrays):
    """Serializes rows of int arrays as `tf.train.Example`s, byte-identical to
    `tf.train.Example(...).SerializeToString(deterministic=True)` with Int64
    features `input_ids`, `input_mask`, `segment_ids`, but vectorized.

    Args:
        arrays: dict of equal-shape `(n, seq_len)` non-negative int arrays.

    Returns:
        list of n bytes.

    Example:
        >>> arrays = to_arrays([dict(input_ids=[1, 300, 2], num_a=1)], 4)
        >>> import tensorflow as tf
        >>> tf.train.Example.FromString(serialize_examples(arrays)[0]).features.feature[
        ...     "input_ids"].int64_list.value
        [1, 300, 2, 0]
    """
    n = len(arrays[FEATURES[0]])
    entries = []  # per feature: a list of n byte strings, the whole map entry of each row
    for name in FEATURES:
        key = name.encode()
        data, lengths = _varint_rows(arrays[name])
        lengths = lengths.tolist()
        if n and min(lengths) == max(lengths):  # fixed width (masks, segment ids): one framing
            prefix = _entry_prefix(key, lengths[0])
            width = lengths[0]
            entries.append([prefix + data[i * width : (i + 1) * width] for i in range(n)])
        else:
            prefixes, rows, pos = {}, [], 0
            for size in lengths:
                prefix = prefixes.get(size)
                if prefix is None:
                    prefix = prefixes[size] = _entry_prefix(key, size)
                rows.append(prefix + data[pos : pos + size])
                pos += size
            entries.append(rows)
    out = []
    for parts in zip(*entries):
        features = b"".join(parts)
        out.append(b"\x0a" + _varint(len(features)) + features)
    return out
