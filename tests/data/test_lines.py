"""A line ends at `\\n` (or `\\r\\n`) and nowhere else, in every reader of text, JSON Lines, TSV/CSV and CoNLL.

Each input is built from a list of lines that hold the characters `str.splitlines` also breaks at (`\\v`,
`\\f`, `\\x1c`-`\\x1e`, U+0085, U+2028, U+2029) and is joined with `\\n`: the list is the reference. Every
reader must give one record per listed line, numbered by its place in the list, with its text unchanged.
Readers: `predict`'s (every task kind and format), fine-tuning's (task TSV/CSV, CoNLL, multiple-choice CSV and
JSON Lines, SQuAD), the corpus readers (text, books, Wikipedia) and the vocabulary builder's input.
"""

import bz2
import json

import pytest

from electra_tf.data.lines import split_lines, table_rows
from electra_tf.tasks.tagging import conll
from electra_tf.tasks.span_qa import squad
from electra_tf.tasks.classification import data as tasks_lib
from electra_tf.tasks.classification.kind import ClassificationKind
from electra_tf.tasks.multiple_choice.kind import MultipleChoiceKind
from electra_tf.tasks.multiple_choice.data import read_questions
from electra_tf.tasks.span_qa.kind import SpanQAKind
from electra_tf.tasks.tagging.kind import TaggingKind
from electra_tf.predicting.inputs import read_examples
from electra_tf.tasks.replaced_tokens.kind import ReplacedTokenKind

BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines breaks at, besides \n and \r
# Three texts, each holding some of them: one line each.
TEXTS = ["first\x0cpage and a\x0bvertical tab", "second\u2028line\u2029paragraph\x85next", "third\x1cfile\x1dgroup\x1erecord"]


def write(path, lines, end="\n"):
    path.write_bytes("".join(line + end for line in lines).encode("utf-8"))
    return str(path)


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


def conll_lines():
    """CoNLL lines whose words hold the breaking characters, the (line, word, tag) of each word, the line of
    each sentence's first word."""
    lines = ["-DOCSTART- -X- O", ""]
    words, starts = [], []
    for i, text in enumerate(TEXTS):
        starts.append(len(lines) + 1)
        for word in text.split(" "):
            lines.append(f"{word} NN {'B-PER' if i else 'O'}")
            words.append((len(lines), word, "B-PER" if i else "O"))
        lines.append("")
    return lines, words, starts


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_conll_words_keep_the_characters_and_their_lines_in_predict_and_fine_tuning(tmp_path, end):
    lines, words, starts = conll_lines()
    path = write(tmp_path / "dev.txt", lines, end)  # told by content, as CoNLL-2003's own .txt files
    sentences = conll.read_conll(path, scheme="IOB2")
    assert [(line, word, tag) for s in sentences for line, word, tag in zip(s.lines, s.words, s.tags)] == words
    settings = {"label_names": ["O", "B-PER", "I-PER"], "spans": True}
    examples = read_examples(path, "auto", TaggingKind, settings)
    assert [e.words for e in examples] == [t.split(" ") for t in TEXTS]
    assert [e.line for e in examples] == starts == [3, 8, 10]


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_fine_tuning_task_files_give_a_record_per_line(tmp_path, end):
    tsv_dir, csv_dir = tmp_path / "tsv", tmp_path / "csv"
    tsv_dir.mkdir(), csv_dir.mkdir()
    write(tsv_dir / "train.tsv", ["sentence\tlabel"] + [f"{t}\t{i % 2}" for i, t in enumerate(TEXTS)], end)
    spec = tasks_lib.load_task("toy", str(tsv_dir))
    assert [(e.text_a, e.label) for e in tasks_lib.read_examples(spec, str(tsv_dir))] == [
        (t, i % 2) for i, t in enumerate(TEXTS)]

    write(csv_dir / "train.csv", ["sentence,label", f'"{TEXTS[0]}{end}{TEXTS[1]}",a', f"{TEXTS[2]},b",
                                  f'"lone\rreturn",a'], end)
    spec = tasks_lib.load_task("toy", str(csv_dir), file_format="csv")
    assert [(e.text_a, e.label) for e in tasks_lib.read_examples(spec, str(csv_dir))] == [
        (TEXTS[0] + end + TEXTS[1], 0), (TEXTS[2], 1), ("lone\rreturn", 0)]
    (csv_dir / "train.csv").write_text("sentence,label\nfine,a\nwrong,c\n")
    with pytest.raises(ValueError, match=r"train.csv:3: unknown label 'c'"):
        tasks_lib.read_examples(tasks_lib.load_task("toy", str(csv_dir), file_format="csv", labels=["a", "b"]),
                                str(csv_dir))


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_multiple_choice_files_give_a_question_per_line(tmp_path, end):
    jsonl = write(tmp_path / "dev.jsonl", [json.dumps({"question": t, "choices": [t, "no"], "answer": 1},
                                                      ensure_ascii=False) for t in TEXTS], end)
    assert [(q.line, q.context, q.choices) for q in read_questions(jsonl)] == [
        (i, t, (t, "no")) for i, t in enumerate(TEXTS, 1)]
    swag = write(tmp_path / "val.csv", ["sent1,sent2,ending0,ending1,label", f'"{TEXTS[0]}{end}{TEXTS[1]}",s,a,b,0',
                                        f"{TEXTS[2]},s,a,b,1"], end)
    assert [(q.line, q.context, q.label) for q in read_questions(swag)] == [
        (2, TEXTS[0] + end + TEXTS[1], 0), (4, TEXTS[2], 1)]


def test_squad_json_holding_the_characters_keeps_its_answers(tmp_path):
    context = " ".join(TEXTS)
    start = context.index("third")
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q", "question": "Which?", "answers": [{"text": "third", "answer_start": start}]}]}]}]},
        ensure_ascii=False), encoding="utf-8")
    [example] = squad.read_squad(str(path))
    assert (example.context, example.answers) == (context, (("third", start),))


def test_a_csv_field_of_a_million_characters_is_read(tmp_path):
    big = "word " * 200_000
    assert list(table_rows("big.csv", f'text,label\n"{big}",1\nsmall,0\n', ",")) == [
        (1, ["text", "label"]), (2, [big, "1"]), (3, ["small", "0"])]


@pytest.mark.parametrize("text,line", [
    ('sent1,sent2,ending0,ending1\na,b,c,d\n"open,b,c,d\ne,f,g,h\ni,j,k,l\n', 3),
    ('sent1,sent2,ending0,ending1\na,b,c,"open\ne,f,g,h\n', 2),
])
def test_a_quote_never_closed_is_named_by_the_line_it_opens_on(tmp_path, text, line):
    path = tmp_path / "val.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"^{path}:{line}: a quote opened in the record that starts on this line is "
                                         r"never closed \(the file ends inside the quoted field\)\.$"):
        read_questions(str(path))


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
