"""A line ends at `\\n` (or `\\r\\n`) and nowhere else, in every reader of text, JSON Lines, TSV/CSV and CoNLL.

Each input is built from a list of lines that hold the characters `str.splitlines` also breaks at (`\\v`,
`\\f`, `\\x1c`-`\\x1e`, U+0085, U+2028, U+2029) and is joined with `\\n`: the list is the reference. Every
reader must give one record per listed line, numbered by its place in the list, with its text unchanged.
Readers: `predict`'s (every task kind and format), the corpus readers (text, books, Wikipedia) and the vocabulary
builder's input; fine-tuning's (task TSV/CSV, CoNLL, multiple-choice CSV and JSON Lines, SQuAD) in their kinds'
folders (tests/tasks/<kind>/test_*_lines.py).
"""

import bz2
import json

import pytest

from electra_tf.data.lines import split_lines, table_rows
from electra_tf.predicting.inputs import read_examples
from electra_tf.tasks import get as task_kind  # the registry: a kind by name
from helpers import LINE_BREAKS as BREAKS, LINE_TEXTS as TEXTS, write_lines as write

ClassificationKind = task_kind("classification")
MultipleChoiceKind = task_kind("multiple_choice")
SpanQAKind = task_kind("span_qa")
TaggingKind = task_kind("tagging")
ReplacedTokenKind = task_kind("rtd")


def test_split_lines_ends_lines_at_newline_only():
    text = "a\x0cb\r\n\u2028\nlone\rreturn\n\nlast"
    assert split_lines(text) == ["a\x0cb", "\u2028", "lone\rreturn", "", "last"]
    assert split_lines(text, keepends=True) == ["a\x0cb\r\n", "\u2028\n", "lone\rreturn\n", "\n", "last"]
    assert split_lines("") == [] and split_lines("a\n") == ["a"] and split_lines(BREAKS) == [BREAKS]


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_predict_text_and_json_lines_give_a_record_per_line_for_every_kind(tmp_path, end):
    settings = {"label_names": ["negative", "positive"], "spans": True}
    text = write(tmp_path / "texts.txt", TEXTS, end)
    jsonl = write(tmp_path / "records.jsonl", [json.dumps({"text": t}, ensure_ascii=False) for t in TEXTS], end)
    assert "\u2028" in open(jsonl, encoding="utf-8").read()  # raw, as valid JSON may hold it
    for kind in (ClassificationKind, TaggingKind, ReplacedTokenKind):
        for path in (text, jsonl):
            examples = read_examples(path, "auto", kind, settings)
            assert [(e.line, e.inputs["text"]) for e in examples] == list(enumerate(TEXTS, 1)), (kind, path)

    qa = write(tmp_path / "qa.jsonl", [json.dumps({"question": f"q{i}", "context": t}, ensure_ascii=False)
                                        for i, t in enumerate(TEXTS)], end)
    examples = read_examples(qa, "auto", SpanQAKind, {})
    assert [(e.line, e.inputs["context"]) for e in examples] == list(enumerate(TEXTS, 1))

    choices = write(tmp_path / "choices.jsonl", [json.dumps({"context": t, "choices": [t, "x"], "answer": 0},
                                                            ensure_ascii=False) for t in TEXTS], end)
    examples = read_examples(choices, "auto", MultipleChoiceKind, {})
    assert [(e.line, e.inputs["context"], e.inputs["choices"]) for e in examples] == [
        (i, t, [t, "x"]) for i, t in enumerate(TEXTS, 1)]


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_predict_tables_give_a_record_per_line_and_a_quoted_record_its_first_line(tmp_path, end):
    settings = {"label_names": ["negative", "positive"]}
    tsv = write(tmp_path / "dev.tsv", ["sentence\tlabel"] + [f"{t}\tpositive" for t in TEXTS], end)
    examples = read_examples(tsv, "auto", ClassificationKind, settings)
    assert [(e.line, e.inputs["text"], e.gold) for e in examples] == [(i, t, 1) for i, t in enumerate(TEXTS, 2)]

    two_lines = f'"{TEXTS[0]}{end}{TEXTS[1]}"'  # one quoted field over two lines: a record on line 2
    csv_file = write(tmp_path / "dev.csv", ["sentence,label", f"{two_lines},negative", f'"{TEXTS[2]}",1'], end)
    examples = read_examples(csv_file, "auto", ClassificationKind, settings)
    assert [(e.line, e.inputs["text"], e.gold) for e in examples] == [
        (2, TEXTS[0] + end + TEXTS[1], 0), (4, TEXTS[2], 1)]

    swag = write(tmp_path / "swag.csv", ["sent1,sent2,ending0,ending1,label"] +
                 [f'"{t}",then,a,b,1' for t in TEXTS], end)
    examples = read_examples(swag, "auto", MultipleChoiceKind, {})
    assert [(e.line, e.inputs["context"], e.gold) for e in examples] == [(i, t, 1) for i, t in enumerate(TEXTS, 2)]


def test_a_csv_field_of_a_million_characters_is_read(tmp_path):
    big = "word " * 200_000
    assert list(table_rows("big.csv", f'text,label\n"{big}",1\nsmall,0\n', ",")) == [
        (1, ["text", "label"]), (2, [big, "1"]), (3, ["small", "0"])]


def test_a_lone_carriage_return_in_an_unquoted_csv_field_names_the_line(tmp_path):
    with pytest.raises(ValueError, match=r"^x.csv:3: a carriage return \(\\r\) inside an unquoted field"):
        list(table_rows("x.csv", "a,b\nc,d\ne\rf,g\n", ","))


def corpus_file(path, lines):
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    return str(path)


def test_corpus_text_books_and_the_vocabulary_builder_read_lines_at_newline_only(tmp_path):
    from electra_tf.pipelines import build_vocab, sources
    from electra_tf.pipelines.books import read_book

    corpus = corpus_file(tmp_path / "corpus.txt", TEXTS + ["", "Another document."])
    files = sources.expand_inputs(f"text:{corpus}")
    documents = list(sources.read_documents(files[0]))
    assert [d.sentences for d in documents] == [TEXTS, ["Another document."]]
    assert list(build_vocab._sentences(files)) == TEXTS + ["Another document."]

    # A book: paragraphs between blank lines, the characters inside a line spaces; a line holding only \f is blank.
    book = corpus_file(tmp_path / "book.txt", ["Page one ends.\x0cPage two", "goes on.", "\x0c",
                                               "A heading\u2029\u2029with its text", "in one paragraph."])
    [document] = read_book(book, key="book")
    assert document.sentences == ["Page one ends.", "Page two goes on.", "A heading with its text in one paragraph."]


def test_wikipedia_articles_keep_a_paragraph_holding_the_characters_whole(tmp_path):
    from electra_tf.pipelines import wikipedia

    sentences = wikipedia.wikitext_to_sentences("Ada", "Ada was a\u2028writer of\x0cnotes on the Analytical Engine "
                                                       "built by Babbage.\nShe\x85wrote the first program for it.")
    assert sentences == ["Ada was a writer of notes on the Analytical Engine built by Babbage.",
                         "She wrote the first program for it."]


@pytest.mark.parametrize("kind", [ClassificationKind, MultipleChoiceKind])
def test_an_empty_or_blank_input_has_no_input_records(tmp_path, kind):
    path = tmp_path / "dev.jsonl"
    for text in ("", "\n", " \r\n\t\n"):
        path.write_text(text)
        with pytest.raises(ValueError, match=rf"^{path}: no input records: `--input={path}` is empty or blank; give "
                                             r"the examples in a file with --input, or pipe them into stdin\.$"):
            read_examples(str(path), "auto", kind, {"label_names": ["a", "b"]})
