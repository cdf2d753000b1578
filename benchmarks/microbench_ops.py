r"""Micro-benchmarks behind the recommendations in benchmarks/results/train_step.md.

    python -m benchmarks.microbench_ops --batch_size 32 --precision float32

Forward + backward of one ELECTRA-Small discriminator layer's pieces, each as
a `tf.function` (optionally XLA), median of timed calls, TF intra-op 2 / inter-op 1:

- `qkv_einsum`: Q, K, V projections as keras' `EinsumDense` computes them
  (`abc,cde->abde`, weight (H, heads, H/heads)), which TF runs as a broadcast
  `BatchMatMulV2` whose weight gradient is a per-example product then a sum;
- `qkv_matmul`: the same three projections as 2-D matmuls on (batch*seq, H);
- `qkv_fused`: one (H, 3H) matmul for Q, K and V together;
- `ffn`: the feed-forward up + down projections (2-D matmuls), for reference;
- `dropout_masks`: the uniform draws of one layer's three dropouts (Keras' stateless dropout).

GFLOP/s are matmul FLOPs (3 x forward) over wall time.
"""

import argparse
import os

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=32)
p.add_argument("--seq_length", type=int, default=128)
p.add_argument("--hidden_dim", type=int, default=256)
p.add_argument("--num_heads", type=int, default=4)
p.add_argument("--intermediate_dim", type=int, default=1024)
p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"])
p.add_argument("--jit_compile", type=int, default=0)
p.add_argument("--iters", type=int, default=20)
ARGS = p.parse_args()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402


def timed(fn, iters):
    return common.median(common.timings(fn, iters))


def main():
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    b, s, h, heads, f = ARGS.batch_size, ARGS.seq_length, ARGS.hidden_dim, ARGS.num_heads, ARGS.intermediate_dim
    dtype = tf.bfloat16 if ARGS.precision == "bfloat16" else tf.float32
    x = tf.cast(tf.random.normal([b, s, h]), dtype)
    w_heads = [tf.Variable(tf.cast(tf.random.normal([h, heads, h // heads]) * 0.02, dtype)) for _ in range(3)]
    w_2d = [tf.Variable(tf.cast(tf.random.normal([h, h]) * 0.02, dtype)) for _ in range(3)]
    w_fused = tf.Variable(tf.cast(tf.random.normal([h, 3 * h]) * 0.02, dtype))
    w_up = tf.Variable(tf.cast(tf.random.normal([h, f]) * 0.02, dtype))
    w_down = tf.Variable(tf.cast(tf.random.normal([f, h]) * 0.02, dtype))
    jit = bool(ARGS.jit_compile)
    # Non-constant upstream gradients and seeds, so that grappler cannot fold anything away.
    r_heads = tf.Variable(tf.cast(tf.random.normal([b, s, heads, h // heads]), dtype))
    r_h = tf.Variable(tf.cast(tf.random.normal([b, s, h]), dtype))
    seed = tf.Variable([1, 2], dtype=tf.int64)

    def fwd_bwd(forward, variables):
        @tf.function(jit_compile=jit)
        def step():
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(tf.cast(forward(), tf.float32))
            grads = tape.gradient(loss, [x] + variables)
            return tf.add_n([tf.reduce_sum(tf.cast(g, tf.float32)) for g in grads])

        return step

    def qkv_einsum():
        return tf.add_n([tf.reduce_sum(tf.einsum("abc,cde->abde", x, w) * r_heads) for w in w_heads])

    def qkv_matmul():
        x2 = tf.reshape(x, [b * s, h])
        return tf.add_n([tf.reduce_sum(tf.reshape(tf.matmul(x2, w), [b, s, heads, h // heads]) * r_heads)
                         for w in w_2d])

    def qkv_fused():
        qkv = tf.reshape(tf.matmul(tf.reshape(x, [b * s, h]), w_fused), [b, s, 3, heads, h // heads])
        return tf.reduce_sum(qkv * r_heads[:, :, None])

    def ffn():
        y = tf.matmul(tf.nn.gelu(tf.matmul(tf.reshape(x, [b * s, h]), w_up)), w_down)
        return tf.reduce_sum(tf.reshape(y, [b, s, h]) * r_h)

    @tf.function(jit_compile=jit)
    def dropout_masks():
        # Attention-probability dropout, attention-output dropout, FFN-output dropout.
        shapes = [[b, heads, s, s], [b, s, h], [b, s, h]]
        return tf.add_n([tf.reduce_sum(tf.cast(tf.random.stateless_uniform(shape, seed) >= 0.1, tf.float32))
                         for shape in shapes])

    qkv_flops = 3 * 3 * 2 * b * s * h * h
    ffn_flops = 3 * 2 * 2 * b * s * h * f
    cases = [("qkv_einsum", fwd_bwd(qkv_einsum, w_heads), qkv_flops),
             ("qkv_matmul", fwd_bwd(qkv_matmul, w_2d), qkv_flops),
             ("qkv_fused", fwd_bwd(qkv_fused, [w_fused]), qkv_flops),
             ("ffn", fwd_bwd(ffn, [w_up, w_down]), ffn_flops),
             ("dropout_masks", dropout_masks, 0)]
    print(f"batch {b} x seq {s}, H {h}, heads {heads}, FFN {f}, {ARGS.precision}, XLA {jit}; "
          f"median of {ARGS.iters} calls, forward + backward per call; load avg {os.getloadavg()[0]:.1f}")
    for name, fn, flops in cases:
        t = timed(fn, ARGS.iters)
        rate = f"{flops / t / 1e9:7.1f} GFLOP/s" if flops else ""
        print(f"  {name:14s} {t * 1000:8.2f} ms  {rate}")
    print(f"  (x 12 layers for the discriminator; load avg at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
