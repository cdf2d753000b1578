"""SQuAD reader and QA features: bad files, re-anchoring, windows, and every real answer mapped and back."""

import json
import os

import numpy as np
import pytest

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.tasks.span_qa import features as qa_features
from electra_tf.tasks.span_qa import squad
from electra_tf.tasks.span_qa.metrics import normalize_answer
from electra_tf.tasks.span_qa.squad import QAExample

WORDS = ["where", "is", "paris", "in", "france", "the", "city", "of", "light", "what", "river", "seine",
         "flows", "through", "it", "a", "and", "many", "words", "here", "?", ".", ",", "1990", "##s"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    return WordPieceTokenizer(str(path))


def write(tmp_path, content, name="bad.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def squad_file(qas, context="Paris is in France."):
    return {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_malformed_json_names_the_file(tmp_path):
    path = write(tmp_path, '{"data": [')
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        squad.read_squad(path)


def test_a_lone_surrogate_escape_names_the_file_and_line(tmp_path):
    """JSON's `\\udc00` alone is no character: named by line and column where the document spells it."""
    path = write(tmp_path, '{"data": [{"title": "t", "paragraphs": [\n{"context": "Paris \\udc00", "qas": []}]}]}')
    with pytest.raises(ValueError, match=r"bad.json:2: \\udc00 at column 20 is a lone UTF-16 surrogate"):
        squad.read_squad(path)


def test_wrong_structure_names_the_json_path(tmp_path):
    path = write(tmp_path, squad_file([{"id": "q1", "question": "Where?", "answers": [{"text": "France"}]}]))
    with pytest.raises(ValueError, match=r"bad.json: `data\[0\].paragraphs\[0\].qas\[0\].answers\[0\].answer_start`"):
        squad.read_squad(path)
    path = write(tmp_path, {"data": [{"paragraphs": [{"context": 3, "qas": []}]}]})
    with pytest.raises(ValueError, match=r"`data\[0\].paragraphs\[0\].context` must be a str"):
        squad.read_squad(path)
    with pytest.raises(ValueError, match="no `data` list"):
        squad.read_squad(write(tmp_path, {"version": "1.1"}))


def test_answer_outside_its_context_names_file_and_question(tmp_path):
    path = write(tmp_path, squad_file([{"id": "q7", "question": "Where?",
                                        "answers": [{"text": "France", "answer_start": 40}]}]))
    with pytest.raises(ValueError, match=r"bad.json, question id 'q7'.*outside its context of 19 characters"):
        squad.read_squad(path)


def test_v2_impossible_and_empty_answers(tmp_path):
    path = write(tmp_path, squad_file([
        {"id": "a", "question": "Where?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "France", "answer_start": 12}]},
        {"id": "b", "question": "Where?", "answers": []},
        {"id": "c", "question": "Where?", "answers": [{"text": "France", "answer_start": 12}]}]))
    examples = squad.read_squad(path)
    assert [(e.is_impossible, e.answers) for e in examples] == [(True, ()), (True, ()), (False, (("France", 12),))]
    assert squad.gold_answers(examples) == {"a": [""], "b": [""], "c": ["France"]}
    assert len(squad.read_squad(path, limit=2)) == 2


def test_reanchoring_and_unmappable_answers(tokenizer):
    context = "Paris is  in France, the city of light."
    examples = [QAExample("shifted", "Where is Paris?", context, (("France", 11),)),  # off by one (double space)
                QAExample("padded", "Where is Paris?", context, ((" France ", 12),)),
                QAExample("missing", "Where is Paris?", context, (("Seine", 0),)),
                QAExample("partial", "What?", "the 1990s", (("99", 6),))]
    features = qa_features.build_qa_features(tokenizer, examples, seq_length=32, training=True)
    stats = features.stats
    assert (stats["reanchored"], stats["unmappable"], stats["partial"], stats["skipped_examples"]) == (2, 1, 1, 1)
    assert stats["unmappable_reasons"] == {"answer text not found at or near its answer_start": 1}
    a = features.arrays
    for row in range(2):
        s, e = a["start_positions"][row], a["end_positions"][row]
        assert context[a["token_start"][row, s]:a["token_end"][row, e]] == "France"


def test_long_question_is_truncated(tokenizer):
    question = " ".join(["where"] * 100)
    features = qa_features.build_qa_features(tokenizer, [QAExample("q", question, "Paris is in France.")],
                                             seq_length=80, max_query_length=64)
    assert features.stats["truncated_questions"] == 1
    assert list(features.arrays["segment_ids"][0]).index(1) == 66  # [CLS] + 64 question pieces + [SEP]


def test_windows_over_a_long_context(tokenizer):
    """A context 3x the window with the answer at its end: only the last window holds it."""
    filler = "many words here and " * 24  # 96 pieces
    context = filler + "Paris is in France."
    example = QAExample("q", "Where is Paris?", context, (("France", context.index("France")),))
    features = qa_features.build_qa_features(tokenizer, [example], seq_length=32, doc_stride=8, training=True)
    a = features.arrays
    num_pieces = 101
    assert len(a["token_ids"]) == len(qa_features.plan_windows(num_pieces, 32 - 5 - 3, 8)) > 3
    labelled = np.flatnonzero(a["start_positions"])
    assert labelled.tolist() == [len(a["token_ids"]) - 1]  # windows without the answer point at [CLS]
    row = labelled[0]
    assert context[a["token_start"][row, a["start_positions"][row]]:a["token_end"][row, a["end_positions"][row]]] \
        == "France"
    # each context piece is "max context" in exactly one window
    offsets = a["token_start"][a["max_context"]]
    assert len(offsets) == num_pieces and len(set(offsets.tolist())) == num_pieces


def real_files():
    import pathlib

    default = pathlib.Path.home() / ".cache" / "electra_tf" / "benchmarks"
    root = pathlib.Path(os.environ.get("ELECTRA_TF_BENCHMARKS", default))  # as conftest.benchmarks_dir
    files = [root / "squad_v1.1" / "train.json", root / "squad_v1.1" / "dev.json",
             root / "squad_shifts" / "new_wiki.json"]
    if not all(os.path.exists(f) for f in files):
        pytest.skip(f"SQuAD not fetched into {root} (shared/data/build/fetch_finetune_benchmarks.sh)")
    return files


@pytest.mark.large
def test_every_real_answer_maps_to_pieces_and_back():
    """All answers of the fetched SQuAD v1.1 and SQuAD-Shifts new_wiki: mapped to pieces, and the text of
    those pieces normalises to the answer's, except those counted with a reason (a boundary inside a piece)."""
    vocab = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "vocab",
                         "bert_uncased_vocab.txt")
    if not os.path.exists(vocab):
        pytest.skip("shared vocabulary missing")
    tokenizer = WordPieceTokenizer(vocab)
    for path in real_files():
        examples = squad.read_squad(str(path))
        stats = qa_features.build_qa_features(tokenizer, examples, 384, 128, 64).stats
        assert stats["unmappable"] == 0, (path, stats)
        contexts = list(dict.fromkeys(e.context for e in examples))
        pieces = dict(zip(contexts, qa_features.tokenize_with_char_offsets(tokenizer, contexts)))
        mismatched = 0
        for e in examples:
            _, starts, ends = pieces[e.context]
            for text, answer_start in e.answers:
                s, t, _ = qa_features.locate_answer(e.context, text, answer_start)
                first, last = qa_features.answer_token_span(starts, ends, s, t)
                back = e.context[starts[first]:ends[last]]
                if normalize_answer(back) != normalize_answer(text):
                    mismatched += 1
                    assert starts[first] < s or ends[last] > t  # the reason: a boundary inside a piece
        assert mismatched <= stats["partial"], (path, mismatched, stats)
        print(f"{path.name}: {stats['answers']} answers, {stats['exact']} exact, {stats['reanchored']} re-anchored, "
              f"{stats['partial']} inside a piece ({mismatched} normalise differently), 0 unmappable")
