"""`python -m electra_tf.pretrain --backend jax` (and torch): the same command, config and files as TensorFlow's.

Through the command line: training from the TFRecords and from their arrays, Keras checkpoints, exact resume
after SIGTERM and SIGKILL, a run refused under another backend than the one that trained it (both ways, nothing
written), `discriminator.keras` loading under TensorFlow with JAX's outputs, and the loss of 20 steps falling as
TensorFlow's does (inside the spread of three TensorFlow seeds).
"""

import json
import os
import textwrap

import numpy as np
import pytest

from helpers import KILL_AT_STEP, REPO, checksums, error_line, run_python, tensorboard_values, write_records

# Slow tier, in CI: a dozen pre-training processes, each compiling its step.
pytestmark = [pytest.mark.large, pytest.mark.ci]

TINY = dict(vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2, intermediate_dim=64,
            seq_length=32, max_sequence_length=32, batch_size=8, warmup_steps=4, log_steps=5,
            save_checkpoints_steps=5, keep_checkpoint_max=2, learning_rate=2e-3, train_steps=20)
STEPS = TINY["train_steps"]

def command(data, model_dir, backend, **overrides):
    values = {**TINY, "data": data, **overrides}
    return ["-m", "electra_tf.pretrain", "--config", "tiny", "--backend", backend, "--model_dir", str(model_dir),
            "--verbose", "0", *[f"--{k}={v}" for k, v in values.items()]]


def env(**extra):
    return dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", **extra)


def checkpoint(model_dir, step=STEPS):
    with np.load(os.path.join(model_dir, "checkpoints", f"ckpt-{step}.npz")) as f:
        return {name: f[name] for name in f.files}


def final_loss(model_dir):
    return tensorboard_values(os.path.join(model_dir, "logs", "train"), "epoch_loss")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """TFRecords and the arrays `records_to_arrays` decodes them into."""
    root = tmp_path_factory.mktemp("backends")
    records = write_records(root / "records", num_files=2, num_examples=40)
    run_python(["-m", "electra_tf.pipelines.records_to_arrays", "--data", records, "--output_dir",
                str(root / "arrays")], env=env())
    return {"records": records, "arrays": str(root / "arrays"), "root": root}


@pytest.fixture(scope="module")
def jax_run(data):
    """An uninterrupted 20-step JAX run on the arrays."""
    model_dir = data["root"] / "jax"
    run_python(command(data["arrays"], model_dir, "jax"), env=env())
    return model_dir


@pytest.fixture(scope="module")
def tensorflow_runs(data):
    """The same command under TensorFlow with seeds 0, 1, 2 (the arrays too)."""
    runs = []
    for seed in range(3):
        model_dir = data["root"] / f"tensorflow-{seed}"
        run_python(command(data["arrays"], model_dir, "tensorflow", seed=seed), env=env())
        runs.append(model_dir)
    return runs


def test_a_jax_run_writes_the_files_of_a_run_with_keras_checkpoints(jax_run):
    names = sorted(os.listdir(jax_run))
    assert names == ["checkpoints", "config.json", "discriminator.keras", "electra_tokenizer.json", "logs",
                     "vocab.txt"]
    index = json.loads((jax_run / "checkpoints" / "checkpoints.json").read_text())
    assert index["backend"] == "jax" and index["kept"] == ["ckpt-20.npz", "ckpt-15.npz"]  # keep_checkpoint_max=2
    assert sorted(os.listdir(jax_run / "checkpoints")) == ["checkpoints.json", "ckpt-15.npz", "ckpt-20.npz"]
    assert json.loads((jax_run / "config.json").read_text())["backend"] == "jax"
    saved = checkpoint(jax_run)
    assert int(saved["optimizer/state/iteration"]) == STEPS and int(saved["position/batches_read"]) == STEPS
    assert any("seed_generator" in name for name in saved) and any(n.startswith("metrics/") for n in saved)
    assert set(final_loss(jax_run)) == {0, 1, 2, 3}  # TensorBoard: one epoch_loss per 5-step epoch


def test_a_run_resumes_only_under_the_backend_that_trained_it(jax_run, tensorflow_runs, data):
    for model_dir, trained, other in ((tensorflow_runs[0], "tensorflow", "jax"), (jax_run, "jax", "tensorflow")):
        before = checksums(model_dir)
        line = error_line(run_python(command(data["arrays"], model_dir, other, train_steps=STEPS + 5),
                                     env=env(), check=False))
        assert f"trained under --backend {trained}" in line and f"`--backend={other}`" in line, line
        assert checksums(model_dir) == before


def test_the_discriminator_of_a_jax_run_loads_under_tensorflow_with_its_outputs(jax_run, tmp_path):
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import electra_tf.saved_classes  # noqa: F401
        import keras
        model = keras.saving.load_model(sys.argv[1])
        rng = np.random.default_rng(0)
        ids = rng.integers(150, 400, (3, 32)).astype("int32")
        mask = np.ones_like(ids); mask[1, 20:] = 0
        out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask})
        out = out["sequence_output"] if isinstance(out, dict) else out
        np.save(sys.argv[2], keras.ops.convert_to_numpy(out))
    """)
    outputs = {}
    for backend in ("jax", "tensorflow"):
        path = tmp_path / f"{backend}.npy"
        run_python(["-c", code, str(jax_run / "discriminator.keras"), str(path)], env=env(KERAS_BACKEND=backend))
        outputs[backend] = np.load(path)
    assert outputs["jax"].shape == (3, 32, 32)
    np.testing.assert_allclose(outputs["tensorflow"], outputs["jax"], atol=1e-5)


def test_the_loss_of_20_steps_falls_under_jax_as_under_tensorflow(jax_run, tensorflow_runs):
    """The same config and data: JAX's final epoch loss lies within the spread of three TensorFlow seeds'."""
    finals = []
    for model_dir in tensorflow_runs:
        losses = final_loss(model_dir)
        assert losses[3] < losses[0]
        finals.append(losses[3])
    losses = final_loss(jax_run)
    assert losses[3] < losses[0]
    low, high = min(finals), max(finals)
    margin = 0.25 * (high - low) + 0.01 * np.mean(finals)
    assert low - margin <= losses[3] <= high + margin, (losses, finals)


def test_the_records_train_under_jax_and_torch(data, tmp_path):
    """TFRecords read through tf.data under JAX (in mixed_bfloat16); PyTorch trains from the arrays, with its own
    checkpoints, and resumes."""
    run_python(command(data["records"], tmp_path / "jax", "jax", train_steps=5, precision="mixed_bfloat16"),
               env=env())
    assert sorted(os.listdir(tmp_path / "jax" / "checkpoints")) == ["checkpoints.json", "ckpt-5.npz"]
    assert checkpoint(tmp_path / "jax", 5)["model/discriminator/embeddings/token_embedding/embeddings"].dtype == "float32"
    args = command(data["arrays"], tmp_path / "torch", "torch", train_steps=6)
    run_python(args, env=env())
    index = json.loads((tmp_path / "torch" / "checkpoints" / "checkpoints.json").read_text())
    assert index["backend"] == "torch" and index["kept"] == ["ckpt-6.npz", "ckpt-5.npz"]
    run_python([*args, "--train_steps=8"], env=env())  # resumes at step 6
    assert int(checkpoint(tmp_path / "torch", 8)["optimizer/state/iteration"]) == 8


# Runs the CLI and sends itself SIGTERM once the optimizer has taken `TERM_AT_STEP` steps: a preemption at a
# known step (the run saves at the next step boundary).
TERM_AT_STEP = textwrap.dedent("""
    import os, signal, sys
    import keras
    target, sent = int(os.environ["TERM_AT_STEP"]), []
    original = keras.callbacks.CallbackList.on_train_batch_end
    def on_train_batch_end(self, batch, logs=None):
        original(self, batch, logs)
        if int(self.model.optimizer.iterations.numpy()) >= target and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)
    keras.callbacks.CallbackList.on_train_batch_end = on_train_batch_end
    from electra_tf.pretrain import run
    sys.argv = ["electra-pretrain", *sys.argv[1:]]
    run()
""")


def test_sigterm_then_sigkill_then_the_same_command_gives_the_uninterrupted_model(jax_run, data, tmp_path):
    """One run stopped twice: SIGTERM (a preemption: it saves the next step and exits 0), then, resumed, SIGKILL
    (nothing saved past the last checkpoint); the same command once more ends as the uninterrupted run."""
    model_dir = tmp_path / "stopped"
    args = command(data["arrays"], model_dir, "jax")
    result = run_python(["-c", TERM_AT_STEP, *args[2:]], env=env(TERM_AT_STEP="7", KERAS_BACKEND="jax"), check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "saved the checkpoint of step 8" in result.stderr
    assert json.loads((model_dir / "checkpoints" / "checkpoints.json").read_text())["kept"][0] == "ckpt-8.npz"
    assert not (model_dir / "discriminator.keras").exists()  # an unfinished run does not look finished
    result = run_python(["-c", KILL_AT_STEP, *args[2:]], env=env(KILL_AT_STEP="13", KERAS_BACKEND="jax"), check=False)
    assert result.returncode == -9
    assert json.loads((model_dir / "checkpoints" / "checkpoints.json").read_text())["kept"][0] == "ckpt-10.npz"
    run_python(args, env=env())
    want, got = checkpoint(jax_run), checkpoint(model_dir)
    assert want.keys() == got.keys() and len(want) > 50
    worst = max(float(np.abs(want[n].astype(np.float64) - got[n]).max()) for n in want if n.startswith("model/"))
    assert worst <= 1e-6, worst


def test_two_devices_train_as_one(jax_run, data, tmp_path):
    """`DataParallel` over two CPU devices: the global batch split in two, the same model within float error."""
    result = run_python(command(data["arrays"], tmp_path / "two", "jax"),
                        env=env(XLA_FLAGS="--xla_force_host_platform_device_count=2"))
    assert "Data parallel over 2 devices" in result.stderr
    want, got = checkpoint(jax_run), checkpoint(tmp_path / "two")
    worst = max(float(np.abs(want[n].astype(np.float64) - got[n]).max()) for n in want
                if n.startswith("model/") and "seed_generator" not in n)
    assert worst <= 1e-4, worst


def test_the_arrays_hold_the_records_and_a_non_empty_output_dir_is_refused(data, tmp_path):
    import glob

    import tensorflow as tf

    manifest = json.loads((data["root"] / "arrays" / "arrays.json").read_text())
    assert [s["source"] for s in manifest["shards"]] == ["records-0.tfrecord", "records-1.tfrecord"]
    assert sorted(os.listdir(data["root"] / "arrays")) == ["arrays.json", "shard-00000.npy", "shard-00001.npy",
                                                           "vocab.txt"]
    for path, shard in zip(sorted(glob.glob(data["records"])), manifest["shards"]):
        rows = np.load(data["root"] / "arrays" / shard["file"])
        for i, record in enumerate(tf.data.TFRecordDataset(path)):
            feature = tf.train.Example.FromString(record.numpy()).features.feature
            for j, name in enumerate(("input_ids", "input_mask", "segment_ids")):
                assert list(rows[i, j]) == list(feature[name].int64_list.value)
        assert i + 1 == len(rows) == shard["examples"]
    (tmp_path / "notes.txt").write_text("kept\n")
    before = checksums(tmp_path)
    line = error_line(run_python(["-m", "electra_tf.pipelines.records_to_arrays", "--data", data["records"],
                                  "--output_dir", str(tmp_path)], env=env(), check=False))
    assert "`--output_dir=" in line and "is not empty (notes.txt)" in line and checksums(tmp_path) == before
