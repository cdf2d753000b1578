"""The encoder SavedModel: TF alone reproduces our encoder; preprocessing = our tokenizer."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.exporting.encoder_saved_model import export_encoder, load_encoder

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

TF_ONLY = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, texts_file, out_file = sys.argv[1:]
texts = json.load(open(texts_file))
loaded = tf.saved_model.load(path)
single = loaded.signatures["preprocess"](text=tf.constant(texts))
pair = loaded.signatures["preprocess_pair"](text=tf.constant(texts), text_b=tf.constant(texts[::-1]))
out = loaded.signatures["serving_default"](**single)
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
np.savez(out_file, sequence_output=out["sequence_output"].numpy(), cls_output=out["cls_output"].numpy(),
         **{k: v.numpy() for k, v in single.items()}, **{"pair_" + k: v.numpy() for k, v in pair.items()})
"""


def test_tf_only_process_matches_encoder(artifacts, texts, tmp_path):
    texts_file, out_file = tmp_path / "texts.json", tmp_path / "out.npz"
    texts_file.write_text(json.dumps(texts))
    subprocess.run([sys.executable, "-c", TF_ONLY, artifacts.encoder_path, str(texts_file), str(out_file)],
                   check=True, capture_output=True, timeout=600)
    out = np.load(out_file)
    tokenizer = WordPieceTokenizer(artifacts.vocab)
    inputs = tokenizer.pack(tf.constant(texts), seq_length=artifacts.seq_length)
    pair = tokenizer.pack(tf.constant(texts), tf.constant(texts[::-1]), seq_length=artifacts.seq_length)
    for key in inputs:
        np.testing.assert_array_equal(out[key], inputs[key].numpy())
        np.testing.assert_array_equal(out["pair_" + key], pair[key].numpy())
    expected = artifacts.encoder(inputs, training=False).numpy()
    assert out["sequence_output"].shape == (len(texts), artifacts.seq_length, artifacts.encoder.hidden_dim)
    np.testing.assert_allclose(out["sequence_output"], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["cls_output"], expected[:, 0], atol=1e-5, rtol=0)
    # The truncated text fills the sequence: [CLS] ... [SEP], no padding.
    assert out["padding_mask"][2].sum() == artifacts.seq_length
    assert out["token_ids"][1][:3].tolist() == [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]


def test_load_encoder_rebuilds_a_trainable_keras_encoder(artifacts, texts):
    encoder, vocab_file = load_encoder(artifacts.encoder_path)
    assert encoder.get_config() == artifacts.encoder.get_config()
    assert open(vocab_file).read() == open(artifacts.vocab).read()
    inputs = WordPieceTokenizer(vocab_file).pack(tf.constant(texts), seq_length=16)
    np.testing.assert_allclose(encoder(inputs).numpy(), artifacts.encoder(inputs).numpy(), atol=1e-6, rtol=0)
    assert len(encoder.trainable_weights) == len(artifacts.encoder.trainable_weights)


def test_refuses_existing_export_and_bad_seq_length(artifacts, tmp_path):
    with pytest.raises(FileExistsError, match="already holds a SavedModel"):
        export_encoder(artifacts.encoder, artifacts.vocab, artifacts.encoder_path)
    with pytest.raises(ValueError, match="`seq_length=1000` exceeds"):
        export_encoder(artifacts.encoder, artifacts.vocab, str(tmp_path / "x"), seq_length=1000)
