"""Fine-tuning an ELECTRA discriminator on extractive question answering (SQuAD 1.1 / 2.0 format).

`run_qa(config)` is what `python -m electra_tf.finetune --task squad --task_kind
span_qa --data_dir DIR` runs (`--task_kind auto` picks it for task names starting
with "squad"): `train.json` and `dev.json` in `DIR`, any SQuAD-format files
(`squad.read_squad`). Each of `num_trials` runs from `--init` trains
`ElectraQuestionAnswerer` (`--qa_head official|simple`) on the windows of
`qa_features` with the reference loss, predicts the dev windows (the beam),
gathers answers across windows (`qa_metrics.postprocess`) and scores them with
the official SQuAD EM / F1. SQuAD 2.0 (any unanswerable training question, or
`--swap_contexts`) adds the answerability classifier; the null threshold is
`--null_threshold` or, by default, tuned on dev for the best F1 (reported).

The recipe is the classification one (reference section 5: layer-wise LR
decay, AdamW epsilon 1e-6, clip 1.0, 10 % warmup then linear decay); the
reference SQuAD recipe is 2 epochs at `--max_seq_length 512` (384 is BERT's
and this project's CPU recipe), `--doc_stride 128`, `--max_query_length 64`.

Written to `output_dir`: `results.json` (per-trial EM/F1, feature statistics,
training and prediction examples/s), `predictions.json` (id -> answer text,
the best trial's, the official format), `null_odds.json` (2.0),
`question_answerer.keras`, `vocab.txt` and `finetune_config.json` (read by
`python -m electra_tf.export --kind serving`).
"""

import json
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data.tokenizer import WordPieceTokenizer, copy_vocab
from electra_tf.finetuning import qa_metrics, squad
from electra_tf.finetuning.qa_features import build_qa_features
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.training import distribute
from electra_tf.run_files import (FINETUNE_CONFIG_FILE, NULL_ODDS_FILE, PREDICTIONS_FILE, QUESTION_ANSWERER_FILE,
                                  RESULTS_FILE, load_init)
from electra_tf.training.finetuning import (
    check_model,
    create_optimizer,
    create_strategy,
    jit_compile,
    rebuild_encoder,
    summarize,
)

INPUTS = ("token_ids", "segment_ids", "padding_mask")
LENGTH_MULTIPLE = 16
SPLIT_FILES = {"train": "train.json", "dev": "dev.json"}
QA_SETTINGS = ("doc_stride", "max_query_length", "max_answer_length", "n_best_size", "start_n_top", "end_n_top",
               "qa_head", "null_threshold", "swap_contexts")


def is_span_qa(config):
    """Whether `config` asks for extractive QA (`task_kind`, or a task name starting with "squad")."""
    if config.task_kind != "auto":
        return config.task_kind == "span_qa"
    return (config.task or "").lower().startswith("squad")


def _trim(inputs, labels):
    length = tf.reduce_max(tf.reduce_sum(inputs["padding_mask"], axis=1))
    length = tf.minimum(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, tf.shape(inputs["token_ids"])[1])
    return {k: (v[:, :length] if k in INPUTS else v) for k, v in inputs.items()}, labels


def qa_dataset(features, batch_size, answerable, shuffle_seed=None):
    """`tf.data` of `(inputs + start_positions, labels)` batches for `ElectraQuestionAnswerer.fit`.

    Batches are cut to their longest row rounded up to `LENGTH_MULTIPLE`
    (padding is masked: no result changes).
    """
    a = features.arrays
    inputs = {name: a[name] for name in INPUTS}
    inputs["start_positions"] = a["start_positions"]
    labels = {"start_logits": a["start_positions"], "end_logits": a["end_positions"]}
    if answerable:
        labels["answerable_logit"] = a["is_impossible"].astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(a["token_ids"]), seed=shuffle_seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size).map(_trim, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)


def predict_windows(model, features, batch_size=32):
    """The model's beam outputs for every window of `features`, as numpy arrays (one row per window)."""
    predict = tf.function(lambda inputs: model(inputs, training=False), reduce_retracing=True)
    a = features.arrays
    chunks = []
    for start in range(0, len(a["token_ids"]), batch_size):
        rows = slice(start, start + batch_size)
        length = int(a["padding_mask"][rows].sum(1).max())
        length = min(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, a["token_ids"].shape[1])
        out = predict({k: tf.constant(a[k][rows, :length]) for k in INPUTS})
        chunks.append({k: v.numpy() for k, v in out.items()})
    if not chunks:
        return {}
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def answer(model, features, config):
    """Answers of every example of `features`: `(span_predictions, null_odds, answers, seconds)`."""
    start = time.time()
    outputs = predict_windows(model, features, config.batch_size)
    answers, _ = qa_metrics.postprocess(features, outputs, features.examples, config.n_best_size,
                                        config.max_answer_length)
    seconds = time.time() - start
    spans = {e.qid: a.text for e, a in zip(features.examples, answers)}
    null_odds = None
    if model.answerable:
        null_odds = {e.qid: (a.null_score - a.score if np.isfinite(a.score) else 1e9)
                     for e, a in zip(features.examples, answers)}
    return spans, null_odds, answers, seconds


def evaluate(model, features, config, null_threshold=None):
    """Dev metrics: official EM / F1 (and HasAns / NoAns, the tuned threshold for 2.0), and the predictions."""
    golds = squad.gold_answers(features.examples)
    spans, null_odds, _, seconds = answer(model, features, config)
    metrics = {}
    predictions = spans
    if null_odds is not None:
        best, best_f1 = qa_metrics.best_threshold(golds, spans, null_odds)
        threshold = best if null_threshold is None else null_threshold
        predictions = qa_metrics.apply_threshold(spans, null_odds, threshold)
        metrics.update(null_threshold=threshold, best_f1_threshold=best, best_f1=best_f1)
    metrics.update(qa_metrics.squad_scores(golds, predictions))
    metrics["predict_examples_per_second"] = len(features.examples) / max(seconds, 1e-9)
    return metrics, predictions, null_odds


def read_split(config, split, limit):
    path = os.path.join(config.data_dir, SPLIT_FILES[split])
    examples = squad.read_squad(path)
    if config.swap_contexts:
        examples = examples + squad.swap_contexts(examples, seed=config.seed)
        examples.sort(key=lambda e: e.qid.replace("_swapped", "~"))  # each question next to its swapped copy
    return examples[:limit * (2 if config.swap_contexts else 1)] if limit else examples


def run_qa(config, strategy=None):
    """Fine-tunes `config.num_trials` times on a SQuAD-format task and writes results; returns them.

    Args:
        config: `FinetuneConfig` (`task`, `data_dir`, `init`, `output_dir` set).
        strategy: `tf.distribute.Strategy` or None (one from `config`).

    Returns:
        dict with `task`, `kind`, `metric` ("f1"), `trials` (per-trial dev
        metrics, training time and examples/s), `summary`, `features` (answer
        mapping statistics of train and dev) and `hparams`.
    """
    for name in ("task", "data_dir", "init", "output_dir"):
        if not getattr(config, name):
            raise ValueError(f"`{name}` is required. Received: `{name}={getattr(config, name)!r}`")
    train = read_split(config, "train", config.train_limit)
    dev = read_split(config, "dev", config.dev_limit)
    answerable = config.swap_contexts or any(e.is_impossible for e in train)
    strategy = strategy or create_strategy(config)
    output_dir = distribute.worker_dir(config.output_dir, strategy)
    logging.info("Task %s: %d train and %d dev questions (SQuAD %s).", config.task, len(train), len(dev),
                 "2.0" if answerable else "1.1")
    settings = dict(seq_length=config.max_seq_length, doc_stride=config.doc_stride,
                    max_query_length=config.max_query_length)
    trials, best = [], None
    for trial in range(config.num_trials):
        trial_seed = config.seed + trial
        keras.utils.set_random_seed(trial_seed)
        encoder, found_vocab = load_init(config.init, config.vocab_file)
        if trial == 0:
            check_model(encoder, found_vocab, config.max_seq_length)
            tokenizer = WordPieceTokenizer(found_vocab)
            train_features = build_qa_features(tokenizer, train, training=True, **settings)
            dev_features = build_qa_features(tokenizer, dev, **settings)
            logging.info("Features: train %s, dev %s", train_features.stats, dev_features.stats)
            tf.io.gfile.makedirs(output_dir)
        train_ds = qa_dataset(train_features, config.batch_size, answerable, trial_seed)
        steps = config.epochs * int(train_ds.cardinality())
        with strategy.scope():
            model = ElectraQuestionAnswerer(rebuild_encoder(encoder), head=config.qa_head, answerable=answerable,
                                            start_n_top=config.start_n_top, end_n_top=config.end_n_top)
            loss, weights = model.losses_and_weights()
            model.compile(optimizer=create_optimizer(config, encoder.num_layers, steps), loss=loss,
                          loss_weights=weights, jit_compile=jit_compile(config, strategy))
        start = time.time()
        history = model.fit(train_ds, epochs=config.epochs, verbose=config.verbose, shuffle=False)
        train_seconds = time.time() - start
        metrics, predictions, null_odds = evaluate(model, dev_features, config, config.null_threshold)
        num_windows = len(train_features.arrays["token_ids"])
        result = {"trial": trial, "seed": trial_seed, "train_seconds": round(train_seconds, 2),
                  "train_examples_per_second": round(config.epochs * num_windows / train_seconds, 2),
                  "train_loss": [float(v) for v in history.history["loss"]], "dev": metrics}
        logging.info("Trial %d (seed %d): dev EM %.2f F1 %.2f in %.1f s.", trial, trial_seed, metrics["exact"],
                     metrics["f1"], train_seconds)
        trials.append(result)
        if best is None or metrics["f1"] > best[0]:
            best = (metrics["f1"], trial, metrics.get("null_threshold"))
            model.save(os.path.join(output_dir, QUESTION_ANSWERER_FILE))
            copy_vocab(found_vocab, os.path.join(output_dir, "vocab.txt"))
            with tf.io.gfile.GFile(os.path.join(output_dir, PREDICTIONS_FILE), "w") as f:
                json.dump(predictions, f, indent=1)
            if null_odds is not None:
                with tf.io.gfile.GFile(os.path.join(output_dir, NULL_ODDS_FILE), "w") as f:
                    json.dump(null_odds, f, indent=1)

    summary = {f"dev_{name}": summarize([t["dev"][name] for t in trials])
               for name in trials[0]["dev"] if not name.endswith("total")}
    hparams = dict(config.hparams(), **{name: getattr(config, name) for name in QA_SETTINGS})
    results = {
        "task": config.task,
        "kind": "span_qa",
        "init": config.init,
        "metric": "f1",
        "squad_version": "2.0" if answerable else "1.1",
        "num_train_questions": len(train),
        "num_train_windows": int(len(train_features.arrays["token_ids"])),
        "num_dev_questions": len(dev),
        "features": {"train": train_features.stats, "dev": dev_features.stats},
        "best_trial": best[1],
        "trials": trials,
        "summary": summary,
        "hparams": hparams,
    }
    with tf.io.gfile.GFile(os.path.join(output_dir, RESULTS_FILE), "w") as f:
        json.dump(results, f, indent=2)
    with tf.io.gfile.GFile(os.path.join(output_dir, FINETUNE_CONFIG_FILE), "w") as f:
        json.dump({
            "task": config.task,
            "kind": "span_qa",
            "max_seq_length": config.max_seq_length,
            "doc_stride": config.doc_stride,
            "max_query_length": config.max_query_length,
            "max_answer_length": config.max_answer_length,
            "answerable": answerable,
            "null_threshold": best[2],
        }, f, indent=2)
    if output_dir != config.output_dir:
        tf.io.gfile.rmtree(output_dir)
    logging.info("dev F1 over %d trial(s): %s", config.num_trials,
                 {k: round(v, 4) for k, v in summary["dev_f1"].items()})
    return results
