"""A small, documented regex sentence splitter (no model, no downloads).

Rule: a sentence ends after `.`, `!` or `?` (a run of them), plus any closing
quotes or brackets, when whitespace and then an upper-case letter or a digit
follow (optionally behind an opening quote or bracket). A single `.` is not a
boundary after a known abbreviation (`Mr.`, `e.g.`, `etc.`), after `No.`/`p.`
etc. when a digit follows, after a single-letter initial (`J. Smith`) or after
a dotted acronym (`U.S.`). Whitespace is collapsed to single spaces. This is
the convention of the shared corpus (`shared/data/README.md`).
"""

import re

# Lower-cased words (without their final period) after which `.` does not end a sentence.
ABBREVIATIONS = frozenset(
    "mr mrs ms messrs mme mlle dr drs st jr sr prof rev gen col capt lt sgt maj "
    "adm gov sen rep hon esq pres supt bros vs etc cf al approx dept est inc ltd "
    "co corp univ ave blvd rd mt ft ca jan feb mar apr jun jul aug sep sept oct "
    "nov dec e.g i.e viz resp incl ibid a.m p.m".split()
)
# Abbreviations that only block a split when a number follows (`No. 5`, `p. 12`).
NUMBER_ABBREVIATIONS = frozenset(
    "no nos p pp vol vols fig figs art sec ch chap eq ref op nr".split()
)

_BOUNDARY = re.compile(r"([.!?]+)([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]*[A-Z0-9])")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_OPENERS = "(\"'[\u201c\u2018"


def normalize_whitespace(text):
    """Collapses all whitespace runs (newlines, tabs, NBSP) to one space."""
    return " ".join(text.split())


def split_sentences(text):
    """Splits a paragraph into sentences.

    Args:
        text: str. A paragraph (line breaks inside are treated as spaces).

    Returns:
        list of str, the non-empty sentences in order.

    Example:
        >>> from electra_tf.pipelines.sentences import split_sentences
        >>> split_sentences("Mr. Smith arrived. He sat down! Was it 5 p.m.? Yes.")
        ['Mr. Smith arrived.', 'He sat down!', 'Was it 5 p.m.?', 'Yes.']
    """
    text = normalize_whitespace(text)
    if not text:
        return []
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        if match.group(1) == ".":
            words = text[max(start, match.start(1) - 40) : match.start(1)].split()
            word = words[-1].lstrip(_OPENERS) if words else ""
            lower = word.lower()
            if lower in ABBREVIATIONS:
                continue
            if lower in NUMBER_ABBREVIATIONS and text[match.end() : match.end() + 1].isdigit():
                continue
            if len(word) == 1 and word.isalpha() and word != "I":
                continue
            if _ACRONYM.fullmatch(word):
                continue
        sentence = text[start : match.end(2)].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
