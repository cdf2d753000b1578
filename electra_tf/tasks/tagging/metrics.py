"""Token classification metrics: entity-level precision / recall / F1, and token accuracy.

Entities are read from IOB2 tags as conlleval (and seqeval's default mode)
reads them: a span starts at `B-X`, or at an `I-X` that follows `O` or a tag
of another type, and goes on over the `I-X` tags after it. A predicted entity
counts only when its type and both its boundaries equal a true entity's.
Precision, recall and F1 are micro-averaged over all entities of all
sentences, and 0 where their denominator is 0 (as seqeval). Convert BIOES or
IOB1 tags first (`conll.convert_scheme`).

Example:
>>> from electra_tf.tasks.tagging.metrics import entity_scores, token_accuracy
>>> true = [["B-PER", "I-PER", "O", "B-LOC"], ["O"]]
>>> predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["I-MISC"]]
>>> scores = entity_scores(true, predicted)
>>> round(scores["precision"], 4), scores["recall"], round(scores["f1"], 4)
(0.3333, 0.5, 0.4)
>>> scores["per_type"]["PER"]
{'precision': 1.0, 'recall': 1.0, 'f1': 1.0, 'support': 1}
>>> token_accuracy(true, predicted)
0.6
"""

import collections


def get_entities(tags):
    """The entities of one sentence's IOB2 tags.

    Args:
        tags: sequence of str, `O`, `B-X` or `I-X`.

    Returns:
        list of `(type, start, end)`, `end` exclusive.

    Example:
    >>> from electra_tf.tasks.tagging.metrics import get_entities
    >>> get_entities(["B-PER", "I-PER", "I-LOC", "O", "I-ORG", "B-ORG"])
    [('PER', 0, 2), ('LOC', 2, 3), ('ORG', 4, 5), ('ORG', 5, 6)]
    """
    entities, start, current = [], None, None
    for i, tag in enumerate(tags):
        prefix, type_ = _split(tag)
        if start is not None and (prefix != "I" or type_ != current):
            entities.append((current, start, i))
            start = None
        if prefix == "B" or (prefix == "I" and start is None):
            start, current = i, type_
    if start is not None:
        entities.append((current, start, len(tags)))
    return entities


def _split(tag):
    if tag == "O":
        return "O", None
    prefix, dash, type_ = tag.partition("-")
    if prefix not in ("B", "I") or not dash or not type_:
        raise ValueError(f"Not an IOB2 tag (O, B-TYPE or I-TYPE). Received: {tag!r}")
    return prefix, type_


def entity_scores(true_tags, predicted_tags):
    """Entity-level micro precision, recall and F1, and the same per entity type.

    Args:
        true_tags: list of sentences, each a sequence of IOB2 tags.
        predicted_tags: list of sentences, the same lengths.

    Returns:
        dict: `precision`, `recall`, `f1` (floats), `num_true`,
        `num_predicted`, `num_correct` (ints), and `per_type`: type ->
        dict(`precision`, `recall`, `f1`, `support`) for every type that is
        true or predicted somewhere, sorted by type; `support` counts true entities.
    """
    _check_lengths(true_tags, predicted_tags)
    true = collections.Counter()  # per type
    predicted = collections.Counter()
    correct = collections.Counter()
    for true_sentence, predicted_sentence in zip(true_tags, predicted_tags):
        true_entities = set(get_entities(true_sentence))
        predicted_entities = set(get_entities(predicted_sentence))
        true.update(e[0] for e in true_entities)
        predicted.update(e[0] for e in predicted_entities)
        correct.update(e[0] for e in true_entities & predicted_entities)
    scores = _prf(sum(correct.values()), sum(predicted.values()), sum(true.values()))
    scores.update(num_true=sum(true.values()), num_predicted=sum(predicted.values()),
                  num_correct=sum(correct.values()))
    scores["per_type"] = {
        type_: dict(_prf(correct[type_], predicted[type_], true[type_]), support=true[type_])
        for type_ in sorted(true.keys() | predicted.keys())
    }
    return scores


def _prf(num_correct, num_predicted, num_true):
    precision = num_correct / num_predicted if num_predicted else 0.0
    recall = num_correct / num_true if num_true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return dict(precision=precision, recall=recall, f1=f1)


def token_accuracy(true_tags, predicted_tags):
    """Fraction of words whose predicted tag equals the true one (POS tagging's metric).

    Args:
        true_tags: list of sentences, each a sequence of tags (any tag set).
        predicted_tags: list of sentences, the same lengths.

    Returns:
        float; 0.0 when there are no words.
    """
    _check_lengths(true_tags, predicted_tags)
    pairs = [(t, p) for ts, ps in zip(true_tags, predicted_tags) for t, p in zip(ts, ps)]
    return sum(t == p for t, p in pairs) / len(pairs) if pairs else 0.0


def _check_lengths(true_tags, predicted_tags):
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted.")
    for i, (t, p) in enumerate(zip(true_tags, predicted_tags)):
        if len(t) != len(p):
            raise ValueError(f"Sentence {i}: {len(t)} true tags but {len(p)} predicted.")
