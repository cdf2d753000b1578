"""Extractive QA: window outputs -> answers (n-best across windows), and the official SQuAD EM / F1.

Post-processing (`postprocess`): every window proposes the model's beam of
spans (`start_n_top` starts x `end_n_top` ends, scored `log p(start) + log
p(end | start)`); a span counts when both ends are context pieces, the start
piece is predicted from this window (`max_context`), `end >= start` and it has
at most `max_answer_length` pieces. The spans of all the question's windows are
ranked together (ties broken by position in the context, so the result does not
depend on window order); the answer is the best one's text, cut from the
context as whole words: from the start of its first piece's word to the end of
its last piece's word (`features.word_offsets`; a span starting at `##ow`
of "yellow." answers "yellow.", not "ow."). For SQuAD 2.0 the null score is the
answerability logit (the lowest over the windows), and a question is answered
"" when `null score - best span score > threshold`; `best_threshold` tunes the
threshold on dev for the best F1.

Metrics (`squad_scores`): the official `evaluate-v2.0.py` arithmetic. Answers are
normalised (lower-case, punctuation removed, articles a/an/the removed,
whitespace collapsed); exact match and token F1 take the max over the gold
answers; an unanswerable question's gold is `[""]`; scores are percentages,
with HasAns / NoAns breakdowns when both kinds are present.

Example:
>>> from electra_tf.tasks.span_qa.metrics import f1_score, normalize_answer, squad_scores
>>> normalize_answer("The  Eiffel-Tower!")
'eiffeltower'
>>> round(f1_score("the cat sat", "a cat sat down"), 4)
0.8
>>> squad_scores({"q1": ["Paris", "City of Paris"], "q2": ["France"]}, {"q1": "the city of Paris", "q2": ""})
{'exact': 50.0, 'f1': 50.0, 'total': 2}
"""

import collections
import re
import string

import numpy as np

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower-case, remove punctuation, articles and extra whitespace (the official SQuAD normalisation)."""
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold):
    """Token F1 of the normalised texts; 1 when both are empty, 0 when only one is."""
    predicted, true = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not true:
        return float(predicted == true)
    same = sum((collections.Counter(predicted) & collections.Counter(true)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(true)
    return 2 * precision * recall / (precision + recall)


def gold_texts(answers):
    """The gold list the official v2 script scores against: non-empty (normalised) answers, else `[""]`."""
    return [a for a in answers if normalize_answer(a)] or [""]


def per_question_scores(golds, predictions):
    """dict qid -> (exact, f1) in [0, 1], each the max over the gold answers (a missing prediction is "")."""
    scores = {}
    for qid, answers in golds.items():
        answers = gold_texts(answers)
        predicted = predictions.get(qid, "")
        scores[qid] = (max(exact_match(predicted, a) for a in answers), max(f1_score(predicted, a) for a in answers))
    return scores


def squad_scores(golds, predictions):
    """Official EM / F1 (percent) over `golds`; HasAns / NoAns parts when both kinds of question are present.

    Args:
        golds: dict qid -> list of gold answer texts (`[""]` or `[]`: unanswerable).
        predictions: dict qid -> predicted text ("" = no answer).
    """
    scores = per_question_scores(golds, predictions)

    def summary(qids, prefix=""):
        n = len(qids)
        return {f"{prefix}exact": 100.0 * sum(scores[q][0] for q in qids) / max(n, 1),
                f"{prefix}f1": 100.0 * sum(scores[q][1] for q in qids) / max(n, 1),
                f"{prefix}total": n}

    out = summary(list(golds))
    has_answer = [q for q, a in golds.items() if gold_texts(a) != [""]]
    no_answer = [q for q in golds if q not in set(has_answer)]
    if has_answer and no_answer:
        out.update(summary(has_answer, "HasAns_"))
        out.update(summary(no_answer, "NoAns_"))
    return out


def best_threshold(golds, span_predictions, null_odds):
    """The null-score threshold with the best dev F1 (official `find_best_thresh`, on F1).

    Args:
        golds: dict qid -> gold texts.
        span_predictions: dict qid -> the best span's text (the answer if not null).
        null_odds: dict qid -> null score minus best span score.

    Returns:
        `(threshold, f1)`: answering "" when `null_odds > threshold` gives that F1 (percent).
    """
    qids = sorted(golds, key=lambda q: null_odds[q])
    span = np.array([per_question_scores({q: golds[q]}, span_predictions)[q][1] for q in qids])
    null = np.array([float(gold_texts(golds[q]) == [""]) for q in qids])
    odds = np.array([null_odds[q] for q in qids])
    # threshold below every odds: all null; at odds[k]: the first k + 1 answered with their span
    totals = np.concatenate([[null.sum()], null.sum() + np.cumsum(span - null)])
    thresholds = np.concatenate([[odds[0] - 1.0 if len(odds) else 0.0], odds])
    best = int(np.argmax(totals))
    return float(thresholds[best]), 100.0 * float(totals[best]) / max(len(qids), 1)


def apply_threshold(span_predictions, null_odds, threshold):
    return {q: ("" if null_odds[q] > threshold else text) for q, text in span_predictions.items()}


Answer = collections.namedtuple("Answer", "text char_start char_end score null_score")


def postprocess(features, outputs, examples, n_best_size=20, max_answer_length=30):
    """Every example's best answer from the beam outputs of its windows.

    Args:
        features: `features.QAFeatures` (`token_start`, `word_start`, `word_end`,
            `max_context`, `example_index` are read).
        outputs: dict of arrays, one row per window: `start_top_log_probs`
            `(n, k)`, `start_top_index` `(n, k)`, `end_top_log_probs` `(n, k, k2)`,
            `end_top_index` `(n, k, k2)`, and `answerable_logit` `(n,)` (optional).
        examples: the examples of `features` (`features.examples`).
        n_best_size: int. Spans kept per example (ranked; the first is the answer).
        max_answer_length: int. Pieces per answer at most.

    Returns:
        `(answers, n_best)`: list of `Answer` (text "" and offsets -1 when no span
        is valid; `null_score` the lowest answerability logit, or None) and
        list of n-best lists of `Answer`, both in example order.
    """
    a = features.arrays
    candidates = collections.defaultdict(list)
    null_scores = {}
    start_index = np.asarray(outputs["start_top_index"])
    end_index = np.asarray(outputs["end_top_index"])
    start_lp = np.asarray(outputs["start_top_log_probs"], np.float64)
    end_lp = np.asarray(outputs["end_top_log_probs"], np.float64)
    answerable = outputs.get("answerable_logit")
    for row in range(len(a["example_index"])):
        example = int(a["example_index"][row])
        if answerable is not None:
            logit = float(np.asarray(answerable)[row])
            null_scores[example] = min(null_scores.get(example, logit), logit)
        token_start, max_context = a["token_start"][row], a["max_context"][row]
        word_start, word_end = a["word_start"][row], a["word_end"][row]
        seq_length = len(token_start)
        for i in range(start_index.shape[1]):
            s = int(start_index[row, i])
            if not 0 <= s < seq_length or token_start[s] < 0 or not max_context[s]:
                continue
            for j in range(end_index.shape[2]):
                e = int(end_index[row, i, j])
                if not s <= e < seq_length or token_start[e] < 0 or e - s + 1 > max_answer_length:
                    continue
                candidates[example].append((float(start_lp[row, i] + end_lp[row, i, j]),
                                            int(word_start[s]), int(word_end[e])))
    answers, n_best = [], []
    for index, example in enumerate(examples):
        ranked = sorted(set(candidates[index]), key=lambda c: (-c[0], c[1], c[2]))
        null = null_scores.get(index)
        best, seen = [], set()
        for score, start, end in ranked:
            text = example.context[start:end]
            if text in seen:
                continue
            seen.add(text)
            best.append(Answer(text, start, end, score, null))
            if len(best) >= n_best_size:
                break
        n_best.append(best)
        answers.append(best[0] if best else Answer("", -1, -1, float("-inf"), null))
    return answers, n_best
