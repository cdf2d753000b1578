"""`sources.init_pretrainer` for continued pre-training: the first `fit` step runs on the imported weights."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from convert_helpers import inputs, keras_outputs
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources import init_pretrainer


def test_first_fit_step_losses_equal_compute_losses_on_the_import(hf_pair):
    config, disc_dir, gen_dir, _, _ = hf_pair  # dropout 0: training=True computes the same
    pretrainer = build_pretrainer(config)
    init_pretrainer(f"hf:{disc_dir},{gen_dir}", pretrainer)
    pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-3), jit_compile=False)
    batch = inputs(config, batch=4, seed=5)
    seed = pretrainer._step_seed(0)  # the train_step seed at step 0, before training
    np.testing.assert_array_equal(seed.numpy(), [2 * config.seed, 0])
    before = pretrainer.compute_losses(batch, seed, training=False)
    imported = keras_outputs(pretrainer, inputs(config))

    history = pretrainer.fit(tf.data.Dataset.from_tensors(batch), epochs=1, verbose=0, shuffle=False).history

    def weighted(values, weights):
        return float(np.sum(values * weights) / np.sum(weights))

    np.testing.assert_allclose(history["loss"][0], float(before.loss), rtol=1e-5)
    np.testing.assert_allclose(
        history["masked_lm_loss"][0], weighted(before.mlm_losses, before.weights), rtol=1e-5
    )
    np.testing.assert_allclose(
        history["disc_loss"][0], weighted(before.disc_losses, before.disc_weights), rtol=1e-5
    )
    assert history["masked_lm_loss"][0] > 0 and history["disc_loss"][0] > 0
    # The step trained the imported weights (not fresh ones) and moved them.
    after = keras_outputs(pretrainer, inputs(config))
    assert not np.allclose(after[0], imported[0])


def test_init_from_bert_leaves_generator_and_head_and_says_so(tmp_path, caplog):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from convert_helpers import save_pretrained, tiny_config

    config = tiny_config(embedding_dim=64)  # BERT: E = H
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=config.vocab_size,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=128,
            max_position_embeddings=64,
        ),
        add_pooling_layer=True,
    )
    save_pretrained(bert, str(tmp_path))
    pretrainer = build_pretrainer(config)
    with caplog.at_level("WARNING"):
        init_pretrainer(f"bert:{tmp_path}", pretrainer)
    assert "['discriminator_head', 'generator', 'generator_head']" in caplog.text
    with pytest.raises(
        ValueError, match=r"missing from the checkpoint: `discriminator_predictions/dense/bias`"
    ):
        init_pretrainer(f"bert:{tmp_path}", pretrainer, strict=True)
    np.testing.assert_array_equal(
        pretrainer.embeddings.token_embedding.embeddings.numpy(),
        bert.embeddings.word_embeddings.weight.detach().numpy(),
    )
