"""One `tf.distribute` strategy per `--strategy` value."""

import json
import os
import signal
import socket
import sys
import threading
import time

import tensorflow as tf
from absl import logging

from electra_tf.training.strategies import STARTUP_TIMEOUT, STRATEGIES


def choose_strategy(gpus, tpu=None, num_cpu_devices=0):
    """What `--strategy=auto` means on a machine: a pure function of its devices.

    Args:
        gpus: the visible GPUs (any sequence, e.g. their names).
        tpu: str or None. `--tpu`.
        num_cpu_devices: int. `--num_cpu_devices` (logical CPUs asked for).

    Returns:
        "tpu" when a `--tpu` is given; "mirrored" over every GPU when there
        are several (or over the logical CPUs asked for, without a GPU); "gpu"
        (that one device) when there is one; else "cpu".

    Example:
    >>> from electra_tf.training.distribute import choose_strategy
    >>> choose_strategy([]), choose_strategy(["/gpu:0"]), choose_strategy(["/gpu:0", "/gpu:1"])
    ('cpu', 'gpu', 'mirrored')
    >>> choose_strategy([], tpu="local")
    'tpu'
    """
    if tpu is not None:
        return "tpu"
    if len(gpus) > 1 or (not gpus and num_cpu_devices > 1):
        return "mirrored"
    return "gpu" if gpus else "cpu"


def describe(strategy):
    """One line: the strategy's class and the devices it trains on."""
    devices = list(getattr(strategy.extended, "worker_devices", ()) or ())
    return (f"{type(strategy).__name__} over {len(devices)} device(s): "
            f"{', '.join(devices) or 'the default device'} ({strategy.num_replicas_in_sync} replica(s))")


def create_strategy(name, tpu=None, num_cpu_devices=0, startup_timeout=STARTUP_TIMEOUT):
    """Builds the strategy and logs it with its devices (one line).

    Args:
        name: str. "auto" (the default of every command: see
            `choose_strategy`), "cpu" / "gpu" (one device), "mirrored" (all local GPUs, or
            `num_cpu_devices` logical CPUs), "multi_worker" (every worker of
            the TF_CONFIG cluster), "tpu" (TPUClusterResolver(tpu)).
        tpu: str. TPU name or address for "tpu" ("" or "local" on a TPU VM).
        num_cpu_devices: int. Split the CPU into this many logical devices
            before building a "mirrored" strategy (to test data parallelism
            without accelerators).
        startup_timeout: float. "multi_worker": seconds to wait for every
            worker of TF_CONFIG; then `TimeoutError` naming those that never
            came up (see `wait_for_workers`).

    Returns:
        A `tf.distribute.Strategy`.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown `--strategy={name}`. Choose one of {list(STRATEGIES)}.")
    chosen = name
    if name == "auto":
        chosen = choose_strategy(tf.config.list_physical_devices("GPU"), tpu, num_cpu_devices)
    strategy = _build(chosen, tpu, num_cpu_devices, startup_timeout)
    logging.info("Strategy %s%s: %s", name, f" -> {chosen}" if chosen != name else "", describe(strategy))
    return strategy


def _build(name, tpu, num_cpu_devices, startup_timeout):
    if num_cpu_devices > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * num_cpu_devices
        )
    if name == "cpu":
        return HostStrategy("/cpu:0")
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
        tf_config = json.loads(os.environ["TF_CONFIG"])
        logging.info("TF_CONFIG: %s", tf_config.get("task"))
        wait_for_workers(tf_config, startup_timeout)
        with _Watchdog(startup_timeout, tf_config):
            return MultiWorkerMirroredStrategy()
    if tpu is None:
        raise ValueError("`--strategy=tpu` needs `--tpu`: the TPU's name or grpc:// address (`--tpu=local` on a "
                         "TPU VM).")
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="" if tpu == "local" else tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


class HostStrategy(tf.distribute.OneDeviceStrategy):
    """TF's one-device strategy on the host CPU, whose `experimental_distribute_dataset` keeps the dataset as it is.

    Keras `fit` distributes its `tf.data.Dataset` with the strategy. TF's
    one-device strategy reads it through a multi-device iterator: a second,
    per-device generator dataset that prefetches to the device. That dataset
    has TF's default options whatever the user set, so its iterator runs
    tf.data's autotuning model thread, and deleting the iterator, which `fit`
    does before it returns, waits for that thread to wake up (4-5 s at the end
    of some fine-tuning epochs, which call `fit` once each), and every step
    is slower: a small encoder's 3-epoch fine-tuning command took 38.2 s
    against 30.7 s here (`git show 8108a41:benchmarks/results/fit_end.md`, a benchmark removed since). On the host the
    batches are already on the device, so the dataset is iterated directly.
    With `options`, and for `distribute_datasets_from_function`, TF's own
    distribution runs.

    Example:
    >>> import tensorflow as tf
    >>> from electra_tf.training.distribute import HostStrategy
    >>> strategy = HostStrategy("/cpu:0")
    >>> dataset = tf.data.Dataset.range(4).batch(2)
    >>> strategy.experimental_distribute_dataset(dataset) is dataset
    True
    """

    def experimental_distribute_dataset(self, dataset, options=None):
        if isinstance(dataset, tf.data.Dataset) and options is None:
            return dataset
        return super().experimental_distribute_dataset(dataset, options)


class MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """TF's multi-worker strategy whose `reduce` also takes a nest of per-replica values.

    Keras 3 `fit` reduces its first input batch, a dict of per-replica
    tensors, to learn the input shapes (`Trainer._maybe_symbolic_build`).
    `MirroredStrategy.reduce` takes a nest; the collective one takes one value
    at a time and fails with "Attempt to convert a value ({'token_ids':
    PerReplica: ...}) with an unsupported type (<class 'dict'>) to a Tensor",
    so no Keras `fit` on dict inputs (fine-tuning) could run under
    `--strategy multi_worker`. Here each value is reduced on its own. Keras
    then reduces each step's scalar loss and metrics with `axis=0`
    (`reduce_per_replica`), which TF rejects for a scalar ("Invalid reduction
    dimension 0 for input with 0 dimensions"); a scalar is reduced over the
    replicas only (`axis=None`), the mean Keras means.
    """

    def reduce(self, reduce_op, value, axis):
        if tf.nest.is_nested(value):
            return tf.nest.map_structure(lambda v: self.reduce(reduce_op, v, axis), value)
        if axis is not None:
            local = self.experimental_local_results(value)[0]
            if getattr(local, "shape", None) is not None and local.shape.rank == 0:
                axis = None
        return super().reduce(reduce_op, value, axis)


def _tasks(tf_config):
    """(name, address) of every task of a TF_CONFIG cluster, and this task's name."""
    tasks = [(f"{role}:{index}", address) for role, addresses in sorted(tf_config.get("cluster", {}).items())
             if role in ("chief", "worker") for index, address in enumerate(addresses)]
    me = tf_config.get("task", {})
    return tasks, f"{me.get('type')}:{me.get('index', 0)}"


def wait_for_workers(tf_config, timeout, poll=0.2):
    """Waits until every other worker of the cluster listens on its port; `TimeoutError` naming the absent ones.

    TensorFlow's own start-up (`MultiWorkerMirroredStrategy()`) blocks in C++
    until every task has registered, with no limit, and it installs a SIGTERM
    handler of its own, so a worker that never comes up hangs the others and
    SIGTERM does not stop them. Here the wait happens in Python first: each
    worker holds its own port open (a placeholder socket, closed before TF
    binds it) and waits until it has seen every peer's port open, so a missing
    peer is named after `timeout` seconds and SIGTERM ends the wait (exit 143).
    """
    tasks, me = _tasks(tf_config)
    own = dict(tasks).get(me)
    placeholder = None
    if own:
        placeholder = socket.socket()
        placeholder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            placeholder.bind(("", int(own.rsplit(":", 1)[1])))
            placeholder.listen(64)
        except OSError:  # taken: TF's own bind will say so
            placeholder.close()
            placeholder = None
    waiting = {name: address for name, address in tasks if name != me}
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate_waiting(waiting))
    deadline = time.monotonic() + timeout
    logging.info("Waiting up to %d s for workers %s.", timeout, sorted(waiting))
    try:
        while waiting:
            for name, address in list(waiting.items()):
                if _listening(address):
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                raise TimeoutError(
                    f"multi-worker start-up: {_describe(waiting)} never came up within {timeout:g} s "
                    f"(TF_CONFIG; this is {me}). Start every worker, or fix the cluster addresses."
                )
            time.sleep(poll if waiting else 0)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if placeholder is not None:
            placeholder.close()


def _describe(waiting):
    return ", ".join(f"{name} ({address})" for name, address in sorted(waiting.items()))


def _terminate_waiting(waiting):
    def handler(signum, frame):
        sys.stderr.write(f"error: SIGTERM while waiting for {_describe(waiting)}; no training started.\n")
        sys.stderr.flush()
        os._exit(128 + signal.SIGTERM)

    return handler


def _listening(address):
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


class _Watchdog:
    """Ends the process (naming the cluster) when TF's start-up outlives `timeout` after every peer was seen.

    A backstop for a peer that dies between `wait_for_workers` and TF's
    registration: TF's wait cannot be interrupted from Python.
    """

    def __init__(self, timeout, tf_config):
        self.timeout, self.tf_config = timeout, tf_config
        self.done = threading.Event()

    def __enter__(self):
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.done.set()

    def _watch(self):
        if not self.done.wait(self.timeout):
            tasks, me = _tasks(self.tf_config)
            absent = {name: address for name, address in tasks if name != me and not _listening(address)}
            sys.stderr.write(
                f"error: multi-worker start-up did not finish within {self.timeout:g} s (this is {me}); "
                f"not reachable: {_describe(absent) or 'none (a worker may have died while joining)'}.\n"
            )
            sys.stderr.flush()
            os._exit(1)


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
