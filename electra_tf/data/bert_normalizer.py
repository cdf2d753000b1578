"""BERT's text normalisation, as a model for tensorflow-text's in-graph `FastBertNormalize` op.

tensorflow-text's `FastBertTokenizer` normalises text before WordPiece with a per-code-point
table (a `FastBertNormalizerModel` flatbuffer: a double-array trie from each changed character's
UTF-8 bytes to its replacement in a string pool). The table it builds itself comes from ICU's
NFKC_Casefold, which is not what BERT does (`ß` becomes `ss`, `ﬁ` `fi`, `²` `2`, fullwidth
letters ASCII, and a control character a space). `normalizer_model` builds the table from
BERT's own rules instead, those of the official BERT / ELECTRA `tokenization.py`:

- `_clean_text`: code point 0, U+FFFD and control characters (category Cc or Cf, but not
  `\\t`, `\\n`, `\\r`) are deleted. Hugging Face's Python `BertTokenizer` also deletes the
  categories Cn, Co and Cs (unassigned, private use, surrogates); the official rule is
  followed here. Whitespace (space, `\\t`, `\\n`, `\\r`, category Zs) is left as it is: the
  op's pre-tokenizer splits at every Unicode White_Space character, as BERT splits at it.
- lower-casing (`lower_case`): Python's `str.lower()` of the character, full mappings included
  (`İ` becomes `i` + U+0307). One rule of `str.lower()` depends on context and cannot be a
  per-character table: a capital sigma at the end of a word becomes `ς`. Here `Σ` always
  becomes `σ` (as ICU's and Rust's per-character lower-casing, so Hugging Face's fast
  tokenizer, do).
- accents (`strip_accents`): NFD of the (lower-cased) character, combining marks (Mn) dropped.
- CJK ideographs: no entry; the op's pre-tokenizer cuts them out as BERT's
  `_tokenize_chinese_chars` does (the same code-point ranges).

BERT applies NFD to a whole word, which also reorders a run of combining marks by their
combining class; dropped with the accents (Mn) that order does not matter, and without
`strip_accents` BERT applies no NFD at all.

Byte offsets (`tokenize_with_offsets`) come back through the op's own mapping: a deleted
character has none, and every byte of a replaced one maps to the character's first byte.

Example:
    ```python
    import tensorflow_text as tf_text

    from electra_tf.data.bert_normalizer import normalizer_model

    normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model(lower_case=True, strip_accents=True))
    normalizer.normalize(["Fußach Ａ ﬁ Élan\\u200bx"]).numpy()[0].decode()  # 'fußach ａ ﬁ elanx'
    ```
"""

import functools
import itertools
import operator
import unicodedata

import flatbuffers
import numpy as np
import tensorflow as tf

# The code-point ranges searched for characters the normalisation changes. Left out: CJK
# ideographs, Yi, private use, surrogates and the unassigned planes, which no rule changes
# (tests check that a search of every code point finds the same table).
_SEARCHED = (range(0, 0x3400), range(0xA000, 0xD800), range(0xF900, 0x20000),
             range(0x2F800, 0x2FA20), range(0xE0000, 0xE0200))
_SPECIAL_CATEGORIES = frozenset(("Cc", "Cf", "Zs", "Mn"))

# The bit layout of a value in tensorflow-text's normaliser trie (`fast_bert_normalizer.h`).
_DIFFERENT = 0x40000000  # the character's normalisation differs from itself
_LENGTH_BITS = 6  # the low bits hold the replacement's UTF-8 length, the next 24 its pool offset
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_MAX_OFFSET = (1 << (30 - _LENGTH_BITS)) - 1
_FEW_CHILDREN = 16  # `double_array` gives a node with more children a stretch of units of its own


def is_bert_whitespace(char):
    """BERT's `_is_whitespace`: space, `\\t`, `\\n`, `\\r` and category Zs."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_bert_control(char):
    """The official BERT's `_is_control`: category Cc or Cf, except `\\t`, `\\n` and `\\r`."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def normalize_char(char, lower_case, strip_accents):
    """BERT's normalisation of one character (a str of length 1), as `tokenization.py` does it.

    Example:
        >>> from electra_tf.data.bert_normalizer import normalize_char
        >>> [normalize_char(c, True, True) for c in ("ß", "Å", "İ", "\\u200b", "\\t")]
        ['ß', 'a', 'i', '', ' ']
        >>> normalize_char("Å", lower_case=True, strip_accents=False), normalize_char("Å", False, True)
        ('å', 'A')
    """
    if char in ("\0", "\ufffd") or is_bert_control(char):
        return ""
    if is_bert_whitespace(char):
        return " "
    if lower_case:
        char = char.lower()
    if strip_accents:
        char = "".join(c for c in unicodedata.normalize("NFD", char) if unicodedata.category(c) != "Mn")
    return char


def changed_characters(lower_case, strip_accents, code_points=None):
    """dict code point -> replacement (str) of every character the normaliser table changes.

    BERT's whitespace is left out (see the module docstring).

    Args:
        lower_case: bool.
        strip_accents: bool.
        code_points: optional iterable of int, the code points to search; default: those
            the rules can change (every code point is searched by the tests).
    """
    if code_points is None:
        code_points = itertools.chain.from_iterable(_SEARCHED)
    text = "".join(map(chr, code_points))  # surrogates included: no rule changes them
    # `normalize_char` over the whole text at the speed of C-level `map`s: a character changes only if
    # it is in a special category or lower-casing / NFD changes it, and only those few thousand are
    # looked at one by one.
    categories = list(map(unicodedata.category, text))
    mapped = list(map(str.lower, text)) if lower_case else text
    if strip_accents:
        mapped = list(map(functools.partial(unicodedata.normalize, "NFD"), mapped))
    special = set(itertools.compress(range(len(text)), map(_SPECIAL_CATEGORIES.__contains__, categories)))
    marks = {ord(text[i]): None for i in special if categories[i] == "Mn"} if strip_accents else {}
    changes = {}
    for i in sorted(special.union(itertools.compress(range(len(text)), map(operator.ne, mapped, text)))):
        char, category = text[i], categories[i]
        if category in ("Cc", "Cf") and char not in "\t\n\r":
            changes[ord(char)] = ""
        elif category != "Zs" and char not in " \t\n\r":  # BERT's whitespace is left to the pre-tokenizer
            replacement = mapped[i].translate(marks)
            if replacement != char:
                changes[ord(char)] = replacement
    if "\ufffd" in text:
        changes[0xFFFD] = ""
    return changes


@functools.lru_cache(maxsize=None)
def normalizer_model(lower_case, strip_accents):
    """The `FastBertNormalizerModel` flatbuffer (bytes) of BERT's normalisation.

    Built once per process and setting. Pass it as `fast_bert_normalizer_model_buffer` to
    `tf_text.FastBertTokenizer` (or `model_buffer` to `tf_text.FastBertNormalizer`).

    Args:
        lower_case: bool. Lower-case as `str.lower()` (but `Σ` always to `σ`).
        strip_accents: bool. NFD, then drop combining marks (Mn).

    Returns:
        bytes.
    """
    changes = changed_characters(lower_case, strip_accents)
    pool, offsets, values = bytearray(), {}, {}
    for code_point, replacement in changes.items():
        encoded = replacement.encode("utf-8")
        value = _DIFFERENT
        if encoded:
            if encoded not in offsets:
                offsets[encoded] = len(pool)
                pool += encoded
            if len(encoded) > _MAX_LENGTH or offsets[encoded] > _MAX_OFFSET:
                raise ValueError(f"U+{code_point:04X}'s replacement does not fit the normaliser table.")
            value |= (offsets[encoded] << _LENGTH_BITS) | len(encoded)
        values[chr(code_point).encode("utf-8")] = value
    zero = values.pop(b"\0", 0)  # the trie cannot hold the empty key code point 0 needs
    return _flatbuffer(lower_case and strip_accents, double_array(values), zero, bytes(pool))


def normalizer_tensor(lower_case, strip_accents):
    """`normalizer_model` as a uint8 tensor (tensorflow-text turns bytes into one through a Python list)."""
    return tf.constant(np.frombuffer(normalizer_model(lower_case, strip_accents), np.uint8))


def double_array(values):
    """A darts-clone double-array trie (list of uint32 units) from bytes keys to non-negative ints.

    The layout tensorflow-text's `DartsCloneTrieWrapper` reads: a unit holds its label (the byte
    that leads to it) in bits 0-7, `has_leaf` in bit 8, and the XOR offset to its children in
    bits 10-31 (shifted 8 more with bit 9 set). The child for byte `b` of the unit at `i` is at
    `i ^ offset ^ b`; a key's value sits at `i ^ offset` (byte 0), with bit 31 set. Children are
    placed first-fit (those of a node with many, in a fresh aligned stretch); each parent gets its
    own `i ^ offset`, so no byte leads astray. Offsets stay below 2**21 (bit 9 unused).

    Args:
        values: dict bytes -> int in [0, 2**31). Keys non-empty, without a zero byte.

    Returns:
        list of int, a multiple of 256 units long.

    Example:
        >>> from electra_tf.data.bert_normalizer import double_array
        >>> units = double_array({b"ab": 7, b"b": 9})
        >>> def find(key):
        ...     node = 0
        ...     for byte in key:
        ...         unit = units[node]
        ...         node ^= (unit >> 10) ^ byte
        ...         if units[node] & 0x800000FF != byte:
        ...             return None
        ...     unit = units[node]
        ...     return units[node ^ (unit >> 10)] & 0x7FFFFFFF if unit & 0x100 else None
        >>> find(b"ab"), find(b"b"), find(b"a"), find(b"c")
        (7, 9, None, None)
    """
    root, slots = {}, 1
    for key, value in values.items():
        if not key or 0 in key or not 0 <= value < 1 << 31:
            raise ValueError(f"Cannot store {key!r} -> {value} in a double-array trie.")
        node = root
        for byte in key:
            if byte not in node:
                slots += 1
                node[byte] = {}
            node = node[byte]
        node[0] = value  # byte 0 never occurs in a key: it marks the value
        slots += 1
    # Space enough: a unit per slot, and an aligned stretch of its own (at most 256 units, 17 or more
    # of them used) for each node with many children: a search among the gaps is slow in Python.
    size = 16 * slots + 1024
    units, used, bases = [0] * size, bytearray(size), set()
    taken = bytearray(size)  # used, or the base of a node: where a node with one child cannot put it
    used[0] = taken[0] = 1  # the root
    first_taken_free = first_free = end = 1  # `end`: past every used unit
    queue = [(root, 0)]
    for node, index in queue:
        labels = sorted(node) if len(node) > 1 else list(node)
        if labels == [0]:  # a key's last byte: its value in the first free unit
            base = first_taken_free = taken.find(0, first_taken_free)
        elif len(labels) > _FEW_CHILDREN:  # the labels' aligned stretch, past every used unit
            stretch = 1 << (labels[0] ^ labels[-1]).bit_length()
            start = -(-end // stretch) * stretch
            while (base := start ^ (labels[0] & -stretch)) in bases:
                start += stretch
        else:  # first fit among the free units
            first_free = position = used.find(0, first_free)
            while position >= 0:
                base = position ^ labels[0]
                if base not in bases and all(not used[base ^ label] for label in labels):
                    break
                position = used.find(0, position + 1)
        if base < 0 or (base | 0xFF) >= size:
            raise AssertionError("double_array: the space estimate was too small.")
        bases.add(base)
        taken[base] = 1
        offset = index ^ base
        if offset >= 1 << 21:
            raise ValueError("The normaliser trie is too large for a double array.")
        units[index] |= offset << 10
        for label in labels:
            child = base ^ label
            used[child] = taken[child] = 1
            if child >= end:
                end = child + 1
            if label == 0:
                units[index] |= 0x100
                units[child] = node[0] | 1 << 31
            else:
                units[child] = label
                queue.append((node[label], child))
    # A look-up may try any byte from a node: the whole block of 256 of every base stays in the array.
    top = max(bases) | 0xFF
    del units[top + 1:]
    return units


def _flatbuffer(lower_case_nfd_strip_accents, trie, data_for_codepoint_zero, pool):
    """The `FastBertNormalizerModel` table (tensorflow-text's `fast_bert_normalizer_model.fbs`)."""
    builder = flatbuffers.Builder(4 * len(trie) + len(pool) + 64)
    pool_vector = builder.CreateNumpyVector(np.frombuffer(pool, np.uint8))
    trie_vector = builder.CreateNumpyVector(np.asarray(trie, np.uint32))
    builder.StartObject(4)
    builder.PrependBoolSlot(0, lower_case_nfd_strip_accents, False)  # informative; the op reads the trie only
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, data_for_codepoint_zero, 0)
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())
