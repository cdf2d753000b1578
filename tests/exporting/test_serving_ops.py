"""Every serving export runs on a stock TF Serving model server: each op of each function (the graph and
its whole function library) is a TensorFlow op or one the server links in (`serving_ops.MODEL_SERVER_OPS`,
read from the tensorflow/serving and tensorflow/text build files)."""

import types

import pytest

from electra_tf.exporting.serving_ops import MODEL_SERVER_OPS, TEXT_OPS_LIB_TARGETS, saved_model_ops, unsupported_ops
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


@pytest.fixture(scope="module")
def exports(artifacts, tmp_path_factory):
    """One export of each kind: classification and encoder (conftest), regression, tagging, QA, replaced tokens
    (with the generator's corruption)."""
    from electra_tf.export_formats import export_serving
    from electra_tf.exporting.assets import save_version, version_dir
    from electra_tf.models.discriminator import ElectraDiscriminator
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.run_files import read_config
    ElectraClassifier = task_kind("classification").model_class
    ElectraQuestionAnswerer = task_kind("span_qa").model_class
    ElectraTokenClassifier = task_kind("tagging").model_class

    base = str(tmp_path_factory.mktemp("ops"))
    pretrainer = build_pretrainer(read_config(artifacts.run_dir))
    detector = types.SimpleNamespace(discriminator=ElectraDiscriminator.from_pretrainer(pretrainer),
                                     pretrainer=pretrainer)  # with the generator's corruption
    rtd = task_kind("rtd").serving_module(detector, artifacts.vocab, {}, seq_length=32)
    regressor = ElectraClassifier(artifacts.encoder, num_labels=1)
    tagger = ElectraTokenClassifier(artifacts.encoder, num_labels=3)
    answerer = ElectraQuestionAnswerer(artifacts.encoder, answerable=True)
    for model in (regressor, tagger, answerer):
        model.build()
    return {
        "classification": artifacts.serving_path,
        "encoder": artifacts.encoder_path,
        "regression": export_serving(regressor, artifacts.vocab, base, "regression", 1, seq_length=32),
        "tagging": export_serving(tagger, artifacts.vocab, base, "tagging", 1, {"label_names": ["O", "B-X", "I-X"]},
                                  seq_length=32),
        "qa": export_serving(answerer, artifacts.vocab, base, "qa", 1, {"max_query_length": 16, "doc_stride": 16},
                             seq_length=48),
        "rtd": save_version(rtd, version_dir(base, "rtd", 1)),
    }


def test_every_op_of_every_export_is_one_the_model_server_has(exports):
    missing = unsupported_ops(*exports.values())
    assert not missing, "ops a stock model server lacks:\n" + "\n".join(f"{op}: {w[:3]}" for op, w in missing.items())


def test_every_served_kind_carries_tf_servings_warmup_requests_and_each_runs(exports):
    import tensorflow as tf

    from helpers import request_feeds, warmup_requests

    for kind, path in exports.items():
        if kind == "encoder":  # `--format encoder`: a SavedModel to fine-tune from, not a served version
            continue
        signature = tf.saved_model.load(path).signatures["serving_default"]
        specs = signature.structured_input_signature[1]
        requests = warmup_requests(path)
        assert len(requests) == {"qa": 6}.get(kind, 4), kind  # one per multiple of 8 up to seq_length
        for request in requests:
            assert set(request.inputs) == set(specs), kind
            feeds = request_feeds(request)
            assert all(specs[name].shape.is_compatible_with(feed.shape) for name, feed in feeds.items()), kind
            signature(**feeds)  # what the model server replays at load


def test_the_walk_reaches_the_tokenizer_inside_every_raw_text_function(exports):
    for kind, path in exports.items():
        uses = saved_model_ops(path)
        # Tokenization lives in the functions of the library, not the top-level graph.
        assert "FastWordpieceTokenizeWithOffsets" in uses, kind
        assert "<graph>" not in uses["FastWordpieceTokenizeWithOffsets"], kind
        assert "StatefulPartitionedCall" in uses, kind


def test_a_server_without_the_fast_ops_is_caught_and_the_ops_named(exports):
    """TF Serving 2.10 / 2.11 (tensorflow/text 2.7.3 / 2.8.2, tensorflow/serving#2064) lacked them."""
    without_fast = MODEL_SERVER_OPS - set(TEXT_OPS_LIB_TARGETS["fast_bert_normalizer_cc"]) - set(
        TEXT_OPS_LIB_TARGETS["fast_wordpiece_tokenizer_cc"])
    missing = unsupported_ops(exports["classification"], exports["tagging"], allowed=without_fast)
    # Everything else (TF's own ops, RegexSplitWithOffsets of the tagger's word split) passes.
    assert set(missing) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    assert any("serve_text" in where for where in missing["FastBertNormalize"])

