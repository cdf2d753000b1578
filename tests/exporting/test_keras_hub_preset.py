"""The keras-hub preset loads with keras-hub alone and reproduces our encoder."""

import json
import subprocess
import sys

import numpy as np
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.exporting.keras_hub_preset import to_keras_hub_backbone
from electra_tf.models.encoder import ElectraEncoder

KERAS_HUB_ONLY = r"""
import json, sys
import numpy as np
import keras_hub
path, inputs_file, out_file = sys.argv[1:]
data = json.load(open(inputs_file))
backbone = keras_hub.models.ElectraBackbone.from_preset(path)
tokenizer = keras_hub.tokenizers.ElectraTokenizer.from_preset(path)
inputs = {k: np.array(v, "int32") for k, v in data["inputs"].items()}
out = backbone.predict(inputs, verbose=0)
ids = [list(map(int, row)) for row in tokenizer(data["texts"])]
assert not any(m.startswith("electra_tf") for m in sys.modules), "imported project code"
np.save(out_file, out["sequence_output"])
json.dump(ids, open(out_file + ".ids.json", "w"))
"""


def test_keras_hub_alone_matches_encoder(artifacts, texts, tmp_path):
    tokenizer = WordPieceTokenizer(artifacts.vocab)
    inputs = tokenizer.pack(tf.constant(texts), seq_length=artifacts.seq_length)
    inputs_file, out_file = tmp_path / "inputs.json", str(tmp_path / "out.npy")
    inputs_file.write_text(json.dumps({"texts": texts, "inputs": {k: v.numpy().tolist() for k, v in inputs.items()}}))
    subprocess.run([sys.executable, "-c", KERAS_HUB_ONLY, artifacts.preset_path, str(inputs_file), out_file],
                   check=True, capture_output=True, timeout=600)
    assert artifacts.encoder.activation == "gelu_approximate"
    expected = artifacts.encoder(inputs, training=False).numpy()
    np.testing.assert_allclose(np.load(out_file), expected, atol=1e-5, rtol=0)
    keras_hub_ids = json.loads(open(out_file + ".ids.json").read())
    assert keras_hub_ids == tokenizer.tokenize(texts).to_list()


def test_exact_gelu_encoder_differs_only_by_the_activation(artifacts, texts):
    """Reports the exact-vs-approximate GELU gap (keras-hub hard-codes the approximation)."""
    config = dict(artifacts.encoder.get_config(), activation="gelu")
    exact = ElectraEncoder.from_config(config)
    exact.build()
    exact.set_weights(artifacts.encoder.get_weights())
    # Scale up the weights so activations leave GELU's near-linear region, as trained weights do.
    exact.set_weights([w * 8 if w.ndim >= 2 else w for w in exact.get_weights()])
    backbone = to_keras_hub_backbone(exact)
    inputs = WordPieceTokenizer(artifacts.vocab).pack(tf.constant(texts), seq_length=artifacts.seq_length)
    ours = exact(inputs).numpy()
    theirs = backbone({k: v for k, v in inputs.items()})["sequence_output"].numpy()
    gap = float(np.abs(ours - theirs).max())
    print(f"exact-GELU encoder vs keras-hub ElectraBackbone: max |diff| = {gap:.2e}")
    assert 1e-6 < gap < 1e-1
    approx = ElectraEncoder.from_config(dict(config, activation="gelu_approximate"))
    approx.build()
    approx.set_weights(exact.get_weights())
    np.testing.assert_allclose(approx(inputs).numpy(), theirs, atol=1e-5, rtol=0)
