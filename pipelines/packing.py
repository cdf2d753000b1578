"""ELECTRA example packing (reference section 4) and the `tf.train.Example` encoder.

`pack` is the official `build_pretraining_dataset.ExampleBuilder` applied to
each document of a batch, with one RNG per document:

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

Speed: packing and encoding run in numba-compiled loops (the builder spends
most of its time here otherwise). The per-document RNG is Python's
`random.Random(seed)`, rebuilt in the same compiled code: its Mersenne Twister
seeding (`init_by_array`) and raw 32-bit words (`_mt_words`, checked against
CPython's `getrandbits`), and `random()` and `randint()` made from those words
exactly as CPython does, so the draws are those of the official code.
"""

import collections
import hashlib

import numba
import numpy as np

from electra_tf.data.records import FEATURES  # sorted: the proto's deterministic order
SHORT_TARGET_PROB = 0.05
SINGLE_SEGMENT_PROB = 0.1
_WORDS_PER_SENTENCE = 8  # RNG words drawn up front per sentence; more are drawn in the rare case it is short

Packed = collections.namedtuple(
    "Packed", ["input_ids", "num_a", "num_b", "document", "single_segment", "short_target", "truncated"]
)
Packed.__doc__ = """Examples packed from a batch of documents (`n` rows).

Args:
    input_ids: `(n, max_seq_length)` int32, `[CLS] A [SEP] B [SEP]` zero-padded.
    num_a, num_b: `(n,)` int32, segment lengths without specials, after
        truncation; they define `input_mask` and `segment_ids` (see
        `serialize_examples`).
    document: `(n,)` int, index of each example's document in the batch
        (examples of a document are consecutive and in order).
    single_segment: `(n,)` bool, the 10 % single-segment draw fired.
    short_target: `(n,)` bool, the 5 % short-target draw fired for the example.
    truncated: `(n,)` int, word pieces cut by truncation.
"""


def document_seed(seed, doc_key):
    """The seed of a document's `random.Random`: the first 8 bytes of sha256("<seed>:<doc_key>").

    Args:
        seed: int. Build seed.
        doc_key: str. Stable document key.

    Example:
        >>> from electra_tf.pipelines.packing import document_seed
        >>> document_seed(0, "a.txt:0") == document_seed(0, "a.txt:0") != document_seed(1, "a.txt:0")
        True
    """
    return int.from_bytes(hashlib.sha256(f"{seed}:{doc_key}".encode("utf-8")).digest()[:8], "big")


def _draw_words(seeds, sentences_per_doc, words_per_sentence):
    """The first 32-bit MT outputs of each document's RNG, enough for it: (words, per-document splits).

    The words are those of `random.Random(seed).getrandbits(32 * k)` (k
    consecutive `genrand_uint32()` outputs, the first in the lowest 32 bits),
    made by `_mt_words`. A document needs at most 2 words per sentence (the
    50 % draw) plus, per example (<= sentences + 1), 2 + 2 for the
    single/short draws and 1 per `randint` try.
    """
    counts = np.array([words_per_sentence * s + 16 for s in sentences_per_doc], np.int64)
    try:
        seeds = np.array(seeds, np.uint64)
    except OverflowError as err:
        raise ValueError(f"Document seeds must be in [0, 2**64) (see `document_seed`): {err}") from err
    return _mt_words(seeds, counts), np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@numba.njit(cache=True)
def _mt_twist(mt):
    """MT19937's state update (624 words, in place), as CPython's `genrand_uint32` does it."""
    upper, lower, one, zero = np.uint64(0x80000000), np.uint64(0x7FFFFFFF), np.uint64(1), np.uint64(0)
    matrix = np.uint64(0x9908B0DF)
    for k in range(227):
        y = (mt[k] & upper) | (mt[k + 1] & lower)
        mt[k] = mt[k + 397] ^ (y >> one) ^ (matrix if y & one else zero)
    for k in range(227, 623):
        y = (mt[k] & upper) | (mt[k + 1] & lower)
        mt[k] = mt[k - 227] ^ (y >> one) ^ (matrix if y & one else zero)
    y = (mt[623] & upper) | (mt[0] & lower)
    mt[623] = mt[396] ^ (y >> one) ^ (matrix if y & one else zero)


@numba.njit(cache=True)
def _mt_words(seeds, counts):
    """CPython's `random.Random(seed).getrandbits(32 * count)` words, for every (seed, count)."""
    mask = np.uint64(0xFFFFFFFF)
    out = np.empty(counts.sum(), np.uint32)
    mt = np.empty(624, np.uint64)
    at = 0
    for d in range(len(seeds)):
        key = (seeds[d] & mask, seeds[d] >> np.uint64(32))
        key_length = 2 if key[1] else 1
        mt[0] = np.uint64(19650218)
        for i in range(1, 624):
            mt[i] = (np.uint64(1812433253) * (mt[i - 1] ^ (mt[i - 1] >> np.uint64(30))) + np.uint64(i)) & mask
        i, j = 1, 0
        for _ in range(max(624, key_length)):
            mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> np.uint64(30))) * np.uint64(1664525)))
                     + key[j] + np.uint64(j)) & mask
            i += 1
            j += 1
            if i >= 624:
                mt[0] = mt[623]
                i = 1
            if j >= key_length:
                j = 0
        for _ in range(623):
            mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> np.uint64(30))) * np.uint64(1566083941)))
                     - np.uint64(i)) & mask
            i += 1
            if i >= 624:
                mt[0] = mt[623]
                i = 1
        mt[0] = np.uint64(0x80000000)
        index = 624
        for _ in range(counts[d]):
            if index >= 624:
                _mt_twist(mt)
                index = 0
            y = mt[index]
            index += 1
            y ^= y >> np.uint64(11)
            y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
            y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
            y ^= y >> np.uint64(18)
            out[at] = y
            at += 1
    return out


@numba.njit(cache=True)
def _random(words, pos):
    """CPython's `random()` from two MT words: 53 random bits."""
    a = words[pos] >> 5
    b = words[pos + 1] >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True)
def _next_target(words, pos, end, max_seq_length):
    """(target, short drawn, new pos); pos = -1 when the document's words ran out."""
    if pos + 2 > end:
        return 0, False, -1
    r = _random(words, pos)
    pos += 2
    if r >= 0.05:
        return max_seq_length, False, pos
    # randint(5, max_seq_length) = 5 + _randbelow(n): getrandbits(n.bit_length()) until < n.
    n = max_seq_length - 4
    k = 0
    while (n >> k) > 0:
        k += 1
    while True:
        if pos + 1 > end:
            return 0, True, -1
        value = words[pos] >> (32 - k)
        pos += 1
        if value < n:
            return 5 + value, True, pos


@numba.njit(cache=True)
def _pack_kernel(ids, sentence_splits, document_splits, words, word_splits, max_seq_length, cls_id, sep_id):
    num_docs = len(document_splits) - 1
    capacity = len(sentence_splits) - 1 + num_docs
    input_ids = np.zeros((capacity, max_seq_length), np.int32)
    num_a = np.zeros(capacity, np.int32)
    num_b = np.zeros(capacity, np.int32)
    document = np.zeros(capacity, np.int32)
    single = np.zeros(capacity, np.bool_)
    short = np.zeros(capacity, np.bool_)
    truncated = np.zeros(capacity, np.int32)
    overflow = np.zeros(num_docs, np.bool_)
    current = np.empty(max_seq_length + 1, np.int64)  # sentences of the example being built
    to_a = np.empty(max_seq_length + 1, np.bool_)
    n = 0
    for d in range(num_docs):
        pos, end = word_splits[d], word_splits[d + 1]
        first_example = n
        target, short_drawn, pos = _next_target(words, pos, end, max_seq_length)
        count, length = 0, 0
        s = document_splits[d]
        while pos >= 0 and (s < document_splits[d + 1] or count > 0):
            if s < document_splits[d + 1]:
                size = sentence_splits[s + 1] - sentence_splits[s]
                if size > 0:
                    current[count] = s
                    count += 1
                    length += size
                s += 1
                if length < target or count == 0:
                    continue
            # Create an example from `current` (full, or the document's last one).
            if pos + 2 > end:
                pos = -1
                break
            single_drawn = _random(words, pos) < 0.1
            pos += 2
            first_target = 100000 if single_drawn else (target - 3) // 2
            len_a, len_b = 0, 0
            for j in range(count):
                size = sentence_splits[current[j] + 1] - sentence_splits[current[j]]
                into_a = len_a == 0 or len_a + size < first_target
                if not into_a and len_b == 0 and len_a < first_target:
                    if pos + 2 > end:
                        pos = -1
                        break
                    into_a = _random(words, pos) < 0.5
                    pos += 2
                to_a[j] = into_a
                if into_a:
                    len_a += size
                else:
                    len_b += size
            if pos < 0:
                break
            keep_a = min(len_a, max_seq_length - 2)
            keep_b = min(len_b, max(0, max_seq_length - keep_a - 3))
            row = input_ids[n]
            row[0] = cls_id
            for segment in range(2):
                at = 1 if segment == 0 else keep_a + 2
                left = keep_a if segment == 0 else keep_b
                for j in range(count):
                    if to_a[j] != (segment == 0) or left == 0:
                        continue
                    start = sentence_splits[current[j]]
                    take = min(sentence_splits[current[j] + 1] - start, left)
                    row[at : at + take] = ids[start : start + take]
                    at += take
                    left -= take
                if segment == 0 or keep_b > 0:
                    row[at] = sep_id
            num_a[n], num_b[n], document[n] = keep_a, keep_b, d
            single[n], short[n] = single_drawn, short_drawn
            truncated[n] = len_a + len_b - keep_a - keep_b
            n += 1
            count, length = 0, 0
            if s < document_splits[d + 1]:  # after the last example the draw would go unused
                target, short_drawn, pos = _next_target(words, pos, end, max_seq_length)
        if pos < 0:
            overflow[d] = True
            n = first_example
    return input_ids[:n], num_a[:n], num_b[:n], document[:n], single[:n], short[:n], truncated[:n], overflow


def pack(flat_ids, sentence_splits, document_splits, seeds, max_seq_length, cls_id, sep_id):
    """Packs every document of a batch into examples.

    Args:
        flat_ids: int array, the word pieces of all sentences back to back.
        sentence_splits: int array, `flat_ids[sentence_splits[i]:sentence_splits[i + 1]]`
            is sentence i (row splits of the tokenizer's ragged output).
        document_splits: int array, sentences `document_splits[d]` up to
            `document_splits[d + 1]` belong to document d.
        seeds: list of int, the seed of each document's `random.Random`
            (`document_seed`).
        max_seq_length: int. Example length including [CLS]/[SEP].
        cls_id: int. Id of [CLS].
        sep_id: int. Id of [SEP].

    Returns:
        `Packed`.

    Example:
        >>> import numpy as np
        >>> from electra_tf.pipelines.packing import document_seed, pack
        >>> seeds = [document_seed(0, "doc:0")]
        >>> packed = pack(np.array([5, 6, 7]), np.array([0, 2, 3]), np.array([0, 2]), seeds, 8, 1, 2)
        >>> packed.input_ids.tolist()
        [[1, 5, 6, 2, 7, 2, 0, 0]]
    """
    if max_seq_length < 5:
        raise ValueError(f"`max_seq_length` must be >= 5. Received: `max_seq_length={max_seq_length}`")
    ids = np.asarray(flat_ids, np.int32)
    sentence_splits = np.asarray(sentence_splits, np.int64)
    document_splits = np.asarray(document_splits, np.int64)
    sentences_per_doc = np.diff(document_splits).tolist()
    words_per_sentence = _WORDS_PER_SENTENCE
    while True:
        words, word_splits = _draw_words(seeds, sentences_per_doc, words_per_sentence)
        *out, overflow = _pack_kernel(ids, sentence_splits, document_splits, words, word_splits,
                                      max_seq_length, cls_id, sep_id)
        if not overflow.any():  # else: a run of `randint` rejections; redraw with more words
            break
        words_per_sentence *= 4
    input_ids, num_a, num_b, document, single, short, truncated = out
    return Packed(input_ids, num_a, num_b, document, single, short, truncated)


def num_tokens(num_a, num_b):
    """Example lengths: `[CLS] A [SEP]` plus `B [SEP]` when B is not empty."""
    num_a, num_b = np.asarray(num_a), np.asarray(num_b)
    return num_a + 2 + np.where(num_b > 0, num_b + 1, 0)


@numba.njit(cache=True)
def _varint_size(value):
    size = 1
    while value >= 128:
        value >>= 7
        size += 1
    return size


@numba.njit(cache=True)
def _put_varint(buf, at, value):
    while value >= 128:
        buf[at] = (value & 127) | 128
        value >>= 7
        at += 1
    buf[at] = value
    return at + 1


@numba.njit(cache=True)
def _entry_sizes(key_size, payload):
    """Sizes of one `features` map entry: (whole entry incl. its tag and length, entry, feature, int64_list)."""
    int64_list = 1 + _varint_size(payload) + payload
    feature = 1 + _varint_size(int64_list) + int64_list
    entry = 1 + _varint_size(key_size) + key_size + 1 + _varint_size(feature) + feature
    return 1 + _varint_size(entry) + entry, entry, feature, int64_list


@numba.njit(cache=True)
def _serialize_kernel(input_ids, lengths, first_lengths, keys, key_splits):
    """Returns (bytes buffer, record offsets) of the examples' `tf.train.Example` protos."""
    n, seq = input_ids.shape
    num_features = len(key_splits) - 1
    payloads = np.zeros((num_features, n), np.int64)
    features_sizes = np.zeros(n, np.int64)
    sizes = np.zeros(n + 1, np.int64)
    for i in range(n):
        features = 0
        for f in range(num_features):
            payload = seq if f > 0 else 0  # masks and segment ids: one byte per value
            if f == 0:
                for j in range(seq):
                    payload += _varint_size(input_ids[i, j])
            payloads[f, i] = payload
            features += _entry_sizes(key_splits[f + 1] - key_splits[f], payload)[0]
        features_sizes[i] = features
        sizes[i + 1] = 1 + _varint_size(features) + features
    offsets = np.cumsum(sizes)
    buf = np.empty(offsets[-1], np.uint8)
    for i in range(n):
        at = offsets[i]
        buf[at] = 0x0A  # Example.features
        at = _put_varint(buf, at + 1, features_sizes[i])
        for f in range(num_features):
            key_size = key_splits[f + 1] - key_splits[f]
            _, entry, feature, int64_list = _entry_sizes(key_size, payloads[f, i])
            buf[at] = 0x0A  # Features.feature map entry
            at = _put_varint(buf, at + 1, entry)
            buf[at] = 0x0A  # key
            at = _put_varint(buf, at + 1, key_size)
            buf[at : at + key_size] = keys[key_splits[f] : key_splits[f + 1]]
            at += key_size
            buf[at] = 0x12  # value: Feature
            at = _put_varint(buf, at + 1, feature)
            buf[at] = 0x1A  # Feature.int64_list
            at = _put_varint(buf, at + 1, int64_list)
            buf[at] = 0x0A  # Int64List.value, packed
            at = _put_varint(buf, at + 1, payloads[f, i])
            if f == 0:
                for j in range(seq):
                    at = _put_varint(buf, at, input_ids[i, j])
            else:  # input_mask: 1 below the length; segment_ids: 1 from B's start to the length
                start = 0 if f == 1 else first_lengths[i]
                for j in range(seq):
                    buf[at + j] = 1 if start <= j < lengths[i] else 0
                at += seq
    return buf, offsets


_KEYS = np.frombuffer("".join(FEATURES).encode(), np.uint8)
_KEY_SPLITS = np.cumsum([0] + [len(name) for name in FEATURES]).astype(np.int64)


def encode_examples(input_ids, num_a, num_b):
    """`serialize_examples`, as one buffer: the records back to back, and where each starts.

    Returns:
        `(buffer, offsets)`: uint8 array, int64 array of `n + 1` offsets
        (record `i` is `buffer[offsets[i]:offsets[i + 1]]`).
    """
    input_ids = np.asarray(input_ids)
    if input_ids.ndim != 2:
        raise ValueError(f"`input_ids` must be (examples, seq_len). Received shape {input_ids.shape}")
    if input_ids.size and input_ids.min() < 0:
        raise ValueError("`input_ids` must be non-negative (packed varints of int64 >= 0).")
    num_a = np.asarray(num_a, np.int64)
    return _serialize_kernel(input_ids, num_tokens(num_a, num_b).astype(np.int64), num_a + 2, _KEYS, _KEY_SPLITS)


def serialize_examples(input_ids, num_a, num_b):
    """Serializes packed examples as `tf.train.Example`s: Int64 features
    `input_ids`, `input_mask` (1 on the first `num_tokens` positions) and
    `segment_ids` (1 from B's first token to the end of the example),
    byte-identical to `tf.train.Example(...).SerializeToString(deterministic=True)`
    but compiled, not protobuf.

    Args:
        input_ids: `(n, max_seq_length)` non-negative int array.
        num_a, num_b: `(n,)` int, segment lengths (`Packed.num_a`, `Packed.num_b`).

    Returns:
        list of n bytes.

    Example:
        >>> import numpy as np
        >>> import tensorflow as tf
        >>> from electra_tf.pipelines.packing import serialize_examples
        >>> record = serialize_examples(np.array([[1, 300, 2, 0]]), [1], [0])[0]
        >>> tf.train.Example.FromString(record).features.feature["input_ids"].int64_list.value
        [1, 300, 2, 0]
    """
    buf, offsets = encode_examples(input_ids, num_a, num_b)
    data = buf.tobytes()
    offsets = offsets.tolist()
    return [data[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
