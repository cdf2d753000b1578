"""Entity-level P/R/F1 and token accuracy against seqeval (default mode) and hand-computed cases."""

import random

import pytest
from seqeval.metrics import (accuracy_score, classification_report, f1_score, precision_score,
                             recall_score)

from electra_tf.tasks.tagging import conll
from electra_tf.tasks.tagging.metrics import entity_scores, get_entities, token_accuracy

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seqeval's zero-division warnings

TYPES = ("PER", "LOC", "ORG")


def test_get_entities_by_hand():
    assert get_entities(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]
    assert get_entities(["O", "I-PER", "I-PER"]) == [("PER", 1, 3)]  # I- after O starts one
    assert get_entities(["B-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 1), ("LOC", 1, 3)]  # type switch
    assert get_entities(["B-PER", "B-PER", "I-PER"]) == [("PER", 0, 1), ("PER", 1, 3)]
    assert get_entities([]) == [] and get_entities(["O", "O"]) == []


def test_scores_by_hand():
    true = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"], ["B-ORG", "O", "B-PER"]]
    # PER(0,2) right; LOC cut short (wrong boundary); ORG right though written I-; PER typed LOC.
    # Predicted: PER 1 (1 right), LOC 2 (0 right), ORG 1 (1 right); true: PER 2, LOC 1, ORG 1.
    predicted = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["I-ORG", "O", "B-LOC"]]
    scores = entity_scores(true, predicted)
    assert (scores["num_true"], scores["num_predicted"], scores["num_correct"]) == (4, 4, 2)
    assert scores["precision"] == 0.5 and scores["recall"] == 0.5 and scores["f1"] == 0.5
    assert scores["per_type"] == {
        "LOC": dict(precision=0.0, recall=0.0, f1=0.0, support=1),
        "ORG": dict(precision=1.0, recall=1.0, f1=1.0, support=1),
        "PER": dict(precision=1.0, recall=0.5, f1=pytest.approx(2 / 3), support=2),
    }
    assert token_accuracy(true, predicted) == 5 / 8
    empty = entity_scores([["O"]], [["O"]])
    assert (empty["precision"], empty["recall"], empty["f1"], empty["per_type"]) == (0.0, 0.0, 0.0, {})


def test_errors():
    with pytest.raises(ValueError, match="Sentence 1: 2 true tags but 1 predicted"):
        entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="2 true sentences but 1 predicted"):
        token_accuracy([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="Received: 'S-PER'"):
        entity_scores([["S-PER"]], [["O"]])


def assert_equal_to_seqeval(true, predicted, seqeval_true=None, seqeval_predicted=None):
    """Our scores on `true`/`predicted` equal seqeval's on the same entities (by default the same tags)."""
    seqeval_true = seqeval_true or true
    seqeval_predicted = seqeval_predicted or predicted
    scores = entity_scores(true, predicted)
    assert scores["precision"] == pytest.approx(precision_score(seqeval_true, seqeval_predicted), abs=1e-12)
    assert scores["recall"] == pytest.approx(recall_score(seqeval_true, seqeval_predicted), abs=1e-12)
    assert scores["f1"] == pytest.approx(f1_score(seqeval_true, seqeval_predicted), abs=1e-12)
    report = classification_report(seqeval_true, seqeval_predicted, output_dict=True)
    types = {k: v for k, v in report.items() if not k.endswith(" avg")}
    assert sorted(scores["per_type"]) == sorted(types)
    for type_, expected in types.items():
        got = scores["per_type"][type_]
        assert got["precision"] == pytest.approx(expected["precision"], abs=1e-12)
        assert got["recall"] == pytest.approx(expected["recall"], abs=1e-12)
        assert got["f1"] == pytest.approx(expected["f1-score"], abs=1e-12)
        assert got["support"] == expected["support"]
    assert scores["num_true"] == report["micro avg"]["support"]
    assert token_accuracy(true, predicted) == pytest.approx(accuracy_score(true, predicted), abs=1e-12)


def random_tags(rng, prefixes, length):
    """Any sequence: I- after O, type switches inside spans, B- inside spans."""
    return [rng.choice(["O", "O"] + [f"{p}-{t}" for p in prefixes for t in TYPES]) for _ in range(length)]


def corrupt(rng, tags, prefixes="BI"):
    """A prediction near `tags`: some tags swapped for random ones."""
    return [rng.choice(["O"] + [f"{p}-{t}" for p in prefixes for t in TYPES]) if rng.random() < 0.2 else t
            for t in tags]


@pytest.mark.parametrize("seed", range(20))
def test_random_iob2_including_ill_formed_equals_seqeval(seed):
    rng = random.Random(seed)
    true = [random_tags(rng, "BI", rng.randint(1, 15)) for _ in range(rng.randint(1, 30))]
    predicted = [corrupt(rng, t) if rng.random() < 0.7 else random_tags(rng, "BI", len(t)) for t in true]
    assert_equal_to_seqeval(true, predicted)


@pytest.mark.parametrize("seed", range(20))
def test_random_bioes_converted_equals_seqeval_on_bioes(seed):
    # seqeval's default mode reads BIOES tags itself; ours reads them after conversion to IOB2.
    rng = random.Random(seed)
    true = [random_tags(rng, "BIES", rng.randint(1, 15)) for _ in range(rng.randint(1, 30))]
    predicted = [corrupt(rng, t, "BIES") for t in true]
    assert_equal_to_seqeval([conll.convert_scheme(t, "BIOES") for t in true],
                            [conll.convert_scheme(p, "BIOES") for p in predicted], true, predicted)


def test_real_conll2003_dev_with_corrupted_predictions(conll2003_dir):
    """Every dev sentence of CoNLL-2003 with predictions made by a deterministic perturbation of the
    gold tags (O, B-X, I-X of a random type, or B- turned I-), ill-formed IOB2 included."""
    true = [list(s.tags) for s in conll.CONLL2003.read(conll2003_dir, "dev")]
    perfect = entity_scores(true, true)
    assert (perfect["f1"], perfect["num_true"], perfect["per_type"]["PER"]["support"]) == (1.0, 5942, 1842)
    rng = random.Random(0)
    types = ("PER", "LOC", "ORG", "MISC")
    for rate in (0.02, 0.1):
        predicted = []
        for sentence in true:
            tags = list(sentence)
            for i, tag in enumerate(tags):
                if rng.random() < rate:
                    tags[i] = rng.choice(["O", f"B-{rng.choice(types)}", f"I-{rng.choice(types)}",
                                          tag.replace("B-", "I-")])
            predicted.append(tags)
        ill_formed = sum(t.startswith("I-") and (i == 0 or p[i - 1][2:] != t[2:])
                         for p in predicted for i, t in enumerate(p))
        assert ill_formed > 20  # the perturbation includes I- tags that start spans (ill-formed IOB2)
        assert_equal_to_seqeval(true, predicted)
