"""The reference optimizer: schedule formula, weight-decay exclusions, settings."""

import keras
import numpy as np

from electra_tf.config import get_config
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.training.optimization import WarmupLinearDecay, create_optimizer


def test_schedule_is_warmup_times_linear_decay():
    schedule = WarmupLinearDecay(5e-4, warmup_steps=100, total_steps=1000)
    for step in (0, 1, 50, 100, 101, 500, 999, 1000, 1500):
        expected = 5e-4 * min(1.0, step / 100) * max(0.0, 1 - step / 1000)
        np.testing.assert_allclose(float(schedule(step)), expected, rtol=2e-5, atol=1e-12)
    accumulated = WarmupLinearDecay(5e-4, 100, 1000, steps_per_update=4)
    np.testing.assert_allclose(float(accumulated(203)), float(schedule(50)), rtol=1e-6)
    assert WarmupLinearDecay(**schedule.get_config()).get_config() == schedule.get_config()


def test_optimizer_has_reference_settings_and_skips_layernorm_and_bias():
    config = get_config("tiny", vocab_size=200)
    optimizer = create_optimizer(config)
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert (optimizer.epsilon, optimizer.weight_decay, optimizer.global_clipnorm) == (1e-6, 0.01, 1.0)
    model = build_pretrainer(config)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    skipped = {v.path for v in model.trainable_variables} - decayed
    assert skipped and all(
        p.endswith(("/bias", "/gamma", "/beta", "/output_bias", "/_bias")) for p in skipped
    ), sorted(skipped)
    assert all(p.endswith(("/kernel", "/embeddings")) for p in decayed), sorted(decayed)
    assert any("token_embedding" in p for p in decayed)
    assert isinstance(create_optimizer(config.replace(optimizer="lamb")), keras.optimizers.Lamb)
