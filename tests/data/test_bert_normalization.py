"""The tokenizer normalises text as BERT does: ids equal to Hugging Face's Python port of BERT's tokenizer.

References: transformers' Python `BertTokenizer` (`BertTokenizerLegacy` from transformers 5 on), a
line-by-line port of BERT's `tokenization.py`, and the Rust `BertTokenizerFast`. Two differences
of the port from the official tokenizer are kept out of the comparisons: it composes the text
(NFC) first, which matters only when accents are kept, and it deletes unassigned and private-use
characters too (categories Cn, Co; the comparisons over every character take assigned ones only).
"""

import unicodedata

import numpy as np
import pytest
import tensorflow_text as tf_text

from helpers import python_bert_tokenizer, shared_data
from electra_tf.data import bert_normalizer
from electra_tf.data.tokenizer import SPECIAL_TOKENS, WordPieceTokenizer

SETTINGS = [(True, True), (True, False), (False, True), (False, False)]
CRAFTED = ["Fußach", "Größe STRASSE Straße", "ﬁnance ﬂow ²³ x² Ａｂｃ ™ ½", "Ångström Å İstanbul ǅ",
           "zero\u200bwidth soft\u00adhyphen bell\x07ring nul\x00byte \ufffd\u2028line\u2029para",
           "中文字符 and 日本語 가나다 한국어", "naïve café résumé déjà vu Ærø", "Mixed: ÉCOLE, straße; ﬂow! (½)",
           "tab\tnew\nline\rend", "ΣΟΦΙΑ σοφία", "e\u0301 combining a\u0308 marks", "Ｆｕｌｌｗｉｄｔｈ！"]


def reference_ids(reference, texts):
    return [reference.encode(text, add_special_tokens=False) for text in texts]


def assigned_characters(low, high):
    return [chr(c) for c in range(low, high) if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")]


@pytest.fixture(scope="module")
def uncased():
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")
    return vocab, WordPieceTokenizer(str(vocab))


def test_crafted_texts_tokenize_as_hugging_face_bert(uncased):
    """ß, ligatures, superscripts, fullwidth letters, İ, zero-width and control characters, CJK and Hangul,
    accents: the ids of the Python port and of the fast tokenizer; a final capital sigma as documented."""
    transformers = pytest.importorskip("transformers")
    vocab, ours = uncased
    got = ours.tokenize(CRAFTED).to_list()
    assert got == reference_ids(python_bert_tokenizer(vocab), CRAFTED)
    assert got == reference_ids(transformers.BertTokenizerFast(str(vocab)), CRAFTED)
    assert [ours.vocab[i] for i in got[0]] == ["fu", "##ß", "##ach"]  # NFKC case folding gave `fuss ##ach`
    # Word-final Σ: `str.lower()` gives ς, the per-character table σ (as the fast tokenizer does).
    assert ours.tokenize(["ΟΔΟΣ"]).to_list() == reference_ids(python_bert_tokenizer(vocab), ["οδοσ"])
    assert ours.tokenize(["ΟΔΟΣ"]).to_list() == reference_ids(transformers.BertTokenizerFast(str(vocab)), ["ΟΔΟΣ"])


@pytest.mark.parametrize("low,high", [
    (0, 0x3400),  # Latin, Greek, Cyrillic, ..., symbols, CJK punctuation
    pytest.param(0x3400, 0x110000, marks=pytest.mark.large),  # the rest: ~2 s more of the Python port
])
def test_every_assigned_character_tokenizes_as_the_python_port(uncased, low, high):
    """`a<c>b` for every assigned character c, 500 to a text: the Python port's ids."""
    vocab, ours = uncased
    chars = assigned_characters(low, high)
    texts = [" ".join("a" + c + "b" for c in chars[i:i + 500]) for i in range(0, len(chars), 500)]
    got = ours.tokenize(texts).to_list()
    expected = reference_ids(python_bert_tokenizer(vocab), texts)
    differ = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not differ, [(hex(ord(c)), unicodedata.name(c, "?")) for c in chars[differ[0] * 500:][:500]
                        if ours.tokenize(["a" + c + "b"]).to_list()[0] !=
                        reference_ids(python_bert_tokenizer(vocab), ["a" + c + "b"])[0]][:10]


@pytest.fixture(scope="module")
def characters_vocab(tmp_path_factory):
    """A cased vocabulary of every letter, mark, number and symbol below U+3400 and its `##` form:
    WordPiece then shows every character the normalisation leaves."""
    chars = [c for c in assigned_characters(0x21, 0x3400) if unicodedata.category(c)[0] in "LMNPS"]
    path = tmp_path_factory.mktemp("characters") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in [*SPECIAL_TOKENS, *chars, *("##" + c for c in chars)]),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("lower_case,strip_accents", SETTINGS)
def test_each_setting_tokenizes_every_character_as_the_python_port(characters_vocab, lower_case, strip_accents):
    """Cased, accents-only, lower-case-only and uncased: `a<c>b` for every assigned character below U+3400
    over a vocabulary of single characters (texts the port's NFC leaves alone: the official tokenizer has none)."""
    chars = [c for c in assigned_characters(0, 0x3400) if unicodedata.is_normalized("NFC", "a" + c + "b")]
    texts = [" ".join("a" + c + "b" for c in chars[i:i + 500]) for i in range(0, len(chars), 500)]
    ours = WordPieceTokenizer(str(characters_vocab), lower_case=lower_case, strip_accents=strip_accents)
    reference = python_bert_tokenizer(characters_vocab, do_lower_case=lower_case, strip_accents=strip_accents)
    texts += [text for text in CRAFTED if unicodedata.is_normalized("NFC", text)]
    assert ours.tokenize(texts).to_list() == reference_ids(reference, texts)


@pytest.mark.parametrize("lower_case,strip_accents", SETTINGS)
def test_offsets_span_the_original_characters_as_the_fast_tokenizer(characters_vocab, lower_case, strip_accents):
    """`tokenize_with_offsets` under every setting: the character spans of Hugging Face's fast tokenizer,
    around ß, accents (composed and combining), İ, Hangul, and deleted characters (a zero-width space,
    a soft hyphen), as the op maps them back (`op_spans`)."""
    transformers = pytest.importorskip("transformers")
    texts = ["Fußach Ärger zero\u200bwidth café Cafe\u0301 İz", "ǅx Ａb ﬁ straße\u00ad! 한국"]
    ours = WordPieceTokenizer(str(characters_vocab), lower_case=lower_case, strip_accents=strip_accents)
    ids, starts, ends = ours.tokenize_with_offsets(texts)
    reference = transformers.BertTokenizerFast(str(characters_vocab), do_lower_case=lower_case,
                                               strip_accents=strip_accents)
    for text, row, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        encoded = reference(text, add_special_tokens=False, return_offsets_mapping=True)
        assert row == encoded["input_ids"]
        to_char = {len(text[:i].encode("utf-8")): i for i in range(len(text) + 1)}
        assert [(to_char[s], to_char[e]) for s, e in zip(row_starts, row_ends)] == op_spans(
            text, encoded["offset_mapping"], lower_case, strip_accents)


def op_spans(text, spans, lower_case, strip_accents):
    """The fast tokenizer's character spans as the op gives them: a piece's end goes past the characters
    the normalisation deletes after it, and stops at the start of a character whose replacement the
    next piece shares (`İ` lower-cased to `i` + U+0307 is `i` `##̇`: spans (s, s) and (s, s + 1))."""
    result = []
    for k, (start, end) in enumerate(spans):
        if k + 1 < len(spans) and spans[k + 1][0] < end:
            end = spans[k + 1][0]
        while end < len(text) and bert_normalizer.normalize_char(text[end], lower_case, strip_accents) == "":
            end += 1
        result.append((start, end))
    return result


@pytest.mark.parametrize("lower_case,strip_accents", SETTINGS)
def test_the_op_reads_the_table_as_built(lower_case, strip_accents):
    """tensorflow-text's own kernel, fed the flatbuffer, replaces every character the table changes (and
    code point 0) and leaves others; `normalize_char`, BERT's rule for one character, gives the table."""
    changes = bert_normalizer.changed_characters(lower_case, strip_accents)
    normalizer = tf_text.FastBertNormalizer(model_buffer=bert_normalizer.normalizer_tensor(lower_case, strip_accents))
    kept = [c for c in assigned_characters(0, 0x3400)[::7] if ord(c) not in changes]
    texts = [chr(c) for c in changes] + kept
    got = [t.decode("utf-8") for t in normalizer.normalize(texts).numpy()]
    assert got == list(changes.values()) + kept
    assert changes[0] == "" and changes[0xFFFD] == "" and changes[0x200B] == ""
    for code_point, replacement in list(changes.items())[::50]:
        assert bert_normalizer.normalize_char(chr(code_point), lower_case, strip_accents) == replacement


@pytest.mark.large  # a Python loop over all 1.1 M code points per setting: ~10 s
def test_the_searched_code_points_hold_every_change():
    """`changed_characters` searches fewer code points than exist: a search of all finds the same table,
    and `normalize_char` of every code point agrees with it."""
    for lower_case, strip_accents in SETTINGS:
        every = bert_normalizer.changed_characters(lower_case, strip_accents, code_points=range(0x110000))
        assert every == bert_normalizer.changed_characters(lower_case, strip_accents)
        spec = {}
        for code_point in range(0x110000):
            char = chr(code_point)
            replacement = bert_normalizer.normalize_char(char, lower_case, strip_accents)
            if replacement != char and not bert_normalizer.is_bert_whitespace(char):
                spec[code_point] = replacement
        assert spec == every


def test_double_array_finds_exactly_its_keys():
    """A trie of many keys sharing prefixes (UTF-8 of 3000 characters): every key's value, no other key."""
    keys = {chr(c).encode("utf-8"): c for c in range(0x80, 0x3000, 3)}
    units = bert_normalizer.double_array(keys)
    assert len(units) % 256 == 0 and max(units) < 2 ** 32

    def find(key):
        node = 0
        for byte in key:
            unit = units[node]
            node ^= ((unit >> 10) << ((unit & 0x200) >> 6)) ^ byte
            if units[node] & 0x800000FF != byte:
                return None
        unit = units[node]
        return units[node ^ ((unit >> 10) << ((unit & 0x200) >> 6))] & 0x7FFFFFFF if unit & 0x100 else None

    assert all(find(key) == value for key, value in keys.items())
    assert [find(chr(c).encode("utf-8")) for c in range(0x81, 0x3000, 3)] == [None] * len(range(0x81, 0x3000, 3))
    with pytest.raises(ValueError, match="Cannot store"):
        bert_normalizer.double_array({b"a\x00": 1})


def test_the_table_is_built_once_per_process_and_setting():
    assert bert_normalizer.normalizer_model(True, True) is bert_normalizer.normalizer_model(True, True)
    assert np.frombuffer(bert_normalizer.normalizer_model(False, False), np.uint8).size > 0
