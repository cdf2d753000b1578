r"""Fine-tuning speed: electra_tf next to Hugging Face transformers + torch, same task and recipe, one run.

    # a quiet machine; the converted-MiniLM size (6 layers, H=384), seq 64, batch 32
    python -m benchmarks.finetune_speed --tasks classification,tagging --steps 30 --rounds 3 \
        --output benchmarks/results/finetune_speed.md
    # smoke run
    python -m benchmarks.finetune_speed --num_layers 1 --hidden_dim 32 --num_heads 2 \
        --intermediate_dim 64 --steps 3 --rounds 1 --batch_size 4

Both sides train the same architecture from a random initialisation (speed does not depend on the
weights): an encoder of `--num_layers`, `--hidden_dim`, `--num_heads`, `--intermediate_dim` over
`--vocab_file`, with the task head (classification: [CLS] -> dropout -> dense, 2 labels; tagging:
dropout -> dense over every piece, the CoNLL-2003 labels, loss on first pieces), the fine-tuning
recipe (AdamW, epsilon 1e-6, clipping, warmup then linear decay, layer-wise LR decay), fp32. Every
recipe flag is the fine-tuning command's (`python -m electra_tf.finetune --help`).

- electra_tf: what `python -m electra_tf.finetune` runs: the task's `tf.data` pipeline
  (`make_dataset`; tagging: `build_features` windows and `tagging_dataset`), `create_optimizer`
  from `FinetuneConfig`, `Model.fit`.
- Hugging Face: `benchmarks.hf_side`'s step on the same texts / words (batches prepared
  beforehand); `torch.set_num_threads` = the cores TensorFlow uses.

Data: random sentences of vocabulary words about `--seq_length` pieces long (classification), and
CoNLL-2003 train sentences from `--conll_dir` (random ones when absent) for tagging. The sides
alternate in blocks of `--steps` steps, `--rounds` times after one warm-up block; a block's rate is
the batch size over its median step time, the report gives the median over blocks and the ratio.
On a loaded machine only the ratio means anything.
"""

import json
import os
import statistics
import time

import numpy as np
from absl import flags

from benchmarks import common
from benchmarks import hf_side
from electra_tf import cli

cli.cpu_kernels()  # the commands' oneDNN default (TF_ENABLE_ONEDNN_OPTS=0 in the environment turns it off)
common.define_finetune_flags(vocab_file=common.shared_data("vocab", "bert_uncased_vocab.txt"), seq_length=64,
                             learning_rate=5e-5)
flags.DEFINE_list("tasks", ["classification", "tagging"], "Task kinds to time.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("conll_dir", common.bench_data("conll2003"), "CoNLL-2003 folder for tagging (random data when absent).")
flags.DEFINE_integer("num_layers", 6, "Encoder layers (converted MiniLM: 6).")
flags.DEFINE_integer("hidden_dim", 384, "Hidden size.")
flags.DEFINE_integer("num_heads", 12, "Attention heads.")
flags.DEFINE_integer("intermediate_dim", 1536, "Feed-forward size.")
flags.DEFINE_integer("steps", 20, "Training steps per timed block.")
flags.DEFINE_integer("rounds", 3, "Timed blocks per side (alternating).")
flags.DEFINE_string("output", None, "Write the markdown report here (and a .jsonl beside it).")
FLAGS = flags.FLAGS

CONLL_LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def words():
    """Whole words of the vocabulary."""
    with open(FLAGS.vocab_file, encoding="utf-8") as f:
        return [w for w in f.read().split("\n")[1000:] if w.isalpha()]


def classification_data(num_examples, rng):
    """Random sentences of whole vocabulary words (about `seq_length` pieces), labels 0/1."""
    texts = [" ".join(rng.choice(words(), FLAGS.seq_length - 8)) for _ in range(num_examples)]
    return texts, rng.randint(0, 2, num_examples).tolist()


def tagging_data(num_sentences, rng):
    """CoNLL-2003 train sentences (words, IOB2 tags), or random ones."""
    path = os.path.join(FLAGS.conll_dir, "train.txt")
    if not os.path.exists(path):
        path = os.path.join(FLAGS.conll_dir, "eng.train")
    if os.path.exists(path):
        from electra_tf.tasks.tagging import conll

        sentences = conll.read_conll(path, scheme="IOB1")
        sentences = [sentences[i] for i in rng.permutation(len(sentences))[:num_sentences]]
        return [list(s.words) for s in sentences], [list(s.tags) for s in sentences], "CoNLL-2003 train"
    sentences = [list(rng.choice(words(), rng.randint(5, 30))) for _ in range(num_sentences)]
    return sentences, [[CONLL_LABELS[0]] * len(s) for s in sentences], "random"


def electra_tf_side(task, data, total_steps):
    """A `run(steps) -> examples/s` for electra_tf, built as `electra_tf.finetune` builds its run."""
    import keras

    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.classification.features import make_dataset
    from electra_tf.finetuning.recipe import create_optimizer
    from electra_tf.tasks.tagging.kind import tagging_dataset
    from electra_tf.tasks.tagging.model import MaskedSparseCrossEntropy
    from electra_tf.tasks.tagging.features import build_features, tokenize_words
    from electra_tf.tasks.classification.data import Example
    from electra_tf.tasks.classification.model import ElectraClassifier
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.tasks.tagging.model import ElectraTokenClassifier

    config = common.finetune_config()
    keras.utils.set_random_seed(config.seed)
    tokenizer = WordPieceTokenizer(config.vocab_file)
    length = common.seq_length(config)
    encoder = ElectraEncoder(vocab_size=tokenizer.vocab_size, num_layers=FLAGS.num_layers,
                             num_heads=FLAGS.num_heads, hidden_dim=FLAGS.hidden_dim, embedding_dim=FLAGS.hidden_dim,
                             intermediate_dim=FLAGS.intermediate_dim, max_sequence_length=max(512, length))
    if task == "classification":
        texts, labels = data
        examples = [Example(t, None, label) for t, label in zip(texts, labels)]
        ds = make_dataset(examples, tokenizer, length, config.batch_size, shuffle_seed=config.seed)
        model, loss = ElectraClassifier(encoder, 2), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        sentences, tags, _ = data
        index = {label: i for i, label in enumerate(CONLL_LABELS)}
        label_ids = [np.array([index[t] for t in s], np.int32) for s in tags]
        features = build_features(tokenizer, tokenize_words(tokenizer, sentences), label_ids, length)
        ds = tagging_dataset(features, config.batch_size, shuffle_seed=config.seed)
        model, loss = ElectraTokenClassifier(encoder, len(CONLL_LABELS)), MaskedSparseCrossEntropy()
    model.compile(optimizer=create_optimizer(config, FLAGS.num_layers, total_steps), loss=loss,
                  jit_compile=config.jit_compile)
    times, repeated = [], ds.repeat()

    class Clock(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)

    def run(steps):
        times.clear()
        model.fit(repeated, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[Clock()])
        return config.batch_size / statistics.median(times)

    return run


def hf_run(task, data, total_steps):
    """A `run(steps) -> examples/s` for transformers + torch: `benchmarks.hf_side`'s step, the same recipe."""
    import torch
    import transformers

    config = common.finetune_config()
    recipe, kind = common.hf_recipe(config), "classification" if task == "classification" else "tagging"
    torch.manual_seed(config.seed)
    torch.set_num_threads(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    bert = transformers.BertConfig(
        vocab_size=sum(1 for _ in open(config.vocab_file, encoding="utf-8")), hidden_size=FLAGS.hidden_dim,
        num_hidden_layers=FLAGS.num_layers, num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_dim,
        max_position_embeddings=max(512, recipe["seq_length"]), num_labels=2 if kind == "classification" else 9)
    tokenizer, model = hf_side.load(kind, bert, config.vocab_file)
    rows = [[t, None, label] for t, label in zip(*data)] if kind == "classification" else list(zip(data[0], data[1]))
    features, _ = hf_side.encode(kind, tokenizer, rows, recipe, CONLL_LABELS)
    adam, schedule = hf_side.optimizer(model, recipe, total_steps)
    rng, size = np.random.RandomState(config.seed), config.batch_size

    def batches():
        while True:
            order = rng.permutation(len(features))
            for i in range(0, len(order) - size + 1, size):
                yield hf_side.collate([features[j] for j in order[i:i + size]], kind, recipe["seq_length"])

    stream = batches()
    model.train()

    def run(steps):
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            hf_side.train_step(model, adam, schedule, next(stream), recipe["clip_norm"])
            times.append(time.perf_counter() - start)
        return size / statistics.median(times)

    return run


def main(argv):
    del argv
    import tensorflow as tf
    import torch
    import transformers

    rng = np.random.RandomState(FLAGS.seed)
    total_steps = FLAGS.steps * (FLAGS.rounds + 1)
    num_examples = FLAGS.batch_size * total_steps
    results = []
    for task in FLAGS.tasks:
        data = classification_data(num_examples, rng) if task == "classification" else tagging_data(num_examples, rng)
        makers = {"electra_tf": electra_tf_side, "hf": hf_run}
        runs = {side: makers[side](task, data, total_steps) for side in FLAGS.sides}
        rates = {side: [] for side in FLAGS.sides}
        for side, run in runs.items():  # warm-up block: tracing / compilation, allocator
            run(max(2, FLAGS.steps // 4))
        for _ in range(FLAGS.rounds):
            for side, run in runs.items():
                rates[side].append(run(FLAGS.steps))
                print(f"{task} {side}: {rates[side][-1]:.2f} examples/s", flush=True)
        row = {"task": task, "data": "random" if task == "classification" else data[2],
               **{f"{side}_examples_per_second": round(statistics.median(r), 3) for side, r in rates.items()},
               **{f"{side}_blocks": [round(v, 3) for v in r] for side, r in rates.items()}}
        if set(FLAGS.sides) == {"electra_tf", "hf"}:
            row["ratio_electra_tf_over_hf"] = round(row["electra_tf_examples_per_second"]
                                                    / row["hf_examples_per_second"], 3)
        results.append(row)
        print(json.dumps(row), flush=True)
    settings = {k: FLAGS[k].value for k in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim", "seq_length",
                                            "batch_size", "steps", "rounds", "learning_rate", "layerwise_lr_decay",
                                            "jit_compile")}
    settings["TF_ENABLE_ONEDNN_OPTS"] = os.environ["TF_ENABLE_ONEDNN_OPTS"]
    lines = ["# Fine-tuning speed: electra_tf vs Hugging Face transformers + torch", "",
             f"`{common.command_line('benchmarks.finetune_speed')}`", "",
             f"Machine: {common.machine()} at the end; TensorFlow {tf.__version__}, torch {torch.__version__}, "
             f"transformers {transformers.__version__}. Settings: {settings}.", "",
             "| task | data | electra_tf examples/s | HF examples/s | electra_tf / HF |", "|---|---|---:|---:|---:|"]
    for row in results:
        lines.append(f"| {row['task']} | {row['data']} | {row.get('electra_tf_examples_per_second', '-')} | "
                     f"{row.get('hf_examples_per_second', '-')} | {row.get('ratio_electra_tf_over_hf', '-')} |")
    common.write_report("\n".join(lines) + "\n", FLAGS.output)
    if FLAGS.output:
        for row in results:
            common.append_jsonl(os.path.splitext(FLAGS.output)[0] + ".jsonl", dict(row, settings=settings))


if __name__ == "__main__":
    cli.run_script(main)
