"""Tagging serving: raw text in, words / tags / entities with character offsets out, against a
plain-Python reading of the same model (unicodedata word split, seqeval entities)."""

import json
import os
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.token_classifier import ElectraTokenClassifier

VOCAB = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "vocab",
                                     "bert_uncased_vocab.txt"))
LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
SEQ_LENGTH = 16
TEXTS = ["Peter Blackburn lives in Zürich, near the café!", "",
         "EU rejects German call to boycott British lamb, and many more words past the window here.",
         "  New   York\tis big  "]


def python_words(text):
    """BERT's basic split by hand: whitespace separates, punctuation/symbol characters stand alone."""
    words, start = [], None
    for i, char in enumerate(text + " "):
        alone = unicodedata.category(char)[0] in "PS"
        if char.isspace() or alone:
            if start is not None:
                words.append((text[start:i], start, i))
                start = None
            if alone:
                words.append((char, i, i + 1))
        elif start is None:
            start = i
    return words


def python_tags(tagger, tokenizer, words):
    pieces = [tokenizer.tokenize([w]).flat_values.numpy().tolist() or [tokenizer.unk_id] for w, _, _ in words]
    flat = [p for word in pieces for p in word][:SEQ_LENGTH - 2]
    ids = np.array([[tokenizer.cls_id] + flat + [tokenizer.sep_id]], np.int32)
    best = tagger({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}).numpy()[0].argmax(-1)
    firsts = np.cumsum([0] + [len(p) for p in pieces[:-1]]) + 1
    return [LABELS[best[f]] if f <= SEQ_LENGTH - 2 else "O" for f in firsts]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(VOCAB):
        pytest.skip("shared vocabulary missing")
    from electra_tf.export.serving import export_serving, load_finetuned
    from electra_tf.run_files import FINETUNE_CONFIG_FILE, TOKEN_CLASSIFIER_FILE

    keras.utils.set_random_seed(3)
    encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    tagger = ElectraTokenClassifier(encoder, num_labels=len(LABELS))
    tagger.build()
    run = tmp_path_factory.mktemp("finetuned")  # as a tagging `finetune` run leaves it
    tagger.save(str(run / TOKEN_CLASSIFIER_FILE))
    (run / "vocab.txt").write_text(open(VOCAB).read())
    (run / FINETUNE_CONFIG_FILE).write_text(json.dumps({"task": "ner", "kind": "tagging", "label_names": LABELS,
                                                        "max_seq_length": SEQ_LENGTH}))
    model, vocab_file, config = load_finetuned(str(run))  # what `python -m electra_tf.export --kind serving` does
    assert isinstance(model, ElectraTokenClassifier)
    path = export_serving(model, vocab_file, str(tmp_path_factory.mktemp("serving")), "ner", 1,
                          label_names=config["label_names"], seq_length=config["max_seq_length"],
                          task=config["task"])
    return tagger, path


def test_words_tags_and_entities_match_a_python_reading(exported):
    from seqeval.metrics.sequence_labeling import get_entities

    tagger, path = exported
    serve = tf.saved_model.load(path).signatures["serving_default"]
    out = {k: v.numpy() for k, v in serve(text=tf.constant(TEXTS)).items()}
    tokenizer = WordPieceTokenizer(VOCAB)
    total_entities = 0
    for i, text in enumerate(TEXTS):
        words = python_words(text)
        n = int(out["num_words"][i])
        assert n == len(words)
        assert [w.decode() for w in out["words"][i, :n]] == [w for w, _, _ in words]
        assert out["word_start"][i, :n].tolist() == [s for _, s, _ in words]  # character offsets
        assert out["word_end"][i, :n].tolist() == [e for _, _, e in words]
        tags = python_tags(tagger, tokenizer, words) if words else []
        assert [t.decode() for t in out["tags"][i, :n]] == tags
        entities = [(type_, words[a][1], words[b][2]) for type_, a, b in get_entities(tags)]
        m = int(out["num_entities"][i])
        got = list(zip([t.decode() for t in out["entity_type"][i, :m]], out["entity_start"][i, :m].tolist(),
                       out["entity_end"][i, :m].tolist()))
        assert got == entities
        assert [t.decode() for t in out["entity_text"][i, :m]] == [text[s:e] for _, s, e in entities]
        total_entities += m
    assert total_entities > 3  # random weights: the span logic was exercised
    assert "O" in [t.decode() for t in out["tags"][2]]


def test_assets_and_wrong_label_count(exported, tmp_path):
    from electra_tf.export.tagging_serving import export_tagging_serving

    tagger, path = exported
    config = json.loads(open(os.path.join(path, "assets", "serving_config.json")).read())
    assert config["kind"] == "tagging" and config["label_names"] == LABELS and config["spans"] is True
    with pytest.raises(ValueError, match="one label name per output unit"):
        export_tagging_serving(tagger, VOCAB, str(tmp_path), label_names=LABELS[:2])
