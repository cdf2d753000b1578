"""The model core on every Keras backend: the weights TensorFlow wrote give TensorFlow's outputs under JAX and PyTorch.

`backend_outputs.py` runs once per backend in a process of its own (Keras fixes its backend at import): under
TensorFlow it builds the pre-training model and every task head from seeds and writes their weights (`.weights.h5`),
the inputs, the masks and the generator samples; under JAX and PyTorch, with `import tensorflow` made to fail (a
host without TensorFlow), it reads them. The TensorFlow side runs its own speed paths (fused element-wise kernels,
integer-bits dropout, flat projections); the others run the `keras.ops` versions they are the reference of.
"""

import importlib.util

import numpy as np
import pytest

from helpers import run_python

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes

SCRIPT = "tests/models/backend_outputs.py"
MODELS = ("encoder", "discriminator", "pretrainer", "generator")
TASK_HEADS = ("classifier", "tagger", "tagger_loss", "multiple_choice", "qa_official/", "qa_simple/", "embedder_")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("backends")
    run_python([SCRIPT, "--dir", str(folder), "--write"], env={"KERAS_BACKEND": "tensorflow"})
    return folder


@pytest.fixture(scope="module")
def reference(folder):
    return dict(np.load(folder / "tensorflow.npz"))


@pytest.fixture(scope="module", params=["jax", "torch"])
def backend(request, folder):
    """(name, outputs, stdout) of the run under one other backend, TensorFlow not importable there."""
    name = request.param
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed")
    result = run_python([SCRIPT, "--dir", str(folder), "--without_tensorflow"], env={"KERAS_BACKEND": name})
    return name, dict(np.load(folder / f"{name}.npz")), result.stdout


def assert_equal_outputs(reference, outputs, keys, atol):
    assert keys, "nothing compared"
    for key in keys:
        expected, found = reference[key], outputs[key]
        assert found.shape == expected.shape, (key, found.shape, expected.shape)
        if expected.dtype.kind in "iub":
            np.testing.assert_array_equal(found, expected, err_msg=key)
        else:
            np.testing.assert_allclose(found, expected, rtol=0, atol=atol, err_msg=key)


def test_the_core_runs_without_tensorflow(backend):
    name, outputs, stdout = backend
    assert "tensorflow imported: False" in stdout
    classes = set(outputs["facts/layer_classes"].tolist())
    assert {"TransformerEncoder", "MaskedLMHead", "DiscriminatorHead", "Dropout", "EinsumDense"} <= classes
    assert not {c for c in classes if c.startswith(("Fused", "Flat", "IntegerBits"))}, classes  # TensorFlow's only


def test_tensorflow_takes_its_speed_paths(reference):
    classes = set(reference["facts/layer_classes"].tolist())
    assert {"FlatEinsumDense", "FusedIntegerBitsDropout", "FusedLayerNormalization", "FusedGeluDense"} <= classes
    assert str(reference["facts/inverse_cdf"]) == "accepted"


def test_the_tensorflow_only_sampler_is_refused_elsewhere(backend):
    name, outputs, _ = backend
    message = str(outputs["facts/inverse_cdf"])
    assert "sampler='inverse_cdf'" in message and "TensorFlow backend only" in message and name in message


def test_encoder_discriminator_and_generator_equal_tensorflow(reference, backend):
    _, outputs, _ = backend
    assert_equal_outputs(reference, outputs, MODELS, atol=1e-5)


def test_every_task_head_equals_tensorflow(reference, backend):
    _, outputs, _ = backend
    keys = [k for k in reference if k.startswith(TASK_HEADS)]
    assert {k.split("/")[0] for k in keys} >= {"classifier", "tagger", "multiple_choice", "qa_official", "qa_simple",
                                               "embedder_mean", "embedder_mean_3d", "embedder_cls"}
    assert_equal_outputs(reference, outputs, keys, atol=1e-5)
    assert reference["multiple_choice"][2, 1] == -1e9  # the absent choice, on every backend


def test_pretraining_loss_given_the_same_masks_and_samples_equals_tensorflow(reference, backend):
    _, outputs, _ = backend
    keys = [k for k in reference if k.startswith("step/")]
    assert_equal_outputs(reference, outputs, keys, atol=1e-5)
    assert reference["step/loss"] > 1.0 and reference["step/disc_ids"].shape == (3, 12)


def test_pretraining_gradients_equal_tensorflow(reference, backend):
    _, outputs, _ = backend
    keys = sorted(k for k in reference if k.startswith("grad/"))
    assert keys == sorted(k for k in outputs if k.startswith("grad/"))
    assert len(keys) > 50  # every weight of both encoders and the three heads
    # The generator's and the discriminator's blocks and the shared embeddings all receive a gradient.
    for part in ("generator/transformer_layer_0", "discriminator/transformer_layer_1", "token_embedding"):
        assert any(part in k and np.abs(reference[k]).max() > 1e-6 for k in keys), part
    assert_equal_outputs(reference, outputs, keys, atol=1e-4)


def test_the_step_draws_its_own_masks_and_samples_on_every_backend(folder, reference, backend):
    _, outputs, _ = backend
    inputs = np.load(folder / "inputs.npz")
    ids, padding = inputs["batch/token_ids"], inputs["batch/padding_mask"]
    for results in (reference, outputs):
        for field in ("positions", "weights", "disc_ids"):  # one seed, one draw; the next step another
            np.testing.assert_array_equal(results[f"own_a/{field}"], results[f"own_b/{field}"])
        assert not np.array_equal(results["own_a/positions"], results["own_c/positions"])
        for key in ("own_a", "own_c"):
            positions, weights, disc_ids = (results[f"{key}/{f}"] for f in ("positions", "weights", "disc_ids"))
            chosen = np.zeros_like(ids, bool)
            for row in range(len(ids)):
                chosen[row, positions[row][weights[row] > 0]] = True
            assert weights.sum() > 0 and np.isfinite(results[f"{key}/loss"]).all()
            assert (padding[chosen] == 1).all() and (ids[chosen] > 3).all()  # real tokens, never [CLS] / [MASK]
            assert ((disc_ids != ids) <= chosen).all()  # only chosen positions are replaced
            np.testing.assert_array_equal(results[f"{key}/disc_labels"], (disc_ids != ids).astype("float32"))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """backend -> the per-epoch logs of the same tiny pre-training through `fit` on it (TensorFlow: its own
    `train_step`; JAX: the stateless step; PyTorch: autograd)."""
    folder = tmp_path_factory.mktemp("fit")
    found = {}
    for name in ("tensorflow", "jax", "torch"):
        if importlib.util.find_spec(name) is None:
            continue
        extra = [] if name == "tensorflow" else ["--without_tensorflow"]
        run_python([SCRIPT, "--dir", str(folder), "--fit", *extra], env={"KERAS_BACKEND": name})
        found[name] = dict(np.load(folder / f"{name}_fit.npz"))
    return found


@pytest.mark.large
@pytest.mark.parametrize("name", ["jax", "torch"])
def test_fit_pretrains_on_every_backend_as_on_tensorflow(fitted, name):
    if name not in fitted:
        pytest.skip(f"{name} is not installed")
    reference, logs = fitted["tensorflow"], fitted[name]
    for found in (reference, logs):
        assert int(found["iterations"]) == 24 and int(found["changed"]) == int(found["weights"])  # every weight moved
        loss = found["loss"]
        assert np.isfinite(loss).all() and (np.diff(loss) < 0).all(), loss  # each epoch lower
        assert (np.diff(found["masked_lm_loss"]) < 0).all() and (np.diff(found["disc_loss"]) < 0).all()
        assert np.isfinite(found["eval_loss"]) and found["eval_loss"] < loss[0]  # `evaluate`'s step too
    # Other masks, samples and initial weights, the same objective: the loss falls as TensorFlow's does.
    np.testing.assert_allclose(logs["loss"], reference["loss"], rtol=0.1)
    np.testing.assert_allclose(logs["eval_loss"], reference["eval_loss"], rtol=0.1)
