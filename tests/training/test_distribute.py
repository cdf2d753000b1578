"""Data parallelism: MirroredStrategy over logical CPUs, MultiWorkerMirroredStrategy on 127.0.0.1."""

import json
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import REPO, run_python

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes

MIRRORED_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np, tensorflow as tf, keras
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from electra_tf.config import get_config
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.training.optimization import create_optimizer

    config = get_config("tiny", vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2,
                        num_heads=2, intermediate_dim=64, seq_length=32, max_sequence_length=32,
                        dropout=0.0, warmup_steps=0, train_steps=100, learning_rate=1e-3)
    rng = np.random.RandomState(0)
    ids = rng.randint(150, 400, (48, 32)).astype("int32")
    ids[:, 0], ids[:, 20], ids[:, -1] = 101, 102, 102
    mask = np.ones_like(ids); mask[:24, 26:] = 0; ids[:24, 26:] = 0
    data = {"token_ids": ids, "segment_ids": (np.arange(32) > 20).astype("int32")[None].repeat(48, 0),
            "padding_mask": mask}
    initial = build_pretrainer(config).get_weights()

    def train(strategy):
        with strategy.scope():
            model = build_pretrainer(config)
            model.set_weights(initial)
            model.compile(optimizer=create_optimizer(config))
        losses = []
        record = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda b, logs: losses.append(
                [float(logs[k]) for k in ("loss", "masked_lm_loss", "disc_loss", "disc_auc")]))
        dataset = tf.data.Dataset.from_tensor_slices(data).batch(8, drop_remainder=True)
        model.fit(dataset, epochs=1, verbose=0, callbacks=[record], shuffle=False)
        return losses, [w.tolist() for w in model.get_weights()[:3]]

    one = train(tf.distribute.OneDeviceStrategy("/cpu:0"))
    two = train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    print(json.dumps({"one": one, "two": two}))
    """
)


def test_mirrored_two_logical_cpus_equals_one_device():
    result = run_python(["-c", MIRRORED_SCRIPT])
    runs = json.loads(result.stdout.strip().splitlines()[-1])
    one_losses, one_weights = runs["one"]
    two_losses, two_weights = runs["two"]
    assert len(one_losses) == len(two_losses) == 6
    np.testing.assert_allclose(two_losses, one_losses, rtol=1e-4, atol=1e-5)
    for a, b in zip(one_weights, two_weights):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-4, atol=1e-5)
    assert one_losses[0] != one_losses[-1]  # it trained


WORKER_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np, tensorflow as tf
    from electra_tf.config import get_config
    from electra_tf.training.pretraining import train
    from electra_tf.training.distribute import create_strategy

    strategy = create_strategy("multi_worker")
    config = get_config("tiny", vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2,
                        num_heads=2, intermediate_dim=64, seq_length=32, max_sequence_length=32,
                        data=sys.argv[1], batch_size=8, train_steps=6, warmup_steps=2,
                        save_checkpoints_steps=3)
    model = train(config, sys.argv[2], strategy, verbose=0)
    np.savez(sys.argv[3], *model.get_weights())
    """
)


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.large
def test_multi_worker_two_processes_end_with_identical_weights(tmp_path, write_records):
    data = write_records(tmp_path / "data", num_files=2, seq_length=32, vocab_size=400)
    workers = [f"127.0.0.1:{p}" for p in free_ports(2)]
    procs = []
    for index in range(2):
        tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        env = dict(__import__("os").environ, PYTHONPATH=str(REPO), TF_CONFIG=json.dumps(tf_config),
                   TF_CPP_MIN_LOG_LEVEL="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT, data, str(tmp_path / "run"), str(tmp_path / f"w{index}.npz")],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-5000:]
    w0, w1 = np.load(tmp_path / "w0.npz"), np.load(tmp_path / "w1.npz")
    assert len(w0.files) == len(w1.files) > 10
    for key in w0.files:
        np.testing.assert_array_equal(w0[key], w1[key])
    assert (tmp_path / "run" / "checkpoints" / "ckpt-6.index").exists()
    assert not list((tmp_path / "run" / "checkpoints").glob(".worker_*"))


@pytest.mark.parametrize("gpus, tpu, cpus, expected", [
    ([], None, 0, "cpu"),
    (["/physical_device:GPU:0"], None, 0, "gpu"),
    (["/physical_device:GPU:0", "/physical_device:GPU:1"], None, 0, "mirrored"),
    ([], "my-tpu", 0, "tpu"),
    (["/physical_device:GPU:0", "/physical_device:GPU:1"], "local", 0, "tpu"),  # --tpu wins
    ([], None, 2, "mirrored"),  # --num_cpu_devices asked for logical CPUs
    (["/physical_device:GPU:0"], None, 2, "gpu"),
])
def test_auto_picks_the_strategy_from_the_devices(gpus, tpu, cpus, expected):
    from electra_tf.training.distribute import choose_strategy

    assert choose_strategy(gpus, tpu, cpus) == expected


def test_auto_is_the_default_and_the_run_logs_its_strategy_and_devices():
    from absl import logging as absl_logging

    from electra_tf.tasks import FinetuneConfig
    from electra_tf.training import distribute

    assert FinetuneConfig.__dataclass_fields__["strategy"].default == "auto"
    lines = []
    handler = __import__("logging").Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    absl_logging.get_absl_logger().addHandler(handler)
    try:
        absl_logging.set_verbosity(absl_logging.INFO)
        strategy = distribute.create_strategy("auto")
    finally:
        absl_logging.get_absl_logger().removeHandler(handler)
    import tensorflow as tf

    expected = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy) or expected == "mirrored"
    ours = [line for line in lines if line.startswith("Strategy auto")]
    assert len(ours) == 1 and f"-> {expected}" in ours[0] and "1 device(s)" in ours[0], lines


def test_host_strategy_fits_the_dataset_itself_and_trains_as_tf_one_device_strategy():
    """`--strategy cpu` (and `auto` without accelerators): Keras iterates the dataset directly, same training."""
    import keras
    import tensorflow as tf

    from electra_tf.finetuning.batching import epoch_batches
    from electra_tf.training.distribute import HostStrategy, create_strategy

    assert isinstance(create_strategy("cpu"), HostStrategy)
    rng = np.random.RandomState(0)
    mask = (np.arange(12)[None] < rng.randint(3, 13, (40, 1))).astype("int32")
    arrays = ({"token_ids": rng.randint(1, 50, (40, 12)).astype("int32") * mask, "segment_ids": 0 * mask,
               "padding_mask": mask}, rng.randint(0, 2, 40).astype("int32"))
    host, reference = HostStrategy("/cpu:0"), tf.distribute.OneDeviceStrategy("/cpu:0")
    dataset = epoch_batches(arrays, 8, 0, 0)  # batches of varying length, as fine-tuning's
    assert host.experimental_distribute_dataset(dataset) is dataset
    assert not isinstance(reference.experimental_distribute_dataset(dataset), tf.data.Dataset)

    def train(strategy):
        keras.utils.set_random_seed(1)
        with strategy.scope():
            inputs = keras.Input((None,), dtype="int32", name="token_ids")
            hidden = keras.layers.Embedding(50, 8)(inputs)
            hidden = keras.layers.Dropout(0.3)(keras.layers.GlobalAveragePooling1D()(hidden))
            model = keras.Model({"token_ids": inputs}, keras.layers.Dense(2)(hidden))
            model.compile(optimizer=keras.optimizers.Adam(0.05),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        losses = []
        for epoch in range(2):  # one `fit` per epoch, as the fine-tuning loop
            data = epoch_batches(arrays, 8, 0, epoch).map(lambda x, y: ({"token_ids": x["token_ids"]}, y))
            losses.append(model.fit(data, verbose=0, shuffle=False).history["loss"][0])
        return losses, model.get_weights()

    (host_losses, host_weights), (ref_losses, ref_weights) = train(host), train(reference)
    np.testing.assert_allclose(host_losses, ref_losses, rtol=1e-6)
    for a, b in zip(host_weights, ref_weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert host_losses[0] != host_losses[1]  # it trained
