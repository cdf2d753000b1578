"""Extractive QA answers are whole words of the context, in training-time evaluation (`qa_metrics.postprocess`)
and in the served graph (`qa_serving`) alike: a span whose first piece is `##ow` of "yellow." answers "yellow.",
not "ow.". The reference is the BERT basic tokenizer's words written out here (runs of letters and digits,
each punctuation character a word of its own)."""

import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import shared_data

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "sky", "is", "ye", "##ll", "##ow", ".", "what",
          "colour", "?", "and", "grass", "green", "##ish", "today"]
CONTEXT = "The sky is yellow. And the grass is greenish today."
QUESTION = "What colour is the sky?"


def reference_answer(context, start, end):
    """The whole words of `context` around characters [start, end): BERT's basic words, by a regular expression."""
    words = [(m.start(), m.end()) for m in re.finditer(r"[^\W_]+|[^\w\s]|_", context)]
    first = next(s for s, e in words if s <= start < e)
    last = next(e for s, e in words if s <= end - 1 < e)
    return context[first:last]


def piece_spans(tokenizer, text):
    from electra_tf.tasks.span_qa.features import tokenize_with_char_offsets

    ids, starts, ends = tokenize_with_char_offsets(tokenizer, [text])[0]
    return [tokenizer.vocab[i] for i in ids], starts, ends


def test_word_offsets_are_the_basic_tokenizers_words_for_every_span_of_a_real_text():
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.span_qa.features import tokenize_with_char_offsets, word_offsets

    tokenizer = WordPieceTokenizer(str(shared_data("vocab", "bert_uncased_vocab.txt")))
    text = ("Unbelievably, the yellowish U.S.-based outfitters re-tokenized 1990s' catalogues: naïve "
            "Zürich-bound hitchhikers (circa 1854) didn't mind the gargantuan sesquipedalian footnotes.")
    ids, starts, ends = tokenize_with_char_offsets(tokenizer, [text])[0]
    word_start, word_end = word_offsets(ids, starts, ends, tokenizer.continues_word())
    assert sum(tokenizer.vocab[i].startswith("##") for i in ids) >= 10  # many words of several pieces
    for s in range(len(ids)):
        for e in range(s, len(ids)):
            assert text[word_start[s]:word_end[e]] == reference_answer(text, starts[s], ends[e]), (s, e)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A tiny vocabulary in which "yellow" is `ye ##ll ##ow`, and an untrained question answerer over it."""
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer

    vocab = tmp_path_factory.mktemp("qa_words") / "vocab.txt"
    vocab.write_text("\n".join(TOKENS) + "\n")
    keras.utils.set_random_seed(3)
    encoder = ElectraEncoder(vocab_size=len(TOKENS), num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    model = ElectraQuestionAnswerer(encoder, start_n_top=2, end_n_top=2, joint_hidden_dim=16)
    model.build()
    return model, str(vocab), WordPieceTokenizer(str(vocab))


def beam(inputs, start_piece, end_piece, ids):
    """Beam outputs whose best span is the first `start_piece` .. first `end_piece` of each window's context."""
    context = tf.equal(inputs["segment_ids"], 1)
    start, end = (tf.argmax(tf.cast(tf.equal(inputs["token_ids"], ids[piece]) & context, tf.int32), axis=1,
                            output_type=tf.int32) for piece in (start_piece, end_piece))
    n = tf.shape(inputs["token_ids"])[0]
    return {"start_top_index": tf.stack([start, tf.zeros_like(start)], 1),
            "start_top_log_probs": tf.tile(tf.constant([[-0.1, -5.0]]), [n, 1]),
            "end_top_index": tf.stack([tf.stack([end, end], 1), tf.stack([end, end], 1)], 1),
            "end_top_log_probs": tf.tile(tf.constant([[[-0.2, -6.0], [-7.0, -8.0]]]), [n, 1, 1])}


@pytest.mark.parametrize("start_piece,end_piece,answer", [
    ("##ow", ".", "yellow."),  # starts inside "yellow"
    ("sky", "##ll", "sky is yellow"),  # ends inside it
    ("##ish", "today", "greenish today"),
    ("sky", "sky", "sky"),  # a whole word stays as it is
])
def test_evaluation_and_the_served_graph_answer_whole_words(toy, start_piece, end_piece, answer):
    from electra_tf.tasks.span_qa.serving import qa_serving_module
    from electra_tf.tasks.span_qa import features as qa_features
    from electra_tf.tasks.span_qa import metrics as qa_metrics
    from electra_tf.tasks.span_qa.squad import QAExample

    model, vocab, tokenizer = toy
    ids = {token: i for i, token in enumerate(TOKENS)}
    pieces, starts, ends = piece_spans(tokenizer, CONTEXT)
    assert pieces[3:7] == ["ye", "##ll", "##ow", "."]
    s, e = pieces.index(start_piece), pieces.index(end_piece)
    assert reference_answer(CONTEXT, starts[s], ends[e]) == answer

    features = qa_features.build_qa_features(tokenizer, [QAExample("q", QUESTION, CONTEXT)], seq_length=32,
                                             doc_stride=8, max_query_length=8)
    outputs = {k: v.numpy() for k, v in beam({k: tf.constant(features.arrays[k]) for k in ("token_ids",
                                                                                         "segment_ids")},
                                               start_piece, end_piece, ids).items()}
    answers, _ = qa_metrics.postprocess(features, outputs, features.examples, max_answer_length=30)
    assert answers[0].text == answer
    assert CONTEXT[answers[0].char_start:answers[0].char_end] == answer

    module = qa_serving_module(model, vocab, seq_length=32, doc_stride=8, max_query_length=8)
    module._predict = lambda inputs: beam(inputs, start_piece, end_piece, ids)  # the same beam
    served = {k: v.numpy() for k, v in module.serve(tf.constant([QUESTION]), tf.constant([CONTEXT])).items()}
    assert served["answer"][0].decode() == answer
    assert CONTEXT[served["start"][0]:served["end"][0]] == answer


@pytest.mark.large
def test_no_gold_answer_of_the_squad_dev_split_starts_or_ends_inside_a_word():
    """Whole words change no training label there: every gold answer's pieces start at a word's first piece and
    end at a word's last (a `##` piece never begins a gold answer nor follows one)."""
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.span_qa.features import (answer_token_span, locate_answer, tokenize_with_char_offsets,
                                                   word_offsets)
    from electra_tf.tasks.span_qa.squad import read_squad

    path = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "squad_v1.1", "dev.json")
    if not os.path.exists(path):
        pytest.skip("the SQuAD benchmark is not fetched")
    tokenizer = WordPieceTokenizer(str(shared_data("vocab", "bert_uncased_vocab.txt")))
    examples = read_squad(path)
    contexts = list(dict.fromkeys(e.context for e in examples))
    pieces = dict(zip(contexts, tokenize_with_char_offsets(tokenizer, contexts)))
    answers, inside = 0, []
    for e in examples:
        ids, starts, ends = pieces[e.context]
        word_start, word_end = word_offsets(ids, starts, ends, tokenizer.continues_word())
        for text, start in e.answers:
            s, t, _ = locate_answer(e.context, text, start)
            span = None if s is None else answer_token_span(starts, ends, s, t)
            answers += span is not None
            if span and (word_start[span[0]] != starts[span[0]] or word_end[span[1]] != ends[span[1]]):
                inside.append(text)
    assert answers == 6049 and inside == []
