"""SQuAD EM / F1 on hand-computed cases, the null threshold, and n-best post-processing across windows.

No independent SQuAD metric (`evaluate`, `datasets`) is installed in the project's environment, so the
official script's arithmetic is checked on cases worked out by hand.
"""

import numpy as np
import pytest

from electra_tf.tasks.span_qa import features as qa_features

from electra_tf.tasks.span_qa import metrics as qa_metrics
from electra_tf.tasks.span_qa.metrics import exact_match, f1_score, normalize_answer, squad_scores
from electra_tf.tasks.span_qa.squad import QAExample, swap_contexts


@pytest.mark.parametrize("text, normal", [
    ("The Eiffel Tower", "eiffel tower"),
    ("an apple, a pear and THE plum.", "apple pear and plum"),
    ("  Denver   Broncos!! ", "denver broncos"),
    ("theater of the absurd", "theater of absurd"),  # "the" only as a word
    ("U.S.-based", "usbased"),
    ("", ""),
])
def test_normalisation(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Broncos", "Broncos.") == 1.0
    assert exact_match("Denver Broncos", "Broncos") == 0.0
    # pred {denver, broncos, team}, gold {broncos}: P = 1/3, R = 1, F1 = 0.5
    assert f1_score("Denver Broncos team", "Broncos") == pytest.approx(0.5)
    # repeated tokens count once per occurrence: pred [a1, b, b], gold [b, c]: same 1, P 1/3, R 1/2, F1 0.4
    assert f1_score("x b b", "b c") == pytest.approx(0.4)
    assert f1_score("", "") == 1.0 and f1_score("", "Paris") == 0.0 and f1_score("Paris", "") == 0.0
    assert f1_score("the", "a") == 1.0  # both normalise to nothing


def test_max_over_gold_answers_and_empty_predictions():
    golds = {"q1": ["Denver Broncos", "The Broncos", "Broncos"],
             "q2": ["Saint Bernadette Soubirous"],
             "q3": ["1990"]}
    predictions = {"q1": "broncos", "q2": "Bernadette"}  # q3 missing: scored as ""
    # q1: EM 1 (matches "The Broncos" and "Broncos"); q2: F1 = 2 * (1 * 1/3) / (1 + 1/3) = 0.5; q3: 0
    assert squad_scores(golds, predictions) == pytest.approx({"exact": 100 / 3, "f1": 150 / 3, "total": 3})


def test_has_ans_and_no_ans():
    golds = {"a": ["Paris"], "b": [], "c": [""], "d": ["Rome"]}
    predictions = {"a": "Paris", "b": "", "c": "Lyon", "d": ""}
    scores = squad_scores(golds, predictions)
    assert scores["HasAns_exact"] == 50.0 and scores["HasAns_total"] == 2
    assert scores["NoAns_exact"] == 50.0 and scores["NoAns_total"] == 2
    assert scores["exact"] == scores["f1"] == 50.0


def test_best_threshold():
    golds = {"a": ["Paris"], "b": [""], "c": ["Rome"], "d": [""]}
    spans = {"a": "Paris", "b": "Lyon", "c": "Milan", "d": "Oslo"}
    null_odds = {"a": -3.0, "b": 2.0, "c": 1.0, "d": -1.0}
    threshold, f1 = qa_metrics.best_threshold(golds, spans, null_odds)
    # answering only "a" (odds <= -3) gives a, b, c(null: 0), d: 1 + 1 + 0 + 1 = 3 -> 75 %
    assert threshold == -3.0 and f1 == 75.0
    predictions = qa_metrics.apply_threshold(spans, null_odds, threshold)
    assert predictions == {"a": "Paris", "b": "", "c": "", "d": ""}
    assert squad_scores(golds, predictions)["f1"] == f1


WORDS = ["where", "is", "paris", "in", "france", "many", "words", "here", "and", "?", ".", "rome", "italy"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from electra_tf.data.tokenizer import WordPieceTokenizer

    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    return WordPieceTokenizer(str(path))


def oracle_outputs(features, k=3):
    """Beam outputs that put the gold span (or a decoy) first: a deterministic stand-in for a trained model."""
    a = features.arrays
    n = len(a["token_ids"])
    start_index = np.zeros((n, k), np.int32)
    end_index = np.zeros((n, k, k), np.int32)
    start_lp = np.full((n, k), -5.0, np.float32)
    end_lp = np.full((n, k, k), -5.0, np.float32)
    for row in range(n):
        context = np.flatnonzero(a["token_start"][row] >= 0)
        if a["start_positions"][row]:
            start_index[row, 0], end_index[row, 0, 0] = a["start_positions"][row], a["end_positions"][row]
            start_lp[row, 0], end_lp[row, 0, 0] = -0.1, -0.1
        else:  # a weaker decoy: the window's first context piece
            start_index[row, 0] = end_index[row, 0, 0] = context[0]
            start_lp[row, 0], end_lp[row, 0, 0] = -1.0, -1.0
    return {"start_top_index": start_index, "end_top_index": end_index, "start_top_log_probs": start_lp,
            "end_top_log_probs": end_lp, "answerable_logit": np.where(a["start_positions"] > 0, -3.0, 3.0)}


def long_example():
    filler = "many words here and " * 30  # 120 pieces: more than 3 windows of 32
    context = filler + "Paris is in France."
    return QAExample("long", "Where is Paris?", context, (("France", context.index("France")),))


def test_answer_in_the_last_window_of_a_long_context(tokenizer):
    example = long_example()
    features = qa_features.build_qa_features(tokenizer, [example], seq_length=32, doc_stride=16, training=True)
    assert len(features.arrays["token_ids"]) > 3 and len(example.context) > 3 * 32
    answers, n_best = qa_metrics.postprocess(features, oracle_outputs(features), features.examples)
    assert answers[0].text == "France"
    assert example.context[answers[0].char_start:answers[0].char_end] == "France"
    assert len(n_best[0]) > 1  # the decoys of the other windows are ranked below


def test_predictions_do_not_depend_on_window_order(tokenizer):
    examples = [long_example(), QAExample("short", "Where is Rome?", "Rome is in Italy.", (("Italy", 11),))]
    features = qa_features.build_qa_features(tokenizer, examples, seq_length=32, doc_stride=16, training=True)
    outputs = oracle_outputs(features)
    # every window proposes the same score for its own first piece: ties across windows
    outputs["start_top_log_probs"][:] = -1.0
    outputs["end_top_log_probs"][:] = -1.0
    first, _ = qa_metrics.postprocess(features, outputs, features.examples)
    order = np.random.default_rng(0).permutation(len(features.arrays["token_ids"]))
    shuffled = qa_features.QAFeatures({k: v[order] for k, v in features.arrays.items()}, features.stats,
                                      features.examples)
    second, _ = qa_metrics.postprocess(shuffled, {k: v[order] for k, v in outputs.items()}, features.examples)
    assert first == second


def test_unanswerable_questions_from_another_articles_context(tokenizer):
    """No SQuAD 2.0 data here: questions paired with another article's context are the unanswerable ones."""
    examples = [QAExample("p", "Where is Paris?", "Paris is in France.", (("France", 12),), title="paris"),
                QAExample("r", "Where is Rome?", "Rome is in Italy.", (("Italy", 11),), title="rome")]
    swapped = swap_contexts(examples)
    assert [(e.context, e.is_impossible, e.answers) for e in swapped] == [
        ("Rome is in Italy.", True, ()), ("Paris is in France.", True, ())]
    everything = examples + swapped
    features = qa_features.build_qa_features(tokenizer, everything, seq_length=32, training=True)
    assert features.arrays["is_impossible"].tolist() == [0, 0, 1, 1]
    assert features.arrays["start_positions"][2:].tolist() == [0, 0]  # unanswerable: [CLS]
    answers, _ = qa_metrics.postprocess(features, oracle_outputs(features), features.examples)
    spans = {e.qid: a.text for e, a in zip(everything, answers)}
    null_odds = {e.qid: a.null_score - a.score for e, a in zip(everything, answers)}
    golds = {e.qid: [t for t, _ in e.answers] for e in everything}
    threshold, f1 = qa_metrics.best_threshold(golds, spans, null_odds)
    assert f1 == 100.0
    scores = squad_scores(golds, qa_metrics.apply_threshold(spans, null_odds, threshold))
    assert scores["HasAns_f1"] == scores["NoAns_f1"] == 100.0
