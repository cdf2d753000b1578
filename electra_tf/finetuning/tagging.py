"""Fine-tuning an ELECTRA discriminator on a token classification task (NER, chunking, POS).

`run_tagging(config)` is what `python -m electra_tf.finetune --task conll2003`
(or `--task_kind tagging` for any CoNLL-column files) runs: `num_trials` runs
from the same `--init`, each scored on the dev split, results and the best
trial's model written to `output_dir` (see `electra_tf.run_files`).

The recipe is the classification one (reference section 5: layer-wise LR
decay, AdamW epsilon 1e-6, clip 1.0, 10 % warmup then linear decay) with the
official tagging head, `ElectraTokenClassifier`: a word's label on its first
WordPiece (`tagging_features`), cross-entropy averaged over those pieces only
(`MaskedSparseCrossEntropy`), and dev predictions read back at the same pieces
(`word_predictions`) and scored per word: entity precision / recall / F1
(CoNLL semantics, `tagging_metrics.entity_scores`) for span tags, token
accuracy for all (the headline of POS).
"""

import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data.tokenizer import WordPieceTokenizer, copy_vocab
from electra_tf.finetuning import conll
from electra_tf.finetuning.config import FinetuneConfig
from electra_tf.finetuning.tagging_features import (
    IGNORE_INDEX,
    build_features,
    tokenize_words,
    word_predictions,
)
from electra_tf.finetuning.tagging_metrics import entity_scores, token_accuracy
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf.training import distribute
from electra_tf.run_files import (
    TOKEN_CLASSIFIER_FILE,
    VOCAB_FILE,
    load_init,
    write_results,
)
from electra_tf.training.finetuning import (
    create_optimizer,
    create_strategy,
    jit_compile,
    rebuild_encoder,
    summarize,
)

INPUTS = ("token_ids", "segment_ids", "padding_mask")
LENGTH_MULTIPLE = 16  # batches are cut to their longest row, rounded up to this (few XLA shapes)
# Generic CoNLL-column files: the first of these names that exists in `--data_dir`.
GENERIC_SPLITS = {
    "train": ("train.txt", "eng.train", "train.conll"),
    "dev": ("dev.txt", "valid.txt", "eng.testa", "dev.conll"),
    "test": ("test.txt", "eng.testb", "test.conll"),
}


def is_tagging(config):
    """Whether `config` asks for token classification (`task_kind`, or a CoNLL task name)."""
    if config.task_kind != "auto":
        return config.task_kind == "tagging"
    return (config.task or "").lower() in conll.TASKS


def tagging_task(config):
    """The `conll.ConllTask` of `config`: a named CoNLL-2003 task, or generic CoNLL-column files.

    Example:
    >>> from electra_tf.finetuning.config import FinetuneConfig
    >>> from electra_tf.finetuning.tagging import tagging_task
    >>> task = tagging_task(FinetuneConfig(task="ner", task_kind="tagging", label_column="3"))
    >>> (task.token_column, task.label_column, task.scheme, task.metric)
    (0, 3, 'IOB2', 'entity_f1')
    >>> tagging_task(FinetuneConfig(task="pos", task_kind="tagging", tag_scheme="none")).metric
    'token_accuracy'
    """
    name = (config.task or "").lower()
    if name in conll.TASKS:
        return conll.TASKS[name]
    label_column = -1 if config.label_column is None else _int_column(config.label_column)
    scheme = None if config.tag_scheme == "none" else config.tag_scheme
    return conll.ConllTask(
        config.task or "tagging", GENERIC_SPLITS, token_column=config.token_column,
        label_column=label_column, scheme=scheme, metric="entity_f1" if scheme else "token_accuracy",
    )


def _int_column(value):
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"CoNLL files have no header: `--label_column` must be a column index (-1: the last). "
            f"Received: `label_column={value!r}`"
        ) from None


@keras.saving.register_keras_serializable(package="electra_tf")
class MaskedSparseCrossEntropy(keras.losses.Loss):
    """Cross-entropy from logits, averaged over the tokens whose label is not `IGNORE_INDEX`.

    The mean is over the labelled tokens of the *global* batch: under a
    `tf.distribute` strategy each replica divides its sum by the token count
    summed over replicas, and the replicas' gradients are summed, so N
    replicas train exactly like one device on the same global batch. (Keras
    divides a loss by N only when it reduces a per-example loss itself; this
    one returns a scalar, already the replica's share.) A batch with no
    labelled token has loss 0.

    Example:
    >>> import numpy as np
    >>> from electra_tf.finetuning.tagging import MaskedSparseCrossEntropy
    >>> loss = MaskedSparseCrossEntropy()
    >>> labels = np.array([[-100, 1, 0, -100]])
    >>> logits = np.log(np.array([[[.5, .5], [.2, .8], [.6, .4], [.9, .1]]]))
    >>> round(float(loss(labels, logits)), 5)  # -(log .8 + log .6) / 2: the two labelled tokens
    0.36698
    """

    def __init__(self, name="masked_sparse_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels = keras.ops.cast(y_true, "int32")
        mask = keras.ops.not_equal(labels, IGNORE_INDEX)
        per_token = keras.losses.sparse_categorical_crossentropy(
            keras.ops.where(mask, labels, 0), keras.ops.cast(y_pred, "float32"), from_logits=True)
        mask = keras.ops.cast(mask, "float32")
        total, count = keras.ops.sum(per_token * mask), keras.ops.sum(mask)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
        return total / keras.ops.maximum(count, 1.0)


def tagging_dataset(features, batch_size, shuffle_seed=None):
    """`tf.data` of `(inputs dict, label_ids)` batches of `build_features` rows.

    Each batch is cut to its longest row (rounded up to `LENGTH_MULTIPLE`):
    padding is masked, so this changes no result and saves most of the
    compute on CoNLL's short sentences.

    Args:
        features: dict from `build_features`.
        batch_size: int. Global batch.
        shuffle_seed: int or None. Shuffle (each epoch) when given.
    """
    inputs = {name: features[name] for name in INPUTS}
    ds = tf.data.Dataset.from_tensor_slices((inputs, features["label_ids"]))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(features["label_ids"]), seed=shuffle_seed, reshuffle_each_iteration=True)

    def trim(inputs, labels):
        length = tf.reduce_max(tf.reduce_sum(inputs["padding_mask"], axis=1))
        length = tf.minimum(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, tf.shape(labels)[1])
        return {k: v[:, :length] for k, v in inputs.items()}, labels[:, :length]

    return ds.batch(batch_size).map(trim, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)


def predict_piece_labels(model, features, batch_size=128):
    """Arg-max label id at every piece of every `build_features` row, `(num_rows, max_seq_length)`."""
    predict = tf.function(lambda inputs: tf.argmax(model(inputs, training=False), axis=-1, output_type=tf.int32),
                          reduce_retracing=True)
    num_rows, seq_length = features["token_ids"].shape
    predictions = np.zeros((num_rows, seq_length), np.int32)
    for start in range(0, num_rows, batch_size):
        rows = slice(start, start + batch_size)
        length = int(features["padding_mask"][rows].sum(1).max())
        length = min(-(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE, seq_length)
        predictions[rows, :length] = predict({k: features[k][rows, :length] for k in INPUTS}).numpy()
    return predictions


def evaluate(model, features, sentences, labels, span_tags, batch_size=128):
    """Dev metrics of `model`: token accuracy, and entity precision / recall / F1 for span tags.

    Args:
        model: `ElectraTokenClassifier`.
        features: dict from `build_features` of `sentences`.
        sentences: list of `conll.Sentence` (true tags in IOB2, or as written).
        labels: list of str. Label names in id order.
        span_tags: bool. Whether the tags are IOB2 spans.

    Returns:
        `(metrics, per_type)`: dict of floats, and entity scores per type (None without spans).
    """
    pieces = predict_piece_labels(model, features, batch_size)
    predicted_ids = word_predictions(pieces, features, [len(s.words) for s in sentences])
    predicted = [[labels[i] for i in ids] for ids in predicted_ids]
    true = [list(s.tags) for s in sentences]
    metrics = {"token_accuracy": token_accuracy(true, predicted)}
    per_type = None
    if span_tags:
        scores = entity_scores(true, predicted)
        metrics.update(entity_f1=scores["f1"], entity_precision=scores["precision"],
                       entity_recall=scores["recall"])
        per_type = scores["per_type"]
    return metrics, per_type


def long_sentences(sentences, word_pieces, max_seq_length):
    """What happens to sentences longer than a window, naming the first one's file and line; None if none is.

    Such sentences are not an error: they are split into overlapping windows
    (`tagging_features.plan_windows`), every word trained on and predicted once.

    Example:
    >>> import numpy as np
    >>> from electra_tf.finetuning import conll
    >>> from electra_tf.finetuning.tagging import long_sentences
    >>> from electra_tf.finetuning.tagging_features import WordPieces
    >>> pieces = WordPieces(np.arange(9, dtype=np.int32), np.array([0, 3, 6, 9]), np.array([], np.int64))
    >>> long_sentences([conll.Sentence(("a", "b", "c"), ("O",) * 3, "train.txt", (4, 5, 6))], [pieces], 8)
    '1 sentence(s) longer than max_seq_length - 2 = 6 pieces are split into overlapping windows (no word is dropped); the first at train.txt:4 (9 pieces).'
    """
    limit = max_seq_length - 2
    long = [(s, p) for s, p in zip(sentences, word_pieces) if len(p.ids) > limit]
    if not long:
        return None
    sentence, pieces = long[0]
    where = f"{sentence.path}:{sentence.lines[0]}" if sentence.lines else sentence.path or "?"
    return (f"{len(long)} sentence(s) longer than max_seq_length - 2 = {limit} pieces are split into overlapping "
            f"windows (no word is dropped); the first at {where} ({len(pieces.ids)} pieces).")


def run_tagging(config, strategy=None):
    """Fine-tunes `config.num_trials` times on a tagging task and writes results; returns them.

    Args:
        config: `FinetuneConfig` (`task`, `data_dir`, `init`, `output_dir` set).
        strategy: `tf.distribute.Strategy` or None (one from `config`).

    Returns:
        dict with `task`, `metric`, `labels`, `trials` (per-trial dev
        metrics, per-type entity scores, training time and examples/s) and
        `summary` (mean/median/std/min/max per metric).
    """
    for name in ("task", "data_dir", "init", "output_dir"):
        if not getattr(config, name):
            raise ValueError(f"`{name}` is required. Received: `{name}={getattr(config, name)!r}`")
    task = tagging_task(config)
    strategy = strategy or create_strategy(config)
    output_dir = distribute.worker_dir(config.output_dir, strategy)  # multi_worker: the chief's is output_dir
    tf.io.gfile.makedirs(output_dir)
    train = task.read(config.data_dir, "train")[:config.train_limit]
    dev = task.read(config.data_dir, "dev")[:config.dev_limit]
    labels = task.labels(config.data_dir, train)
    train_ids, dev_ids = conll.encode_labels(train, labels), conll.encode_labels(dev, labels)
    logging.info("Task %s: %d train and %d dev sentences, %d labels %s.", task.name, len(train), len(dev),
                 len(labels), labels)

    trials, best = [], None
    for trial in range(config.num_trials):
        trial_seed = config.seed + trial
        keras.utils.set_random_seed(trial_seed)
        encoder, found_vocab = load_init(config.init, config.vocab_file)
        tokenizer = WordPieceTokenizer(found_vocab)
        if trial == 0:
            train_pieces = tokenize_words(tokenizer, [s.words for s in train])
            dev_pieces = tokenize_words(tokenizer, [s.words for s in dev])
            for sentences, pieces in ((train, train_pieces), (dev, dev_pieces)):
                message = long_sentences(sentences, pieces, config.max_seq_length)
                if message:
                    logging.info(message)
            train_features = build_features(tokenizer, train_pieces, train_ids, config.max_seq_length, config.stride)
            dev_features = build_features(tokenizer, dev_pieces, dev_ids, config.max_seq_length, config.stride)
        train_ds = tagging_dataset(train_features, config.batch_size, trial_seed)
        steps = config.epochs * int(train_ds.cardinality())
        with strategy.scope():
            model = ElectraTokenClassifier(rebuild_encoder(encoder), len(labels), dropout=config.dropout)
            model.compile(optimizer=create_optimizer(config, encoder.num_layers, steps),
                          loss=MaskedSparseCrossEntropy(), jit_compile=jit_compile(config, strategy))
        start = time.time()
        history = model.fit(train_ds, epochs=config.epochs, verbose=config.verbose,
                            shuffle=False)  # train_ds shuffles itself
        train_seconds = time.time() - start
        num_rows = len(train_features["label_ids"])
        metrics, per_type = evaluate(model, dev_features, dev, labels, task.scheme is not None,
                                     4 * config.batch_size)
        result = {"trial": trial, "seed": trial_seed, "train_seconds": round(train_seconds, 2),
                  "train_examples_per_second": round(config.epochs * num_rows / train_seconds, 2),
                  "train_loss": [float(v) for v in history.history["loss"]],
                  "dev": metrics, "dev_per_type": per_type}
        headline = metrics[task.metric]
        logging.info("Trial %d (seed %d): dev %s = %.4f (%s) in %.1f s.", trial, trial_seed, task.metric,
                     headline, metrics, train_seconds)
        trials.append(result)
        if best is None or headline > best[0]:
            best = (headline, trial)
            model.save(os.path.join(output_dir, TOKEN_CLASSIFIER_FILE))
            copy_vocab(found_vocab, os.path.join(output_dir, VOCAB_FILE))

    summary = {f"dev_{name}": summarize([t["dev"][name] for t in trials]) for name in trials[0]["dev"]}
    results = {
        "task": task.name,
        "kind": "tagging",
        "init": config.init,
        "metric": task.metric,
        "labels": labels,
        "num_train_sentences": len(train),
        "num_train_windows": int(len(train_features["label_ids"])),
        "num_dev_sentences": len(dev),
        "best_trial": best[1],
        "trials": trials,
        "summary": summary,
        "hparams": config.hparams(),
    }
    write_results(output_dir, results, {
        "task": task.name,
        "kind": "tagging",
        "label_names": labels,
        "scheme": "IOB2" if task.scheme else None,
        "max_seq_length": config.max_seq_length,
        "stride": config.stride,
    })
    if output_dir != config.output_dir:
        tf.io.gfile.rmtree(output_dir)
    logging.info("dev %s over %d trial(s): %s", task.metric, config.num_trials,
                 {k: round(v, 4) for k, v in summary[f"dev_{task.metric}"].items()})
    return results
