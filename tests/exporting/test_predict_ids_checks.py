"""The id signatures of every export (`predict_ids` of the classifier, tagger and QA serving models, the encoder
export's `serving_default`) check their requests: an id outside the vocabulary, a segment id or mask value out
of range, or a row longer than the position table is an `InvalidArgumentError` naming the input and the bound,
not the model's `indices[0,1] = 10000000 is not in [0, 30522)`. Called in a fresh process that imports only
tensorflow and tensorflow_text; a good request still works after the bad ones."""

import json

import keras
import pytest

from helpers import run_python
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

SCRIPT = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
requests = json.loads(sys.argv[1])
out = {}
for name, (path, signature) in requests.items():
    call = tf.saved_model.load(path).signatures[signature]
    def run(token_ids, segment_ids=None, padding_mask=None):
        token_ids = tf.constant(token_ids, tf.int32)
        segment_ids = tf.zeros_like(token_ids) if segment_ids is None else tf.constant(segment_ids, tf.int32)
        padding_mask = tf.ones_like(token_ids) if padding_mask is None else tf.constant(padding_mask, tf.int32)
        try:
            call(token_ids=token_ids, segment_ids=segment_ids, padding_mask=padding_mask)
            return "ok"
        except tf.errors.InvalidArgumentError as e:
            return e.message
    out[name] = {"vocabulary": run([[2, 10000000, 3]]), "negative": run([[2, -1, 3]]),
                 "too_long": run([[2] + [5] * 998 + [3]]), "segment": run([[2, 5, 3]], [[0, 0, 7]]),
                 "mask": run([[2, 5, 3]], None, [[1, 1, 3]]), "good": run([[2, 5, 3]])}
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def exports(artifacts, tmp_path_factory):
    """The classifier's and the encoder's exports (session fixtures), and a tagger's and a QA model's."""
    from electra_tf.export_formats import export_serving
    ElectraQuestionAnswerer = task_kind("span_qa").model_class
    ElectraTokenClassifier = task_kind("tagging").model_class

    base = tmp_path_factory.mktemp("ids_checks")
    keras.utils.set_random_seed(7)
    tagger = ElectraTokenClassifier(artifacts.encoder, num_labels=3)
    tagger.build()
    qa = ElectraQuestionAnswerer(artifacts.encoder, start_n_top=2, end_n_top=2, joint_hidden_dim=16)
    qa.build()
    return {
        "classifier": (artifacts.serving_path, "predict_ids"),
        "encoder": (artifacts.encoder_path, "serving_default"),
        "tagger": (export_serving(tagger, artifacts.vocab, str(base), "tagger", 1,
                                  {"label_names": ["O", "B-X", "I-X"]}, seq_length=32), "predict_ids"),
        "qa": (export_serving(qa, artifacts.vocab, str(base), "qa", 1, {"doc_stride": 8, "max_query_length": 8},
                              seq_length=32), "predict_ids"),
    }


@pytest.mark.large
def test_id_signatures_name_the_input_and_the_bound_of_a_bad_request(artifacts, exports):
    result = run_python(["-c", SCRIPT, json.dumps(exports)])
    out = json.loads(result.stdout.strip().splitlines()[-1])
    vocab_size, length = artifacts.encoder.vocab_size, artifacts.encoder.max_sequence_length
    for name in exports:
        expected = {"vocabulary": f"`token_ids` must be in [0, {vocab_size}) (vocab_size of the model)",
                    "negative": f"`token_ids` must be in [0, {vocab_size})",
                    "too_long": f"rows of `token_ids` must be at most {length} ids long, the position table of "
                                "the model (max_sequence_length)",
                    "segment": "`segment_ids` must be in [0, 2)", "mask": "`padding_mask` must be in [0, 2)"}
        for case, text in expected.items():
            assert f"assertion failed: [{text}" in out[name][case], (name, case, out[name][case])
            assert "is not in [0," not in out[name][case]  # the model's own gather never ran
        assert out[name]["good"] == "ok", (name, out[name])
