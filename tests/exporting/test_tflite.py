"""The LiteRT (TFLite) export: the served SavedModel's ids and outputs, from a process without TensorFlow.

The reference is the TF Serving export of the same model (`export_serving`), run by TensorFlow
in this process; the LiteRT models run in a fresh process that imports only the LiteRT
interpreter and tensorflow-text's TFLite registrar (`electra_tf.exporting.tflite_runtime`) and
checks that TensorFlow's Python package was never imported.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import error_line, finetuned_runs, run_python, shared_data
from electra_tf.data.tokenizer import new_settings
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

ClassificationKind = task_kind("classification")
TaggingKind = task_kind("tagging")

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

TASKS = ("movie_polarity", "trec6", "sms_spam")
TEXT_OPS = ["FastBertNormalize", "FastWordpieceTokenizeWithOffsets"]
EDGE_TEXTS = ["A very good film!", "", "boring " * 200, "Café déjà vu, naïve résumé", 'He said "not bad" \t twice',
              "北京 Zürich İstanbul ǅ", "\x00 nul \u200b zero-width", "Fußach ﬁ² Ａ ΟΔΟΣ soft\u00adhyphen"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# A fresh process: the LiteRT interpreter, tensorflow-text's TFLite kernels, numpy; no TensorFlow.
LITERT_ONLY = r"""
import json, sys
import numpy as np
from electra_tf.exporting.tflite_runtime import load_interpreter
requests, out_file = json.load(open(sys.argv[1])), sys.argv[2]
results = {}
for name, (model, inputs_file) in requests.items():
    inputs = dict(np.load(inputs_file))
    out = load_interpreter(model).get_signature_runner()(**inputs)
    for key, value in out.items():
        results[f"{name}/{key}"] = value.astype(str) if value.dtype == object else value
imported = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras"))
assert not imported, f"imported {imported[:5]}"
np.savez(out_file, **results)
print("no tensorflow")
"""


def dev_set(task):
    rows = [line.split("\t") for line in
            shared_data("tasks", task, "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def run_litert(requests, tmp_path):
    """{name: (model.tflite, {input: array})} -> {name/output: array}, from a process without TensorFlow."""
    files = {}
    for name, (model, inputs) in requests.items():
        files[name] = (str(model), str(tmp_path / f"{name}_inputs.npz"))
        np.savez(files[name][1], **inputs)
    (tmp_path / "requests.json").write_text(json.dumps(files))
    result = run_python(["-c", LITERT_ONLY, str(tmp_path / "requests.json"), str(tmp_path / "out.npz")])
    assert "no tensorflow" in result.stdout
    return dict(np.load(tmp_path / "out.npz"))


def export_cli(init, output_dir, *flags):
    return run_python(["-m", "electra_tf.export", "--format", "tflite", "--init", str(init), "--output_dir",
                       str(output_dir), *flags], check=False)


def test_pack_ids_equals_the_served_packing_on_every_task_dev_set():
    """The LiteRT-friendly packing (builtin ops) gives the SavedModel's ids: singles and pairs, truncated or not."""
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.exporting.tflite import pack_ids

    tokenizer = WordPieceTokenizer(str(shared_data("vocab", "bert_uncased_vocab.txt")))
    for texts in [dev_set(task)[0] for task in TASKS] + [EDGE_TEXTS]:
        texts_b = texts[1:] + texts[:1]
        for seq_length in (8, 64):
            for b in (None, tf.constant(texts_b)):
                expected = tokenizer.pack(tf.constant(texts), b, seq_length=seq_length)
                got = pack_ids(tokenizer, tf.constant(texts), b, seq_length=seq_length)
                for key in expected:
                    np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=key)
    empty = pack_ids(tokenizer, tf.constant([], tf.string), seq_length=8)
    assert empty["token_ids"].shape == (0, 8)


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """Tiny fine-tuning output dirs (as `finetune` leaves them) and their TF Serving exports."""
    ElectraClassifier = task_kind("classification").model_class
    ElectraTokenClassifier = task_kind("tagging").model_class

    root = tmp_path_factory.mktemp("tflite")
    kinds = {
        "classifier": (lambda e: ElectraClassifier(e, num_labels=2), ClassificationKind.model_file,
                       {"task": "movie_polarity", "kind": "classification", "label_names": ["negative", "positive"],
                        "regression": False, "pair": False, "seq_length": 32}),
        "pair": (lambda e: ElectraClassifier(e, num_labels=3), ClassificationKind.model_file,
                 {"task": "toy_pairs", "kind": "classification", "label_names": ["no", "maybe", "yes"],
                  "regression": False, "pair": True, "seq_length": 24}),
        "regression": (lambda e: ElectraClassifier(e, num_labels=1), ClassificationKind.model_file,
                       {"task": "toy_scores", "kind": "classification", "label_names": [], "regression": True,
                        "pair": False, "seq_length": 16}),
        "tagger": (lambda e: ElectraTokenClassifier(e, num_labels=len(TAGS)), TaggingKind.model_file,
                   {"task": "ner", "kind": "tagging", "label_names": TAGS, "scheme": "IOB2", "seq_length": 16}),
    }
    dirs, served = finetuned_runs(root, kinds, str(shared_data("vocab", "bert_uncased_vocab.txt")), seed=20,
                                  num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=16, intermediate_dim=64)
    return dirs, served, root


def signature(path, name):
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    return tf.saved_model.load(path).signatures[name]


@pytest.mark.large  # two CLI exports, two in this process, a fresh LiteRT process: ~3 min on 2 shared cores
def test_cli_exports_answer_as_the_saved_model_on_the_dev_set_without_tensorflow(finetuned, tmp_path):
    """Raw text and `--ids`, float and int8, classification, pairs and regression, against the SavedModel."""
    from electra_tf.export_formats import export_tflite
    from electra_tf.tasks import OUTPUTS

    dirs, served, root = finetuned
    texts, labels = dev_set("movie_polarity")
    texts += EDGE_TEXTS
    labels = np.concatenate([labels, np.zeros(len(EDGE_TEXTS), int)])
    assert export_cli(dirs["classifier"], tmp_path / "text").returncode == 0
    result = export_cli(dirs["classifier"], tmp_path / "ids_int8", "--ids", "--quantize", "dynamic_int8")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == str(tmp_path / "ids_int8" / "model.tflite")
    model, vocab, config = OUTPUTS.load(str(dirs["classifier"]))[1:]
    export_tflite(model, vocab, str(tmp_path / "text_int8"), config, quantize="dynamic_int8")
    export_tflite(model, vocab, str(tmp_path / "ids"), config, ids_only=True)
    pair_texts = texts[1:] + texts[:1]
    for name in ("pair", "regression"):
        other, other_vocab, other_config = OUTPUTS.load(str(dirs[name]))[1:]
        export_tflite(other, other_vocab, str(tmp_path / name), other_config)

    reference = signature(served["classifier"], "serving_default")(text=tf.constant(texts))
    ids = {k: v.numpy() for k, v in signature(served["classifier"], "preprocess")(text=tf.constant(texts)).items()}
    pair_reference = signature(served["pair"], "serving_default")(text=tf.constant(texts),
                                                                  text_b=tf.constant(pair_texts))
    score = signature(served["regression"], "serving_default")(text=tf.constant(texts))["score"].numpy()
    text = {"text": np.array(texts)}
    got = run_litert({
        "text": (tmp_path / "text" / "model.tflite", text),
        "text_int8": (tmp_path / "text_int8" / "model.tflite", text),
        "ids": (tmp_path / "ids" / "model.tflite", ids),
        "ids_int8": (tmp_path / "ids_int8" / "model.tflite", ids),
        "pair": (tmp_path / "pair" / "model.tflite", {"text": np.array(texts), "text_b": np.array(pair_texts)}),
        "regression": (tmp_path / "regression" / "model.tflite", text),
    }, tmp_path)

    probabilities = reference["probabilities"].numpy()
    expected_labels = reference["label"].numpy().astype(str)
    accuracy = np.mean(probabilities.argmax(-1) == labels)
    for name in ("text", "ids"):  # float: the SavedModel's probabilities within 1e-4, its labels
        np.testing.assert_allclose(got[f"{name}/probabilities"], probabilities, atol=1e-4, rtol=0)
        np.testing.assert_array_equal(got[f"{name}/label"], expected_labels)
        np.testing.assert_array_equal(got[f"{name}/label_id"], reference["label_id"].numpy())
    for name in ("text_int8", "ids_int8"):  # int8 weights: the same label on >= 99 %, accuracy within 1 point
        assert np.mean(got[f"{name}/label"] == expected_labels) >= 0.99
        assert abs(np.mean(got[f"{name}/label_id"] == labels) - accuracy) <= 0.01
        np.testing.assert_allclose(got[f"{name}/probabilities"], probabilities, atol=0.02, rtol=0)
    np.testing.assert_allclose(got["pair/probabilities"], pair_reference["probabilities"].numpy(), atol=1e-4, rtol=0)
    np.testing.assert_array_equal(got["pair/label"], pair_reference["label"].numpy().astype(str))
    np.testing.assert_allclose(got["regression/score"], score, atol=1e-4, rtol=0)
    assert set(k.split("/")[1] for k in got if k.startswith("regression/")) == {"score"}

    description = json.loads((tmp_path / "text" / "tflite_config.json").read_text())
    assert description["custom_ops"] == TEXT_OPS and description["inputs"] == ["text"]
    assert description["label_names"] == ["negative", "positive"] and description["seq_length"] == 32
    assert (tmp_path / "text" / "labels.txt").read_text() == "negative\npositive\n"
    ids_description = json.loads((tmp_path / "ids_int8" / "tflite_config.json").read_text())
    assert ids_description["custom_ops"] == [] and ids_description["quantization"] == "dynamic_int8"
    assert ids_description["inputs"] == ["token_ids", "segment_ids", "padding_mask"]
    sizes = {name: os.path.getsize(tmp_path / name / "model.tflite") for name in ("text", "text_int8", "ids", "ids_int8")}
    assert sizes["ids_int8"] < sizes["ids"] / 2 and sizes["text_int8"] < sizes["text"]


@pytest.mark.large  # a fresh LiteRT process and two conversions: ~1 min
def test_litert_tokenizes_every_task_dev_set_as_the_saved_model(finetuned, tmp_path):
    """The tokenizer's LiteRT kernels (tensorflow-text's) give the SavedModel's `preprocess` ids, singles and pairs."""
    from electra_tf.exporting.tflite import TFLiteModule, convert
    from electra_tf.export_formats import serving_module
    from electra_tf.tasks import OUTPUTS

    dirs, served, _ = finetuned
    texts = [text for task in TASKS for text in dev_set(task)[0]] + EDGE_TEXTS
    texts_b = texts[7:] + texts[:7]
    requests, expected = {}, {}
    for name, inputs in (("classifier", {"text": texts}), ("pair", {"text": texts, "text_b": texts_b})):
        model, vocab, config = OUTPUTS.load(str(dirs[name]))[1:]
        module = TFLiteModule(serving_module(model, vocab, config), pair=config["pair"])
        path = tmp_path / f"{name}_preprocess.tflite"
        path.write_bytes(convert(module.preprocess, module, custom_ops_allowed=TEXT_OPS))
        requests[name] = (path, {k: np.array(v) for k, v in inputs.items()})
        expected[name] = signature(served[name], "preprocess")(**{k: tf.constant(v) for k, v in inputs.items()})
    got = run_litert(requests, tmp_path)
    for name in requests:
        for key, value in expected[name].items():
            np.testing.assert_array_equal(got[f"{name}/{key}"], value.numpy(), err_msg=f"{name} {key}")


@pytest.mark.large  # two CLI runs and a fresh LiteRT process: ~2 min
def test_tagger_exports_ids_only_with_the_saved_models_tags(finetuned, tmp_path):
    dirs, served, _ = finetuned
    raw = export_cli(dirs["tagger"], tmp_path / "raw")
    assert "A tagger exports to LiteRT with --ids only" in error_line(raw)
    assert not (tmp_path / "raw").exists()
    assert export_cli(dirs["tagger"], tmp_path / "ids", "--ids").returncode == 0

    from electra_tf.data.tokenizer import WordPieceTokenizer

    texts, _ = dev_set("trec6")
    ids = {k: v.numpy() for k, v in WordPieceTokenizer(os.path.join(dirs["tagger"], "vocab.txt")).pack(
        tf.constant(texts), seq_length=16).items()}
    reference = signature(served["tagger"], "predict_ids")(**{k: tf.constant(v) for k, v in ids.items()})
    got = run_litert({"tagger": (tmp_path / "ids" / "model.tflite", ids)}, tmp_path)
    np.testing.assert_allclose(got["tagger/probabilities"], reference["probabilities"].numpy(), atol=1e-4, rtol=0)
    np.testing.assert_array_equal(got["tagger/label"], reference["label"].numpy().astype(str))
    description = json.loads((tmp_path / "ids" / "tflite_config.json").read_text())
    assert description["kind"] == "tagging" and description["label_names"] == TAGS


def test_tflite_flags_are_usage_errors_for_other_kinds(tmp_path):
    result = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(tmp_path), "--output_dir",
                         str(tmp_path / "out"), "--ids"], check=False)
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error")] == [
        "error: --ids and --quantize are for --format tflite. (see --help)"]
    assert not (tmp_path / "out").exists()


def test_export_refuses_an_existing_output_and_its_init_before_loading(tmp_path):
    """Refused before the model is read: `--init` here is no model at all."""
    init = tmp_path / "run"
    init.mkdir()
    (init / "notes.txt").write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.tflite").write_bytes(b"an earlier export")
    assert f"`--output_dir={out}` is not empty" in error_line(export_cli(init, out))
    import types

    from electra_tf import export_formats
    from electra_tf.export import guard  # what the command runs first, here in-process

    options = types.SimpleNamespace(init=str(init), output_dir=str(init / "tflite"))
    with pytest.raises(ValueError, match="overlaps the input"):
        guard(export_formats.get("tflite"), options)
    assert (out / "model.tflite").read_bytes() == b"an earlier export"
    assert sorted(os.listdir(tmp_path)) == ["out", "run"] and os.listdir(init) == ["notes.txt"]


def test_a_failed_write_leaves_no_output_and_no_partial_folder(tmp_path):
    from electra_tf.exporting.tflite import _write_folder

    with pytest.raises(tf.errors.NotFoundError):  # the vocabulary, copied after the model was written
        _write_folder(str(tmp_path / "out"), b"model", {"label_names": ["a"]}, str(tmp_path / "missing_vocab.txt"))
    assert os.listdir(tmp_path) == []


def _tiny_model_dir(tmp_path, settings, pieces=()):
    from electra_tf.data.tokenizer import write_settings
    from electra_tf.models.encoder import ElectraEncoder
    from helpers import write_vocab
    ElectraClassifier = task_kind("classification").model_class

    vocab = write_vocab(tmp_path / "vocab.txt", 120 - len(pieces))
    with open(vocab, "a", encoding="utf-8") as f:
        f.write("".join(piece + "\n" for piece in pieces))
    write_settings(str(tmp_path), settings)
    model = ElectraClassifier(ElectraEncoder(vocab_size=120, num_layers=1, num_heads=1, hidden_dim=8,
                                             embedding_dim=8, intermediate_dim=8, max_sequence_length=16),
                              num_labels=2)
    model.build()
    return model, vocab


def test_raw_text_keeping_accents_runs_in_litert_with_bert_ids(tmp_path):
    """Lower-casing without stripping accents exports raw text too (BERT's normalisation is one
    FastBertNormalize table for every setting): LiteRT's ids are Hugging Face BERT's ("Fußach" is
    `fu ##ß ##ach`, no case folding to `fuss`); `--ids` as before."""
    from electra_tf.exporting.tflite import TFLiteModule, convert
    from electra_tf.exporting.tflite_runtime import load_interpreter
    from electra_tf.export_formats import export_tflite, serving_module
    from helpers import python_bert_tokenizer

    pieces = ["fu", "##ß", "##ach", "fuss", "stra", "##ße", "##sse", "café", "cafe", "ﬁ", "##i", "x", "²", "2", "!"]
    model, vocab = _tiny_model_dir(tmp_path, {"lower_case": True, "strip_accents": False}, pieces)
    texts = ["Fußach", "STRASSE straße!", "Café cafe\u200bx", "ﬁx² 2", ""]
    path = export_tflite(model, vocab, str(tmp_path / "text"), {"seq_length": 16})
    probabilities = load_interpreter(path).get_signature_runner()(text=np.array(texts))["probabilities"]
    assert probabilities.shape == (len(texts), 2)
    module = TFLiteModule(serving_module(model, vocab, {"seq_length": 16}))
    (tmp_path / "preprocess.tflite").write_bytes(convert(module.preprocess, module, custom_ops_allowed=TEXT_OPS))
    ids = load_interpreter(str(tmp_path / "preprocess.tflite")).get_signature_runner()(text=np.array(texts))
    reference = python_bert_tokenizer(vocab, do_lower_case=True, strip_accents=False)
    expected = [reference.encode(text) for text in texts]
    assert ids["token_ids"].tolist() == [row + [0] * (ids["token_ids"].shape[1] - len(row)) for row in expected]
    assert [reference.convert_ids_to_tokens(row) for row in expected][0] == ["[CLS]", "fu", "##ß", "##ach", "[SEP]"]
    assert json.loads((tmp_path / "text" / "tflite_config.json").read_text())["tokenizer"] == new_settings(True, False)
    with pytest.raises(ValueError, match="`quantize` must be one of"):
        export_tflite(model, vocab, str(tmp_path / "q"), {"seq_length": 8}, quantize="int4")


def test_litert_counts_the_word_limit_in_characters_as_bert(tmp_path):
    """A word of 52 characters and 102 UTF-8 bytes is its WordPiece pieces in the raw-text LiteRT model, as in
    transformers' tokenizer; one of 102 characters is one [UNK] (the limit's ops are LiteRT builtins)."""
    from electra_tf.exporting.tflite import TFLiteModule, convert
    from electra_tf.exporting.tflite_runtime import load_interpreter
    from electra_tf.export_formats import serving_module
    from helpers import python_bert_tokenizer

    model, vocab = _tiny_model_dir(tmp_path, {"lower_case": True, "strip_accents": True},
                                   ["fu", "##" + "ß" * 10, "x"])
    texts = ["fu" + "ß" * 50, "fu" + "ß" * 100 + " x", "x " + "fu" + "ß" * 90]
    module = TFLiteModule(serving_module(model, vocab, {"seq_length": 16}))
    (tmp_path / "preprocess.tflite").write_bytes(convert(module.preprocess, module, custom_ops_allowed=TEXT_OPS))
    ids = load_interpreter(str(tmp_path / "preprocess.tflite")).get_signature_runner()(text=np.array(texts))
    reference = python_bert_tokenizer(vocab)
    expected = [reference.encode(text) for text in texts]
    assert [len(row) for row in expected] == [2 + 6, 2 + 2, 2 + 11]
    assert ids["token_ids"].tolist() == [row + [0] * (ids["token_ids"].shape[1] - len(row)) for row in expected]


def test_a_question_answering_model_is_refused_naming_the_serving_export(tmp_path):
    from electra_tf.export_formats import export_tflite
    from electra_tf.models.encoder import ElectraEncoder
    from helpers import write_vocab
    ElectraQuestionAnswerer = task_kind("span_qa").model_class

    encoder = ElectraEncoder(vocab_size=120, num_layers=1, num_heads=1, hidden_dim=8, embedding_dim=8,
                             intermediate_dim=8, max_sequence_length=16)
    with pytest.raises(ValueError, match="no LiteRT export.*--format serving"):
        export_tflite(ElectraQuestionAnswerer(encoder), write_vocab(tmp_path / "vocab.txt", 120),
                      str(tmp_path / "qa"), {}, ids_only=True)
    assert not (tmp_path / "qa").exists()

