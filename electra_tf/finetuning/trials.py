"""The one fine-tuning loop: trials of any task kind, evaluated every epoch, resumable at any step.

`run_trials(config, kind)` is what `python -m electra_tf.finetune` runs, with
the task kind of `config` (`tasks.for_config`): a `tasks.base.TaskKind` subclass,
whose training members (reading the splits, features, model, batches,
evaluation with its headline metric, outputs) are all this loop asks of a task.

Each trial: seed `seed + trial`, the encoder of `--init` copied under the
strategy scope, the reference optimiser (`recipe`), `fit` one epoch at a time
over batches whose order is a function of (seed, epoch) only
(`batching.epoch_batches`), dev scored at each epoch's end (one line per
epoch, and with `--verbose 2` one at each tenth of it; TensorBoard scalars
under `output_dir/logs`), the best epoch's weights
kept (`--keep best|last`), optional early stopping. The best trial's model,
vocabulary and outputs go to `output_dir` with `results.json`.

Resume: a trial's checkpoint (`output_dir/trials/trial-N`, `named_checkpoint`)
holds model, optimizer, dropout RNG, the epochs scored, the best epoch's
weights and metrics, and the running loss of the current epoch; the step
gives the data position. It is written every `--save_checkpoints_steps`
updates, after each epoch's evaluation but the trial's last (the trial's
result, written next, is what a re-run reads then) and on SIGTERM (at the next step
boundary, or at once during an epoch's evaluation, which the re-run does
again; then the command exits 0). Re-running the same command continues
from there and ends with the weights of an uninterrupted run
(`--deterministic` for bit-equal kernels). A finished run re-run says so and
changes nothing; the checkpoints are removed once `results.json` is written.
"""

import contextlib
import dataclasses
import os
import signal
import threading
import time

import keras
import tensorflow as tf
from absl import logging

from electra_tf import atomic, run_files, sources
from electra_tf.data.tokenizer import copy_vocab
from electra_tf.finetuning import recipe
from electra_tf.finetuning.batching import num_batches, stopping_when
from electra_tf.finetuning.config import read_finetune_config, set_fields, with_current_keys
from electra_tf.training import callbacks, distribute, run_lock
from electra_tf.sources import named_checkpoint
from electra_tf.sources.named_checkpoint import NamedCheckpoint

# Settings that do not change what a run computes: a run may resume with other values.
NOT_SETTINGS = ("output_dir", "verbose", "strategy", "tpu", "num_cpu_devices", "save_checkpoints_steps",
                "log_steps")
MAX_CHECKPOINTS = 2


def settings(config):
    """What a run computes from: every setting but those of `NOT_SETTINGS`, and the Keras backend it runs on.

    A run resumes on the backend that wrote it: its checkpoint holds that backend's optimizer and
    dropout RNG state (a run written before the backend was recorded ran on TensorFlow).
    """
    values = {k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_SETTINGS}
    return dict(values, backend=keras.backend.backend())


def run_trials(config, kind, strategy=None, given=None):
    """Fine-tunes `config.num_trials` times, or resumes; writes and returns the results (None if preempted).

    Before anything is written, the kind refuses the flags of other kinds among `given`
    (`TaskKind.check_flags`) and takes what its `--init` records where `given` sets nothing
    (`TaskKind.configure`: a sentence-transformers folder's pooling and length); the run then
    computes from, and records, that config.

    Args:
        config: `FinetuneConfig` (`task`, `data_dir`, `init`, `output_dir` set).
        kind: the `TaskKind` subclass of the task (`tasks.for_config(config)`).
        strategy: `tf.distribute.Strategy` or None (one from `config`).
        given: the names of the settings given explicitly (the flags on the command line); None:
            those whose value is not the field's default (`finetuning.config.set_fields`).

    Returns:
        dict with `task`, `kind`, `metric`, `trials` (per-trial dev metrics
        of the kept epoch, the epoch history, test metrics), `summary`
        (mean/median/std/min/max per metric) and `hparams`; None when a
        SIGTERM stopped the run (its checkpoint is saved: re-run to resume).
    """
    recipe.check_required(config)
    given = set_fields(config) if given is None else set(given)
    kind.check_flags(config, given)
    config = kind.configure(config, given)
    recipe.check_output_dir(config)
    strategy = strategy or recipe.create_strategy(config)
    # One writer per output_dir: a second process is refused naming the holder (the chief holds it).
    with recipe.cpu_graph_options(), (
            run_lock.hold(config.output_dir, "output_dir") if distribute.is_chief(strategy) else contextlib.nullcontext()):
        return _run_trials(config, kind, strategy)


def _run_trials(config, kind, strategy):
    finished = _finished_results(config)
    if finished is not None:
        return finished
    task = kind(config)  # reads the splits: bad files fail before anything is written
    task.check_training(strategy.num_replicas_in_sync)
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    encoder, vocab_file = sources.load_init(config.init, config.vocab_file)
    tokenizer = recipe.check_model(encoder, vocab_file, config.seq_length)
    _check_unfinished(config)
    task.prepare(tokenizer)
    output_dir = distribute.worker_dir(config.output_dir, strategy)  # multi_worker: the chief's is output_dir
    state_dir = os.path.join(output_dir, run_files.TRIALS_DIR)
    tf.io.gfile.makedirs(state_dir)
    atomic.write_json(os.path.join(state_dir, run_files.RUN_SETTINGS_FILE), settings(config))

    trials, best = [], None
    for trial in range(config.num_trials):
        saved = run_files.read_json(os.path.join(run_files.trial_dir(config.output_dir, trial),
                                                 run_files.TRIAL_RESULT_FILE))
        if saved is not None:
            result = saved
            logging.info("Trial %d finished earlier: dev %s = %s.", trial, task.metric, result["dev"][task.metric])
        else:
            outcome = _run_trial(task, config, trial, encoder, strategy, output_dir)
            if outcome is None:
                return None
            result, model, outputs = outcome
            if _better(result, best, task.metric):
                _save_model(task, model, outputs, vocab_file, output_dir)
            atomic.write_json(os.path.join(run_files.trial_dir(output_dir, trial), run_files.TRIAL_RESULT_FILE),
                                 result)
        trials.append(result)
        if _better(result, best, task.metric):
            best = result

    results = _results(task, config, trials, best)
    run_files.write_results(output_dir, results, task.finetune_config(best))
    tf.io.gfile.rmtree(state_dir)
    if output_dir != config.output_dir:
        tf.io.gfile.rmtree(output_dir)
    logging.info("dev %s over %d trial(s): %s", task.metric, config.num_trials,
                 results["summary"].get(f"dev_{task.metric}"))
    return results


def _finished_results(config):
    """The results of a finished run of the same settings in `output_dir` (None if unfinished); other settings: an error."""
    path = os.path.join(config.output_dir, run_files.RESULTS_FILE)
    results = run_files.read_json(path)
    if results is None:
        return None
    _refuse_other_settings(results.get("settings") or {}, config, f"a finished fine-tuning run ({path})")
    read_finetune_config(config.output_dir, type(config))  # an edited finetune_config.json is refused
    print(f"already finished; results in {path}", flush=True)
    return results


def _check_unfinished(config):
    path = os.path.join(config.output_dir, run_files.TRIALS_DIR, run_files.RUN_SETTINGS_FILE)
    saved = run_files.read_json(path)
    if saved is not None:
        _refuse_other_settings(saved, config, f"an unfinished fine-tuning run ({path})")


def _refuse_other_settings(saved, config, what):
    given, saved = settings(config), with_current_keys(saved)  # a run of an earlier version says max_seq_length
    saved.setdefault("backend", "tensorflow")  # written before runs recorded their backend
    differ = [f"--{name}={given.get(name)!r} vs {saved.get(name)!r}" for name in sorted(set(given) | set(saved))
              if given.get(name) != saved.get(name)]
    if differ:
        raise FileExistsError(
            f"`--output_dir={config.output_dir}` holds {what} with other settings: {', '.join(differ)} "
            "(given vs saved). Re-run with its settings to resume it, or choose another --output_dir."
        )


def _better(result, best, metric):
    value = result["dev"].get(metric)
    return best is None or (value is not None and (best["dev"].get(metric) is None or value > best["dev"][metric]))


def _save_model(task, model, outputs, vocab_file, output_dir):
    """The best trial's model (atomically), vocabulary and kind-specific outputs."""
    path = os.path.join(output_dir, task.model_file)
    with atomic.staged(path, "output_dir") as partial:
        model.save(partial)
    copy_vocab(vocab_file, os.path.join(output_dir, run_files.VOCAB_FILE))
    task.write_outputs(output_dir, model, outputs)


def _results(task, config, trials, best):
    summary = {}
    for split in task.eval_splits + task.test_splits:
        for name, value in trials[0].get(split, {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not name.endswith("total"):
                summary[f"{split}_{name}"] = recipe.summarize([t[split].get(name) for t in trials])
    return {
        "task": config.task,
        "kind": task.name,
        "init": config.init,
        "metric": task.metric,
        **task.results(),
        "keep": config.keep,
        "best_trial": best["trial"],
        "trials": trials,
        "summary": summary,
        "hparams": dict(task.without_other_kinds(config.hparams()), **task.hparams()),  # its own and the recipe's
        "settings": settings(config),
    }


class TrialProgress:
    """What a trial's checkpoint holds besides model and optimizer (all `tf.Variable`s, restored with them).

    `evaluated`: epochs scored; `best_epoch` (-1: none yet) and `best_weights`;
    `history`: JSON list, one record per scored epoch; `loss_sum` /
    `loss_weight`: the current epoch's loss so far (examples-weighted);
    `seconds`: training time.
    """

    def __init__(self, model):
        with tf.device("/cpu:0"):
            self.evaluated = tf.Variable(0, dtype=tf.int64, trainable=False)
            self.best_epoch = tf.Variable(-1, dtype=tf.int64, trainable=False)
            self.history = tf.Variable("[]", dtype=tf.string, trainable=False)
            self.loss_sum = tf.Variable(0.0, dtype=tf.float64, trainable=False)
            self.loss_weight = tf.Variable(0.0, dtype=tf.float64, trainable=False)
            self.seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
            self.best_weights = [tf.Variable(w, trainable=False) for w in model.get_weights()]

    def trackables(self):
        return {"evaluated": self.evaluated, "best_epoch": self.best_epoch, "history": self.history,
                "loss_sum": self.loss_sum, "loss_weight": self.loss_weight, "seconds": self.seconds,
                "best_weights": self.best_weights}

    def records(self):
        import json

        return json.loads(self.history.numpy().decode())

    def add_record(self, record):
        import json

        self.history.assign(json.dumps(self.records() + [record], allow_nan=False))


class EpochLoss(keras.callbacks.Callback):
    """The current epoch's mean training loss across `fit` calls (a resumed epoch included).

    Keras' `loss` log is the examples-weighted mean since this `fit` began;
    with the epoch's earlier part (`TrialProgress.loss_sum / loss_weight`) it
    gives the whole epoch's mean. `store` writes the running totals into the
    progress variables (before each checkpoint); `reset` starts the next epoch
    from zero, so a checkpoint written after the epoch's end carries nothing of it.
    """

    def __init__(self, progress, num_rows, batch_size, skip):
        super().__init__()
        self.progress, self.num_rows, self.batch_size, self.skip = progress, num_rows, batch_size, skip
        self.base = (float(progress.loss_sum.numpy()), float(progress.loss_weight.numpy()))
        self.totals = self.base

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        start = self.skip * self.batch_size
        examples = min((self.skip + batch + 1) * self.batch_size, self.num_rows) - start
        self.totals = (self.base[0] + float(loss) * examples, self.base[1] + examples)

    def mean(self):
        return self.totals[0] / self.totals[1] if self.totals[1] else float("nan")

    def store(self):
        self.progress.loss_sum.assign(self.totals[0])
        self.progress.loss_weight.assign(self.totals[1])

    def reset(self):
        self.base = self.totals = (0.0, 0.0)
        self.store()


class StepScalars(keras.callbacks.Callback):
    """TensorBoard scalars every `every` updates, keyed on the optimizer step: train loss, learning rate."""

    def __init__(self, writer, every, epoch_loss):
        super().__init__()
        self.writer, self.every, self.epoch_loss = writer, every, epoch_loss

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            with self.writer.as_default(step=step):
                tf.summary.scalar("train/loss", self.epoch_loss.mean())
                tf.summary.scalar("train/learning_rate", float(self.model.optimizer.learning_rate))


class EpochProgress(keras.callbacks.Callback):
    """`--verbose 2`: a line at each tenth of an epoch (at most 9 before the epoch's own line).

    Each line: the step within the epoch and the epoch's steps, the epoch's mean loss so far
    (`EpochLoss`) and the examples per second of this `fit`. A resumed epoch counts from its
    first step, so the tenths fall where they would have without the interruption.
    """

    def __init__(self, label, per_epoch, done, epoch_loss, num_rows, batch_size):
        super().__init__()
        self.label, self.per_epoch, self.done, self.epoch_loss = label, per_epoch, done, epoch_loss
        self.num_rows, self.batch_size = num_rows, batch_size
        self.start = None

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        step = self.done + batch + 1
        if step >= self.per_epoch or step * 10 // self.per_epoch == (step - 1) * 10 // self.per_epoch:
            return  # the epoch's last step (its own line follows), or no tenth passed
        examples = min(step * self.batch_size, self.num_rows) - min(self.done * self.batch_size, self.num_rows)
        rate = examples / max(time.perf_counter() - self.start, 1e-9)
        print(f"{self.label}: step {step}/{self.per_epoch}, train loss {_number(self.epoch_loss.mean())}, "
              f"{rate:.1f} examples/s", flush=True)


class SaveEvery(callbacks.CheckpointEvery):
    """`CheckpointEvery` without its save at the end of `fit`: the loop saves once the epoch is scored."""

    def on_train_end(self, logs=None):
        pass


class StopAtEpochEnd(keras.callbacks.Callback):
    """Ends `fit` after one epoch: the loop evaluates, checkpoints and starts the next."""

    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = True


def _run_trial(task, config, trial, encoder, strategy, output_dir):
    """Trains (or resumes) one trial; `(result, model, outputs)`, or None when SIGTERM stopped it.

    Every worker restores from the chief's checkpoints (`config.output_dir`); a
    non-chief writes its share of each collective save, and its logs, into its
    own scratch `output_dir`, removed at the end.
    """
    seed = config.seed + trial
    keras.utils.set_random_seed(seed)
    per_epoch = num_batches(task.num_train_rows, config.batch_size)
    directory = run_files.trial_dir(config.output_dir, trial)
    with strategy.scope():
        model, compile_args = task.build_model(recipe.rebuild_encoder(encoder))
        model.build()
        optimizer = recipe.create_optimizer(config, encoder.num_layers, config.epochs * per_epoch)
        model.compile(optimizer=optimizer, jit_compile=recipe.jit_compile(config, strategy), **compile_args)
        optimizer.build(model.trainable_variables)
        state = NamedCheckpoint(model, optimizer)
    progress = TrialProgress(model)
    state.checkpoint.progress = progress.trackables()
    writer = tf.summary.create_file_writer(run_files.trial_log_dir(output_dir, trial, config.num_trials))
    save = SaveEvery(state.checkpoint,
                     os.path.join(run_files.trial_dir(output_dir, trial), run_files.CHECKPOINT_DIR),
                     every=config.save_checkpoints_steps, max_to_keep=MAX_CHECKPOINTS, strategy=strategy,
                     before_save=[writer.flush])
    restored = named_checkpoint.restore_latest_good(state.restore, directory)
    if restored:
        print(f"trial {trial}: resumed at step {int(optimizer.iterations.numpy())} (epoch "
              f"{int(progress.evaluated.numpy()) + 1}) from {restored}", flush=True)
    save.set_model(model)
    preemption = callbacks.SaveOnPreemption(save)
    best_outputs = None
    with _sigterm_requests(preemption) as sigterm:
        while int(progress.evaluated.numpy()) < config.epochs and not _stopped_early(progress, config):
            epoch = int(progress.evaluated.numpy())
            done = int(optimizer.iterations.numpy()) - epoch * per_epoch
            epoch_loss = EpochLoss(progress, task.num_train_rows, config.batch_size, done)
            save.before_save = [writer.flush, epoch_loss.store]
            if done < per_epoch:
                start = time.time()
                label = f"{_trial_prefix(config, trial)}epoch {epoch + 1}/{config.epochs}"
                shown = [EpochProgress(label, per_epoch, done, epoch_loss, task.num_train_rows, config.batch_size)
                         ] if config.verbose == 2 else []
                model.fit(task.train_dataset(seed, epoch, done), initial_epoch=epoch, epochs=config.epochs,
                          steps_per_epoch=per_epoch - done, verbose=config.verbose, shuffle=False,
                          callbacks=[epoch_loss, StepScalars(writer, config.log_steps, epoch_loss), *shown,
                                     callbacks.StopOnNonFiniteLoss(),  # before `save`: a bad step is never saved
                                     save, preemption, StopAtEpochEnd()])
                progress.seconds.assign_add(time.time() - start)
                if preemption.preempted_at is not None:
                    return _preempted(preemption.preempted_at)
            try:
                with sigterm.interrupting():  # a SIGTERM ends the evaluation within a batch
                    scored = {split: task.evaluate(model, split) for split in task.eval_splits}
            except _Preempted:
                save.save(force=True)  # the epoch's training, as after a step; the re-run evaluates it
                return _preempted(save.step())
            outputs = _end_epoch(task, config, trial, model, progress, epoch_loss, writer, scored)
            if outputs is not None:
                best_outputs = outputs
            if preemption.requested or not _last_save_skippable(progress, config, strategy):
                save.save(force=True)
            if preemption.requested:
                return _preempted(save.step())
    records = progress.records()
    if not records:  # --epochs 0: the --init model scored as it is (zero-shot; a task head untrained)
        scored = {split: task.evaluate(model, split) for split in task.eval_splits}
        records = [{"epoch": 0, "train_loss": None, **{s: recipe.finite(m) for s, (m, _) in scored.items()}}]
        best_outputs = {s: outputs for s, (_, outputs) in scored.items()}
        print(f"{_trial_prefix(config, trial)}epochs 0: dev {task.metric} "
              f"{_number(records[0]['dev'].get(task.metric))} (the --init model)", flush=True)
    if config.keep == "best" and int(progress.best_epoch.numpy()) >= 0:
        if int(progress.best_epoch.numpy()) != len(records) - 1:  # the model holds the last epoch's weights
            model.set_weights([w.numpy() for w in progress.best_weights])
        kept = records[int(progress.best_epoch.numpy())]
    elif config.epochs:
        kept, best_outputs = records[-1], None
    else:
        kept = records[0]
    if best_outputs is None:  # resumed after the kept epoch (or keep=last): its outputs again
        best_outputs = {split: task.evaluate(model, split)[1] for split in task.eval_splits}
    result = {"trial": trial, "seed": seed, "train_seconds": round(float(progress.seconds.numpy()), 2),
              "train_examples_per_second": round(int(progress.evaluated.numpy()) * task.num_train_rows
                                                 / max(float(progress.seconds.numpy()), 1e-9), 2),
              "train_loss": [r["train_loss"] for r in records], "epochs": records, "kept_epoch": kept["epoch"]}
    for split in task.eval_splits:
        result[split] = kept[split]
    result.update(task.trial_extras(best_outputs))
    for split in task.test_splits:
        result[split], best_outputs[split] = task.evaluate(model, split)
        result[split] = recipe.finite(result[split])
        print(f"trial {trial}: {split} {task.metric} {_number(result[split].get(task.metric))}", flush=True)
    writer.close()
    return result, model, best_outputs


def _end_epoch(task, config, trial, model, progress, epoch_loss, writer, scored):
    """Logs an epoch's scores of the eval splits (`scored`: split -> `task.evaluate`), keeps the best weights;
    the outputs if it is the best."""
    epoch = int(progress.evaluated.numpy())
    record = {"epoch": epoch + 1, "train_loss": recipe.finite({"loss": epoch_loss.mean()})["loss"],
              **{split: recipe.finite(metrics) for split, (metrics, _) in scored.items()}}
    records = progress.records()
    headline = record["dev"].get(task.metric)
    best_epoch = int(progress.best_epoch.numpy())
    improved = headline is not None and (best_epoch < 0 or records[best_epoch]["dev"].get(task.metric) is None
                                         or headline > records[best_epoch]["dev"][task.metric])
    with writer.as_default(step=epoch + 1):
        tf.summary.scalar("train/epoch_loss", epoch_loss.mean())
        for split, metrics in record.items():
            for name, value in (metrics.items() if isinstance(metrics, dict) else ()):
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                    tf.summary.scalar(f"{split}/{name}", value)
    writer.flush()
    progress.add_record(record)
    progress.evaluated.assign(epoch + 1)
    epoch_loss.reset()  # the save after the epoch's end stores zeros, not this epoch's totals
    if improved:
        progress.best_epoch.assign(epoch)
        for variable, value in zip(progress.best_weights, model.get_weights()):
            variable.assign(value)
    print(f"{_trial_prefix(config, trial)}epoch {epoch + 1}/{config.epochs}: train loss {_number(record['train_loss'])}, "
          f"dev {task.metric} {_number(headline)}" + (" (best)" if improved else ""), flush=True)
    return {split: outputs for split, (_, outputs) in scored.items()} if improved else None


def _last_save_skippable(progress, config, strategy):
    """Whether the checkpoint after this epoch may be left out: the trial's last epoch was scored, so nothing
    resumes from it once the trial's result is written, which follows without another step.

    Left out, a run killed before that result is written resumes from the checkpoint before (the steps
    in between again, to the same weights). Kept on multi-worker runs, whose save is collective.
    """
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    evaluated, best_epoch = int(progress.evaluated.numpy()), int(progress.best_epoch.numpy())
    patience = config.early_stopping_patience
    return evaluated >= config.epochs or bool(patience and best_epoch >= 0 and evaluated - 1 - best_epoch >= patience)


def _trial_prefix(config, trial):
    return f"trial {trial} " if config.num_trials > 1 else ""


def _stopped_early(progress, config):
    patience = config.early_stopping_patience
    if not patience or int(progress.best_epoch.numpy()) < 0:
        return False
    stale = int(progress.evaluated.numpy()) - 1 - int(progress.best_epoch.numpy())
    if stale >= patience:
        logging.info("Early stopping: no better dev score in %d epoch(s).", stale)
        return True
    return False


def _preempted(step):
    logging.warning("Preempted (SIGTERM): saved the checkpoint of step %d; re-run the same command to resume.",
                    step)
    print(f"preempted (SIGTERM): saved the checkpoint of step {step}; re-run the same command to resume.",
          flush=True)
    return None


def _number(value):
    return "n/a" if value is None else f"{value:.4f}"


class _Preempted(BaseException):
    """SIGTERM during an evaluation (a BaseException: no `except Exception` on the way swallows it)."""


class _sigterm_requests:  # noqa: N801  (a context manager, used as a `with` block)
    """Inside: SIGTERM asks `preemption` to stop at the next step boundary (in `fit`), or, inside
    `interrupting()`, stops an evaluation before its next batch (`_Preempted`, raised by the loop that
    polls the request: `stopping_when`; the handler itself raises nothing)."""

    def __init__(self, preemption):
        self.preemption, self.previous = preemption, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._request)
        return self

    def _request(self, signum, frame):
        self.preemption.requested = True

    @contextlib.contextmanager
    def interrupting(self):
        """Inside: a SIGTERM (or one that came since the last step) raises `_Preempted` within a batch."""
        if self.preemption.requested:
            raise _Preempted()
        with stopping_when(lambda: self.preemption.requested, _Preempted):
            yield

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)

