"""The pre-training loop: build under a strategy, restore or initialise, `fit`, save.

Flag-free, so scripts and benchmarks can call `train` next to other CLIs;
`electra_tf.pretrain` is its command line.
"""

import math
import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf.data import arrays
from electra_tf.data.pretraining_dataset import (check_record_format, check_segment_ids, list_files,
                                                pretraining_dataset)
from electra_tf.data import records
from electra_tf.data import tokenizer as tokenizer_lib
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.objectives import OBJECTIVES
from electra_tf import atomic, backends, run_files, sources
from electra_tf.training import callbacks, distribute
from electra_tf.sources import named_checkpoint
from electra_tf.sources import keras_checkpoint
from electra_tf.sources.keras_checkpoint import KerasCheckpoint
from electra_tf.sources.named_checkpoint import NamedCheckpoint
from electra_tf.training.optimization import create_optimizer, loss_scaled, skipped_batches


def resolve_data(config, demo_dir, model_dir=None, build_demo_data=None):
    """Fills in `data`, `vocab_file`, `vocab_size` and the special ids from the data.

    `--data` is required (`--config tiny` defaults it to "demo"). A `--vocab_file` that is not
    the data's vocabulary (`stats.json`'s `vocab_sha256`, the demo's own) is refused, never
    replaced. Without `--vocab_file`, the vocabulary is the `vocab.txt` beside the
    records, else the one of the run in `model_dir`; records without either are
    refused (their ids would mean nothing).

    `--data=demo` is built by `build_demo_data(output_dir, seq_length=...)`
    (`electra_tf.pipelines.demo_corpus.build_demo_data`: the library does not
    import the data tools; `electra_tf.demo_data.resolve_data` passes it).
    """
    overrides = {}
    if not config.data:
        raise ValueError("`--data` is required: the pre-training records (TFRecord glob(s), comma-separated), or "
                         "`--data demo` for the embedded demo corpus (the default of `--config tiny` only).")
    if config.data == "demo":
        if build_demo_data is None:
            raise ValueError("`--data=demo` needs the demo corpus builder: call "
                             "`electra_tf.demo_data.resolve_data` (or pass `build_demo_data`).")
        demo = build_demo_data(os.path.expanduser(demo_dir), seq_length=config.seq_length)
        if config.vocab_file and (tokenizer_lib.vocab_digest(config.vocab_file)
                                  != tokenizer_lib.vocab_digest(demo["vocab_file"])):
            raise ValueError(
                f"`--vocab_file={config.vocab_file}` is not the vocabulary of `--data=demo` ({demo['vocab_file']}): "
                "the demo records hold its ids. Leave out --vocab_file, or pass the --data built with yours.")
        overrides.update(data=demo["data"], vocab_file=demo["vocab_file"])
    vocab_file = overrides.get("vocab_file", config.vocab_file) or find_vocabulary(config.data, model_dir)
    if vocab_file:
        tokenizer = tokenizer_lib.WordPieceTokenizer(vocab_file)
        special = {k: v for k, v in tokenizer.special_ids.items() if k != "unk_id"}
        overrides.update(vocab_file=vocab_file, vocab_size=tokenizer.vocab_size, **special)
        check_data_vocabulary(overrides.get("data", config.data), vocab_file, tokenizer.settings)
    return config.replace(**overrides)


def find_vocabulary(patterns, model_dir=None):
    """The `vocab.txt` beside the records of `patterns`, else in `model_dir`; an error when there is none."""
    folders = _data_folders(patterns)
    candidates = [os.path.join(folder, run_files.VOCAB_FILE) for folder in folders]
    if model_dir:
        candidates.append(os.path.join(model_dir, run_files.VOCAB_FILE))
    for path in candidates:
        if tf.io.gfile.exists(path):
            logging.info("No --vocab_file: using %s.", path)
            return path
    raise ValueError(
        f"`--data={patterns}` needs the vocabulary its records were built with: pass --vocab_file (no "
        f"{run_files.VOCAB_FILE} beside the records" + (f" or in `--model_dir={model_dir}`" if model_dir else "")
        + ")."
    )


TENSOR_LIMIT = 2**31 - 1  # elements of one TensorFlow tensor (int32 shapes and offsets)


def _data_folders(patterns, flag="data"):
    """The folders holding `--data`'s records: the folder itself for arrays (`electra_tf.data.arrays`)."""
    if arrays.is_array_folder(patterns):
        return [patterns]
    return sorted({os.path.dirname(path) for path in list_files(patterns, flag=flag)})


def check_batch_size(config, num_replicas=1):
    """Refuses a `--batch_size` whose generator logits would not fit one tensor on a replica, before anything runs.

    The generator (the MLM head of `mlm`) scores every vocabulary entry at each predicted position: a replica's
    `batch x positions x vocab_size` values, where positions are the `num_predictions` slots
    (every position for `all_tokens_mlm`). Past 2**31 - 1 values TensorFlow cannot shape the
    tensor, and the first step fails with a reshape error that names no flag.

    Example:
    >>> from electra_tf.config import get_config
    >>> from electra_tf.training.pretraining import check_batch_size
    >>> check_batch_size(get_config("tiny", batch_size=200000))
    Traceback (most recent call last):
    ValueError: `--batch_size=200000` is too large: ...
    """
    positions = config.seq_length if OBJECTIVES[config.objective].task == "mlm_all" else config.num_predictions
    per_replica = -(-config.batch_size // num_replicas)
    values = per_replica * positions * config.vocab_size
    if values > TENSOR_LIMIT:
        most = TENSOR_LIMIT // (positions * config.vocab_size) * num_replicas
        raise ValueError(
            f"`--batch_size={config.batch_size}` is too large: the generator scores {per_replica} sequences x "
            f"{positions} positions x {config.vocab_size} vocabulary entries = {values:,} values on a replica, "
            f"more than a TensorFlow tensor holds (2**31 - 1). Use --batch_size <= {most} here (or more replicas)."
        )


def check_prediction_slots(config):
    """Refuses a config that predicts no position of a sequence: nothing would be masked, so nothing learnt.

    The default `--max_predictions_per_seq=0` predicts `int((mask_prob + 0.005) * seq_length)` positions,
    none below 7 tokens at the default `--mask_prob=0.15`.

    Example:
    >>> from electra_tf.config import get_config
    >>> from electra_tf.training.pretraining import check_prediction_slots
    >>> check_prediction_slots(get_config("tiny", seq_length=6))
    Traceback (most recent call last):
    ValueError: `--seq_length=6` at `--mask_prob=0.15` predicts no position: ...
    """
    if config.num_predictions < 1:
        raise ValueError(
            f"`--seq_length={config.seq_length}` at `--mask_prob={config.mask_prob}` predicts no position: "
            f"int((mask_prob + 0.005) * seq_length) = 0 prediction slots, so nothing is masked and nothing "
            "learnt. Raise --seq_length or --mask_prob, or set --max_predictions_per_seq >= 1.")


def check_inputs(config):
    """Every record file of `--data` (and `--eval_data`) exists, starts with well-formed records whose
    segment ids fit `--num_segments`, and its build's `stats.json` does not say otherwise."""
    for flag, patterns in (("data", config.data), ("eval_data", config.eval_data)):
        if patterns and arrays.is_array_folder(patterns):
            check_array_folder(patterns, config, flag)
            continue
        if flag == "data" or patterns:
            for path in list_files(patterns, flag=flag):
                check_record_format(path, config.seq_length)
                check_segment_ids(path, config.num_segments, flag)
            check_segments_of_builds(patterns, config.num_segments, flag)


def check_array_folder(folder, config, flag="data"):
    """A folder of arrays opens, fits `--seq_length` and `--batch_size`, and its first batch's segment ids fit
    `--num_segments`."""
    batch = arrays.ArrayBatches(folder, config.batch_size, config.seq_length, config.vocab_size, seed=config.seed,
                                shuffle=False, flag=flag).batch(0)
    largest = int(batch["segment_ids"].max())
    if largest >= config.num_segments:
        raise ValueError(
            f"`--num_segments={config.num_segments}` does not fit the arrays of `--{flag}={folder}`: they hold "
            f"segment id {largest} (the segment table has rows 0..{config.num_segments - 1}). Use --num_segments "
            f"{largest + 1}.")


def check_segments_of_builds(patterns, num_segments, flag="data"):
    """Refuses `--num_segments=1` for records whose build's `stats.json` counts examples with a second segment."""
    if num_segments >= 2:
        return
    for directory in _data_folders(patterns, flag):
        stats = records.read_stats(directory)
        if stats and isinstance(stats.get("examples"), int) and isinstance(stats.get("single_segment"), int):
            two = stats["examples"] - stats["single_segment"]
            if two > 0:
                raise ValueError(
                    f"`--num_segments={num_segments}` is too few for the records of `--{flag}={patterns}`: "
                    f"{os.path.join(directory, records.STATS_FILE)} counts {two:,} of {stats['examples']:,} examples "
                    "with two segments (segment id 1). Use --num_segments 2 (the default).")


def check_data_vocabulary(patterns, vocab_file, settings):
    """Refuses records whose `stats.json` says they were built with another vocabulary or tokenizer settings.

    Builds write `vocab_sha256` and `tokenizer` into `stats.json` beside the
    shards; records without one (other tools, older builds) are not checked. A `tokenizer`
    without the normalisation record is the previous release's (`tokenizer.recorded_settings`).
    """
    for directory in _data_folders(patterns):
        stats = records.check_vocabulary(directory, vocab_file)
        if stats is None or stats.get("tokenizer") is None:
            continue
        stats_path = os.path.join(directory, records.STATS_FILE)
        if not isinstance(stats["tokenizer"], dict):
            raise ValueError(f"{stats_path}: `tokenizer` must be a JSON object; found {stats['tokenizer']!r}.")
        recorded = tokenizer_lib.recorded_settings(stats["tokenizer"], stats_path)  # no record: the previous release's
        if recorded != settings:
            raise ValueError(
                f"The records in {directory} were tokenized with {recorded} ({stats_path}), "
                f"but {vocab_file} is used with {settings}: the model would see other ids at serving time."
            )


def train(config, model_dir, strategy=None, init=None, verbose=1, extra_callbacks=()):
    """Trains `config` into `model_dir`, resuming from its latest checkpoint.

    Args:
        config: `ElectraConfig` with `data` resolved (see `resolve_data`).
        model_dir: str.
        strategy: `tf.distribute.Strategy` (default: the current one).
        init: optional str. Weights to start a new run from (ignored on resume): any
            `--init` form (`sources.init_pretrainer`), another electra_tf run included.
        verbose: int. Keras progress-bar mode.
        extra_callbacks: Keras callbacks to run after the loop's own (probes, benchmarks).

    Returns:
        The trained `ElectraPretrainer`.

    Under JAX or PyTorch (`KERAS_BACKEND`) `strategy` is not used: Keras' `DataParallel` spreads the batch
    over the devices when JAX sees several, the checkpoints are Keras' (`sources.keras_checkpoint`) and
    the train step is compiled under JAX (always) and eager under PyTorch.
    """
    backend = backends.name()
    native = backend != backends.DEFAULT
    strategy = KerasDevices(config) if native else (strategy or tf.distribute.get_strategy())
    accumulation = config.gradient_accumulation_steps
    jit_compile = config.jit_compile if not native else backend == "jax"
    if distribute.uses_logical_cpus(strategy):
        if accumulation > 1:
            raise ValueError(
                "`--gradient_accumulation_steps` is not supported under MirroredStrategy over "
                "logical CPU devices (Keras' accumulation fails in merge_call); raise "
                "`--batch_size` instead."
            )
        if jit_compile:
            logging.warning("XLA is unavailable for MirroredStrategy over logical CPUs; training without it.")
            jit_compile = False
    keras.mixed_precision.set_global_policy(config.precision)  # also resets an earlier run's policy
    if config.deterministic and not native:
        tf.config.experimental.enable_op_determinism()
    # Nothing is written before the batch, the data, the vocabulary and any existing run are found compatible.
    check_prediction_slots(config)
    check_batch_size(config, strategy.num_replicas_in_sync)
    check_inputs(config)
    run_files.check_resumable(config, model_dir)
    check_run_backend(model_dir, backend)
    _check_run_vocabulary(config, model_dir)
    if arrays.is_array_folder(config.data) and isinstance(
            strategy, (tf.distribute.MultiWorkerMirroredStrategy, tf.distribute.TPUStrategy)):
        raise ValueError(f"`--data={config.data}` is a folder of arrays, read on one host: it does not feed "
                         "--strategy multi_worker or tpu. Give those the TFRecords (a glob).")
    if native:
        strategy.distribute()

    chief = distribute.is_chief(strategy)
    keras.utils.set_random_seed(config.seed)  # initialisation and dropout streams follow --seed
    with strategy.scope():
        pretrainer = build_pretrainer(config)
        optimizer = create_optimizer(config)
        scaled = loss_scaled(optimizer, config.precision)  # mixed_float16: counts the updates it skips
        pretrainer.compile(
            optimizer=scaled, jit_compile=jit_compile, steps_per_execution=config.steps_per_execution
        )
        scaled.build(pretrainer.trainable_variables)
        loss_scale = scaled.state() if scaled is not optimizer else None
        board = callbacks.tensorboard(
            os.path.join(model_dir, run_files.LOG_DIR), config.log_steps, strategy, accumulation
        )
        if native:
            state = KerasCheckpoint(pretrainer, optimizer, pretrainer.metrics, loss_scale=loss_scale)
            save = callbacks.KerasCheckpointEvery(
                state, model_dir, every=config.save_checkpoints_steps, max_to_keep=config.keep_checkpoint_max,
                backend=backend, position=lambda: batches_read(), before_save=[board.flush])
            latest = keras_checkpoint.restore_latest_good(state.restore, model_dir)
        else:
            state = NamedCheckpoint(pretrainer, optimizer, pretrainer.metrics,  # metrics: mid-epoch resume
                                    loss_scale=loss_scale)
            save = callbacks.CheckpointEvery(
                state.checkpoint,
                os.path.join(model_dir, run_files.CHECKPOINT_DIR),
                every=config.save_checkpoints_steps,
                max_to_keep=config.keep_checkpoint_max,
                strategy=strategy,
                before_save=[board.flush],
            )
            latest = named_checkpoint.restore_latest_good(state.restore, model_dir)
        if latest:
            logging.info("Resumed from %s", latest)
        elif init:
            sources.init_pretrainer(init, pretrainer)
            logging.info("Initialised from %s", init)

    if chief:
        run_files.write_config(config, model_dir, backend=backend)
        target = os.path.join(model_dir, run_files.VOCAB_FILE)
        if config.vocab_file and os.path.abspath(config.vocab_file) != os.path.abspath(target):
            tokenizer_lib.copy_vocab(config.vocab_file, target)

    step = int(optimizer.iterations.numpy())  # updates, not accumulation micro-steps

    def batches_read():  # the input position: a batch whose update the loss scaler skipped was read too
        return int(optimizer.iterations.numpy()) * accumulation + skipped_batches(scaled)

    preemption = callbacks.SaveOnPreemption(save)
    if step >= config.train_steps:
        logging.info("Already trained %d of %d steps.", step, config.train_steps)
    else:
        eval_dataset = _dataset(config, strategy, config.eval_data, training=False) if config.eval_data else None
        steps_per_epoch = min(config.save_checkpoints_steps, config.train_steps) * accumulation
        epochs = math.ceil(config.train_steps * accumulation / steps_per_epoch)
        logging.info("Training steps %d -> %d (%d per epoch).", step, config.train_steps,
                     steps_per_epoch // accumulation)
        # Epochs are `steps_per_epoch` batches counted from the first. A run resumed inside one first
        # ends it (`fit` of its remaining batches, its metric state so far carried through the
        # checkpoint), then goes on with whole epochs: the same epochs, summaries and checkpoint
        # steps as an uninterrupted run. Training ends at `train_steps` applied updates: batches
        # whose update a loss scaler skipped take more epochs (one `fit` each, until it is reached).
        epoch, done = divmod(batches_read(), steps_per_epoch)

        def cut_short():  # preempted inside an epoch that the rerun finishes: that epoch is not logged here
            saved = preemption.preempted_at
            return saved is not None and saved < config.train_steps and batches_read() % steps_per_epoch > 0

        board.cut_short = cut_short
        fit_callbacks = [
            callbacks.ResumeEpochMetrics(pretrainer.metrics if done else ()),
            callbacks.StopAtStep(config.train_steps),
            callbacks.SkippedUpdates(),
            callbacks.Throughput(config.batch_size),
            callbacks.Progress(),  # the bar shows four metrics (and skipped updates); `board` logs them all
            board,
            callbacks.StopOnNonFiniteLoss(),  # before `save`: a bad step is never written
            save,
            preemption,
            *extra_callbacks,
        ]
        try:
            while True:
                # The input position is the step: the pipeline is a function of (files, seed), so the
                # batches already trained on are skipped (see `pretraining_dataset`'s `skip_batches`).
                start = batches_read()
                epoch, done = divmod(start, steps_per_epoch)
                pretrainer.fit(
                    _dataset(config, strategy, config.data, skip_batches=start),
                    initial_epoch=epoch,
                    epochs=epoch + 1 if done else max(epochs, epoch + 1),
                    steps_per_epoch=steps_per_epoch - done,
                    shuffle=False,  # the dataset shuffles itself
                    validation_data=eval_dataset,
                    validation_steps=config.eval_steps if eval_dataset is not None else None,
                    verbose=verbose,
                    callbacks=fit_callbacks,
                )
                if (pretrainer.stop_training  # train_steps reached, preempted, or stopped by a callback
                        or int(optimizer.iterations.numpy()) >= config.train_steps or batches_read() == start):
                    break
        except tf.errors.DataLossError as e:
            raise ValueError(f"Corrupt pre-training data: {_find_corrupt_file(config.data) or e.message}") from None
        except tf.errors.InvalidArgumentError as e:
            ours = [line for line in e.message.splitlines() if "token id" in line.lower()]
            if ours:
                raise ValueError(ours[0].strip()) from None
            raise
    skipped = skipped_batches(scaled)
    if skipped:
        logging.info("The loss scaler skipped the update of %d batches (non-finite float16 gradients while its "
                     "scale settled): %d batches read for %d applied updates.", skipped, batches_read(),
                     int(optimizer.iterations.numpy()))
    if preemption.preempted_at is not None:
        logging.warning("Preempted (SIGTERM): saved the checkpoint of step %d; re-run the same command to "
                        "resume.", preemption.preempted_at)
        return pretrainer
    if chief:
        path = os.path.join(model_dir, run_files.DISCRIMINATOR_FILE)
        with atomic.staged(path, "model_dir") as partial:  # model_dir may be gs://
            pretrainer.discriminator.save(partial)
        logging.info("Saved the discriminator to %s", path)
    return pretrainer


class KerasDevices:
    """In place of a `tf.distribute` strategy under JAX / PyTorch: the devices Keras trains on.

    Under JAX with more than one device (GPUs, or CPUs split by
    `XLA_FLAGS=--xla_force_host_platform_device_count=N`), `distribute` sets Keras' `DataParallel`
    over them: each device computes the gradients of its share of the global batch, which
    must divide among them. Elsewhere one device trains.
    """

    def __init__(self, config):
        self.config = config
        self.devices = keras.distribution.list_devices() if backends.name() == "jax" else []
        self.num_replicas_in_sync = max(1, len(self.devices))

    def distribute(self):
        if self.num_replicas_in_sync < 2:
            return
        if self.config.batch_size % self.num_replicas_in_sync:
            raise ValueError(f"`--batch_size={self.config.batch_size}` does not divide among the "
                             f"{self.num_replicas_in_sync} devices JAX sees ({', '.join(self.devices)}): use a "
                             f"multiple of {self.num_replicas_in_sync}.")
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=self.devices))
        logging.info("Data parallel over %d devices: %s", self.num_replicas_in_sync, ", ".join(self.devices))

    def scope(self):
        import contextlib

        return contextlib.nullcontext()


def check_run_backend(model_dir, backend):
    """Refuses to resume a run under another Keras backend than the one that trained it (its checkpoints are
    that backend's), naming both, before anything is written."""
    trained = run_files.run_backend(model_dir)
    if trained is not None and trained != backend:
        raise ValueError(
            f"`--model_dir={model_dir}` holds a run trained under --backend {trained}; resuming it under "
            f"`--backend={backend}` would not continue it exactly (its checkpoints and random streams are "
            f"{trained}'s). Re-run with --backend {trained}, or start a new --model_dir (`--init {model_dir}` "
            "starts one from its weights).")


def _check_run_vocabulary(config, model_dir):
    """A run resumes with the vocabulary it was trained with (its `vocab.txt`)."""
    saved = os.path.join(model_dir, run_files.VOCAB_FILE)
    if not (config.vocab_file and run_files.is_run(model_dir) and tf.io.gfile.exists(saved)):
        return
    if tokenizer_lib.vocab_digest(saved) != tokenizer_lib.vocab_digest(config.vocab_file):
        raise ValueError(
            f"`--vocab_file={config.vocab_file}` differs from the vocabulary of the run in `--model_dir={model_dir}` "
            f"({saved}): resume with the run's vocabulary, or use a new --model_dir."
        )


def _dataset(config, strategy, patterns, training=True, skip_batches=0):
    """Global batches on one worker (Keras splits them over replicas in order); per-worker files otherwise.

    `skip_batches` (training): batches every input pipeline has already
    delivered, i.e. updates x accumulation steps, to resume at the exact next
    batch.

    Evaluation data is read in file order, unshuffled and repeated, so every
    evaluation sees the same `eval_steps` batches.
    """
    if arrays.is_array_folder(patterns):
        return _array_batches(config, patterns, training, skip_batches)
    kwargs = dict(
        patterns=patterns,
        seq_length=config.seq_length,
        vocab_size=config.vocab_size,
        shuffle_buffer=config.shuffle_buffer,
        seed=config.seed,
        repeat=training,
    )

    def read(batch_size, context=None):
        skip = skip_batches
        if context is not None:  # one per-replica batch per local replica and step
            skip *= context.num_replicas_in_sync // context.num_input_pipelines
        dataset = pretraining_dataset(batch_size=batch_size, input_context=context, skip_batches=skip, **kwargs)
        return dataset if training else dataset.repeat()

    if isinstance(strategy, (tf.distribute.MultiWorkerMirroredStrategy, tf.distribute.TPUStrategy)):
        return strategy.distribute_datasets_from_function(lambda context: read(config.batch_size, context))
    return read(config.batch_size)


def _array_batches(config, folder, training, skip_batches):
    """Batches of a folder of arrays: a generator while training (the stream goes on across `fit`'s epochs), a
    `PyDataset` of `eval_steps` batches for evaluation (the same batches, from the first, every time)."""
    flag = "data" if training else "eval_data"
    reader = arrays.ArrayBatches(folder, config.batch_size, config.seq_length, config.vocab_size, seed=config.seed,
                                 shuffle=training, skip_batches=skip_batches, flag=flag)
    if training:  # Keras takes a generator's items as (inputs,) tuples
        return ((batch,) for batch in reader)

    class Evaluation(keras.utils.PyDataset):
        def __len__(self):
            return config.eval_steps

        def __getitem__(self, i):
            return (reader.batch(i),)

    return Evaluation()


def _find_corrupt_file(patterns):
    """Reads every file through to name the one that fails (only called after a failure)."""
    for path in list_files(patterns):
        try:
            for _ in tf.data.TFRecordDataset(path):
                pass
        except tf.errors.DataLossError as e:
            return f"{path}: {e.message}"
    return None
