r"""Fine-tuning speed: electra_tf next to Hugging Face transformers + torch, same task and recipe, one run.

    # a quiet machine; the converted-MiniLM size (6 layers, H=384), seq 64, batch 32
    python -m benchmarks.finetune_speed --tasks classification,tagging --steps 30 --rounds 3 \
        --output benchmarks/results/finetune_speed.md
    # smoke run
    python -m benchmarks.finetune_speed --num_layers 1 --hidden_dim 32 --num_heads 2 \
        --intermediate_dim 64 --steps 3 --rounds 1 --batch_size 4

Both sides train the same architecture from a random initialisation (speed
does not depend on the weights): a BERT/ELECTRA encoder of `--num_layers`,
`--hidden_dim`, `--num_heads`, `--intermediate_dim`, vocabulary of
`--vocab_file`, and the task head (sentence classification: [CLS] -> dropout
-> dense, 2 labels; tagging: dropout -> dense over every piece, the CoNLL-2003
label set, loss on first pieces only). The recipe is the fine-tuning one on
both sides: AdamW, weight decay 0, epsilon 1e-6, global-norm clipping 1.0,
warmup then linear decay, layer-wise LR decay `--layerwise_lr_decay` (Hugging
Face: one torch parameter group per layer with the same multipliers), dropout
0.1, fp32.

- electra_tf: exactly what `python -m electra_tf.finetune` runs: the task's
  `tf.data` pipeline (classification: `make_dataset`, texts tokenised in the
  graph; tagging: `build_features` windows and `tagging_dataset`, batches cut
  to their longest row rounded up to 16), `create_optimizer` from
  `FinetuneConfig`, `Model.fit` (`--jit_compile` as the flag).
- Hugging Face: `BertForSequenceClassification` / `BertForTokenClassification`,
  `BertTokenizerFast` on the same texts / words (tagging: first-piece labels,
  batches padded to the longest row rounded up to 16), `torch.optim.AdamW`,
  `get_linear_schedule_with_warmup`, `clip_grad_norm_`; `torch.set_num_threads`
  = the cores TensorFlow uses.

Data: classification texts are random sentences of vocabulary words about
`--seq_length` pieces long; tagging uses CoNLL-2003 train sentences when
`--conll_dir` holds them (`shared/data/build/fetch_finetune_benchmarks.sh`),
else random sentences with random tags. The two sides alternate in blocks of
`--steps` training steps, `--rounds` times (after one warm-up block each,
compilation excluded). A block's rate is the batch size over its median step
time (batch fetch included: electra_tf's `fit` step takes its batch from the
`tf.data` pipeline, the Hugging Face step from a Python generator of tensors
tokenised beforehand); the report gives the median over the blocks and the ratio. Run it on an otherwise idle machine: on a loaded
one only the ratio means anything.
"""

import json
import os
import platform
import statistics
import sys
import time

import numpy as np
from absl import flags
from electra_tf import cli


HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_VOCAB = os.path.join(HERE, "..", "..", "shared", "data", "vocab", "bert_uncased_vocab.txt")
DEFAULT_CONLL = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003")
flags.DEFINE_list("tasks", ["classification", "tagging"], "Task kinds to time.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("vocab_file", DEFAULT_VOCAB, "WordPiece vocabulary (both sides).")
flags.DEFINE_string("conll_dir", DEFAULT_CONLL, "CoNLL-2003 folder for tagging (random data when absent).")
flags.DEFINE_integer("num_layers", 6, "Encoder layers (converted MiniLM: 6).")
flags.DEFINE_integer("hidden_dim", 384, "Hidden size.")
flags.DEFINE_integer("num_heads", 12, "Attention heads.")
flags.DEFINE_integer("intermediate_dim", 1536, "Feed-forward size.")
flags.DEFINE_integer("seq_length", 64, "Pieces per example (tagging: window length).")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_integer("steps", 20, "Training steps per timed block.")
flags.DEFINE_integer("rounds", 3, "Timed blocks per side (alternating).")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_float("layerwise_lr_decay", 0.8, "Layer-wise LR decay (both sides).")
flags.DEFINE_bool("jit_compile", False, "electra_tf: --jit_compile.")
flags.DEFINE_integer("seed", 0, "Seed.")
flags.DEFINE_string("output", None, "Write the markdown report here (and a .jsonl beside it).")
FLAGS = flags.FLAGS

CONLL_LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


# ---------------------------------------------------------------------------- data


def classification_data(num_examples, rng):
    """Random sentences of whole vocabulary words (about `seq_length` pieces), labels 0/1."""
    words = [w for w in open(FLAGS.vocab_file).read().split("\n")[1000:] if w.isalpha()]
    texts = [" ".join(rng.choice(words, FLAGS.seq_length - 8)) for _ in range(num_examples)]
    return texts, rng.randint(0, 2, num_examples).tolist()


def tagging_data(num_sentences, rng):
    """CoNLL-2003 train sentences (words, IOB2 tags), or random ones."""
    path = os.path.join(FLAGS.conll_dir, "train.txt")
    if not os.path.exists(path):
        path = os.path.join(FLAGS.conll_dir, "eng.train")
    if os.path.exists(path):
        from electra_tf.finetuning import conll

        sentences = conll.read_conll(path, scheme="IOB1")
        sentences = [sentences[i] for i in rng.permutation(len(sentences))[:num_sentences]]
        return [list(s.words) for s in sentences], [list(s.tags) for s in sentences], "CoNLL-2003 train"
    words = [w for w in open(FLAGS.vocab_file).read().split("\n")[1000:] if w.isalpha()]
    sentences = [list(rng.choice(words, rng.randint(5, 30))) for _ in range(num_sentences)]
    return sentences, [[CONLL_LABELS[0]] * len(s) for s in sentences], "random"


# ---------------------------------------------------------------------------- electra_tf


class _StepTimes:
    def __init__(self):
        import keras

        class Callback(keras.callbacks.Callback):
            def on_train_batch_begin(inner, batch, logs=None):
                inner.start = time.perf_counter()

            def on_train_batch_end(inner, batch, logs=None):
                self.times.append(time.perf_counter() - inner.start)

        self.times = []
        self.callback = Callback()


def electra_tf_side(task, data, total_steps):
    """A `run(steps) -> examples/s` for electra_tf, built as `electra_tf.finetune` builds its run."""
    import keras
    import tensorflow as tf

    from electra_tf.finetuning.tasks import Example
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.finetuning.config import FinetuneConfig
    from electra_tf.finetuning.tagging import MaskedSparseCrossEntropy, tagging_dataset
    from electra_tf.finetuning.tagging_features import build_features, tokenize_words
    from electra_tf.models.classifier import ElectraClassifier
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.token_classifier import ElectraTokenClassifier
    from electra_tf.finetuning.recipe import create_optimizer
    from electra_tf.finetuning.classification import make_dataset

    keras.utils.set_random_seed(FLAGS.seed)
    tokenizer = WordPieceTokenizer(FLAGS.vocab_file)
    config = FinetuneConfig(learning_rate=FLAGS.learning_rate, batch_size=FLAGS.batch_size,
                            seq_length=FLAGS.seq_length, layerwise_lr_decay=FLAGS.layerwise_lr_decay,
                            jit_compile=FLAGS.jit_compile)
    encoder = ElectraEncoder(vocab_size=tokenizer.vocab_size, num_layers=FLAGS.num_layers,
                             num_heads=FLAGS.num_heads, hidden_dim=FLAGS.hidden_dim, embedding_dim=FLAGS.hidden_dim,
                             intermediate_dim=FLAGS.intermediate_dim, max_sequence_length=max(512, FLAGS.seq_length))
    if task == "classification":
        texts, labels = data
        examples = [Example(t, None, label) for t, label in zip(texts, labels)]
        ds = make_dataset(examples, tokenizer, FLAGS.seq_length, FLAGS.batch_size, shuffle_seed=FLAGS.seed)
        model = ElectraClassifier(encoder, 2)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        sentences, tags, _ = data
        index = {label: i for i, label in enumerate(CONLL_LABELS)}
        label_ids = [np.array([index[t] for t in s], np.int32) for s in tags]
        features = build_features(tokenizer, tokenize_words(tokenizer, sentences), label_ids, FLAGS.seq_length)
        ds = tagging_dataset(features, FLAGS.batch_size, shuffle_seed=FLAGS.seed)
        model = ElectraTokenClassifier(encoder, len(CONLL_LABELS))
        loss = MaskedSparseCrossEntropy()
    model.compile(optimizer=create_optimizer(config, FLAGS.num_layers, total_steps), loss=loss,
                  jit_compile=FLAGS.jit_compile)
    iterator_ds = ds.repeat()
    timer = _StepTimes()

    def run(steps):
        timer.times.clear()
        model.fit(iterator_ds, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[timer.callback])
        return FLAGS.batch_size / statistics.median(timer.times)

    return run


# ---------------------------------------------------------------------------- Hugging Face


def hf_side(task, data, total_steps):
    """A `run(steps) -> examples/s` for transformers + torch with the same recipe."""
    import tensorflow as tf
    import torch
    import transformers

    torch.manual_seed(FLAGS.seed)
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else
                          os.cpu_count())
    tokenizer = transformers.BertTokenizerFast(FLAGS.vocab_file, do_lower_case=True)
    bert_config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=FLAGS.hidden_dim, num_hidden_layers=FLAGS.num_layers,
        num_attention_heads=FLAGS.num_heads, intermediate_size=FLAGS.intermediate_dim,
        max_position_embeddings=max(512, FLAGS.seq_length), hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, num_labels=2 if task == "classification" else len(CONLL_LABELS))
    rng = np.random.RandomState(FLAGS.seed)
    if task == "classification":
        model = transformers.BertForSequenceClassification(bert_config)
        texts, labels = data
        encoded = tokenizer(texts, max_length=FLAGS.seq_length, truncation=True, padding="max_length",
                            return_tensors="pt")
        labels = torch.tensor(labels)

        def batches():
            while True:
                order = rng.permutation(len(labels))
                for i in range(0, len(order) - FLAGS.batch_size + 1, FLAGS.batch_size):
                    rows = torch.from_numpy(order[i:i + FLAGS.batch_size])
                    yield {k: v[rows] for k, v in encoded.items()}, labels[rows]
    else:
        model = transformers.BertForTokenClassification(bert_config)
        sentences, tags, _ = data
        index = {label: i for i, label in enumerate(CONLL_LABELS)}
        encoded = tokenizer(sentences, is_split_into_words=True, max_length=FLAGS.seq_length, truncation=True)
        rows = []
        for i, sentence_tags in enumerate(tags):
            word_ids, previous, row = encoded.word_ids(i), None, []
            for w in word_ids:
                row.append(-100 if w is None or w == previous else index[sentence_tags[w]])
                previous = w
            rows.append((encoded["input_ids"][i], row))

        def batches():
            while True:
                order = rng.permutation(len(rows))
                for i in range(0, len(order) - FLAGS.batch_size + 1, FLAGS.batch_size):
                    chosen = [rows[j] for j in order[i:i + FLAGS.batch_size]]
                    length = max(len(ids) for ids, _ in chosen)
                    length = min(-(-length // 16) * 16, FLAGS.seq_length)
                    ids = torch.zeros(len(chosen), length, dtype=torch.long)
                    mask = torch.zeros_like(ids)
                    label = torch.full_like(ids, -100)
                    for r, (row_ids, row_labels) in enumerate(chosen):
                        ids[r, :len(row_ids)] = torch.tensor(row_ids)
                        mask[r, :len(row_ids)] = 1
                        label[r, :len(row_labels)] = torch.tensor(row_labels)
                    yield {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}, label

    # Layer-wise LR decay as parameter groups (embeddings depth 0, layer i depth i + 1, head top).
    groups = {}
    for name, param in model.named_parameters():
        if ".embeddings." in name:
            depth = 0
        elif ".encoder.layer." in name:
            depth = int(name.split(".encoder.layer.")[1].split(".")[0]) + 1
        else:
            depth = FLAGS.num_layers + 2
        groups.setdefault(depth, []).append(param)
    param_groups = [{"params": p, "lr": FLAGS.learning_rate * FLAGS.layerwise_lr_decay ** (FLAGS.num_layers + 2 - d)}
                    for d, p in sorted(groups.items())]
    optimizer = torch.optim.AdamW(param_groups, lr=FLAGS.learning_rate, weight_decay=0.0, eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * total_steps), total_steps)
    data_iter = batches()
    model.train()
    del tf

    def run(steps):
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            inputs, label = next(data_iter)
            loss = model(**inputs, labels=label).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
        return FLAGS.batch_size / statistics.median(times)

    return run


# ---------------------------------------------------------------------------- main


def main(argv):
    del argv
    cli.cpu_kernels()  # the commands' oneDNN default (TF_ENABLE_ONEDNN_OPTS=0 in the environment turns it off)
    import tensorflow as tf

    rng = np.random.RandomState(FLAGS.seed)
    total_steps = FLAGS.steps * (FLAGS.rounds + 1)
    num_examples = FLAGS.batch_size * total_steps
    results = []
    for task in FLAGS.tasks:
        data = classification_data(num_examples, rng) if task == "classification" else tagging_data(num_examples, rng)
        makers = {"electra_tf": electra_tf_side, "hf": hf_side}
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

    import torch
    import transformers

    settings = {k: FLAGS[k].value for k in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim", "seq_length",
                                            "batch_size", "steps", "rounds", "learning_rate", "layerwise_lr_decay",
                                            "jit_compile")}
    settings["TF_ENABLE_ONEDNN_OPTS"] = os.environ["TF_ENABLE_ONEDNN_OPTS"]
    lines = ["# Fine-tuning speed: electra_tf vs Hugging Face transformers + torch", "",
             f"`python -m benchmarks.finetune_speed {' '.join(sys.argv[1:])}`", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
             f"{os.getloadavg()[0]:.1f} at the end; TensorFlow {tf.__version__}, torch {torch.__version__}, "
             f"transformers {transformers.__version__}. Settings: {settings}.", "",
             "| task | data | electra_tf examples/s | HF examples/s | electra_tf / HF |", "|---|---|---:|---:|---:|"]
    for row in results:
        lines.append(f"| {row['task']} | {row['data']} | {row.get('electra_tf_examples_per_second', '-')} | "
                     f"{row.get('hf_examples_per_second', '-')} | {row.get('ratio_electra_tf_over_hf', '-')} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if FLAGS.output:
        with open(FLAGS.output, "w") as f:
            f.write(report)
        with open(os.path.splitext(FLAGS.output)[0] + ".jsonl", "a") as f:
            for row in results:
                f.write(json.dumps(dict(row, settings=settings)) + "\n")


if __name__ == "__main__":
    cli.run_script(main)
