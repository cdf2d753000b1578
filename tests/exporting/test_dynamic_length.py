"""Served graphs compute at the request's own length: every kind's outputs equal full-length padding.

The reference for each kind is the model called on inputs padded to `seq_length`, as
every export padded them before: for classification and multiple choice the tokenizer's
full-length packing fed to the Keras model directly; for the window kinds (tagging, QA,
replaced tokens) the same served module with `pad_multiple = seq_length` (full-length windows).
Each test also checks that the short requests really ran shorter than `seq_length`, at a
length from the bounded set `padded_length` allows.
"""

import types

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE, WordPieceTokenizer, padded_length
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

SEQ_LENGTH = 64
SHORT = ["a good film", "", "the plot was boring , the actors were not", "hello world !"]
LONG = ["the film was very good " * 20]  # past seq_length: truncated (or windowed)
TAGS = ["O", "B-PER", "I-PER"]


def write_vocab(path):
    """Special tokens, every letter whole and as a `##` piece, the requests' words and punctuation."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = sorted({w for text in SHORT + LONG for w in text.split()} | {"!", ",", ".", "?", "is", "who", "what"})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + ["##" + c for c in letters] + words
    path.write_text("".join(t + "\n" for t in dict.fromkeys(tokens)))
    return str(path)


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("dynamic") / "vocab.txt")


def encoder(vocab, seed=3):
    import keras

    keras.utils.set_random_seed(seed)
    size = len(WordPieceTokenizer(vocab).vocab)
    return ElectraEncoder(vocab_size=size, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16,
                          intermediate_dim=64, max_sequence_length=SEQ_LENGTH)


def allowed_lengths(seq_length=SEQ_LENGTH):
    return {int(padded_length(n, seq_length)) for n in range(seq_length + 1)}


def test_padded_length_is_a_bounded_set_of_shapes_never_past_seq_length():
    for seq_length in (8, 64, 128, 384, 512):
        lengths = sorted(allowed_lengths(seq_length))
        assert len(lengths) == -(-seq_length // SERVING_PAD_MULTIPLE)
        assert lengths[-1] == seq_length
        for n in range(seq_length + 1):
            assert n <= int(padded_length(n, seq_length)) <= seq_length


@pytest.mark.parametrize("pair", [False, True])
def test_classification_equals_the_model_on_full_length_inputs(vocab, pair):
    kind = task_kind("classification")

    classifier = kind.model_class(encoder(vocab), num_labels=3)
    classifier.build()
    module = kind.serving_module(classifier, vocab, {"label_names": ["a", "b", "c"], "pair": pair}, SEQ_LENGTH)
    serve, preprocess = module.signatures()["serving_default"], module.signatures()["preprocess"]
    tokenizer = WordPieceTokenizer(vocab)
    widths = set()
    for texts in (SHORT, SHORT[:1], SHORT + LONG, LONG):
        args = {"text": tf.constant(texts)}
        b = None
        if pair:
            b = tf.constant(texts[::-1])
            args["text_b"] = b
        full = tokenizer.pack(tf.constant(texts), b, seq_length=SEQ_LENGTH)
        expected = tf.nn.softmax(classifier(full, training=False), axis=-1).numpy()
        got = serve(**args)
        np.testing.assert_allclose(got["probabilities"].numpy(), expected, atol=1e-5)
        np.testing.assert_array_equal(got["label_id"].numpy(), expected.argmax(-1))
        packed = preprocess(**args)
        width = packed["token_ids"].shape[1]
        widths.add(width)
        lengths = full["padding_mask"].numpy().sum(1)
        assert width == padded_length(lengths.max(), SEQ_LENGTH)
        for key in full:  # the full-length ids, cut at the served width
            np.testing.assert_array_equal(packed[key].numpy(), full[key].numpy()[:, :width], err_msg=key)
            assert not full[key].numpy()[:, width:].any()
    assert min(widths) < SEQ_LENGTH and max(widths) == SEQ_LENGTH and widths <= allowed_lengths()
    assert module.serve_text.experimental_get_tracing_count() == 1  # one graph for every width


def test_multiple_choice_equals_the_model_on_full_length_inputs(vocab):
    kind = task_kind("multiple_choice")

    model = kind.model_class(encoder(vocab))
    model.build()
    module, full_length = kind.serving_module(model, vocab, {}, SEQ_LENGTH), kind.serving_module(model, vocab, {},
                                                                                                   SEQ_LENGTH)
    full_length.pad_multiple = None  # the tokenizer's full-length packing
    serve, preprocess = module.signatures()["serving_default"], module.signatures()["preprocess"]
    widths = set()
    for context, question, choices in (
            (["the film"], [""], [["was good", "was bad", ""]]),
            (["the plot", "a movie"], ["is", "was"], [["boring", "great"], ["fine", "not good"]]),
            (LONG, ["was"], [["good", LONG[0]]])):
        args = {"context": tf.constant(context), "question": tf.constant(question), "choices": tf.constant(choices)}
        full = full_length.signatures()["preprocess"](**args)
        assert full["token_ids"].shape[2] == SEQ_LENGTH
        logits = model(full, training=False).numpy()
        missing = np.array([[c == "" for c in row] for row in choices])
        logits = np.where(missing, -1e9, logits)
        expected = tf.nn.softmax(logits, axis=-1).numpy()
        got = serve(**args)
        np.testing.assert_allclose(got["probabilities"].numpy(), expected, atol=1e-5)
        np.testing.assert_array_equal(got["choice"].numpy(), expected.argmax(-1))
        widths.add(preprocess(**args)["token_ids"].shape[2])
    assert min(widths) < SEQ_LENGTH and widths <= allowed_lengths()


def _full_length_twin(make):
    """The served module `make()` and the same module padding every window to `seq_length`."""
    dynamic, full = make(), make()
    full.pad_multiple = full.seq_length
    return dynamic, full


def _assert_same_outputs(got, expected, atol=1e-5):
    assert sorted(got) == sorted(expected)
    for key in expected:
        a, b = got[key].numpy(), expected[key].numpy()
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(a, b, err_msg=key)


def _window_widths(module, texts):
    from electra_tf.exporting.word_windows import split_words, word_windows

    words = split_words(tf.constant(texts))[0]
    return word_windows(module.tokenizer, words, module.seq_length, module.stride,
                        module.pad_multiple).inputs["token_ids"].shape[1]


def test_tagging_equals_full_length_windows(vocab):
    kind = task_kind("tagging")

    tagger = kind.model_class(encoder(vocab), num_labels=len(TAGS))
    tagger.build()
    dynamic, full = _full_length_twin(lambda: kind.serving_module(tagger, vocab, {"label_names": TAGS}, SEQ_LENGTH))
    for texts in (SHORT, SHORT + LONG):
        for name in ("serving_default", "serve_words"):
            _assert_same_outputs(dynamic.signatures()[name](text=tf.constant(texts)),
                                 full.signatures()[name](text=tf.constant(texts)))
    assert _window_widths(dynamic, SHORT) in allowed_lengths() - {SEQ_LENGTH}
    assert _window_widths(full, SHORT) == SEQ_LENGTH
    # every piece's probability of the model on a short window equals its full-length value
    ids = {k: v[:, :16] for k, v in WordPieceTokenizer(vocab).pack(tf.constant(SHORT), seq_length=SEQ_LENGTH).items()}
    full_ids = {k: tf.pad(v, [[0, 0], [0, SEQ_LENGTH - 16]]) for k, v in ids.items()}
    short_p = dynamic.signatures()["predict_ids"](**ids)["probabilities"].numpy()
    full_p = dynamic.signatures()["predict_ids"](**full_ids)["probabilities"].numpy()[:, :16]
    np.testing.assert_allclose(short_p, full_p, atol=1e-5)


def test_replaced_tokens_equal_full_length_windows(vocab):
    from electra_tf.models.discriminator import ElectraDiscriminator

    detector = ElectraDiscriminator(encoder(vocab))
    detector.build()
    served = types.SimpleNamespace(discriminator=detector, pretrainer=None)  # a discriminator alone, no generator
    dynamic, full = _full_length_twin(lambda: task_kind("rtd").serving_module(served, vocab, {}, SEQ_LENGTH))
    for texts in (SHORT, SHORT + LONG):
        _assert_same_outputs(dynamic.signatures()["serving_default"](text=tf.constant(texts)),
                             full.signatures()["serving_default"](text=tf.constant(texts)))
    assert _window_widths(dynamic, SHORT) in allowed_lengths() - {SEQ_LENGTH}


def test_question_answering_equals_full_length_windows(vocab):
    kind = task_kind("span_qa")

    model = kind.model_class(encoder(vocab), start_n_top=3, end_n_top=3)
    model.build()
    settings = {"doc_stride": 16, "max_query_length": 8}
    dynamic, full = _full_length_twin(lambda: kind.serving_module(model, vocab, settings, SEQ_LENGTH))
    questions = ["what was the film", "who", "is the plot good", "was it boring"]
    contexts = ["the film was very good", "the actors were fine", LONG[0], "a boring movie , not good"]
    for n in (1, 4):
        q, c = tf.constant(questions[:n]), tf.constant(contexts[:n])
        _assert_same_outputs(dynamic.signatures()["serving_default"](question=q, context=c),
                             full.signatures()["serving_default"](question=q, context=c))
