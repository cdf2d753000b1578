"""Fine-tuning an ELECTRA discriminator on a classification task, as plain functions.

`run_finetuning(spec, data_dir, init, output_dir, ...)` is what
`python -m electra_tf.finetune` runs: `num_trials` fine-tuning runs from the
same `init`, each scored on the dev split(s), results written to `output_dir`
(see `electra_tf.training.finetune_files`).

Reference recipe (section 5): [CLS] -> dropout 0.1 -> dense, AdamW without
weight decay, epsilon 1e-6, clip 1.0, 10 % warmup then linear decay,
layer-wise LR decay. Trial i uses seed `seed + i`.
"""

import json
import os
import statistics
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data import tasks as tasks_lib
from electra_tf.data.tokenizer import WordPieceTokenizer, copy_vocab
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.training.finetune_files import (
    CLASSIFIER_FILE,
    FINETUNE_CONFIG_FILE,
    RESULTS_FILE,
    load_init,
)
from electra_tf.training.layerwise_lr import LayerwiseAdamW
from electra_tf.training.optimization import WarmupLinearDecay
from electra_tf.training.task_metrics import task_metrics


def make_dataset(examples, tokenizer, seq_length, batch_size, regression=False, shuffle_seed=None):
    """`tf.data` of `(inputs dict, label)` batches, tokenised in the graph.

    Args:
        examples: list of `tasks.Example`.
        tokenizer: `WordPieceTokenizer`.
        seq_length: int.
        batch_size: int.
        regression: bool. Float labels instead of int ids.
        shuffle_seed: int or None. Shuffle (each epoch) when given.
    """
    pair = examples[0].text_b is not None
    columns = {"text_a": [e.text_a for e in examples]}
    if pair:
        columns["text_b"] = [e.text_b for e in examples]
    labels = np.array([0 if e.label is None else e.label for e in examples], "float32" if regression else "int32")
    ds = tf.data.Dataset.from_tensor_slices((columns, labels))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(examples), seed=shuffle_seed, reshuffle_each_iteration=True)

    def pack(texts, label):
        return tokenizer.pack(texts["text_a"], texts.get("text_b"), seq_length=seq_length), label

    return ds.batch(batch_size).map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)


def predict(classifier, dataset, regression=False):
    """Predicted ids (or scores) and labels of a dataset."""
    logits, labels = [], []
    for inputs, label in dataset:
        logits.append(classifier(inputs, training=False).numpy())
        labels.append(label.numpy())
    logits, labels = np.concatenate(logits), np.concatenate(labels)
    return (logits[:, 0] if regression else logits.argmax(-1)), labels


def summarize(values):
    """mean / median / std / min / max of per-trial values."""
    return {
        "mean": float(np.mean(values)),
        "median": float(statistics.median(values)),
        "std": float(np.std(values)),
        "min": float(np.min(values)),
        "max": float(np.max(values)),
    }


# flag -> (low, high, (low included, high included)); None: unbounded (as `electra_tf.config.RANGES`).
RANGES = {
    "epochs": (1, None, (True, True)),
    "batch_size": (1, None, (True, True)),
    "num_trials": (1, None, (True, True)),
    "max_seq_length": (3, None, (True, True)),  # [CLS] x [SEP]
    "learning_rate": (0, None, (False, True)),
    "layerwise_lr_decay": (0, None, (False, True)),
    "warmup_proportion": (0, 1, (True, True)),
    "weight_decay": (0, None, (True, True)),
    "clip_norm": (0, None, (True, True)),
    "dropout": (0, 1, (True, False)),
    "train_limit": (1, None, (True, True)),
    "dev_limit": (1, None, (True, True)),
}


def check_arguments(init, output_dir, **values):
    """Refuses out-of-range flags and an `output_dir` that is `init` or holds another artefact, before any work."""
    from electra_tf.config import _check_range
    from electra_tf.training.artefacts import FINETUNING_OUTPUT, refuse_other_artefact

    for name, value in values.items():
        if value is not None:
            _check_range(name, value, *RANGES[name])
    if init and os.path.abspath(output_dir) == os.path.abspath(init):
        raise ValueError(f"`--output_dir={output_dir}` is `--init`: the fine-tuned model would be written into "
                         "the model it starts from. Choose another --output_dir.")
    refuse_other_artefact(output_dir, "output_dir", FINETUNING_OUTPUT)


def check_model(encoder, vocab_file, max_seq_length):
    """The encoder's tables hold `max_seq_length` positions and every id of `vocab_file`."""
    if max_seq_length > encoder.max_sequence_length:
        raise ValueError(f"`--max_seq_length={max_seq_length}` exceeds the encoder's position table "
                         f"(max_sequence_length={encoder.max_sequence_length}).")
    vocab_size = WordPieceTokenizer(vocab_file).vocab_size
    if vocab_size > encoder.vocab_size:
        raise ValueError(f"The vocabulary {vocab_file} has {vocab_size} entries, more than the encoder's token "
                         f"table ({encoder.vocab_size}): pass the --vocab_file the model was trained with.")


def run_finetuning(
    spec,
    data_dir,
    init,
    output_dir,
    vocab_file=None,
    epochs=3,
    batch_size=32,
    learning_rate=3e-4,
    layerwise_lr_decay=0.8,
    warmup_proportion=0.1,
    weight_decay=0.0,
    clip_norm=1.0,
    dropout=0.1,
    max_seq_length=128,
    num_trials=1,
    seed=0,
    both_orders=None,
    train_limit=None,
    dev_limit=None,
    verbose=2,
):
    """Fine-tunes `num_trials` times and writes results; returns the results dict.

    Args:
        spec: `tasks.TaskSpec`.
        data_dir: str. The task's folder.
        init: str. See `load_init`.
        output_dir: str. Written: `results.json`, `classifier.keras` (best
            trial), `vocab.txt`, `finetune_config.json`.
        Other arguments: as the flags of the same names.

    Returns:
        dict with `task`, `metric`, `trials` (per-trial dev metrics) and
        `summary` (mean/median/std/min/max per metric).
    """
    check_arguments(init, output_dir, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                    layerwise_lr_decay=layerwise_lr_decay, warmup_proportion=warmup_proportion,
                    weight_decay=weight_decay, clip_norm=clip_norm, dropout=dropout, max_seq_length=max_seq_length,
                    num_trials=num_trials, train_limit=train_limit, dev_limit=dev_limit)
    train = tasks_lib.read_examples(spec, data_dir, "train", limit=train_limit)
    dev_splits = [s for s in spec.splits if s.startswith("dev")]
    devs = {s: tasks_lib.read_examples(spec, data_dir, s, limit=dev_limit) for s in dev_splits
            if tf.io.gfile.exists(os.path.join(data_dir, spec.splits[s]))}
    if not devs:
        raise FileNotFoundError(f"No dev split of task {spec.name!r} in {data_dir}.")
    if both_orders is None:
        both_orders = spec.name in ("mrpc", "sts-b")
    if both_orders and train[0].text_b is not None:
        train = train + [tasks_lib.Example(e.text_b, e.text_a, e.label) for e in train]
    logging.info("Task %s: %d train examples, dev %s.", spec.name, len(train),
                 {k: len(v) for k, v in devs.items()})

    trials, best = [], None
    for trial in range(num_trials):
        trial_seed = seed + trial
        keras.utils.set_random_seed(trial_seed)
        encoder, found_vocab = load_init(init, vocab_file)
        check_model(encoder, found_vocab, max_seq_length)  # before any training or writing
        tokenizer = WordPieceTokenizer(found_vocab)
        classifier = ElectraClassifier(encoder, num_labels=spec.num_labels, dropout=dropout)
        train_ds = make_dataset(train, tokenizer, max_seq_length, batch_size, spec.is_regression, trial_seed)
        steps = epochs * int(train_ds.cardinality())
        schedule = WarmupLinearDecay(learning_rate, int(warmup_proportion * steps), steps)
        optimizer = LayerwiseAdamW(
            schedule,
            num_layers=encoder.num_layers,
            layerwise_decay=layerwise_lr_decay,
            weight_decay=weight_decay,
            epsilon=1e-6,
            global_clipnorm=clip_norm or None,
        )
        if spec.is_regression:
            loss = keras.losses.MeanSquaredError()
        else:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        classifier.compile(optimizer=optimizer, loss=loss)
        start = time.time()
        classifier.fit(train_ds, epochs=epochs, verbose=verbose)
        train_seconds = time.time() - start
        result = {"trial": trial, "seed": trial_seed, "train_seconds": round(train_seconds, 2)}
        for split, examples in devs.items():
            ds = make_dataset(examples, tokenizer, max_seq_length, 4 * batch_size, spec.is_regression)
            predictions, labels = predict(classifier, ds, spec.is_regression)
            metrics = task_metrics(labels, predictions, spec.is_regression, spec.num_labels)
            result[split] = metrics
        headline = result["dev"][spec.metric]
        logging.info("Trial %d (seed %d): dev %s = %.4f (%s) in %.1f s.", trial, trial_seed, spec.metric,
                     headline, result["dev"], train_seconds)
        trials.append(result)
        if best is None or headline > best[0]:
            best = (headline, trial)
            tf.io.gfile.makedirs(output_dir)
            classifier.save(os.path.join(output_dir, CLASSIFIER_FILE))
            copy_vocab(found_vocab, os.path.join(output_dir, "vocab.txt"))

    summary = {}
    for split in devs:
        for name in trials[0][split]:
            summary[f"{split}_{name}"] = summarize([t[split][name] for t in trials])
    dev_labels = np.array([e.label for e in devs["dev"]])
    majority = None if spec.is_regression else float(np.mean(dev_labels == np.bincount(dev_labels.astype(int)).argmax()))
    results = {
        "task": spec.name,
        "init": init,
        "metric": spec.metric,
        "majority_class_accuracy": majority,
        "best_trial": best[1],
        "trials": trials,
        "summary": summary,
        "hparams": dict(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                        layerwise_lr_decay=layerwise_lr_decay, warmup_proportion=warmup_proportion,
                        weight_decay=weight_decay, clip_norm=clip_norm, dropout=dropout,
                        max_seq_length=max_seq_length, num_trials=num_trials, seed=seed,
                        both_orders=both_orders, train_limit=train_limit, dev_limit=dev_limit),
    }
    with tf.io.gfile.GFile(os.path.join(output_dir, RESULTS_FILE), "w") as f:
        json.dump(results, f, indent=2)
    with tf.io.gfile.GFile(os.path.join(output_dir, FINETUNE_CONFIG_FILE), "w") as f:
        json.dump({
            "task": spec.name,
            "label_names": spec.names,
            "regression": spec.is_regression,
            "pair": train[0].text_b is not None,
            "max_seq_length": max_seq_length,
        }, f, indent=2)
    key = f"dev_{spec.metric}"
    logging.info("dev %s over %d trial(s): %s", spec.metric, num_trials,
                 {k: round(v, 4) for k, v in summary[key].items()})
    return results
