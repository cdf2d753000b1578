r"""The MFU ceiling of one ELECTRA training step: its matmuls alone, timed shape by shape.

    python -m benchmarks.matmul_ceiling --config small --batch_size 32 > benchmarks/results/matmul_ceiling_small.md

Lists every matrix multiply of one training step (generator, discriminator,
MLM head at the masked slots, discriminator head), each as its forward
product and the two products of its backward pass (input gradient
`dY @ W^T`, weight gradient `X^T @ dY`), times each distinct shape with
`tf.linalg.matmul` (median of `--iters` calls in a `tf.function`, fp32,
TF intra-op 2 / inter-op 1), and adds them up. If every other op of the step
(GELU, LayerNorm, dropout, softmax, sampling, losses, the optimizer) cost
nothing, the step would take that sum: the printed "ceiling" steps/s and MFU
against the 2048^3 matmul peak measured in the same process are the most
this model shape can reach on this CPU with TF's matmul kernels. The
FLOPs of the list are checked against `electra_tf.training.flops`.
"""

import argparse
import collections
import os

p = argparse.ArgumentParser()
p.add_argument("--config", default="small")
p.add_argument("--batch_size", type=int, default=32)
p.add_argument("--iters", type=int, default=10)
p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"])
ARGS = p.parse_args()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from electra_tf.config import get_config  # noqa: E402
from electra_tf.training import flops  # noqa: E402


def step_matmuls(config, batch):
    """{(batch_dims, m, k, n): count} of the forward products of one step; FLOPs = 2 m k n x batch_dims."""
    s, e, v = config.seq_length, config.embedding_dim, config.vocab_size
    rows, slots = batch * s, batch * config.num_predictions
    out = collections.Counter()

    def encoder(h, f, heads):
        if e != h:
            out[(1, rows, e, h)] += 1  # embeddings_project
        for _ in range(config.num_layers):
            out[(1, rows, h, h)] += 4  # Q, K, V, attention output
            out[(batch * heads, s, h // heads, s)] += 1  # scores
            out[(batch * heads, s, s, h // heads)] += 1  # weighted sum
            out[(1, rows, h, f)] += 1
            out[(1, rows, f, h)] += 1

    if config.objective != "mlm":
        hg = config.generator_hidden_dim
        encoder(hg, config.generator_intermediate_dim, config.generator_num_heads)
        out[(1, slots, hg, e)] += 1  # MLM head dense
        out[(1, slots, e, v)] += 1  # tied vocabulary projection
    h = config.hidden_dim
    encoder(h, config.intermediate_dim, config.num_heads)
    out[(1, rows, h, h)] += 1  # discriminator head dense
    out[(1, rows, h, 1)] += 1  # discriminator head logit
    return out


def timed(fn):
    return common.median(common.timings(fn, ARGS.iters))


def matmul_seconds(batch_dims, a_shape, b_shape, transpose_a=False, transpose_b=False):
    dtype = tf.bfloat16 if ARGS.precision == "bfloat16" else tf.float32
    lead = [batch_dims] if batch_dims > 1 else []
    a = tf.random.normal(lead + list(a_shape), dtype=tf.float32)
    b = tf.random.normal(lead + list(b_shape), dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    fn = tf.function(lambda: tf.reduce_sum(tf.linalg.matmul(a, b, transpose_a=transpose_a,
                                                            transpose_b=transpose_b)[..., :1]))
    return timed(fn)


def main():
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    config = get_config(ARGS.config)
    batch = ARGS.batch_size
    shapes = step_matmuls(config, batch)
    counted = sum(2 * bd * m * k * n * c for (bd, m, k, n), c in shapes.items()) * 3
    expected = flops.train_flops_per_sequence(config) * batch
    assert abs(counted / expected - 1) < 1e-9, (counted, expected)  # the list is the FLOP counter's

    peak = 2 * 2048**3 / matmul_seconds(1, (2048, 2048), (2048, 2048))
    print(f"# Every matmul of the ELECTRA-{ARGS.config.capitalize()} pre-training step, timed shape by shape\n")
    print(f"`{common.command_line('benchmarks.matmul_ceiling')}`\n")
    print(f"{ARGS.config}, batch {batch}, seq {config.seq_length}, {ARGS.precision}: "
          f"{len(shapes)} distinct forward shapes, {expected / 1e9:.1f} GFLOP per step (3 x forward); "
          f"2048^3 peak {peak / 1e9:.1f} GFLOP/s")
    print("| batch x (m, k, n) | per step | fwd ms | dX ms | dW ms | GFLOP/s | ms per step |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    total = 0.0
    for (bd, m, k, n), count in sorted(shapes.items(), key=lambda kv: -kv[0][0] * kv[0][1] * kv[0][2]
                                       * kv[0][3] * kv[1]):
        fwd = matmul_seconds(bd, (m, k), (k, n))
        dx = matmul_seconds(bd, (m, n), (k, n), transpose_b=True)  # dY @ W^T
        dw = matmul_seconds(bd, (m, k), (m, n), transpose_a=True)  # X^T @ dY
        seconds = (fwd + dx + dw) * count
        total += seconds
        rate = 3 * 2 * bd * m * k * n / (fwd + dx + dw)
        print(f"| {bd} x ({m}, {k}, {n}) | {count} | {fwd * 1e3:.2f} | {dx * 1e3:.2f} | {dw * 1e3:.2f} | "
              f"{rate / 1e9:.0f} | {seconds * 1e3:.0f} |")
    print(f"\nAll matmuls, one after another: {total * 1e3:.0f} ms per step -> ceiling {1 / total:.3f} steps/s, "
          f"{expected / total / 1e9:.1f} GFLOP/s = {expected / total / peak:.1%} MFU (the step's other ops at 0 ms).")


if __name__ == "__main__":
    main()
