"""One `tf.distribute` strategy per `--strategy` value."""

import json
import os

import tensorflow as tf
from absl import logging

STRATEGIES = ("cpu", "gpu", "mirrored", "multi_worker", "tpu")


def create_strategy(name, tpu=None, num_cpu_devices=0):
    """Builds the strategy.

    Args:
        name: str. "cpu" / "gpu" (one device), "mirrored" (all local GPUs, or
            `num_cpu_devices` logical CPUs), "multi_worker" (every worker of
            the TF_CONFIG cluster), "tpu" (TPUClusterResolver(tpu)).
        tpu: str. TPU name or address for "tpu" ("" or "local" on a TPU VM).
        num_cpu_devices: int. Split the CPU into this many logical devices
            before building a "mirrored" strategy (to test data parallelism
            without accelerators).

    Returns:
        A `tf.distribute.Strategy`.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown `--strategy={name}`. Choose one of {list(STRATEGIES)}.")
    if num_cpu_devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * num_cpu_devices
        )
    if name == "cpu":
        return tf.distribute.OneDeviceStrategy("/cpu:0")
    if name == "gpu":
        if not tf.config.list_physical_devices("GPU"):
            raise ValueError("`--strategy=gpu` but TensorFlow sees no GPU.")
        return tf.distribute.OneDeviceStrategy("/gpu:0")
    if name == "mirrored":
        devices = None
        if not tf.config.list_physical_devices("GPU"):
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("`--strategy=multi_worker` needs the TF_CONFIG environment variable.")
        logging.info("TF_CONFIG: %s", json.loads(os.environ["TF_CONFIG"]).get("task"))
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def is_chief(strategy):
    """True on the worker that writes checkpoints, logs and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0)


def worker_dir(path, strategy):
    """`path` on the chief; a per-worker scratch folder elsewhere (deleted after use)."""
    if is_chief(strategy):
        return path
    return os.path.join(path, f".worker_{strategy.cluster_resolver.task_id}")


def uses_logical_cpus(strategy):
    """Mirrored over several CPU devices: where TF cannot XLA-compile or accumulate."""
    return isinstance(strategy, tf.distribute.MirroredStrategy) and all(
        "CPU" in d.upper() for d in strategy.extended.worker_devices
    ) and strategy.num_replicas_in_sync > 1
