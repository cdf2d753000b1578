"""LiteRT exports take any length up to `seq_length` (raw text and `--ids`), and an `--ids` model refuses ids it
cannot read, naming the input and the bound, from a process without TensorFlow.

The reference is the served module of the same classifier (its `serving_default` and `predict_ids`),
run by TensorFlow in this process.
"""

import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE
from helpers import run_python
from test_dynamic_length import write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

SEQ_LENGTH = 64
SHORT = ["a good film"]
LONG = ["the film was very good " * 20, "", "the plot was boring , the actors were not"]

# A LiteRT-only process: each request's outputs or its error, as a user's client would see them.
LITERT_CLIENT = r"""
import json, sys
import numpy as np
from electra_tf.exporting.tflite_runtime import load_interpreter
requests, out_file = json.load(open(sys.argv[1])), sys.argv[2]
results, errors = {}, {}
for name, (model, inputs_file) in requests.items():
    runner = load_interpreter(model).get_signature_runner()
    try:
        out = runner(**dict(np.load(inputs_file)))
    except ValueError as e:
        errors[name] = str(e)
        continue
    for key, value in out.items():
        results[f"{name}/{key}"] = value.astype(str) if value.dtype == object else value
assert not [m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras")]
np.savez(out_file, **results)
print(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    import keras

    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.export_formats import export_tflite
    from electra_tf.models.encoder import ElectraEncoder
    ElectraClassifier = task_kind("classification").model_class

    root = tmp_path_factory.mktemp("tflite_dynamic")
    vocab = write_vocab(root / "vocab.txt")
    keras.utils.set_random_seed(5)
    encoder = ElectraEncoder(vocab_size=len(WordPieceTokenizer(vocab).vocab), num_layers=2, num_heads=2,
                             hidden_dim=32, embedding_dim=16, intermediate_dim=64, max_sequence_length=SEQ_LENGTH)
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    settings = {"label_names": ["negative", "positive"], "seq_length": SEQ_LENGTH}
    text_model = export_tflite(classifier, vocab, str(root / "text"), settings)
    ids_model = export_tflite(classifier, vocab, str(root / "ids"), settings, ids_only=True)
    module = task_kind("classification").serving_module(classifier, vocab, settings)
    return root, text_model, ids_model, module, encoder.vocab_size


def run_client(requests, tmp_path):
    files = {}
    for name, (model, inputs) in requests.items():
        files[name] = (model, str(tmp_path / f"{name}.npz"))
        np.savez(files[name][1], **inputs)
    (tmp_path / "requests.json").write_text(json.dumps(files))
    result = run_python(["-c", LITERT_CLIENT, str(tmp_path / "requests.json"), str(tmp_path / "out.npz")])
    return dict(np.load(tmp_path / "out.npz")), json.loads(result.stdout.strip().splitlines()[-1])


def test_litert_models_take_a_short_and_a_long_request(exported, tmp_path):
    """Raw text of one short sentence and of a batch up to seq_length; ids of one pad multiple and of seq_length
    positions."""
    root, text_model, ids_model, module, _ = exported
    preprocess = module.signatures()["preprocess"]
    short_ids = {k: v.numpy() for k, v in preprocess(text=tf.constant(SHORT)).items()}
    long_ids = {k: v.numpy() for k, v in preprocess(text=tf.constant(LONG)).items()}
    assert short_ids["token_ids"].shape[1] == SERVING_PAD_MULTIPLE and long_ids["token_ids"].shape[1] == SEQ_LENGTH
    requests = {"text_short": (text_model, {"text": np.array(SHORT)}),
                "text_long": (text_model, {"text": np.array(LONG)}),
                "ids_short": (ids_model, short_ids), "ids_long": (ids_model, long_ids)}
    out, errors = run_client(requests, tmp_path)
    assert errors == {}
    for texts, ids, size in ((SHORT, short_ids, "short"), (LONG, long_ids, "long")):
        expected = module.signatures()["serving_default"](text=tf.constant(texts))
        np.testing.assert_allclose(expected["probabilities"].numpy(),
                                   module.signatures()["predict_ids"](**ids)["probabilities"].numpy(), atol=1e-5)
        for kind in ("text", "ids"):
            np.testing.assert_allclose(out[f"{kind}_{size}/probabilities"], expected["probabilities"].numpy(),
                                       atol=1e-5, err_msg=f"{kind}_{size}")
            np.testing.assert_array_equal(out[f"{kind}_{size}/label"], expected["label"].numpy().astype(str))


def test_litert_ids_model_refuses_ids_outside_the_table_and_rows_too_long(exported, tmp_path):
    """A negative id (LiteRT's gather would read outside the embedding table and answer), an id past the
    vocabulary, a segment id, a mask value, a row past seq_length, unequal shapes: each a `ValueError` naming
    the input and the bound."""
    root, _, ids_model, _, vocab_size = exported

    def ids(length=8, **changes):
        inputs = {"token_ids": np.full([2, length], 5, np.int32), "segment_ids": np.zeros([2, length], np.int32),
                  "padding_mask": np.ones([2, length], np.int32)}
        for name, (where, value) in changes.items():
            inputs[name][where] = value
        return inputs

    cases = {
        "negative": (ids(token_ids=((0, 2), -5)), f"`token_ids` must be in [0, {vocab_size})"),
        "huge": (ids(token_ids=((1, 3), 10_000_000)), f"`token_ids` must be in [0, {vocab_size})"),
        "segment": (ids(segment_ids=((0, 1), 2)), "`segment_ids` must be in [0, 2)"),
        "mask": (ids(padding_mask=((0, 1), -1)), "`padding_mask` must be in [0, 2)"),
        "too_long": (ids(SEQ_LENGTH + 1), f"rows of `token_ids` must be at most {SEQ_LENGTH} ids long"),
        "unequal": (dict(ids(), segment_ids=np.zeros([2, 7], np.int32)), "`segment_ids` must have the shape of "
                                                                         "`token_ids`"),
        "fine": (ids(token_ids=((0, 2), vocab_size - 1)), None),
    }
    out, errors = run_client({name: (ids_model, inputs) for name, (inputs, _) in cases.items()}, tmp_path)
    for name, (_, message) in cases.items():
        if message is None:
            assert name not in errors and out[f"{name}/probabilities"].shape == (2, 2)
        else:
            assert message in errors[name], (name, errors.get(name))
    assert "-5 at [0, 2]" in errors["negative"] and "10000000 at [1, 3]" in errors["huge"]


def test_pack_ids_at_the_requests_length_equals_the_served_packing(tmp_path):
    """The LiteRT packing (builtin ops) pads as the SavedModel's does: to the longest row rounded up to a multiple
    (the SavedModel's 8, and LiteRT's own 1: the longest row itself)."""
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.exporting.tflite import LITERT_PAD_MULTIPLE, pack_ids

    tokenizer = WordPieceTokenizer(write_vocab(tmp_path / "vocab.txt"))
    for texts in (SHORT, LONG, SHORT + LONG, [""]):
        for b in (None, tf.constant(texts[::-1])):
            for seq_length in (8, SEQ_LENGTH):
                for multiple in (SERVING_PAD_MULTIPLE, LITERT_PAD_MULTIPLE):
                    expected = tokenizer.pack(tf.constant(texts), b, seq_length, pad_multiple=multiple)
                    got = pack_ids(tokenizer, tf.constant(texts), b, seq_length, pad_multiple=multiple)
                    for key in expected:
                        np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=key)
    empty = pack_ids(tokenizer, tf.constant([], tf.string), seq_length=SEQ_LENGTH, pad_multiple=SERVING_PAD_MULTIPLE)
    assert empty["token_ids"].shape == (0, SERVING_PAD_MULTIPLE)


def test_the_raw_text_model_computes_at_the_longest_requests_own_length(exported, tmp_path):
    """The exported raw-text model's packing, run by LiteRT: a call's width is its longest request, not rounded up
    (the SavedModel rounds it up to a multiple of 8); `tflite_config.json` says so."""
    from electra_tf.exporting.tflite import TEXT_OP_REGISTRARS, TFLiteModule, convert

    root, text_model, ids_model, module, _ = exported
    litert = TFLiteModule(module)  # as `export_tflite` makes it
    (tmp_path / "preprocess.tflite").write_bytes(convert(litert.preprocess, litert,
                                                         custom_ops_allowed=tuple(TEXT_OP_REGISTRARS)))
    served = module.signatures()["preprocess"]
    requests = {name: (str(tmp_path / "preprocess.tflite"), {"text": np.array(texts)})
                for name, texts in (("short", SHORT), ("both", SHORT + LONG[2:]))}
    out, errors = run_client(requests, tmp_path)
    assert errors == {}
    for name, texts in (("short", SHORT), ("both", SHORT + LONG[2:])):
        expected = served(text=tf.constant(texts))
        longest = int(expected["padding_mask"].numpy().sum(1).max())
        assert out[f"{name}/token_ids"].shape == (len(texts), longest)
        assert expected["token_ids"].shape[1] == -(-longest // SERVING_PAD_MULTIPLE) * SERVING_PAD_MULTIPLE > longest
        for key in ("token_ids", "segment_ids", "padding_mask"):
            np.testing.assert_array_equal(out[f"{name}/{key}"], expected[key].numpy()[:, :longest], err_msg=key)
    assert json.loads((pathlib.Path(text_model).parent / "tflite_config.json").read_text())["pad_multiple"] == 1
    assert json.loads((pathlib.Path(ids_model).parent / "tflite_config.json").read_text())["pad_multiple"] is None
