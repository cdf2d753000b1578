"""The TF Serving export: fresh-process parity, signatures, PredictRequest, bad input."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.export_formats import export_serving
from electra_tf.tasks import OUTPUTS
from helpers import request_feeds, warmup_requests
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes

BIN = os.path.dirname(sys.executable)

# Runs in a fresh interpreter that imports only tensorflow and tensorflow_text.
TF_ONLY = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
path, texts_file, out_file = sys.argv[1:]
texts = json.load(open(texts_file))
loaded = tf.saved_model.load(path)
out = loaded.signatures["serving_default"](text=tf.constant(texts))
labels = open(path + "/assets/labels.txt").read().split()
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
np.savez(out_file, probabilities=out["probabilities"].numpy(), label_id=out["label_id"].numpy(),
         label=out["label"].numpy().astype(str), labels=np.array(labels))
"""


def keras_probabilities(classifier, vocab, texts, seq_length, texts_b=None):
    tokenizer = WordPieceTokenizer(vocab)
    inputs = tokenizer.pack(tf.constant(texts), None if texts_b is None else tf.constant(texts_b),
                            seq_length=seq_length)
    return tf.nn.softmax(classifier(inputs, training=False), -1).numpy()


def test_fresh_process_matches_keras(artifacts, texts, tmp_path):
    texts_file, out_file = tmp_path / "texts.json", tmp_path / "out.npz"
    texts_file.write_text(json.dumps(texts))
    subprocess.run([sys.executable, "-c", TF_ONLY, artifacts.serving_path, str(texts_file), str(out_file)],
                   check=True, capture_output=True, timeout=600)
    out = np.load(out_file)
    expected = keras_probabilities(artifacts.classifier, artifacts.vocab, texts, artifacts.seq_length)
    np.testing.assert_allclose(out["probabilities"], expected, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(out["label_id"], expected.argmax(-1))
    np.testing.assert_array_equal(out["label"], np.array(artifacts.label_names)[expected.argmax(-1)])
    assert list(out["labels"]) == artifacts.label_names
    assert out["probabilities"].shape == (len(texts), 3)


def test_layout_and_saved_model_cli_lists_both_signatures(artifacts):
    assert artifacts.serving_path == os.path.join(artifacts.serving_base, "toy", "1")
    result = subprocess.run([os.path.join(BIN, "saved_model_cli"), "show", "--all", "--dir", artifacts.serving_path],
                            check=True, capture_output=True, text=True, timeout=600)
    assert "signature_def['serving_default']" in result.stdout
    assert "signature_def['predict_ids']" in result.stdout
    assert "inputs['text'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in result.stdout
    for name in ("token_ids", "segment_ids", "padding_mask"):
        assert f"inputs['{name}'] tensor_info:\n        dtype: DT_INT32\n        shape: (-1, -1)" in result.stdout


def test_predict_request_matches_signature(artifacts, texts):
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "toy"
    request.model_spec.signature_name = "serving_default"
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(texts, dtype=tf.string))
    loaded = tf.saved_model.load(artifacts.serving_path)
    signature = loaded.signatures[request.model_spec.signature_name]
    specs = signature.structured_input_signature[1]
    assert set(request.inputs) == set(specs)
    for name, proto in request.inputs.items():
        assert tf.dtypes.as_dtype(proto.dtype) == specs[name].dtype
        assert specs[name].shape.is_compatible_with(tf.TensorShape([d.size for d in proto.tensor_shape.dim]))
    # What the model server would do with the request: feed the decoded tensors.
    feeds = request_feeds(request)
    probabilities = signature(**feeds)["probabilities"].numpy()
    expected = keras_probabilities(artifacts.classifier, artifacts.vocab, texts, artifacts.seq_length)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5, rtol=0)


def test_tf_servings_warmup_file_holds_a_request_of_each_padded_length(artifacts):
    requests = warmup_requests(artifacts.serving_path)
    assert all(r.model_spec.signature_name == "serving_default" and list(r.inputs) == ["text"] for r in requests)
    texts = [tf.make_ndarray(r.inputs["text"]).astype(str) for r in requests]
    assert all(t.shape == (1,) for t in texts)
    # What the served graph computes on: the pieces with [CLS] and [SEP], rounded up to a multiple of 8.
    tokenizer = WordPieceTokenizer(artifacts.vocab)
    pieces = [int(tokenizer.tokenize(tf.constant(t)).flat_values.shape[0]) + 2 for t in texts]
    assert [-(-n // 8) * 8 for n in pieces] == list(range(8, artifacts.seq_length + 1, 8)), pieces
    # The model server's replay: the decoded tensors fed to the signature give the Keras model's outputs.
    signature = tf.saved_model.load(artifacts.serving_path).signatures["serving_default"]
    for request, text in zip(requests, texts):
        out = signature(**request_feeds(request))
        expected = keras_probabilities(artifacts.classifier, artifacts.vocab, list(text), artifacts.seq_length)
        np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5, rtol=0)


def test_predict_ids_matches_keras_and_batch_is_dynamic(artifacts, texts):
    loaded = tf.saved_model.load(artifacts.serving_path)
    tokenizer = WordPieceTokenizer(artifacts.vocab)
    for batch in (texts[:1], texts):
        inputs = tokenizer.pack(tf.constant(batch), seq_length=artifacts.seq_length)
        out = loaded.signatures["predict_ids"](**inputs)
        expected = keras_probabilities(artifacts.classifier, artifacts.vocab, batch, artifacts.seq_length)
        np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5, rtol=0)


def test_pair_task_signature(artifacts, tmp_path):
    a, b = ["a good film", "", "x " * 100], ["not bad", "the plot", "y " * 100]
    path = export_serving(artifacts.classifier, artifacts.vocab, str(tmp_path), "pair", 3,
                          {"label_names": artifacts.label_names, "pair": True}, seq_length=24)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == {"text", "text_b"}
    out = signature(text=tf.constant(a), text_b=tf.constant(b))["probabilities"].numpy()
    np.testing.assert_allclose(out, keras_probabilities(artifacts.classifier, artifacts.vocab, a, 24, b),
                               atol=1e-5, rtol=0)


def test_bad_requests_raise_clear_errors_and_model_keeps_serving(artifacts, texts):
    signature = tf.saved_model.load(artifacts.serving_path).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a string tensor but is a int32"):
        signature(text=tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"text \[2,1\] is not compatible with expected shape"):
        signature(text=tf.constant([["a"], ["b"]]))
    with pytest.raises(TypeError, match="text"):
        signature(sentence=tf.constant(["a"]))
    ids = tf.saved_model.load(artifacts.serving_path).signatures["predict_ids"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="must have the shape of `token_ids`"):
        ids(token_ids=tf.ones([2, 8], tf.int32), segment_ids=tf.zeros([2, 7], tf.int32),
            padding_mask=tf.ones([2, 8], tf.int32))
    assert signature(text=tf.constant(texts))["probabilities"].shape == (len(texts), 3)


def test_exporting_a_model_without_classifier_head_is_a_clear_error(artifacts, tmp_path):
    with pytest.raises(FileNotFoundError, match="looks like a pre-training run .config.json, no task head"):
        OUTPUTS.load(artifacts.run_dir)
    with pytest.raises(TypeError, match="A ElectraEncoder is not a fine-tuned model .ElectraClassifier, "):
        export_serving(artifacts.encoder, artifacts.vocab, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="No fine-tuned model in .* .expected one of classifier.keras, "):
        OUTPUTS.load(str(tmp_path))  # an empty folder
    bare = tmp_path / "encoder_only.keras"
    artifacts.encoder.save(bare)
    with pytest.raises(TypeError, match="holds a ElectraEncoder, which is not a fine-tuned model"):
        OUTPUTS.load(str(bare))


def test_cli_exports_finetuned_dir(artifacts, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "electra_tf.export", "--format", "serving", "--init", artifacts.finetuned,
         "--output_dir", str(tmp_path), "--model_name", "toy", "--version", "7"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    path = tmp_path / "toy" / "7"
    config = json.loads((path / "assets" / "serving_config.json").read_text())
    assert config["seq_length"] == 32 and config["label_names"] == artifacts.label_names
    classifier = OUTPUTS.load(artifacts.finetuned).model
    out = tf.saved_model.load(str(path)).signatures["serving_default"](text=tf.constant(["a good film"]))
    np.testing.assert_allclose(out["probabilities"].numpy(),
                               keras_probabilities(classifier, artifacts.vocab, ["a good film"], 32),
                               atol=1e-5, rtol=0)


def test_regression_model_serves_a_score(artifacts, tmp_path):
    ElectraClassifier = task_kind("classification").model_class

    regressor = ElectraClassifier(artifacts.encoder, num_labels=1)
    regressor.build()
    path = export_serving(regressor, artifacts.vocab, str(tmp_path), "sts", 1, seq_length=16)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    texts = ["a good film", ""]
    out = signature(text=tf.constant(texts))
    assert set(out) == {"score"}
    inputs = WordPieceTokenizer(artifacts.vocab).pack(tf.constant(texts), seq_length=16)
    np.testing.assert_allclose(out["score"].numpy(), regressor(inputs)[:, 0].numpy(), atol=1e-5, rtol=0)


def test_an_interrupted_export_leaves_no_version_and_the_next_one_completes(artifacts, tmp_path, monkeypatch):
    """TF Serving loads every numeric folder it sees: a half-written version must never be one."""
    real_save = tf.saved_model.save

    def save_then_die(module, path, signatures=None):
        real_save(module, path, signatures=signatures)  # everything written, then killed before the end
        os.remove(os.path.join(path, "saved_model.pb"))
        raise KeyboardInterrupt

    monkeypatch.setattr(tf.saved_model, "save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        export_serving(artifacts.classifier, artifacts.vocab, str(tmp_path), "toy", 2,
                       {"label_names": artifacts.label_names}, seq_length=24)
    assert not [name for name in os.listdir(tmp_path / "toy") if name.isdigit()]  # what TF Serving would load

    monkeypatch.setattr(tf.saved_model, "save", real_save)
    path = export_serving(artifacts.classifier, artifacts.vocab, str(tmp_path), "toy", 2,
                          {"label_names": artifacts.label_names}, seq_length=24)
    assert os.listdir(tmp_path / "toy") == ["2"]  # the interrupted attempt's folder replaced
    out = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(["a good film"]))
    np.testing.assert_allclose(out["probabilities"].numpy(),
                               keras_probabilities(artifacts.classifier, artifacts.vocab, ["a good film"], 24),
                               atol=1e-5, rtol=0)
    with pytest.raises(FileExistsError, match="versions are immutable"):
        export_serving(artifacts.classifier, artifacts.vocab, str(tmp_path), "toy", 2,
                       {"label_names": artifacts.label_names})
