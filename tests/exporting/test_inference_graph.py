"""The served graph's encoder (`inference_graph.encoder_forward`) against the Keras encoder it stands for."""

import types

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import tasks
from electra_tf.exporting import inference_graph
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def inputs(lengths, width):
    rng = np.random.default_rng(0)
    mask = (np.arange(width)[None, :] < np.array(lengths)[:, None]).astype("int32")
    return {"token_ids": rng.integers(5, 100, (len(lengths), width)).astype("int32") * mask,
            "segment_ids": (rng.integers(0, 2, (len(lengths), width)) * mask).astype("int32"),
            "padding_mask": mask}


@pytest.mark.parametrize("activation, embedding_dim", [("gelu", 16), ("gelu_approximate", 32)])
def test_equals_the_keras_encoder_on_padded_rows(activation, embedding_dim):
    encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=4, hidden_dim=32, embedding_dim=embedding_dim,
                             intermediate_dim=64, activation=activation)
    batch = inputs([9, 3, 1], 16)
    expected = encoder(batch, training=False).numpy()
    assert inference_graph.supported(encoder)
    mask = batch["padding_mask"].astype(bool)
    got = tf.function(lambda x: inference_graph.encoder_forward(encoder, x))(batch).numpy()
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5, rtol=0)  # padding positions: any value
    # As a served model computes it: the query, key and value kernels concatenated once, kept as variables.
    projections = [tuple(tf.Variable(t) for t in pair) for pair in inference_graph.attention_projections(encoder)]
    got = tf.function(lambda x: inference_graph.encoder_forward(encoder, x, projections))(batch).numpy()
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5, rtol=0)


def test_an_encoder_it_does_not_describe_is_served_by_its_keras_layers():
    encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)
    encoder(inputs([4], 8))
    encoder.transformer_layers[0].normalize_first = True  # a pre-LN block: not BERT's post-LN order
    assert not inference_graph.supported(encoder)


def _ops(concrete):
    graph = concrete.graph.as_graph_def()
    return {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}


def test_every_kinds_served_graph_and_litert_function_hold_the_fused_encoder(tmp_path):
    from electra_tf.exporting.tflite import TFLiteModule
    from electra_tf.models.discriminator import ElectraDiscriminator

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
    encoder = ElectraEncoder(vocab_size=7, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)

    def built(model):
        model.build()
        return model

    def model(kind, **kwargs):
        return built(task_kind(kind).model_class(encoder, **kwargs))

    served = {  # kind -> (the model it serves, its settings)
        "classification": (model("classification", num_labels=2), {}),
        "tagging": (model("tagging", num_labels=3), {"label_names": ["O", "B-X", "I-X"]}),
        "span_qa": (model("span_qa"), {"doc_stride": 4, "max_query_length": 4}),
        "multiple_choice": (model("multiple_choice"), {}),
        "rtd": (types.SimpleNamespace(discriminator=built(ElectraDiscriminator(encoder)), pretrainer=None), {}),
        "embedding": (model("embedding"), {}),
    }
    assert sorted(served) == sorted(tasks.KINDS)  # every kind the registry declares
    modules = {kind: task_kind(kind).serving_module(served_model, str(vocab), settings, 16)
               for kind, (served_model, settings) in served.items()}
    for kind, module in modules.items():
        ops = _ops(module.signatures()["serving_default"].get_concrete_function())  # raw text: the whole path
        # Keras' exact GELU is `tf.nn.gelu`'s `Erfc` (a head's GELU keeps it); the fused encoder writes it with
        # `Erf`, the form Grappler fuses.
        assert "Erf" in ops and "BatchMatMulV2" in ops, kind
        # The export holds every weight once: the concatenated query, key and value kernels replace the three.
        model = module._model.obj
        held = sum(v.shape.num_elements() for v in module.variables)
        assert held == sum(int(np.prod(w.shape)) for w in model.weights), kind
        assert module.attention_projections is not None, kind
    for function in ("serve_ids", "serve_text"):
        litert_ops = _ops(getattr(TFLiteModule(modules["classification"]), function).get_concrete_function())
        assert "Erf" in litert_ops and "BatchMatMulV2" in litert_ops, function


def test_litert_model_of_the_fused_encoder_equals_the_keras_model(tmp_path):
    """The converted flatbuffer (float and int8 weights) against the Keras classifier on padded rows, and its
    projections: one `FULLY_CONNECTED` for each layer's query, key and value."""
    from ai_edge_litert.interpreter import Interpreter

    from electra_tf.exporting.tflite import TFLiteModule, convert
    ElectraClassifier = task_kind("classification").model_class

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(95)]) + "\n")
    layers = 2
    classifier = ElectraClassifier(ElectraEncoder(vocab_size=100, num_layers=layers, num_heads=4, hidden_dim=32,
                                                  embedding_dim=16, intermediate_dim=64), num_labels=3)
    batch = inputs([9, 3, 1], 12)
    expected = tf.nn.softmax(classifier(batch, training=False), axis=-1).numpy()  # the Keras layers
    module = TFLiteModule(task_kind("classification").serving_module(classifier, str(vocab), {}, 16))
    for quantize, atol in (("none", 1e-5), ("dynamic_int8", 0.02)):
        interpreter = Interpreter(model_content=convert(module.serve_ids, module, quantize))
        got = interpreter.get_signature_runner()(**batch)["probabilities"]
        np.testing.assert_allclose(got, expected, atol=atol, rtol=0, err_msg=quantize)
        ops = [op["op_name"] for op in interpreter._get_ops_details()]
        # Per layer: the query, key and value together, the attention output, the two feed-forward ones; the
        # head's dense and output. The Keras layers' graph has one per projection (6 per layer).
        assert ops.count("FULLY_CONNECTED") == 4 * layers + 2, (quantize, ops)
        assert "SELECT_V2" not in ops and ops.count("ADD") > 0, ops  # the mask is added, not selected


def test_a_module_traced_on_the_keras_layers_saves_and_serves_what_the_fused_one_does(tmp_path):
    # The fused export holds the query, key and value kernels only concatenated; a function traced inside
    # `keras_layers()` reads the separate ones, so from then on the module must hold those too.
    from electra_tf.models.encoder import ElectraEncoder
    ElectraClassifier = task_kind("classification").model_class

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]) + "\n")
    classifier = ElectraClassifier(ElectraEncoder(vocab_size=7, num_layers=2, num_heads=2, hidden_dim=16,
                                                  embedding_dim=16, intermediate_dim=32), num_labels=2)
    classifier.build()
    text = tf.constant(["a b a", "b"])
    served = {}
    for path in ("fused", "keras"):
        module = task_kind("classification").serving_module(classifier, str(vocab), {}, 16)
        function = module.signatures()["serving_default"]
        if path == "keras":
            with module.keras_layers():
                concrete = function.get_concrete_function()
        else:
            concrete = function.get_concrete_function()
        tf.saved_model.save(module, str(tmp_path / path), signatures={"serving_default": concrete})
        served[path] = tf.saved_model.load(str(tmp_path / path)).signatures["serving_default"](text=text)
        checkpoint = str(tmp_path / path / "variables" / "variables")
        written = [(name, shape) for name, shape in tf.train.list_variables(checkpoint)
                   if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
        names = " ".join(name for name, _ in written)
        elements = sum(int(np.prod(shape)) for _, shape in written)
        parameters = sum(int(np.prod(w.shape)) for w in classifier.weights)
        concatenated = sum(int(np.prod(k.shape)) + int(np.prod(b.shape))
                           for k, b in inference_graph.attention_projections(classifier.encoder))
        assert "attention_projections" in names, names
        # What the file holds: every weight once for the fused export, and the separate kernels beside the
        # concatenated ones once the Keras layers were traced.
        assert elements == parameters + (concatenated if path == "keras" else 0), (path, names)
    assert "Erfc" in _ops(concrete)  # the Keras layers' GELU: that path really ran the layers
    np.testing.assert_allclose(served["keras"]["probabilities"], served["fused"]["probabilities"], atol=1e-5, rtol=0)
