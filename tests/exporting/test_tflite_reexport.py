"""A LiteRT re-export of the same weights reproduces an earlier export: bit for bit from the same weights, and
within the stated bound (docs/serving.md) of its int8 probabilities when the float weights differ by round-off,
as between two builds of the product (another release's or machine's arithmetic)."""

import numpy as np
import pytest

from helpers import make_run_dir, write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

INT8_BOUND = 1e-4  # docs/serving.md: an int8 re-export's probabilities
FLOAT_BOUND = 1e-5  # and a float one's


@pytest.mark.large  # four LiteRT conversions: ~1 min on 2 shared cores
def test_a_reexport_reproduces_the_earlier_export_within_the_stated_bounds(tmp_path):
    import keras

    from electra_tf.exporting.tflite_runtime import load_interpreter
    from electra_tf.sources import load_discriminator
    from electra_tf.export_formats import export_tflite
    ElectraClassifier = task_kind("classification").model_class

    vocab = write_vocab(tmp_path / "vocab.txt", 400)
    run = make_run_dir(tmp_path / "run", vocab, embedding_dim=32, hidden_dim=64, num_layers=2, intermediate_dim=128)
    keras.utils.set_random_seed(3)
    classifier = ElectraClassifier(load_discriminator(run)[0], num_labels=3)
    classifier.build()
    settings = {"label_names": ["a", "b", "c"], "seq_length": 32}
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 400, (64, 32)).astype(np.int32)
    ids[:, 0] = 2
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}

    def export(name, quantize):
        path = export_tflite(classifier, vocab, str(tmp_path / name), settings, ids_only=True, quantize=quantize)
        return path, load_interpreter(path).get_signature_runner()(**inputs)["probabilities"]

    int8_path, int8 = export("int8", "dynamic_int8")
    again_path, again = export("int8_again", "dynamic_int8")
    assert open(int8_path, "rb").read() == open(again_path, "rb").read()  # the same weights: the same model
    _, floating = export("float", None)
    for weight in classifier.weights:  # float round-off: up to 3 ulps on every weight
        value = weight.numpy()
        if value.dtype == np.float32:
            weight.assign(value * (1 + rng.integers(-3, 4, value.shape) * np.float32(2**-23)))
    _, float_after = export("float_after", None)
    _, int8_after = export("int8_after", "dynamic_int8")
    assert np.abs(float_after - floating).max() <= FLOAT_BOUND
    assert 0 < np.abs(int8_after - int8).max() <= INT8_BOUND  # rounding moved some int8 weights, within the bound
    np.testing.assert_array_equal(int8_after.argmax(-1), int8.argmax(-1))
