"""An embedding model served: the SavedModel's `serving_default(text)` and the LiteRT model (raw text, ids, int8)
give the Keras model's vectors of the same texts."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import export_formats
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.exporting.tflite_runtime import load_interpreter
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.embedding.features import pack_texts
from electra_tf.tasks.embedding.model import ElectraEmbedder
from helpers import request_feeds, warmup_requests

WORDS = ["where", "does", "the", "cat", "live", "horse", "eats", "grass", "in", "field", "cafe", "naive", "?"]
TEXTS = ["Where does the cat live?", "", "The horse eats grass in the field " * 6, "Café naïve"]
SEQ_LENGTH = 48

pytestmark = pytest.mark.large  # a SavedModel and four LiteRT conversions: tens of seconds each on a busy CPU


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def embedder(vocab):
    keras.utils.set_random_seed(0)
    model = ElectraEmbedder(ElectraEncoder(vocab_size=5 + len(WORDS), num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=8,
                                           intermediate_dim=32, max_sequence_length=64))
    model.build()
    return model


def keras_vectors(model, vocab, texts=TEXTS):
    return model(pack_texts(texts, WordPieceTokenizer(vocab), SEQ_LENGTH)).numpy()


def test_the_saved_model_serves_the_keras_vectors_of_raw_text(embedder, vocab, tmp_path):
    settings = {"task": "faq", "seq_length": SEQ_LENGTH, "metric": "mrr@10"}
    path = export_formats.export_serving(embedder, vocab, str(tmp_path), "faq", 1, settings)
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(TEXTS))
    assert list(served) == ["embedding"] and served["embedding"].dtype == tf.float32
    np.testing.assert_allclose(served["embedding"].numpy(), keras_vectors(embedder, vocab), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served["embedding"].numpy(), axis=-1), 1.0, atol=1e-5)
    # TF Serving's warm-up replay at load: a request per multiple of 8 up to seq_length, each served.
    requests = warmup_requests(path)
    assert len(requests) == SEQ_LENGTH // 8
    serve = tf.saved_model.load(path).signatures["serving_default"]
    for request in requests:
        serve(**request_feeds(request))


@pytest.mark.parametrize("ids_only", [False, True])
@pytest.mark.parametrize("quantize", ["none", "dynamic_int8"])
def test_the_litert_model_serves_the_keras_vectors(embedder, vocab, tmp_path, ids_only, quantize):
    settings = {"task": "faq", "seq_length": SEQ_LENGTH}
    path = export_formats.export_tflite(embedder, vocab, str(tmp_path / "tflite"), settings, ids_only=ids_only,
                                        quantize=quantize)
    runner = load_interpreter(path).get_signature_runner()
    if ids_only:
        inputs = pack_texts(TEXTS, WordPieceTokenizer(vocab), SEQ_LENGTH)
        vectors = runner(**{k: v.astype(np.int32) for k, v in inputs.items()})["embedding"]
    else:
        vectors = runner(text=np.array(TEXTS, dtype=object))["embedding"]
    expected = keras_vectors(embedder, vocab)
    if quantize == "none":
        np.testing.assert_allclose(vectors, expected, atol=1e-5)
    else:  # int8 weights: the same direction, nearly
        assert (np.sum(vectors * expected, axis=-1) > 0.98).all()
