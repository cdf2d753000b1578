"""The reference optimizer: schedule formula, weight-decay exclusions, settings."""

import keras
import numpy as np
import pytest

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


# --- The official update rule, re-implemented in numpy (google-research/electra model/optimization.py) ---

def official_adamw(params, decays, grads_per_step, peak, warmup, total, weight_decay, clip_norm,
                   multipliers=None, bias_correction=False, beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """`AdamWeightDecayOptimizer` after `tf.clip_by_global_norm` with warmup x polynomial (power 1) decay.

    `decays[i]`: whether parameter i gets weight decay (the reference excludes LayerNorm and bias).
    `bias_correction=True` is Adam in Kingma & Ba's "more efficient" form (end of their section 2):
    step size `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)` on `m / (sqrt(v) + epsilon)`, as Keras computes it.
    """
    params = [p.astype("float64").copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    multipliers = multipliers or [1.0] * len(params)
    for step, grads in enumerate(grads_per_step):  # `global_step` before its increment
        lr = peak * max(0.0, 1 - step / total) * min(1.0, step / warmup)
        norm = np.sqrt(sum(float((g.astype("float64") ** 2).sum()) for g in grads))
        grads = [g * clip_norm / max(norm, clip_norm) for g in grads]
        for i, g in enumerate(grads):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            v[i] = beta_2 * v[i] + (1 - beta_2) * g * g
            update = m[i] / (np.sqrt(v[i]) + epsilon)
            if bias_correction:
                update = update * np.sqrt(1 - beta_2 ** (step + 1)) / (1 - beta_1 ** (step + 1))
            if decays[i]:
                update = update + weight_decay * params[i]
            params[i] = params[i] - lr * multipliers[i] * update
    return params


def small_model():
    """Dense + LayerNorm + Dense: kernels (decayed), biases and LayerNorm gamma/beta (not decayed)."""
    inputs = keras.Input((6,))
    x = keras.layers.Dense(5, name="transformer_layer_0")(inputs)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    outputs = keras.layers.Dense(3, name="head")(x)
    model = keras.Model(inputs, outputs)
    rng = np.random.RandomState(0)
    for variable in model.trainable_variables:  # gamma/beta away from 1/0 so decay would show
        variable.assign(rng.normal(0, 0.5, variable.shape).astype("float32"))
    return model


def run_keras(optimizer, model, grads_per_step):
    optimizer.build(model.trainable_variables)
    for grads in grads_per_step:
        optimizer.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in grads], model.trainable_variables))
    return [v.numpy() for v in model.trainable_variables]


def gradients(model, steps, seed=1):
    rng = np.random.RandomState(seed)
    # Large on some steps (clipped at 1.0), small on others (not clipped).
    return [[(rng.normal(0, 1.0 if s % 2 else 0.05, v.shape)).astype("float32") for v in model.trainable_variables]
            for s in range(steps)]


@pytest.mark.parametrize("bias_correction", [False, True])
def test_adamw_matches_the_official_update_rule(bias_correction):
    config = get_config("tiny", learning_rate=0.1, warmup_steps=3, train_steps=8, weight_decay=0.1,
                        clip_norm=1.0, adam_bias_correction=bias_correction)
    assert get_config("small").adam_bias_correction is False  # the official default (tiny keeps Keras' for its short warmup)
    model = small_model()
    start = [v.numpy() for v in model.trainable_variables]
    decays = [not v.path.endswith(("/bias", "/gamma", "/beta")) for v in model.trainable_variables]
    assert decays.count(True) == 2 and decays.count(False) == 4
    grads = gradients(model, 6)
    found = run_keras(create_optimizer(config), model, grads)
    expected = official_adamw(start, decays, grads, peak=0.1, warmup=3, total=8, weight_decay=0.1, clip_norm=1.0,
                              bias_correction=bias_correction)
    for f, e, s in zip(found, expected, start):
        assert np.abs(e - s).max() > 1e-2  # the steps moved every variable
        np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-5)
    other = official_adamw(start, decays, grads, peak=0.1, warmup=3, total=8, weight_decay=0.1, clip_norm=1.0,
                           bias_correction=not bias_correction)
    assert max(np.abs(f - o).max() for f, o in zip(found, other)) > 1e-2  # the two rules differ here


def test_layerwise_adamw_without_bias_correction_scales_the_official_update():
    from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW

    model = small_model()
    start = [v.numpy() for v in model.trainable_variables]
    decays = [not v.path.endswith(("/bias", "/gamma", "/beta")) for v in model.trainable_variables]
    # depth: transformer_layer_0 -> 1, layer_norm / head -> num_layers + 2 = 3 (unscaled)
    multipliers = [0.5 ** 2 if "transformer_layer_0" in v.path else 1.0 for v in model.trainable_variables]
    grads = gradients(model, 5, seed=2)
    schedule = WarmupLinearDecay(0.1, warmup_steps=2, total_steps=10)
    optimizer = LayerwiseAdamW(schedule, num_layers=1, layerwise_decay=0.5, weight_decay=0.1, epsilon=1e-6,
                               global_clipnorm=1.0, bias_correction=False)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    found = run_keras(optimizer, model, grads)
    # Keras' decoupled decay is not layer-scaled (LayerwiseAdamW's docstring): lr * wd * param, then the
    # layer-scaled Adam step. Equal to the reference with the multiplier on the Adam step only.
    expected = [p.astype("float64").copy() for p in start]
    m = [np.zeros_like(p) for p in expected]
    v = [np.zeros_like(p) for p in expected]
    for step, g in enumerate(grads):
        lr = 0.1 * min(1.0, step / 2) * (1 - step / 10)
        norm = np.sqrt(sum(float((x.astype("float64") ** 2).sum()) for x in g))
        g = [x * 1.0 / max(norm, 1.0) for x in g]
        for i in range(len(expected)):
            m[i] = 0.9 * m[i] + 0.1 * g[i]
            v[i] = 0.999 * v[i] + 0.001 * g[i] ** 2
            decay = lr * 0.1 * expected[i] if decays[i] else 0.0
            expected[i] = expected[i] - decay - lr * multipliers[i] * m[i] / (np.sqrt(v[i]) + 1e-6)
    for f, e in zip(found, expected):
        np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-5)
    assert LayerwiseAdamW.from_config(optimizer.get_config()).bias_correction is False


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_fused_adam_in_a_traced_step_equals_keras_adamw_with_a_sparse_gradient(weight_decay):
    # `OptionalBiasCorrection` runs TensorFlow's `ResourceApplyAdam`; Keras' own AdamW (ten element-wise
    # ops per variable) is the independent reference, in a `tf.function` as `fit` runs it, with the
    # embedding's gradient an `IndexedSlices` and a schedule (learning rate a tensor per step).
    import tensorflow as tf

    from electra_tf.training.optimization import AdamW

    def build():
        keras.utils.set_random_seed(3)
        inputs = keras.Input((7,), dtype="int32")
        x = keras.layers.Embedding(50, 8, name="embeddings")(inputs)
        outputs = keras.layers.Dense(2, name="head")(keras.layers.GlobalAveragePooling1D()(x))
        return keras.Model(inputs, outputs)

    ids = np.random.RandomState(0).randint(0, 50, (4, 6, 7)).astype("int32")
    runs = []
    for optimizer_class in (AdamW, keras.optimizers.AdamW):
        model = build()
        optimizer = optimizer_class(WarmupLinearDecay(0.05, 2, 10), weight_decay=weight_decay, epsilon=1e-6,
                                    global_clipnorm=1.0)
        optimizer.exclude_from_weight_decay(var_names=["bias"])
        optimizer.build(model.trainable_variables)

        @tf.function
        def step(batch):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(batch) - 1.0))
            grads = tape.gradient(loss, model.trainable_variables)
            assert isinstance(grads[0], tf.IndexedSlices)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

        for batch in ids:
            step(tf.constant(batch))
        runs.append([v.numpy() for v in model.trainable_variables])
    start = [v.numpy() for v in build().trainable_variables]
    for fused, reference, initial in zip(*runs, start):
        assert np.abs(reference - initial).max() > 1e-2  # it trained
        # Rounding only: the kernel's fused multiply-adds round m and v once where Keras' ops round twice.
        np.testing.assert_allclose(fused, reference, rtol=1e-5, atol=2e-6)


@pytest.mark.large
@pytest.mark.ci  # the update rule on JAX and PyTorch: CI's slow step
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_official_update_rule_holds_under_jax_and_torch(backend):
    """The same update-rule tests with Keras on JAX / PyTorch, where the step is `keras.ops`, not TensorFlow's kernel."""
    import os
    import subprocess
    import sys

    from helpers import REPO

    code = ("import sys; sys.path[:0] = ['tests', 'tests/training']\n"
            "import keras, test_optimization as t\n"
            "assert keras.backend.backend() == sys.argv[1]\n"
            "t.test_adamw_matches_the_official_update_rule(False); t.test_adamw_matches_the_official_update_rule(True)\n"
            "t.test_layerwise_adamw_without_bias_correction_scales_the_official_update()\n")
    result = subprocess.run([sys.executable, "-c", code, backend], cwd=REPO, capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr[-3000:]
