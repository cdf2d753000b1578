r"""The pieces of the sentence-classification fine-tuning step, timed side by side in one process.

    nice -n 19 python -m benchmarks.finetune_step_pieces --rounds 4

Converted-MiniLM size (6 layers, H=384, 12 heads, FFN 1536, vocabulary 30522),
randomly initialised; `--seq_length` 64, `--batch_size` 32, fp32, TensorFlow's CPU
kernels as the commands choose them (`electra_tf.cli.cpu_kernels`). Variants, each its own
`tf.function` on the same batch, run alternately `--rounds` times after one
warm-up call: forward; forward + backward; the whole step with
`LayerwiseAdamW` (clip 1.0, schedule: what `electra_tf.finetune` compiles),
with plain `keras.optimizers.AdamW`, with the embedding gradient made dense
before the update (it is `tf.IndexedSlices` otherwise), with XLA; Keras'
own `train_function` (what `fit` calls per step) with and without XLA; and one
batch of the classification input pipeline (`make_dataset`: tokenise + pack).
Prints the median of each and its ratio to the `LayerwiseAdamW` step; on a
loaded machine only the ratios mean anything. `--trace DIR` first profiles that
step and prints the time by op type:

    python -m benchmarks.finetune_step_pieces --seq_length 256 --batch_size 16 \
        --variants "step LayerwiseAdamW" --rounds 3 --trace runs/step_trace
"""
import argparse
import os
import statistics
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--rounds", type=int, default=4)
parser.add_argument("--seq_length", type=int, default=64)
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--variants", default="all", help="Comma-separated variant names to time, or all.")
parser.add_argument("--trace", default=None, help="Also profile `--trace_steps` LayerwiseAdamW steps into this "
                                                  "directory and print the time by op type.")
parser.add_argument("--trace_steps", type=int, default=2)
parser.add_argument("--vocab_file", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                         "shared", "data", "vocab", "bert_uncased_vocab.txt"))
args = parser.parse_args()

from electra_tf import cli  # noqa: E402

cli.cpu_kernels()  # the commands' oneDNN default (TF_ENABLE_ONEDNN_OPTS=0 in the environment turns it off)
import numpy as np, tensorflow as tf, keras  # noqa: E402
from benchmarks import common  # noqa: E402
from electra_tf.models.encoder import ElectraEncoder  # noqa: E402
from electra_tf.models.classifier import ElectraClassifier  # noqa: E402
from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW  # noqa: E402
from electra_tf.training.optimization import WarmupLinearDecay  # noqa: E402

B, L, ROUNDS = args.batch_size, args.seq_length, args.rounds
keras.utils.set_random_seed(0)
rng = np.random.RandomState(0)
x = {"token_ids": tf.constant(rng.randint(5, 30522, (B, L)), tf.int32),
     "segment_ids": tf.zeros((B, L), tf.int32), "padding_mask": tf.ones((B, L), tf.int32)}
y = tf.constant(rng.randint(0, 2, B), tf.int32)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

def make_model():
    enc = ElectraEncoder(vocab_size=30522, num_layers=6, num_heads=12, hidden_dim=384, embedding_dim=384,
                         intermediate_dim=1536, max_sequence_length=512)
    m = ElectraClassifier(enc, 2)
    m.build()
    return m

def layerwise():
    return LayerwiseAdamW(WarmupLinearDecay(3e-5, 10, 1000), num_layers=6, layerwise_decay=0.8, epsilon=1e-6,
                          global_clipnorm=1.0)

variants = {}
chosen = None if args.variants == "all" else set(args.variants.split(","))
if chosen is not None and "step LayerwiseAdamW" not in chosen:
    sys.exit("--variants must include `step LayerwiseAdamW` (the reference of the ratios)")


def add(name, build):
    """Builds variant `name` (`build()`: its callable) only when it is timed: each step variant builds a model."""
    if chosen is None or name in chosen:
        variants[name] = build()


model = make_model()

@tf.function
def fwd():
    return loss_fn(y, model(x, training=True))
add("forward", lambda: fwd)

@tf.function
def fwd_bwd():
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    return tape.gradient(loss, model.trainable_variables)
add("forward+backward", lambda: lambda: fwd_bwd()[0])

def manual(optimizer, dense_embedding=False, jit=False):
    m = make_model()
    optimizer.build(m.trainable_variables)
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(y, m(x, training=True))
        grads = tape.gradient(loss, m.trainable_variables)
        if dense_embedding:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        optimizer.apply_gradients(zip(grads, m.trainable_variables))
        return loss
    return tf.function(step, jit_compile=jit)

add("step LayerwiseAdamW", lambda: manual(layerwise()))
add("step keras AdamW",
    lambda: manual(keras.optimizers.AdamW(3e-5, weight_decay=0.0, epsilon=1e-6, global_clipnorm=1.0)))
add("step LayerwiseAdamW dense-emb", lambda: manual(layerwise(), dense_embedding=True))
add("step LayerwiseAdamW jit", lambda: manual(layerwise(), jit=True))

def keras_fit(jit, spe=1):
    m = make_model()
    m.compile(optimizer=layerwise(), loss=loss_fn, jit_compile=jit, steps_per_execution=spe)
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    m.make_train_function()
    itr = iter(ds)
    return lambda: m.train_function(itr)
add("keras train_function", lambda: keras_fit(False))
add("keras train_function jit", lambda: keras_fit(True))

# input pipeline: tokenize + pack texts (the classification make_dataset path)
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.finetuning.classification import make_dataset
from electra_tf.finetuning.tasks import Example
vocab = args.vocab_file
if os.path.exists(vocab) and (chosen is None or "input pipeline (1 batch)" in chosen):
    tok = WordPieceTokenizer(vocab)
    words = [l.strip() for l in open(vocab)][2000:8000]
    ex = [Example(" ".join(rng.choice(words, 40)), None, int(rng.randint(2))) for _ in range(B * 50)]
    ds = make_dataset(ex, tok, L, B, shuffle_seed=0).repeat()
    dit = iter(ds)
    variants["input pipeline (1 batch)"] = lambda: next(dit)

if args.trace:
    common.print_op_times(*common.op_times(variants["step LayerwiseAdamW"], args.trace, args.trace_steps))
for name, fn in variants.items():  # warm up / trace
    t = time.perf_counter(); fn(); print(f"warm {name}: {time.perf_counter() - t:.2f}s", flush=True)
times = {name: [] for name in variants}
for r in range(ROUNDS):
    for name, fn in variants.items():
        t = time.perf_counter()
        out = fn()
        tf.nest.map_structure(lambda v: v.numpy() if hasattr(v, "numpy") else v, out)
        times[name].append(time.perf_counter() - t)
ref = statistics.median(times["step LayerwiseAdamW"])
print(f"\n{'variant':36s} median s   / step LayerwiseAdamW")
for name, ts in times.items():
    print(f"{name:36s} {statistics.median(ts):7.3f}   {statistics.median(ts) / ref:6.2f}")
