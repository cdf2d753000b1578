"""Fine-tuning an ELECTRA discriminator on a classification task, as plain functions.

`run_finetuning(spec, data_dir, init, output_dir, ...)` is what
`python -m electra_tf.finetune` runs: `num_trials` fine-tuning runs from the
same `init`, each scored on the dev split(s), results written to `output_dir`
(see `electra_tf.run_files`).

Reference recipe (section 5): [CLS] -> dropout 0.1 -> dense, AdamW without
weight decay, epsilon 1e-6, clip 1.0, 10 % warmup then linear decay,
layer-wise LR decay. Trial i uses seed `seed + i`.
"""

import os
import statistics
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data import tasks as tasks_lib
from electra_tf.data.tokenizer import WordPieceTokenizer, copy_vocab
from electra_tf.finetuning.config import FinetuneConfig
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.training import distribute
from electra_tf.run_files import (
    CLASSIFIER_FILE,
    FINETUNING_OUTPUT,
    VOCAB_FILE,
    load_init,
    refuse_other_artefact,
    write_results,
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


def check_arguments(init, output_dir):
    """Refuses an `output_dir` that is `init` or holds another artefact, before any work.

    (Flag ranges are checked by `FinetuneConfig`.)
    """
    if init and os.path.abspath(output_dir) == os.path.abspath(init):
        raise ValueError(f"`--output_dir={output_dir}` is `--init`: the fine-tuned model would be written into "
                         "the model it starts from. Choose another --output_dir.")
    refuse_other_artefact(output_dir, "output_dir", FINETUNING_OUTPUT)


def check_model(encoder, vocab_file, max_seq_length):
    """The encoder's tables hold `max_seq_length` positions and every id of `vocab_file`."""
    if max_seq_length > encoder.max_sequence_length:
        raise ValueError(f"`--seq_length={max_seq_length}` exceeds the encoder's position table "
                         f"(max_sequence_length={encoder.max_sequence_length}).")
    vocab_size = WordPieceTokenizer(vocab_file).vocab_size
    if vocab_size > encoder.vocab_size:
        raise ValueError(f"The vocabulary {vocab_file} has {vocab_size} entries, more than the encoder's token "
                         f"table ({encoder.vocab_size}): pass the --vocab_file the model was trained with.")


def create_strategy(config):
    """The config's dtype policy set globally, and its `tf.distribute` strategy.

    A second run in one process may ask for the logical CPUs the first one
    made (they cannot be made twice): those are reused.
    """
    keras.mixed_precision.set_global_policy(config.precision)  # also resets an earlier run's policy
    if config.strategy is None:
        return tf.distribute.get_strategy()
    try:
        return distribute.create_strategy(config.strategy, config.tpu, config.num_cpu_devices)
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != config.num_cpu_devices:
            raise
        return distribute.create_strategy(config.strategy, config.tpu, 0)


def jit_compile(config, strategy):
    """`config.jit_compile`, except where XLA cannot run (mirrored over logical CPUs)."""
    if config.jit_compile and distribute.uses_logical_cpus(strategy):
        logging.warning("XLA is unavailable for MirroredStrategy over logical CPUs; training without it.")
        return False
    return config.jit_compile


def rebuild_encoder(encoder):
    """A copy of `encoder` made in the current strategy scope and global dtype policy."""
    config = dict(encoder.get_config(), dtype=keras.mixed_precision.global_policy().name)
    copy = ElectraEncoder.from_config(config)
    copy.build()
    copy.set_weights(encoder.get_weights())
    return copy


def create_optimizer(config, num_layers, total_steps):
    """The reference's fine-tuning optimiser: layer-wise AdamW, epsilon 1e-6, warmup then linear decay."""
    schedule = WarmupLinearDecay(config.learning_rate, int(config.warmup_proportion * total_steps), total_steps)
    return LayerwiseAdamW(
        schedule,
        num_layers=num_layers,
        layerwise_decay=config.layerwise_lr_decay,
        weight_decay=config.weight_decay,
        epsilon=1e-6,
        global_clipnorm=config.clip_norm or None,
    )


def run_finetuning(spec, data_dir, init, output_dir, vocab_file=None, strategy=None, **settings):
    """Fine-tunes `num_trials` times and writes results; returns the results dict.

    Args:
        spec: `tasks.TaskSpec`.
        data_dir: str. The task's folder.
        init: str. See `load_init`.
        output_dir: str. Written: `results.json`, `classifier.keras` (best
            trial), `vocab.txt`, `finetune_config.json`.
        vocab_file: str or None. Default: the one beside `init`.
        strategy: `tf.distribute.Strategy` or None (one from `settings`).
        **settings: fields of `FinetuneConfig` (`epochs=3`, `batch_size=32`, ...).

    Returns:
        dict with `task`, `metric`, `trials` (per-trial dev metrics) and
        `summary` (mean/median/std/min/max per metric).
    """
    config = FinetuneConfig(task=spec.name, data_dir=data_dir, init=init, output_dir=output_dir,
                            vocab_file=vocab_file).replace(**settings)
    check_arguments(init, output_dir)
    strategy = strategy or create_strategy(config)
    output_dir = distribute.worker_dir(output_dir, strategy)  # multi_worker: the chief's is output_dir
    train = tasks_lib.read_examples(spec, data_dir, "train", limit=config.train_limit)
    dev_splits = [s for s in spec.splits if s.startswith("dev")]
    devs = {s: tasks_lib.read_examples(spec, data_dir, s, limit=config.dev_limit) for s in dev_splits
            if tf.io.gfile.exists(os.path.join(data_dir, spec.splits[s]))}
    if not devs:
        raise FileNotFoundError(f"No dev split of task {spec.name!r} in {data_dir}.")
    both_orders = config.both_orders
    if both_orders is None:
        both_orders = spec.name in ("mrpc", "sts-b")
    if both_orders and train[0].text_b is not None:
        train = train + [tasks_lib.Example(e.text_b, e.text_a, e.label) for e in train]
    logging.info("Task %s: %d train examples, dev %s.", spec.name, len(train),
                 {k: len(v) for k, v in devs.items()})

    trials, best = [], None
    for trial in range(config.num_trials):
        trial_seed = config.seed + trial
        keras.utils.set_random_seed(trial_seed)
        encoder, found_vocab = load_init(init, vocab_file)
        check_model(encoder, found_vocab, config.max_seq_length)  # before any training or writing
        tokenizer = WordPieceTokenizer(found_vocab)
        train_ds = make_dataset(train, tokenizer, config.max_seq_length, config.batch_size, spec.is_regression,
                                trial_seed)
        steps = config.epochs * int(train_ds.cardinality())
        with strategy.scope():
            classifier = ElectraClassifier(rebuild_encoder(encoder), spec.num_labels, dropout=config.dropout)
            if spec.is_regression:
                loss = keras.losses.MeanSquaredError()
            else:
                loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            classifier.compile(optimizer=create_optimizer(config, encoder.num_layers, steps), loss=loss,
                               jit_compile=jit_compile(config, strategy))
        start = time.time()
        history = classifier.fit(train_ds, epochs=config.epochs, verbose=config.verbose,
                                 shuffle=False)  # train_ds shuffles itself
        train_seconds = time.time() - start
        result = {"trial": trial, "seed": trial_seed, "train_seconds": round(train_seconds, 2),
                  "train_loss": [float(v) for v in history.history["loss"]]}
        for split, examples in devs.items():
            ds = make_dataset(examples, tokenizer, config.max_seq_length, 4 * config.batch_size, spec.is_regression)
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
            copy_vocab(found_vocab, os.path.join(output_dir, VOCAB_FILE))

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
        "hparams": dict(config.hparams(), both_orders=both_orders),
    }
    write_results(output_dir, results, {
        "task": spec.name,
        "kind": "classification",
        "label_names": spec.names,
        "regression": spec.is_regression,
        "pair": train[0].text_b is not None,
        "max_seq_length": config.max_seq_length,
    })
    if output_dir != config.output_dir:
        tf.io.gfile.rmtree(output_dir)
    key = f"dev_{spec.metric}"
    logging.info("dev %s over %d trial(s): %s", spec.metric, config.num_trials,
                 {k: round(v, 4) for k, v in summary[key].items()})
    return results
