"""Tagging serving: raw text in, words / tags / entities with character offsets out, against a
plain-Python reading of the same model (unicodedata word split, the training-time windows of
`tagging_features`, seqeval entities), in a fresh process that imports only tensorflow and
tensorflow_text."""

import json
import os
import re
import subprocess
import sys
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.exporting.word_windows import ABBREVIATIONS
from electra_tf.tasks.tagging.features import build_features, plan_windows, tokenize_words, word_predictions
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.tagging.model import ElectraTokenClassifier

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

VOCAB = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "vocab",
                                     "bert_uncased_vocab.txt"))
LABELS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
SEQ_LENGTH = 16
STRIDE = 5
LONG = ("EU rejects German call to boycott British lamb, and many more words past the first window here; "
        "Peter Blackburn of Brussels said on Wednesday that the Commission would not change its mind.")
TEXTS = [
    "Peter Blackburn lives in Zürich, near the café!",  # accents, punctuation
    "",
    LONG,  # about 45 pieces: 3 windows at least
    "  New   York\tis big  ",  # multiple and leading / trailing spaces, a tab
    "東京都に住む Müller-Lüdenscheidt (ÉCOLE) déjà vu",  # CJK characters, accents, a hyphen, brackets
    "Señor\u00a0García\u3000met O'Neil... at 5:30 p.m.",  # no-break and ideographic spaces
    "The U.S. Treasury said on Friday, (1.5 percent) J. Smith's Germany 's 'sorry' e-mail U.N.-backed x.",
]

# Runs in a fresh interpreter that imports only tensorflow and tensorflow_text.
TF_ONLY = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
path, texts_file, ids_file, out_file = sys.argv[1:]
loaded = tf.saved_model.load(path)
out = loaded.signatures["serving_default"](text=tf.constant(json.load(open(texts_file))))
ids = dict(np.load(ids_file))
by_id = loaded.signatures["predict_ids"](**{k: tf.constant(v) for k, v in ids.items()})
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
values = {k: v.numpy() for k, v in out.items()}
words = loaded.signatures["serve_words"](text=tf.constant(json.load(open(texts_file))))
values.update({"words_" + k: v.numpy() for k, v in words.items()})
values.update({"ids_" + k: v.numpy() for k, v in by_id.items()})
decode = np.vectorize(bytes.decode, otypes=[str])
np.savez(out_file, **{k: decode(v) if v.dtype == object else v for k, v in values.items()})
"""


def is_space(char):
    return char.isspace()


def is_cjk(char):
    cp = ord(char)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_punct(char):
    return unicodedata.category(char)[0] in "PS"


def is_letter(char):
    """What words are made of: not space, punctuation, symbol or CJK."""
    return not (is_space(char) or is_punct(char) or is_cjk(char))


def ascii_word(char):
    return char.isascii() and (char.isalnum() or char == "_")


def token_words(token):
    """The words of one whitespace token (CoNLL / PTB convention), scanned by hand: `(start, end)` in `token`."""
    words, i, n = [], 0, len(token)
    while i < n:
        pairs = 0
        while i + 2 * pairs + 1 < n and token[i + 2 * pairs].isalpha() and token[i + 2 * pairs + 1] == ".":
            pairs += 1
        clitic = next((c for c in ("s", "S", "m", "M", "d", "D", "ll", "LL", "ve", "VE", "re", "RE")
                       if token.startswith("'" + c, i) and not (i + 1 + len(c) < n
                                                                and ascii_word(token[i + 1 + len(c)]))), None)
        abbreviation = next((a for a in ABBREVIATIONS if token[i:i + len(a) + 1].lower() == a.lower() + "."
                             and not (i + len(a) + 1 < n and ascii_word(token[i + len(a) + 1]))), None)
        upper = 0
        while upper < 2 and i + upper < n and unicodedata.category(token[i + upper]) == "Lu":
            upper += 1
        currency = next((u for u in range(1, upper + 1) if token[i + u:i + u + 1] == "$"), None)
        if is_cjk(token[i]):
            end = i + 1
        elif pairs >= 2:  # U.S. p.m.
            end = i + 2 * pairs
        elif abbreviation:
            end = i + len(abbreviation) + 1
        elif (unicodedata.category(token[i]) == "Lu" and token[i + 1:i + 2] == "."
              and not (i + 2 < n and ascii_word(token[i + 2]))):  # an initial, J.
            end = i + 2
        elif clitic:
            end = i + 1 + len(clitic)
        elif currency:
            end = i + currency + 1
        elif is_letter(token[i]):
            end = i
            while True:
                while end < n and is_letter(token[end]):
                    end += 1
                inner = end
                while inner < n and is_punct(token[inner]):
                    inner += 1
                if inner == end or inner == n or not is_letter(token[inner]):
                    break
                end = inner
        elif token[i] in "-." and token[i + 1:i + 2] == token[i]:  # -- ...
            end = i + 1
            while end < n and token[end] == token[i]:
                end += 1
        else:
            end = i + 1
        words.append((i, end))
        i = end
    return words


def python_words(text):
    """The word split by hand: `(word, char_start, char_end)`."""
    words, start = [], None
    for i, char in enumerate(text + " "):
        if is_space(char):
            if start is not None:
                words += [(text[start + a:start + b], start + a, start + b) for a, b in token_words(text[start:i])]
                start = None
        elif start is None:
            start = i
    return words


def keras_tags(tagger, tokenizer, sentences):
    """Tags of every word as fine-tuning predicts them: `build_features` windows, Keras model, `word_predictions`."""
    pieces = tokenize_words(tokenizer, sentences)
    features = build_features(tokenizer, pieces, None, SEQ_LENGTH, STRIDE)
    inputs = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    best = tagger(inputs, training=False).numpy().argmax(-1)
    return [[LABELS[i] for i in ids] for ids in word_predictions(best, features, [len(s) for s in sentences])], pieces


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(VOCAB):
        pytest.skip("shared vocabulary missing")
    from electra_tf.export_formats import export_serving
    from electra_tf.tasks import OUTPUTS
    from electra_tf.tasks.tagging.kind import TaggingKind
    from electra_tf.run_files import FINETUNE_CONFIG_FILE

    keras.utils.set_random_seed(3)
    encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    tagger = ElectraTokenClassifier(encoder, num_labels=len(LABELS))
    tagger.build()
    run = tmp_path_factory.mktemp("finetuned")  # as a tagging `finetune` run leaves it
    tagger.save(str(run / TaggingKind.model_file))
    (run / "vocab.txt").write_text(open(VOCAB).read())
    (run / FINETUNE_CONFIG_FILE).write_text(json.dumps({"task": "ner", "kind": "tagging", "label_names": LABELS,
                                                        "seq_length": SEQ_LENGTH, "stride": STRIDE}))
    finetuned = OUTPUTS.load(str(run))  # what `python -m electra_tf.export --format serving` does
    assert isinstance(finetuned.model, ElectraTokenClassifier) and finetuned.kind is TaggingKind
    path = export_serving(finetuned.model, finetuned.vocab_file, str(tmp_path_factory.mktemp("serving")), "ner", 1,
                          finetuned.settings)
    return tagger, path


@pytest.fixture(scope="module")
def served(exported, tmp_path_factory):
    """Both signatures' outputs from a fresh process, and the ids given to `predict_ids`."""
    tagger, path = exported
    tmp = tmp_path_factory.mktemp("fresh")
    tokenizer = WordPieceTokenizer(VOCAB)
    features = build_features(tokenizer, tokenize_words(tokenizer, [["Peter", "lives", "in", "Zürich"], []]),
                              None, SEQ_LENGTH)
    ids = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    np.savez(tmp / "ids.npz", **ids)
    (tmp / "texts.json").write_text(json.dumps(TEXTS))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", TF_ONLY, path, str(tmp / "texts.json"), str(tmp / "ids.npz"),
                             str(tmp / "out.npz")], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(np.load(tmp / "out.npz")), ids


def test_fresh_process_words_tags_and_entities_equal_the_keras_model(exported, served):
    from seqeval.metrics.sequence_labeling import get_entities

    tagger, _ = exported
    out, _ = served
    tokenizer = WordPieceTokenizer(VOCAB)
    words = [python_words(text) for text in TEXTS]
    tags, pieces = keras_tags(tagger, tokenizer, [[w for w, _, _ in ws] for ws in words])
    assert len(pieces[2].ids) > 2 * (SEQ_LENGTH - 2)  # the long text needs several windows
    assert len(plan_windows(pieces[2].word_splits, SEQ_LENGTH - 2, STRIDE)) >= 3
    total_entities = 0
    for i, text in enumerate(TEXTS):
        n = int(out["num_words"][i])
        assert n == len(words[i])
        assert list(out["words"][i, :n]) == [w for w, _, _ in words[i]]
        assert out["word_start"][i, :n].tolist() == [s for _, s, _ in words[i]]  # character offsets
        assert out["word_end"][i, :n].tolist() == [e for _, _, e in words[i]]
        assert [text[s:e] for s, e in zip(out["word_start"][i, :n], out["word_end"][i, :n])] == list(out["words"][i, :n])
        assert list(out["tags"][i, :n]) == tags[i]  # every word, past the first window too
        entities = [(type_, words[i][a][1], words[i][b][2]) for type_, a, b in get_entities(tags[i])]
        m = int(out["num_entities"][i])
        got = list(zip(out["entity_type"][i, :m], out["entity_start"][i, :m].tolist(), out["entity_end"][i, :m].tolist()))
        assert got == entities
        # The offsets slice the request string to exactly the entity text.
        assert list(out["entity_text"][i, :m]) == [text[s:e] for _, s, e in entities]
        total_entities += m
    assert total_entities > 5  # random weights: the span logic was exercised
    assert set(tags[2][SEQ_LENGTH:]) != {"O"}  # words beyond one window are tagged by the model, not O
    assert [w for w, _, _ in words[4][:4]] == ["東", "京", "都", "に"]
    assert [w for w, _, _ in words[5]] == ["Señor", "García", "met", "O'Neil", "...", "at", "5:30", "p.m."]
    assert int(out["num_words"][1]) == 0 and int(out["num_entities"][1]) == 0


def test_offsets_slice_entities_exactly_for_hand_made_tags(exported, tmp_path):
    """Whatever the tags, each entity's [start, end) is the text from its first to its last word."""
    from electra_tf.exporting.word_windows import KEPT_DELIMITERS, WORD_DELIMITERS
    from electra_tf.exporting.word_windows import char_offset as _char_offset
    from electra_tf.tasks.tagging.serving import _entities
    import tensorflow_text as tf_text

    texts = tf.constant(["Ünïcode  Straße 東京 x", "a  b, c"])
    words, starts, ends = tf_text.regex_split_with_offsets(texts, WORD_DELIMITERS, KEPT_DELIMITERS)
    tags = tf.ragged.constant([["B-LOC", "I-LOC", "B-LOC", "I-LOC", "I-PER"], ["I-PER", "I-PER", "B-X", "I-X"]])
    rows = tf.gather(texts, words.value_rowids())
    out = _entities(texts, tags, starts, ends, _char_offset(rows, starts.flat_values),
                    _char_offset(rows, ends.flat_values))
    text0 = "Ünïcode  Straße 東京 x"
    assert [t.decode() for t in out["entity_text"][0, :3].numpy()] == ["Ünïcode  Straße", "東京", "x"]
    assert [text0[s:e] for s, e in zip(out["entity_start"][0, :3].numpy(), out["entity_end"][0, :3].numpy())] == \
        ["Ünïcode  Straße", "東京", "x"]
    assert [t.decode() for t in out["entity_type"][1, :2].numpy()] == ["PER", "X"]
    assert [t.decode() for t in out["entity_text"][1, :2].numpy()] == ["a  b", ", c"]


def test_predict_ids_equals_the_keras_model(exported, served):
    tagger, _ = exported
    out, ids = served
    probabilities = tf.nn.softmax(tagger(ids, training=False), -1).numpy()
    np.testing.assert_allclose(out["ids_probabilities"], probabilities, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(out["ids_label_id"], probabilities.argmax(-1))
    np.testing.assert_array_equal(out["ids_label"], np.array(LABELS)[probabilities.argmax(-1)])


def test_windows_in_the_graph_equal_plan_windows():
    from electra_tf.exporting.word_windows import _plan_windows

    rng = np.random.RandomState(0)
    for _ in range(12):
        max_pieces = rng.randint(1, 12)
        stride = rng.randint(1, max_pieces + 1)
        counts = [rng.randint(1, 5, rng.randint(0, 25)) for _ in range(rng.randint(1, 4))]
        first = tf.RaggedTensor.from_row_lengths(
            np.concatenate([np.cumsum(c) - c for c in counts] + [np.zeros(0)]).astype(np.int64),
            [len(c) for c in counts])
        totals = tf.constant([int(c.sum()) for c in counts], tf.int64)
        got = [x.numpy().tolist() for x in _plan_windows(first, totals, max_pieces, stride)]
        expected = [[], [], [], []]
        for i, c in enumerate(counts):
            word_window = np.zeros(len(c), np.int64)
            for window in plan_windows(np.concatenate([[0], np.cumsum(c)]), max_pieces, stride):
                word_window[window.words] = len(expected[1])
                for values, v in zip(expected, (i, window.start, window.end)):
                    values.append(v)
            expected[3] += word_window.tolist()
        assert got == expected, (counts, max_pieces, stride)


def test_assets_signatures_and_wrong_label_count(exported, tmp_path):
    from electra_tf.tasks.tagging.serving import export_tagging_serving

    tagger, path = exported
    config = json.loads(open(os.path.join(path, "assets", "serving_config.json")).read())
    assert config["kind"] == "tagging" and config["label_names"] == LABELS and config["spans"] is True
    assert (config["seq_length"], config["stride"]) == (SEQ_LENGTH, STRIDE)
    assert set(tf.saved_model.load(path).signatures) == {"serving_default", "serve_words", "predict_ids"}
    with pytest.raises(ValueError, match="one label name per output unit"):
        export_tagging_serving(tagger, VOCAB, str(tmp_path), label_names=LABELS[:2])
    with pytest.raises(ValueError, match="`stride=20`"):
        export_tagging_serving(tagger, VOCAB, str(tmp_path), label_names=LABELS, seq_length=SEQ_LENGTH, stride=20)


def test_serve_words_takes_the_whitespace_tokens_as_the_words(exported, served):
    """`serve_words`: pre-split words (CoNLL's, joined by spaces) kept as they are, tagged as training tags them."""
    from seqeval.metrics.sequence_labeling import get_entities

    tagger, _ = exported
    out, _ = served
    words = [[(m.group(), m.start(), m.end()) for m in re.finditer(r"[^\s]+", text)] for text in TEXTS]
    tags, _ = keras_tags(tagger, WordPieceTokenizer(VOCAB), [[w for w, _, _ in ws] for ws in words])
    for i, text in enumerate(TEXTS):
        n = int(out["words_num_words"][i])
        assert list(out["words_words"][i, :n]) == [w for w, _, _ in words[i]]
        assert out["words_word_start"][i, :n].tolist() == [s for _, s, _ in words[i]]
        assert out["words_word_end"][i, :n].tolist() == [e for _, _, e in words[i]]
        assert list(out["words_tags"][i, :n]) == tags[i]
        m = int(out["words_num_entities"][i])
        assert list(out["words_entity_text"][i, :m]) == [text[words[i][a][1]:words[i][b][2]]
                                                         for _, a, b in get_entities(tags[i])]
    assert "U.S." in out["words_words"][-1] and "Smith's" in out["words_words"][-1]


def odd_texts():
    """Adversarial strings for the word split, plus CoNLL dev sentences and SQuAD contexts when fetched."""
    texts = list(TEXTS) + [
        "U.S.A. U.S U.S.-based e.g. i.e., A.1 Ph.D. x. J.R.R. Tolkien", "CORP. corp.x Incorporated Inc.5 Mr.. US$5 USD$ a$", "''quoted'' 'tis rock'n'roll don't 's 'S 'll",
        "$1.5 C$ +48 1=2 6-4 .496 3. 1,000,000 -- ... !?! @#%", "\u200bzero\u200bwidth \u00adsoft\ufeffbom",
        "ctrl\x00chars\x07here tab\tnew\nline\r\n", "Ǆemal ǅ ǆ İstanbul ΣΑΣ ﬁne", "東京.京都。大阪、 中文English混合",
        "a" * 150 + ".b", "'s's's 'ss 'sm 'm.", "Mr. Smith Corp. Inc. St. Oct. 12.",
    ]
    conll = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003", "dev.txt")
    if os.path.exists(conll):
        from electra_tf.tasks.tagging.conll import read_conll

        texts += [" ".join(s.words) for s in read_conll(conll)[::10]]
    squad = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "squad_v1.1", "dev.json")
    if os.path.exists(squad):
        data = json.load(open(squad))["data"]
        texts += [p["context"] for article in data[::8] for p in article["paragraphs"][:2]]
    return texts


def test_word_split_in_the_graph_equals_the_hand_scan():
    from electra_tf.exporting.word_windows import split_words

    texts = odd_texts()
    words, starts, _ = split_words(tf.constant(texts))
    for text, got, got_starts in zip(texts, words.to_list(), starts.to_list()):
        expected = python_words(text)
        assert [w.decode() for w in got] == [w for w, _, _ in expected], text
        assert got_starts == [len(text[:s].encode()) for _, s, _ in expected], text


def test_conll_tokens_stay_whole_words():
    """CoNLL dev tokens come back as the same words, but for a few (numbered lists `3.`, decimals `.496`,
    `+48`), of which at most 1 in 10,000 is part of an entity."""
    from electra_tf.tasks.tagging.conll import read_conll

    conll = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003", "dev.txt")
    if not os.path.exists(conll):
        pytest.skip("CoNLL-2003 not fetched")
    split = split_tokens = 0
    entity_split = []
    for sentence in read_conll(conll):
        for word, tag in zip(sentence.words, sentence.tags):
            pieces = python_words(word)
            split_tokens += 1
            if len(pieces) != 1:
                split += 1
                if tag != "O":
                    entity_split.append(word)
    assert split / split_tokens < 0.01, split  # 323 of 51,362: 0.6 %
    assert len(entity_split) < 0.0001 * split_tokens, entity_split[:20]


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_us_treasury_gives_one_entity_covering_us_when_the_model_tags_it():
    """A tagger whose head says B-LOC everywhere: every word is one entity, so `U.S.` is one (not `U`, `S`)."""
    from electra_tf.tasks.tagging.serving import TaggingServingModule

    encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    tagger = ElectraTokenClassifier(encoder, num_labels=len(LABELS))
    tagger.build()
    kernel, bias = tagger.head.weights
    kernel.assign(np.zeros(kernel.shape, "float32"))
    bias.assign(np.eye(len(LABELS), dtype="float32")[LABELS.index("B-LOC")])
    module = TaggingServingModule(tagger, VOCAB, LABELS, seq_length=SEQ_LENGTH)
    text = "The U.S. Treasury said on Friday, J. Smith of Acme Corp. reported."
    for serve in (module.serve_text, module.serve_words):
        out = serve(tf.constant([text]))
        entities = [t.decode() for t in out["entity_text"][0, :int(out["num_entities"][0])].numpy()]
        assert "U.S." in entities and "U" not in entities and "S" not in entities, entities
    entities = [t.decode() for t in module.serve_text(tf.constant([text]))["entity_text"][0].numpy()]
    assert entities == ["The", "U.S.", "Treasury", "said", "on", "Friday", ",", "J.", "Smith", "of", "Acme", "Corp.",
                        "reported", "."]


def test_texts_served_alone_equal_the_batch(exported):
    """Short texts alone take the one-window path, the batch (with the long text) the windowed one: same outputs."""
    _, path = exported
    serve = tf.saved_model.load(path).signatures["serving_default"]
    batch = serve(text=tf.constant(TEXTS))
    for i, text in enumerate(TEXTS):
        alone = serve(text=tf.constant([text]))
        n, m = int(alone["num_words"][0]), int(alone["num_entities"][0])
        assert (n, m) == (int(batch["num_words"][i]), int(batch["num_entities"][i]))
        for key, count in (("words", n), ("tags", n), ("word_start", n), ("word_end", n), ("entity_text", m),
                           ("entity_type", m), ("entity_start", m), ("entity_end", m)):
            assert alone[key][0, :count].numpy().tolist() == batch[key][i, :count].numpy().tolist(), (i, key)
