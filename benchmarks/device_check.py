r"""The ELECTRA pre-training step on one GPU: electra_tf under JAX (Keras `fit`, bf16) beside HF transformers +
torch (`torch.compile`, bf16 autocast), ELECTRA-Small and ELECTRA-Base, in one call of under 10 minutes.

    python -m benchmarks.device_check --prepare                    # once, where pip reaches PyPI: .whl/
    python3 -m benchmarks.device_check --out $OUT --commit HASH    # on the GPU machine, .whl/ carried along
    python -m benchmarks.device_check --smoke --out runs/device    # any CPU: tiny shapes, 3 steps a side

The GPU machine has JAX, PyTorch and transformers but no Keras, keras-hub or TensorFlow: `--prepare` downloads the
wheels it lacks (`WHEELS`, this environment's versions, for CPython 3.12) into `.whl/`, which git ignores; there
the driver installs them into a temporary folder when Keras is not importable. Each measurement is a process of
its own (`--worker`; Keras fixes its backend at import), `jax` then `torch` for each config:

- `jax`: `build_pretrainer(config)` trained by `fit` under Keras' JAX backend, `mixed_bfloat16`, the step
  jit-compiled, Keras' AdamW at the reference's settings (`common.keras_adamw`), `import tensorflow` failing.
- `torch`: HF `ElectraForMaskedLM` + `ElectraForPreTraining` of the config's sizes, the embeddings shared and
  tied; the step written out (`electra_loss`: the generator head at the `num_predictions` masked slots only,
  Gumbel-max samples, MLM + 50 x RTD) under `torch.compile` (the smoke run's `aot_eager` traces the graphs
  inductor compiles) and bf16 autocast; fused AdamW after global norm clipping.

Both train on the same 4 batches of random ids of the real shape (`common.synthetic_batches`, seed 1), made in
each worker. Steps/s: `--windows` windows of `--steps` steps after `--warmup` (compilation); FLOPs per sequence:
`electra_tf.training.flops`; MFU against `--peak_tflops` (990: the H200's dense bf16 rate by its datasheet; the
call times a bf16 matmul there too); peak memory: the device allocator's, on a CPU the peak RSS. Written to
`--out`: `device_check.jsonl`, `device_check.md` and `device_check.log` (the workers' errors); exit 1 when a
measurement failed or `--budget_s` ran out before it.
"""

import argparse
import atexit
import importlib.metadata
import itertools
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import common

SIZES = {"small": (128, 128), "base": (64, 512)}  # batch, seq: ELECTRA-Small's own; Base at a quarter of its 256
SMOKE = dict(configs="tiny", batch_size=2, seq_length=32, warmup=1, steps=2, windows=1, torch_compile="aot_eager")
WHEELS = ("keras", "keras-hub", "namex", "optree", "kagglehub", "kagglesdk")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, as the package's commands
        sys.exit(print(f"error: {message} (see --help)", file=sys.stderr) or 2)


def parse_args(argv=None):
    p = _Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--prepare", action="store_true", help="Download the wheels into --wheels and stop.")
    p.add_argument("--smoke", action="store_true", help="Tiny shapes and 3 steps a side (any CPU).")
    p.add_argument("--out", default="device_check", help="Folder for the JSON lines, the table and the log.")
    p.add_argument("--configs", default="small,base", help="Presets, comma-separated.")
    p.add_argument("--impls", default="jax,torch", help="Sides, comma-separated: jax, torch.")
    p.add_argument("--batch_size", type=int, default=None, help="For every config (default: SIZES).")
    p.add_argument("--seq_length", type=int, default=None, help="For every config (default: SIZES).")
    p.add_argument("--precision", default="mixed_bfloat16", choices=["mixed_bfloat16", "float32"])
    p.add_argument("--warmup", type=int, default=3, help="Untimed steps (compilation).")
    p.add_argument("--steps", type=int, default=20, help="Steps per timed window.")
    p.add_argument("--windows", type=int, default=3, help="Timed windows.")
    p.add_argument("--torch_compile", default="inductor", help="torch.compile's backend (the smoke run's: "
                   "aot_eager, which traces the step as inductor does but compiles nothing).")
    p.add_argument("--peak_tflops", type=float, default=990.0, help="The MFU's peak (H200 dense bf16).")
    p.add_argument("--budget_s", type=float, default=540.0, help="Wall seconds for all the workers together.")
    p.add_argument("--wheels", default=".whl", help="Folder of the wheels (--prepare writes it).")
    p.add_argument("--commit", default=None, help="The code's commit, for a copy without git history.")
    p.add_argument("--worker", choices=["jax", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--config", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    from electra_tf.config import preset_names

    unknown = [c for c in args.configs.split(",") if c not in preset_names()]
    if unknown:
        p.error(f"--configs: unknown preset(s) {unknown}; choose from {', '.join(preset_names())}.")
    if set(args.impls.split(",")) - {"jax", "torch"}:
        p.error(f"--impls: {args.impls!r}; choose from jax, torch.")
    return args


# --- The workers: one measurement each, printed as `RESULT {json}` ---


def rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux counts in KiB


def jax_worker(args, config):
    sys.modules["tensorflow"] = None  # `import tensorflow` fails from here on, as on the GPU machine
    import jax
    import keras

    from electra_tf.models.pretrainer import build_pretrainer

    keras.mixed_precision.set_global_policy(config.precision)
    model = build_pretrainer(config)
    model.compile(optimizer=common.keras_adamw(config), jit_compile=True)
    data = common.synthetic_batches(config.batch_size, config.seq_length, config.vocab_size, config.cls_id,
                                    config.sep_id)
    batches = [{k: v[i] for k, v in data.items()} for i in range(len(data["token_ids"]))]
    marks = [args.warmup + w * args.steps for w in range(args.windows + 1)]

    class Clock(keras.callbacks.Callback):
        """The time each window's last step is done (Keras turns the step's logs to numbers first)."""
        async_safe = True  # Keras dispatches the next step before the callback runs
        times = {}

        def on_train_batch_end(self, batch, logs=None):
            if batch + 1 in marks:
                self.times[batch + 1] = time.perf_counter()

    start = time.perf_counter()
    history = model.fit(((batches[i % len(batches)],) for i in itertools.count()), steps_per_epoch=marks[-1],
                        epochs=1, verbose=0, callbacks=[Clock()])
    times = [Clock.times[m] for m in marks]
    device = jax.devices()[0]
    stats = device.memory_stats() or {}
    memory = ("device", stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else ("host RSS", rss_bytes())
    return dict(impl="electra_tf jax", device=device.device_kind, times=times,
                warmup_s=times[0] - start, loss=float(history.history["loss"][-1]), memory=memory,
                versions={m: importlib.metadata.version(m) for m in ("jax", "jaxlib", "keras", "keras-hub")})


def electra_loss(gen, disc, ids, config):
    """The ELECTRA objective on HF models: mask, generate at the masked slots, sample, discriminate."""
    import torch
    import torch.nn.functional as F

    special = (ids == config.cls_id) | (ids == config.sep_id) | (ids == config.pad_id)
    slots = torch.rand(ids.shape, device=ids.device).masked_fill(special, -1.0).topk(config.num_predictions).indices
    targets = ids.gather(1, slots)
    to_mask = torch.rand(slots.shape, device=ids.device) < config.mask_token_prob
    masked = ids.scatter(1, slots, torch.where(to_mask, torch.full_like(targets, config.mask_id), targets))
    ones, zeros = torch.ones_like(ids), torch.zeros_like(ids)
    hidden = gen.electra(masked, attention_mask=ones, token_type_ids=zeros).last_hidden_state
    hidden = hidden.gather(1, slots[..., None].expand(-1, -1, hidden.shape[-1]))
    logits = gen.generator_lm_head(gen.generator_predictions(hidden)).float()
    mlm = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    gumbel = -torch.log(-torch.log(torch.rand_like(logits) + 1e-9) + 1e-9)
    disc_ids = ids.scatter(1, slots, (logits.detach() / config.temperature + gumbel).argmax(-1))
    disc_logits = disc(disc_ids, attention_mask=ones, token_type_ids=zeros).logits.float()
    rtd = F.binary_cross_entropy_with_logits(disc_logits, (disc_ids != ids).float())
    return config.gen_weight * mlm + config.disc_weight * rtd


def hf_models(config):
    """(generator, discriminator): HF ELECTRA models of `config`'s sizes, the embeddings shared and tied."""
    import transformers

    def sizes(hidden, heads, intermediate):
        return transformers.ElectraConfig(
            vocab_size=config.vocab_size, embedding_size=config.embedding_dim, hidden_size=hidden,
            num_hidden_layers=config.num_layers, num_attention_heads=heads, intermediate_size=intermediate,
            max_position_embeddings=config.max_sequence_length, type_vocab_size=config.num_segments,
            hidden_dropout_prob=config.dropout, attention_probs_dropout_prob=config.dropout, pad_token_id=config.pad_id)

    disc = transformers.ElectraForPreTraining(sizes(config.hidden_dim, config.num_heads, config.intermediate_dim))
    gen = transformers.ElectraForMaskedLM(sizes(config.generator_hidden_dim, config.generator_num_heads,
                                                config.generator_intermediate_dim))
    gen.electra.embeddings = disc.electra.embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    return gen, disc


def matmul_tflops(torch, n=8192, repeats=10):
    """The GPU's bf16 (n x n) @ (n x n) rate, after 3 warm-ups."""
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for i in range(3 + repeats):
        if i == 3:
            torch.cuda.synchronize()
            start = time.perf_counter()
        a @ b
    torch.cuda.synchronize()
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e12


def torch_worker(args, config):
    import torch
    import transformers

    cuda = torch.cuda.is_available()
    where = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    torch.set_float32_matmul_precision("high")
    gen, disc = (m.to(where).train() for m in hf_models(config))
    named = {id(p): (n, p) for model in (disc, gen) for n, p in model.named_parameters()}.values()  # shared once
    params, groups = [p for _, p in named], ([], [])  # decayed, not (LayerNorm, biases)
    for n, p in named:
        groups[any(k in n for k in ("bias", "LayerNorm"))].append(p)
    optimizer = torch.optim.AdamW([dict(params=groups[0], weight_decay=config.weight_decay),
                                   dict(params=groups[1], weight_decay=0.0)], lr=config.learning_rate,
                                  betas=(config.adam_beta1, config.adam_beta2), eps=config.adam_epsilon, fused=cuda)
    data = common.synthetic_batches(config.batch_size, config.seq_length, config.vocab_size, config.cls_id,
                                    config.sep_id)["token_ids"]
    batches = [torch.from_numpy(ids).long().to(where) for ids in data]
    loss_fn = torch.compile(electra_loss, backend=args.torch_compile)
    bf16 = config.precision == "mixed_bfloat16"

    def step(ids):
        with torch.autocast(where, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(gen, disc, ids, config)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, config.clip_norm)
        optimizer.step()
        return loss

    sync = torch.cuda.synchronize if cuda else (lambda: None)
    start, times, done = time.perf_counter(), [], 0
    for mark in [args.warmup + w * args.steps for w in range(args.windows + 1)]:
        while done < mark:
            loss = step(batches[done % len(batches)])
            done += 1
        sync()
        times.append(time.perf_counter())
    memory = ("device", torch.cuda.max_memory_allocated()) if cuda else ("host RSS", rss_bytes())
    return dict(impl="hf transformers + torch", device=torch.cuda.get_device_name() if cuda else "cpu",
                times=times, warmup_s=times[0] - start, loss=float(loss.detach()), memory=memory,
                matmul_tflops=matmul_tflops(torch) if cuda else None,
                versions=dict(torch=torch.__version__, transformers=transformers.__version__))


def worker(args):
    from electra_tf.config import get_config
    from electra_tf.training import flops

    batch, seq = SIZES.get(args.config, (32, 128))
    config = get_config(args.config, batch_size=args.batch_size or batch, seq_length=args.seq_length or seq,
                        precision=args.precision)
    found = (jax_worker if args.worker == "jax" else torch_worker)(args, config)
    times = found.pop("times")
    rates = [args.steps / (b - a) for a, b in zip(times, times[1:])]
    median = statistics.median(rates)
    per_seq = flops.train_flops_per_sequence(config)
    tflops = median * config.batch_size * per_seq / 1e12
    kind, memory = found.pop("memory")
    return dict(found, config=args.config, batch=config.batch_size, seq=config.seq_length, precision=config.precision,
                steps_per_s=rates, steps_per_s_median=median, seq_per_s=median * config.batch_size,
                gflop_per_seq=per_seq / 1e9, tflops=tflops, mfu=tflops / args.peak_tflops,
                peak_tflops=args.peak_tflops, peak_memory_gib=memory / 2**30, memory_kind=kind,
                warmup_steps=args.warmup, steps=args.steps, python=platform.python_version())


# --- The driver: wheels, the workers in turn, the report ---


def prepare(folder):
    """Downloads `WHEELS` at this environment's versions into `folder`; prints their total size."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in WHEELS]
    platforms = [arg for name in PLATFORMS for arg in ("--platform", name)]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                    "3.12", "--implementation", "cp", *platforms, "-d", folder, *pins], check=True)
    print(f"{folder}: {bundle(folder)}")


def wheels_in(folder):
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".whl")]


def bundle(folder):
    return f"{len(wheels_in(folder))} wheels, {sum(map(os.path.getsize, wheels_in(folder))) / 2**20:.1f} MiB"


def install(folder, env):
    """Installs the wheels of `folder` into a temporary folder put first on `env`'s PYTHONPATH, unless Keras is
    importable already; returns what was installed, or None."""
    import importlib.util

    if importlib.util.find_spec("keras") is not None or not os.path.isdir(folder):
        return None
    site = tempfile.mkdtemp(prefix="device_check_site_")
    atexit.register(shutil.rmtree, site, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--no-cache-dir", "--target", site, *wheels_in(folder)], check=True)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
    return bundle(folder)


def measure(args, impl, name, env, seconds, log):
    """One worker's result, or a row naming why there is none."""
    flags = [*sys.argv[1:], "--worker", impl, "--config", name]  # the worker reads the driver's flags
    try:
        run = subprocess.run([sys.executable, "-m", "benchmarks.device_check", *flags], cwd=common.REPO,
                             env=dict(env, KERAS_BACKEND=impl), capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return dict(impl=impl, config=name, error=f"timed out after {seconds:.0f} s")
    log.write(f"== {impl} {name}: exit {run.returncode}\n{run.stderr[-6000:]}\n")
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if run.returncode or not lines:
        return dict(impl=impl, config=name, error=f"exit {run.returncode}: {run.stderr.strip()[-300:]}")
    return json.loads(lines[-1][len("RESULT "):])


def report(args, rows, wheels, commit):
    done = [r for r in rows if "error" not in r]
    versions = {k: v for r in done for k, v in r["versions"].items()}
    matmul = [r["matmul_tflops"] for r in done if r.get("matmul_tflops")]
    flags = ["$OUT" if arg == args.out else shlex.quote(arg) for arg in sys.argv[1:]]  # a folder of that machine
    lines = [
        "# ELECTRA pre-training step on one GPU: electra_tf on JAX beside HF transformers + torch", "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} at commit {commit} on "
        f"{', '.join(sorted({r['device'] for r in done})) or 'no device'}, Python {platform.python_version()}: "
        f"`python -m benchmarks.device_check {' '.join(flags)}`. Versions: "
        + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + f". Wheels carried: {wheels or 'none'}.", "",
        f"Random token ids (4 batches, seed 1), {args.precision}; steps/s: median (min-max) of {args.windows} "
        f"windows of {args.steps} steps after {args.warmup} warm-up steps; FLOPs per sequence from "
        f"`electra_tf.training.flops`; MFU against {args.peak_tflops:g} TFLOP/s"
        + (f" (a bf16 8192^3 matmul ran at {statistics.median(matmul):.0f} TFLOP/s in this call)" if matmul else "")
        + (f"; torch.compile backend {args.torch_compile}" if "torch" in args.impls else "") + ".", "",
        "| config | batch x seq | implementation | steps/s median (min-max) | seq/s | TFLOP/s | MFU | peak memory GiB "
        "| warm-up s | loss |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in done:
        rates = r["steps_per_s"]
        lines.append(f"| {r['config']} | {r['batch']} x {r['seq']} | {r['impl']} | {r['steps_per_s_median']:.3f} "
                     f"({min(rates):.3f}-{max(rates):.3f}) | {r['seq_per_s']:,.1f} | {r['tflops']:.2f} | "
                     f"{r['mfu']:.1%} | {r['peak_memory_gib']:.2f} ({r['memory_kind']}) | {r['warmup_s']:.1f} | "
                     f"{r['loss']:.3f} |")
    lines += [f"\nNot measured: {r['impl']} {r['config']}: {r['error']}" for r in rows if "error" in r]
    return "\n".join(lines) + "\n"


def main(args):
    if args.worker:
        print("RESULT " + json.dumps(worker(args)), flush=True)
        return 0
    if args.prepare:
        return prepare(args.wheels)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    wheels = install(args.wheels, env)
    os.makedirs(args.out, exist_ok=True)
    jsonl, rows, start = os.path.join(args.out, "device_check.jsonl"), [], time.monotonic()
    open(jsonl, "w").close()
    with open(os.path.join(args.out, "device_check.log"), "w", encoding="utf-8") as log:
        for name, impl in itertools.product(args.configs.split(","), args.impls.split(",")):
            left = args.budget_s - (time.monotonic() - start)
            row = (measure(args, impl, name, env, left, log) if left > 30 else
                   dict(impl=impl, config=name, error="skipped: --budget_s spent"))
            rows.append(row)
            common.append_jsonl(jsonl, row)
            print(f"[{time.monotonic() - start:.0f} s] {impl} {name}: "
                  + (row.get("error") or f"{row['steps_per_s_median']:.3f} steps/s, MFU {row['mfu']:.1%}"), flush=True)
    common.write_report(report(args, rows, wheels, args.commit or common.commit()),
                        os.path.join(args.out, "device_check.md"))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(parse_args()))
