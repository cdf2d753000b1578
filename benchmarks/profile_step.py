r"""Where the time of one ELECTRA pre-training step goes, by timing its parts.

    python -m benchmarks.profile_step --config small --batch_size 32 --jit_compile 0

Each part is its own `tf.function` (XLA with `--jit_compile 1`) over the same
model, optimizer and synthetic batch as `benchmarks/train_step.py`; the
median of `--iters` calls is reported, and differences give the rest:

- `mask`: `mask_tokens` alone;
- `gumbel_noise`: the (batch, num_predictions, vocab) uniform draw and the
  double log of `gumbel_sample`, reduced by argmax (no logits);
- `gumbel_sample`: `gumbel_sample` on given logits (noise + argmax);
- `inverse_cdf_sample`: `inverse_cdf_sample` (`--sampler inverse_cdf`), the same
  distribution from one uniform per slot (softmax CDF + binary search);
- `generator_forward`: mask + generator + MLM head at the chosen slots;
- `discriminator_forward`: discriminator + RTD head on a batch;
- `forward`: `compute_losses` (mask, generator, sampling, corruption, discriminator, losses);
- `forward_backward`: + `tape.gradient`;
- `train_step`: `ElectraPretrainer.train_step` (+ clipping, AdamW, metrics), as `fit` runs it.

`--trace DIR` also records a TF profiler trace of `--trace_steps` train steps
and prints the time of every op summed by type and by coarse group.
"""

import argparse
import json
import os

p = argparse.ArgumentParser()
p.add_argument("--config", default="small")
p.add_argument("--batch_size", type=int, default=32)
p.add_argument("--seq_length", type=int, default=128)
p.add_argument("--precision", default="float32")
p.add_argument("--jit_compile", type=int, default=0)
p.add_argument("--iters", type=int, default=5)
p.add_argument("--parts", default="all", help="Comma-separated part names, or all.")
p.add_argument("--intra", type=int, default=2)
p.add_argument("--inter", type=int, default=1)
p.add_argument("--onednn", type=int, default=None)
p.add_argument("--trace", default=None, help="Directory for a TF profiler trace of the train step.")
p.add_argument("--trace_steps", type=int, default=3)
p.add_argument("--json", default=None, help="Append the result as a JSON line.")
ARGS = p.parse_args()
if ARGS.onednn is not None:
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = str(ARGS.onednn)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from benchmarks import common  # noqa: E402
from electra_tf.config import get_config  # noqa: E402
from electra_tf.layers import masking, replicas, sampling  # noqa: E402
from electra_tf.models.pretrainer import build_pretrainer  # noqa: E402
from electra_tf.training.optimization import create_optimizer  # noqa: E402
from benchmarks.train_step import synthetic_batches  # noqa: E402


def timed(fn, iters):
    return common.median(common.timings(fn, iters))  # two untimed calls first: compile / trace


def main():
    tf.config.threading.set_intra_op_parallelism_threads(ARGS.intra)
    tf.config.threading.set_inter_op_parallelism_threads(ARGS.inter)
    config = get_config(ARGS.config, batch_size=ARGS.batch_size, seq_length=ARGS.seq_length,
                        precision=ARGS.precision, jit_compile=bool(ARGS.jit_compile))
    if config.precision != "float32":
        keras.mixed_precision.set_global_policy(config.precision)
    model = build_pretrainer(config)
    optimizer = create_optimizer(config)
    model.compile(optimizer=optimizer, jit_compile=config.jit_compile)
    optimizer.build(model.trainable_variables)
    data = synthetic_batches(config.batch_size, config.seq_length, config.vocab_size, config.cls_id,
                             config.sep_id, num=1)
    batch = {k: tf.constant(v[0]) for k, v in data.items()}
    seed = tf.constant([0, 7], tf.int64)
    jit = bool(config.jit_compile)
    b, s, n, v = config.batch_size, config.seq_length, config.num_predictions, config.vocab_size
    logits = tf.random.normal([b, n, v])
    mask_args = dict(num_predictions=n, mask_prob=config.mask_prob, mask_id=config.mask_id,
                     special_ids=(config.cls_id, config.sep_id, config.mask_id),
                     mask_token_prob=config.mask_token_prob, with_replacement=config.mask_with_replacement)

    def inputs(ids):
        return {"token_ids": ids, "segment_ids": batch["segment_ids"], "padding_mask": batch["padding_mask"]}

    @tf.function(jit_compile=jit)
    def mask():
        return masking.mask_tokens(batch["token_ids"], batch["padding_mask"], seed, **mask_args)["masked_ids"]

    @tf.function(jit_compile=jit)
    def gumbel_noise():
        u = replicas.replica_uniform([b, n, v], seed)
        return tf.argmax(sampling.gumbel_noise(u), axis=-1, output_type=tf.int32)

    @tf.function(jit_compile=jit)
    def gumbel_sample():
        return sampling.gumbel_sample(logits, seed, config.temperature)

    @tf.function(jit_compile=jit)
    def inverse_cdf_sample():
        return sampling.inverse_cdf_sample(logits, seed, config.temperature)

    @tf.function(jit_compile=jit)
    def generator_forward():
        masked = masking.mask_tokens(batch["token_ids"], batch["padding_mask"], seed, **mask_args)
        hidden = model.generator(inputs(masked["masked_ids"]), training=True)
        return tf.reduce_sum(tf.cast(model.generator_head(hidden, mask_positions=masked["positions"]), tf.float32))

    @tf.function(jit_compile=jit)
    def discriminator_forward():
        hidden = model.discriminator(inputs(batch["token_ids"]), training=True)
        return tf.reduce_sum(tf.cast(model.discriminator_head(hidden), tf.float32))

    @tf.function(jit_compile=jit)
    def forward():
        return model.compute_losses(batch, seed, training=True).loss

    @tf.function(jit_compile=jit)
    def forward_backward():
        with tf.GradientTape() as tape:
            loss = model.compute_losses(batch, seed, training=True).loss
        grads = tape.gradient(loss, model.trainable_variables)
        return tf.add_n([tf.reduce_sum(tf.cast(g, tf.float32)) if not isinstance(g, tf.IndexedSlices)
                         else tf.reduce_sum(tf.cast(g.values, tf.float32)) for g in grads])

    @tf.function(jit_compile=jit)
    def train_step():
        return model.train_step(batch)["loss"]

    parts = dict(mask=mask, gumbel_noise=gumbel_noise, gumbel_sample=gumbel_sample,
                 inverse_cdf_sample=inverse_cdf_sample,
                 generator_forward=generator_forward, discriminator_forward=discriminator_forward,
                 forward=forward, forward_backward=forward_backward, train_step=train_step)
    chosen = list(parts) if ARGS.parts == "all" else ARGS.parts.split(",")
    result = {}
    for name in chosen:
        result[name] = timed(parts[name], ARGS.iters)
        print(f"{name:24s} {result[name] * 1000:9.1f} ms", flush=True)
    if {"forward", "forward_backward", "train_step"} <= set(result):
        print(f"{'= backward':24s} {(result['forward_backward'] - result['forward']) * 1000:9.1f} ms")
        print(f"{'= optimizer + metrics':24s} {(result['train_step'] - result['forward_backward']) * 1000:9.1f} ms")
    if ARGS.trace:
        trace(train_step, ARGS.trace, ARGS.trace_steps)
    if ARGS.json:
        with open(ARGS.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(vars(ARGS), seconds=result, load_avg=os.getloadavg()[0])) + "\n")


def trace(fn, logdir, steps):
    """Profiles `steps` calls of `fn`, prints every op's time by type and by coarse group (`_group`)."""
    wall, ops = common.op_times(fn, logdir, steps)
    common.print_op_times(wall, ops, group=_group)
    with open(os.path.join(logdir, "op_times.json"), "w", encoding="utf-8") as f:
        json.dump(dict(sorted(ops.items(), key=lambda kv: -kv[1])), f, indent=0)
    print(f"per-op ms/step written to {logdir}/op_times.json")


def _group(op_type, name):
    """Coarse buckets: matmuls, random numbers, the vocabulary-sized MLM-head and sampling ops, the rest."""
    if "MatMul" in op_type or "Einsum" in op_type:
        return "matmul (tied vocab projection)" if "token_embedding" in name else "matmul (encoders, heads)"
    if op_type.startswith("StatelessRandom") or op_type.startswith("Philox"):
        return "random (dropout masks)" if "dropout" in name else "random (masking, Gumbel noise)"
    if "dropout" in name:
        return "dropout select / scale"
    if "adam_w" in name or "clip" in name.lower() or "global_norm" in name.lower():
        return "optimizer (AdamW, clipping)"
    if any(m in name.lower() for m in ("auc", "precision", "recall", "mean/", "metrics")):
        return "metrics"
    if "generator_predictions" in name or "SoftmaxCrossEntropy" in op_type or name.startswith(("Log", "ArgMax")):
        return "vocab-sized (MLM head bias/LN, CE, Gumbel log/argmax)"
    return "other elementwise / layout (GELU, LayerNorm, softmax, ...)"


if __name__ == "__main__":
    main()
