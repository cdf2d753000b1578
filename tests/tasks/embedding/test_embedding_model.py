"""The embedding kind's model, loss and metrics against independent references: sentence-transformers' own
vectors of all-MiniLM-L6-v2, its `MultipleNegativesRankingLoss`, its `InformationRetrievalEvaluator`, numpy."""

import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "converting"))
from convert_helpers import minilm_dir  # noqa: E402

from electra_tf import sources  # noqa: E402
from electra_tf.data.tokenizer import WordPieceTokenizer  # noqa: E402
from electra_tf.models.encoder import ElectraEncoder  # noqa: E402
from electra_tf.tasks.embedding.features import pack_texts  # noqa: E402
from electra_tf.tasks.embedding.loss import MultipleNegativesRankingLoss  # noqa: E402
from electra_tf.tasks.embedding.metrics import corpus_of, retrieval_metrics  # noqa: E402
from electra_tf.tasks.embedding.data import Pair  # noqa: E402
from electra_tf.tasks.embedding.model import ElectraEmbedder  # noqa: E402

TEXTS = ["How do cats purr?", "The Eiffel Tower is in Paris, France.", "Café au lait — naïve résumé!", "",
         "a long text " * 120, "Fußach's Größe: ﬁne ² ΟΔΟΣ zero\u200bwidth"]  # where case folding differs


def tiny_encoder(seed=0):
    keras.utils.set_random_seed(seed)
    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=8,
                             intermediate_dim=32, max_sequence_length=32)
    encoder.build()
    return encoder


def tiny_inputs(rows=3, length=12, seed=0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(3, length + 1, rows)
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype("int32")
    return {"token_ids": rng.randint(5, 50, (rows, length)).astype("int32") * mask,
            "segment_ids": np.zeros((rows, length), "int32"), "padding_mask": mask}


@pytest.mark.large  # loads MiniLM twice (TF, torch): tens of seconds
def test_minilm_vectors_equal_sentence_transformers_encode():
    """all-MiniLM-L6-v2 read as `--init` (its BERT folder), mean pooling: sentence-transformers' own normalised vectors,
    accents, an empty text, one cut at 256 tokens and one that Unicode case folding would tokenize otherwise
    (ß, ﬁ, ², a final capital sigma, a zero-width space) included."""
    from sentence_transformers import SentenceTransformer

    folder = minilm_dir()
    encoder, vocab_file = sources.load_init(folder)
    packed = pack_texts(TEXTS, WordPieceTokenizer(vocab_file), 256)
    ours = ElectraEmbedder(encoder)(packed).numpy()
    reference = SentenceTransformer(folder, device="cpu").encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(ours, reference, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
@pytest.mark.parametrize("normalize", [True, False])
def test_pooling_and_normalisation_follow_their_definitions(pooling, normalize):
    encoder = tiny_encoder()
    inputs = tiny_inputs()
    sequence = encoder(inputs).numpy()
    mask = inputs["padding_mask"][:, :, None]
    expected = sequence[:, 0] if pooling == "cls" else (sequence * mask).sum(1) / mask.sum(1)
    if normalize:
        expected = expected / np.linalg.norm(expected, axis=-1, keepdims=True)
    vectors = ElectraEmbedder(encoder, pooling=pooling, normalize=normalize)(inputs).numpy()
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_padding_changes_no_vector_and_rows_of_several_texts_are_each_text_alone():
    embedder = ElectraEmbedder(tiny_encoder())
    inputs = tiny_inputs(rows=6, length=12)
    wider = {k: np.pad(v, [[0, 0], [0, 8]]) for k, v in inputs.items()}
    alone = embedder(inputs).numpy()
    np.testing.assert_allclose(embedder(wider).numpy(), alone, atol=1e-5)
    grouped = embedder({k: v.reshape(3, 2, 12) for k, v in inputs.items()}).numpy()
    np.testing.assert_allclose(grouped.reshape(6, -1), alone, atol=1e-6)


def test_a_saved_embedder_loads_back_with_its_settings_and_vectors(tmp_path):
    embedder = ElectraEmbedder(tiny_encoder(), pooling="cls", normalize=False)
    embedder.compile(optimizer="adam", loss=MultipleNegativesRankingLoss(scale=7.0))
    inputs = tiny_inputs()
    path = str(tmp_path / "embedder.keras")
    embedder.save(path)
    loaded = keras.saving.load_model(path)
    assert (loaded.pooling, loaded.normalize, loaded.loss.scale) == ("cls", False, 7.0)
    np.testing.assert_allclose(loaded(inputs).numpy(), embedder(inputs).numpy(), atol=1e-6)


def test_an_unknown_pooling_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match=r"`pooling` must be one of \('mean', 'cls'\)"):
        ElectraEmbedder(tiny_encoder(), pooling="max")


@pytest.mark.parametrize("texts_per_row", [2, 3])
@pytest.mark.parametrize("scale", [20.0, 5.0])
def test_the_loss_is_sentence_transformers_multiple_negatives_ranking_loss(texts_per_row, scale):
    """Same vectors (not normalised: the cosine is the loss's), same loss, with and without a hard negative."""
    import torch
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as Reference

    vectors = np.random.RandomState(texts_per_row).randn(6, texts_per_row, 8).astype("float32")
    reference = Reference(model=torch.nn.Identity(), scale=scale).compute_loss_from_embeddings(
        [torch.from_numpy(vectors[:, i]) for i in range(texts_per_row)], None)
    ours = MultipleNegativesRankingLoss(scale=scale)(np.zeros(6), tf.constant(vectors))
    np.testing.assert_allclose(float(ours), float(reference), rtol=1e-5)


def test_retrieval_metrics_equal_sentence_transformers_information_retrieval_evaluator():
    """The same vectors ranked by both: recall@1, recall@10 and mrr@10 of queries with one or two relevant passages."""
    import torch
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    rng = np.random.RandomState(0)
    pairs = [Pair(f"q{rng.randint(40)}", f"p{rng.randint(60)}") for _ in range(80)]
    queries, passages, relevant = corpus_of(pairs)
    vectors = {text: rng.randn(6).astype("float32") for text in queries + passages}
    ours = retrieval_metrics(np.stack([vectors[q] for q in queries]), np.stack([vectors[p] for p in passages]),
                             relevant)

    class GivenVectors(InformationRetrievalEvaluator):
        def embed_inputs(self, model, sentences, *args, **kwargs):
            return torch.from_numpy(np.stack([vectors[s] for s in sentences]))

    evaluator = GivenVectors(dict(enumerate(queries)), dict(enumerate(passages)),
                             {i: set(gold) for i, gold in enumerate(relevant)}, precision_recall_at_k=[1, 10],
                             score_functions={"cosine": cos_sim}, write_csv=False)
    reference = evaluator.compute_metrices(None)["cosine"]
    assert any(len(gold) > 1 for gold in relevant)
    assert ours["recall@1"] == pytest.approx(reference["recall@k"][1])
    assert ours["recall@10"] == pytest.approx(reference["recall@k"][10])
    assert ours["mrr@10"] == pytest.approx(reference["mrr@k"][10])
