r"""Steady-state speed of the ELECTRA pre-training step on this machine.

    python -m benchmarks.train_step --config small --batch_size 32 --seq_length 128 \
        --precision float32 --jit_compile 0 --steps_per_execution 1 \
        --warmup 3 --repeats 3 --steps 10

Builds the model and optimizer exactly as `electra_tf.pretrain.train` does
(`build_pretrainer`, `create_optimizer`, `compile(jit_compile=...,
steps_per_execution=...)`, the global mixed-precision policy) and trains with
`fit` on synthetic batches (random ids in [999, vocab) with [CLS] first and
[SEP] last, all tokens real, 4 batches cycled, as the peer benchmarks in
../shared/bench/peers do). Steps/s is taken over each of `--repeats` windows
of `--steps` steps after `--warmup` steps (which include tracing and XLA
compilation); the median and min-max are reported. Threads: TF intra-op 2,
inter-op 1 (`tf.config.threading`), like the peers.

Also measured, in the same process (so on the same cores, but not while
training): the peak matmul rate (2048^3 fp32 and bf16 `tf.linalg.matmul`,
median of timed windows) used for MFU. (The summary's input-pipeline column holds the
figures of runs that measured it, before commit bc76fc7; the data pipeline's speed is
`benchmarks/pipeline_throughput.py`'s.)

The machine may be shared: for each timed window the run also records its own
CPU-seconds per step and the other processes' share of the cores (busy time in
/proc/stat minus its own), so that runs taken under different load can be told
apart. FLOPs per sequence are analytic (`electra_tf.training.flops`: matmuls
only, 3 x forward). Results go to stdout as Markdown; `--json FILE` appends one JSON
line per run, and `--summarize FILE --output MD` turns those lines into the
report table; `--side_by_side FILE` summarises `benchmarks/side_by_side.sh`'s runs of
electra_tf and the peers, alternated in one run.

`--backend jax` trains the same model under Keras' JAX backend (set before Keras is imported): the
stateless step compiled by XLA (`--jit_compile` 1 unless given), fed from NumPy batches, with Keras'
AdamW at the reference's settings (`common.keras_adamw`; `create_optimizer`'s is TensorFlow's), on
XLA's own CPU threads; TensorFlow not importable (as on a host without it); the peak matmul rate is TensorFlow's, so JAX runs
leave it to the TensorFlow runs of the same summary:

    python -m benchmarks.train_step --config small --backend jax --peak 0
"""

import argparse
import collections
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import time



def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="small", help="Preset name.")
    p.add_argument("--backend", default="tensorflow", choices=["tensorflow", "jax"], help="Keras' backend.")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--objective", default=None, help="Override the preset's objective.")
    p.add_argument("--sampler", default="gumbel", help="Generator sampler (`sampling.SAMPLERS`).")
    p.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16", "mixed_float16"])
    p.add_argument("--jit_compile", type=int, default=None, help="XLA (default: 0 on TensorFlow, 1 on JAX).")
    p.add_argument("--fused_elementwise", type=int, default=1, help="The config field of that name (0: Keras' "
                   "element-wise ops one by one).")
    p.add_argument("--steps_per_execution", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3, help="Untimed steps (tracing, XLA compilation).")
    p.add_argument("--repeats", type=int, default=3, help="Timed windows.")
    p.add_argument("--steps", type=int, default=10, help="Steps per timed window.")
    p.add_argument("--intra", type=int, default=2, help="TF intra-op threads.")
    p.add_argument("--inter", type=int, default=1, help="TF inter-op threads (0 = TF default).")
    p.add_argument("--onednn", type=int, default=None, help="Sets TF_ENABLE_ONEDNN_OPTS (default: TF's, on).")
    p.add_argument("--peak", type=int, default=1, help="Measure the peak matmul rate (for MFU).")
    p.add_argument("--peak_seconds", type=float, default=2.0, help="Timed seconds per peak shape.")
    p.add_argument("--json", default=None, help="Append the result as one JSON line to this file.")
    p.add_argument("--tag", default="", help="Free text stored with the result.")
    p.add_argument("--summarize", default=None, help="JSON-lines file to summarise instead of running.")
    p.add_argument("--output", default=None, help="With --summarize: Markdown file to write.")
    p.add_argument("--notes", default=None, help="With --summarize: Markdown file appended to the report.")
    p.add_argument("--side_by_side", default=None, help="JSON-lines file of `benchmarks/side_by_side.sh` to "
                   "summarise: per setting, steps/s, MFU against the measured fp32 peak, RSS, and the best "
                   "electra_tf fp32 setting over each peer setting.")
    return p.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.onednn is not None:
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = str(ARGS.onednn)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if ARGS is not None:
    os.environ["KERAS_BACKEND"] = ARGS.backend
    if ARGS.backend == "jax":  # as on a host without TensorFlow (keras-hub imports it where it can)
        sys.modules["tensorflow"] = None

import keras  # noqa: E402
import numpy as np  # noqa: E402

if keras.backend.backend() == "tensorflow":
    import tensorflow as tf

from benchmarks import common  # noqa: E402



def set_threads(intra, inter):
    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)


def measure_peak(dtype, m=2048, k=2048, n=2048, seconds=2.0, windows=5):
    """Median GFLOP/s of an (m x k) @ (k x n) `tf.linalg.matmul` in `dtype`, over timed windows."""
    x = tf.cast(tf.random.normal([m, k]), dtype)
    w = tf.cast(tf.random.normal([k, n]), dtype)
    fn = tf.function(lambda: tf.linalg.matmul(x, w))
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    fn()
    iters = max(1, int(seconds / windows / max(time.perf_counter() - t0, 1e-6)))
    rates = []
    for _ in range(windows):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        rates.append(2.0 * m * k * n * iters / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def _machine_busy_seconds():
    """CPU-seconds all processes have spent busy since boot (/proc/stat), or None off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _StepClock(keras.callbacks.Callback):
    """Records (steps done, wall time, own CPU time, machine busy time) after every execution."""

    def __init__(self):
        super().__init__()
        self.marks = {}

    def _mark(self, steps):
        self.marks[steps] = (time.perf_counter(), _own_cpu_seconds(), _machine_busy_seconds())

    def on_train_begin(self, logs=None):
        self._mark(0)

    def on_train_batch_end(self, batch, logs=None):
        self._mark(batch + 1)


def run(args):
    from electra_tf.config import get_config
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.training import flops

    jax = args.backend == "jax"
    if not jax:
        set_threads(args.intra, args.inter)
    xla = args.jit_compile if args.jit_compile is not None else int(jax)
    overrides = dict(batch_size=args.batch_size, seq_length=args.seq_length, precision=args.precision,
                     jit_compile=bool(xla), steps_per_execution=args.steps_per_execution)
    if args.objective:
        overrides["objective"] = args.objective
    overrides["sampler"] = args.sampler
    overrides["fused_elementwise"] = bool(args.fused_elementwise)
    config = get_config(args.config, **overrides)
    spe = config.steps_per_execution
    warmup = -(-args.warmup // spe) * spe  # whole executions
    steps = -(-args.steps // spe) * spe

    # As electra_tf.pretrain.train does (single device, no strategy).
    if config.precision != "float32":
        keras.mixed_precision.set_global_policy(config.precision)
    pretrainer = build_pretrainer(config)
    if jax:
        optimizer = common.keras_adamw(config)
    else:
        from electra_tf.training.optimization import create_optimizer

        optimizer = create_optimizer(config)
    pretrainer.compile(optimizer=optimizer, jit_compile=config.jit_compile, steps_per_execution=spe)
    optimizer.build(pretrainer.trainable_variables)
    num_params = sum(int(np.prod(v.shape)) for v in pretrainer.trainable_variables)

    data = common.synthetic_batches(config.batch_size, config.seq_length, config.vocab_size, config.cls_id,
                                    config.sep_id)
    if jax:
        batches = [{k: v[i] for k, v in data.items()} for i in range(len(data["token_ids"]))]
        dataset = ((batches[i % len(batches)],) for i in itertools.count())
    else:
        dataset = tf.data.Dataset.from_tensor_slices(data).repeat().prefetch(2)
    total = warmup + args.repeats * steps
    clock = _StepClock()
    t_start = time.perf_counter()
    history = pretrainer.fit(dataset, steps_per_epoch=total, epochs=1, verbose=0, callbacks=[clock], shuffle=False)
    rates, cpu_per_step, others = [], [], []
    for r in range(args.repeats):
        (t0, cpu0, busy0), (t1, cpu1, busy1) = clock.marks[warmup + r * steps], clock.marks[warmup + (r + 1) * steps]
        rates.append(steps / (t1 - t0))
        cpu_per_step.append((cpu1 - cpu0) / steps)
        if busy0 is not None:  # other processes' share of the machine's cores during the window
            others.append(max(0.0, (busy1 - busy0) - (cpu1 - cpu0)) / ((t1 - t0) * os.cpu_count()))
    warmup_s = clock.marks[warmup][0] - t_start
    loss = float(history.history["loss"][-1])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    peaks = {}
    if args.peak and not jax:
        peaks = {"float32": measure_peak(tf.float32, seconds=args.peak_seconds),
                 "bfloat16": measure_peak(tf.bfloat16, seconds=args.peak_seconds)}

    return dict(
        config=args.config, backend=args.backend, objective=config.objective, batch=config.batch_size, seq=config.seq_length,
        precision=config.precision, xla=int(config.jit_compile), spe=spe, intra=args.intra, inter=args.inter,
        onednn=os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"), tag=args.tag, sampler=args.sampler,
        fused_elementwise=int(config.fused_elementwise),
        steps_per_s=rates, cpu_s_per_step=cpu_per_step, others_cpu_share=others,
        warmup_steps=warmup, steps=steps, warmup_s=round(warmup_s, 2), loss=loss,
        flops_per_seq=flops.train_flops_per_sequence(config), num_params=num_params,
        peak_gflops=peaks, peak_rss_mb=round(rss_mb, 1),
        load_avg=os.getloadavg()[0], date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        command=common.command_line("benchmarks.train_step"),
        versions=common.versions("keras_hub", *(["jax", "jaxlib"] if jax else [])),
    )


def _setting(r):
    s = f"{r['config']} {r['precision']} xla={r['xla']} spe={r['spe']}"
    if r.get("backend", "tensorflow") != "tensorflow":
        s += f" backend={r['backend']}"
    if r.get("objective", "electra") != "electra":
        s += f" {r['objective']}"
    if r.get("sampler", "gumbel") != "gumbel":
        s += f" sampler={r['sampler']}"
    if r.get("onednn", "default") != "default":
        s += f" onednn={r['onednn']}"
    if not r.get("fused_elementwise", 1):
        s += " fused_elementwise=0"
    if r.get("inter", 1) != 1 or r.get("intra", 2) != 2:
        s += f" intra={r['intra']} inter={r['inter']}"
    return s


HEADER = ("| setting | batch x seq | steps/s median (min-max) | n | seq/s | tokens/s | GFLOP/seq | GFLOP/s "
          "| MFU vs fp32 peak | MFU vs bf16 peak | own CPU-s/step | others' CPU share | peak RSS MB "
          "| pipeline ex/s (headroom) | warm-up s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def table_row(rows, peak=None):
    """One Markdown row over every repeat of `rows` (runs of one setting)."""
    r0 = rows[0]
    rates = [x for r in rows for x in r["steps_per_s"]]
    med = statistics.median(rates)
    seq_s = med * r0["batch"]
    gflops = seq_s * r0["flops_per_seq"] / 1e9
    peaks = peak or {}
    if not peaks:
        got = [r["peak_gflops"] for r in rows if r.get("peak_gflops")]
        peaks = {k: statistics.median(p[k] for p in got) for k in ("float32", "bfloat16")} if got else {}
    mfu32 = f"{gflops / peaks['float32']:.1%}" if peaks else "-"
    mfu16 = f"{gflops / peaks['bfloat16']:.1%}" if peaks else "-"
    pipes = [r["pipeline_examples_per_s"] for r in rows if r.get("pipeline_examples_per_s")]
    pipe = f"{statistics.median(pipes):,.0f} ({statistics.median(pipes) / seq_s:,.0f}x)" if pipes else "-"
    warm = statistics.median(r["warmup_s"] for r in rows)
    rss = max(r["peak_rss_mb"] for r in rows)
    cpu = [x for r in rows for x in r.get("cpu_s_per_step", [])]
    cpu = f"{statistics.median(cpu):.2f}" if cpu else "-"
    others = [x for r in rows for x in r.get("others_cpu_share", [])]
    others = f"{statistics.median(others):.0%} ({min(others):.0%}-{max(others):.0%})" if others else "-"
    return (f"| {_setting(r0)} | {r0['batch']} x {r0['seq']} | {med:.4f} ({min(rates):.4f}-{max(rates):.4f}) | "
            f"{len(rates)} | {seq_s:.2f} | {seq_s * r0['seq']:,.0f} | {r0['flops_per_seq'] / 1e9:.3f} | "
            f"{gflops:.1f} | {mfu32} | {mfu16} | {cpu} | {others} | {rss:,.0f} | {pipe} | {warm:.1f} |")


def summarize(path, output=None, notes=None):
    runs = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    groups = {}
    for r in runs:
        groups.setdefault((r["config"], r["batch"], r["seq"], _setting(r)), []).append(r)
    lines = ["# ELECTRA pre-training step: steady-state speed on this machine", ""]
    first, last = runs[0], runs[-1]
    lines += [
        f"Runs: {len(runs)} processes, {first['date']} to {last['date']}; machine {platform.platform()}, "
        f"{os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), shared with other jobs "
        f"(load average {min(r['load_avg'] for r in runs):.1f}-{max(r['load_avg'] for r in runs):.1f} "
        "at the end of the runs). Versions: " + ", ".join(f"{k} {v}" for k, v in first["versions"].items()) + ".",
        "",
        "Each process: warm-up steps (tracing, XLA compilation), then timed windows of steps; "
        "steps/s is the median over every window of every run of a setting (n windows). "
        "TF threads intra-op 2, inter-op 1 unless the setting says otherwise (inter=0: TF default pool). Synthetic batches (random ids, all tokens real), "
        "model and optimizer built as `electra_tf.pretrain` builds them, trained by `fit`. "
        "FLOPs: analytic matmul count (`electra_tf.training.flops`, 3 x forward). "
        "Peak: median of the per-run 2048^3 `tf.linalg.matmul` rates (fp32, bf16) measured in the same processes. "
        "Pipeline: `pretraining_dataset` alone over temp TFRecords, not while training.",
        "",
        "Commands (one process per line, settings run in alternation):",
        "",
        "```",
        *sorted({r["command"] for r in runs}),
        "```",
        "",
    ]
    got = [r["peak_gflops"] for r in runs if r.get("peak_gflops")]
    peak = {k: statistics.median(p[k] for p in got) for k in ("float32", "bfloat16")} if got else None
    if peak:
        lines += [f"Peak matmul (median over {len(got)} runs): fp32 {peak['float32']:.1f} GFLOP/s, "
                  f"bf16 {peak['bfloat16']:.1f} GFLOP/s.", ""]
    lines += [HEADER]
    for key in sorted(groups, key=lambda k: (k[0] != "tiny", k[1], k[3])):
        lines.append(table_row(groups[key], peak))
    text = "\n".join(lines) + "\n"
    if notes:
        with open(notes, encoding="utf-8") as f:
            text += "\n" + f.read()
    common.write_report(text, output)


def side_by_side(path, output=None):
    """The `benchmarks/side_by_side.sh` runs as a table: per setting, steps/s, MFU, RSS, electra_tf fp32 / it."""
    from electra_tf.config import get_config
    from electra_tf.training import flops

    with open(path, encoding="utf-8") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    per_seq = flops.train_flops_per_sequence(get_config("small"))
    peaks = [r["peak_gflops"]["float32"] for r in runs if r.get("peak_gflops")]
    peak = statistics.median(peaks) if peaks else None
    groups = collections.defaultdict(list)
    for r in runs:
        groups[(r["batch_arg"], r["setting"])].append(r)
    lines = [
        f"fp32 matmul peak (2048^3, median of {len(peaks)} measurements in the run): "
        + (f"{peak:.1f} GFLOP/s" if peak else "not measured"),
        "",
        "| batch | implementation / setting | steps/s median (min-max) | windows | seq/s | GFLOP/s | MFU | "
        "peak RSS MB | machine busy | electra_tf fp32 best / it |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for batch in sorted({b for b, _ in groups}):
        rows = {s: rs for (b, s), rs in groups.items() if b == batch}
        medians = {s: statistics.median([x for r in rs for x in r["steps_per_s"]]) for s, rs in rows.items()}
        ours = [m for s, m in medians.items() if s.startswith("ours") and "bf16" not in s]
        best = max(ours) if ours else None
        for setting, rs in sorted(rows.items(), key=lambda kv: -medians[kv[0]]):
            windows = [x for r in rs for x in r["steps_per_s"]]
            med = medians[setting]
            gflops = med * batch * per_seq / 1e9
            name = rs[0].get("peer") or "electra_tf"
            lines.append(
                f"| {batch} | {name} `{setting}` | {med:.4f} ({min(windows):.4f}-{max(windows):.4f}) | "
                f"{len(windows)} | {med * batch:.2f} | {gflops:.1f} | "
                + (f"{gflops / peak:.1%}" if peak else "-")
                + f" | {statistics.median(r['max_rss_mb'] for r in rs):,.0f} | "
                f"{statistics.median(r['busy_share'] for r in rs):.0%} | "
                + (f"{best / med:.2f}x" if best else "-") + " |"
            )
    common.write_report("\n".join(lines) + "\n", output)


def main(args):
    if args.side_by_side:
        side_by_side(args.side_by_side, args.output)
        return
    if args.summarize:
        summarize(args.summarize, args.output, args.notes)
        return
    result = run(args)
    print(HEADER)
    print(table_row([result]))
    print()
    print(f"Command: `{result['command']}`")
    print(f"steps/s per window: {[round(x, 4) for x in result['steps_per_s']]}; others' CPU share per window: "
          f"{[round(x, 2) for x in result['others_cpu_share']]}; "
          f"peak GFLOP/s: {({k: round(v, 1) for k, v in result['peak_gflops'].items()})}; "
          f"threads intra {args.intra} inter {args.inter}; load avg {result['load_avg']:.1f}")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(ARGS)
