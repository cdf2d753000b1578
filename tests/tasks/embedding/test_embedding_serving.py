"""An embedding model served: the SavedModel's `serving_default(text)` and the LiteRT model (raw text, ids, int8)
give the Keras model's vectors of the same texts."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import tasks
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.export.tflite_runtime import load_interpreter
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.embedding.kind import pack_texts
from electra_tf.tasks.embedding.model import ElectraEmbedder

VOCAB = pathlib.Path(__file__).resolve().parents[4] / "shared" / "data" / "vocab" / "bert_uncased_vocab.txt"
TEXTS = ["Where does the cat live?", "", "The horse eats grass in the field " * 6, "Café naïve"]
SEQ_LENGTH = 48


@pytest.fixture(scope="module")
def embedder():
    if not VOCAB.exists():
        pytest.skip(f"shared vocabulary missing: {VOCAB}")
    keras.utils.set_random_seed(0)
    model = ElectraEmbedder(ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=8,
                                           intermediate_dim=32, max_sequence_length=64))
    model.build()
    return model


def keras_vectors(model, texts=TEXTS):
    return model(pack_texts(texts, WordPieceTokenizer(str(VOCAB)), SEQ_LENGTH)).numpy()


def test_the_saved_model_serves_the_keras_vectors_of_raw_text(embedder, tmp_path):
    settings = {"task": "faq", "seq_length": SEQ_LENGTH, "metric": "mrr@10"}
    path = tasks.export_serving(embedder, str(VOCAB), str(tmp_path), "faq", 1, settings)
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(TEXTS))
    assert list(served) == ["embedding"] and served["embedding"].dtype == tf.float32
    np.testing.assert_allclose(served["embedding"].numpy(), keras_vectors(embedder), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served["embedding"].numpy(), axis=-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("ids_only", [False, True])
@pytest.mark.parametrize("quantize", ["none", "dynamic_int8"])
def test_the_litert_model_serves_the_keras_vectors(embedder, tmp_path, ids_only, quantize):
    settings = {"task": "faq", "seq_length": SEQ_LENGTH}
    path = tasks.export_tflite(embedder, str(VOCAB), str(tmp_path / "tflite"), settings, ids_only=ids_only,
                               quantize=quantize)
    runner = load_interpreter(path).get_signature_runner()
    if ids_only:
        inputs = pack_texts(TEXTS, WordPieceTokenizer(str(VOCAB)), SEQ_LENGTH)
        vectors = runner(**{k: v.astype(np.int32) for k, v in inputs.items()})["embedding"]
    else:
        vectors = runner(text=np.array(TEXTS, dtype=object))["embedding"]
    expected = keras_vectors(embedder)
    if quantize == "none":
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
    else:  # int8 weights: the same direction, nearly
        assert (np.sum(vectors * expected, axis=-1) > 0.98).all()
