"""Keras callbacks of the pre-training loop: checkpoints, preemption, non-finite loss, throughput, stopping."""

import math
import os
import shutil
import signal
import threading
import time

import keras
import tensorflow as tf
from absl import logging

from electra_tf.training import distribute
from electra_tf.training.optimization import skipped_batches
from electra_tf.sources.named_checkpoint import all_finite


class CheckpointEvery(keras.callbacks.Callback):
    """Saves model, optimizer and input position every `every` updates (`tf.train.CheckpointManager`).

    The manager writes a checkpoint's files first and its index (`checkpoint`)
    last, so a run killed mid-save leaves the previous checkpoint the latest
    one; it keeps the newest `max_to_keep`. A model holding a NaN or Inf is
    never saved (`FloatingPointError`). On multi-worker runs every worker
    saves (reading synchronised variables is collective); only the chief's
    copy is kept.

    Args:
        checkpoint: `tf.train.Checkpoint` (a `NamedCheckpoint`'s).
        directory: str. Where the chief writes.
        every: int. Updates between saves.
        max_to_keep: int.
        strategy: the `tf.distribute.Strategy` training runs under.
        before_save: optional list of callables run before each save (e.g.
            flushing TensorBoard, so the logs on disk reach the checkpoint).
    """

    def __init__(self, checkpoint, directory, every, max_to_keep, strategy, before_save=()):
        super().__init__()
        self.every = every
        self.strategy = strategy
        self.before_save = list(before_save)
        self.scratch = distribute.worker_dir(directory, strategy)
        self.manager = tf.train.CheckpointManager(
            checkpoint, self.scratch, max_to_keep=max_to_keep, checkpoint_name="ckpt"
        )
        self.last_saved = self.step()

    def step(self):
        # Keras' `iterations` counts updates (calls // gradient_accumulation_steps).
        return int(self.model.optimizer.iterations.numpy()) if self.model else 0

    def set_model(self, model):
        super().set_model(model)
        self.last_saved = self.step()

    def save(self, force=False):
        """Writes a checkpoint of the current step, unless one was just written (`force`: write it again)."""
        step = self.step()
        if step == self.last_saved and not force:
            return
        if not all_finite(self.model.variables):
            raise FloatingPointError(f"The model holds NaN or Inf at step {step}; no checkpoint written.")
        for hook in self.before_save:
            hook()
        path = self.manager.save(checkpoint_number=step)
        self.last_saved = step
        if distribute.is_chief(self.strategy):
            logging.info("Saved checkpoint %s", path)
        else:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def on_train_batch_end(self, batch, logs=None):
        if self.step() - self.last_saved >= self.every:
            self.save()

    def on_train_end(self, logs=None):
        # `fit` ends at train_steps, preempted or stopped, or at an epoch's end: an epoch ends on a
        # multiple of `every` updates unless a loss scaler skipped some, and the loop trains on then.
        if self.model.stop_training or self.step() % self.every == 0:
            self.save()


class KerasCheckpointEvery(CheckpointEvery):
    """`CheckpointEvery` under JAX / PyTorch: Keras checkpoints (`sources.keras_checkpoint`), not TensorFlow's.

    `ckpt-N.npz` is written whole, then `checkpoints.json` naming it first; the checkpoints past the newest
    `max_to_keep` are deleted after that. A temporary file a killed save left is removed when training starts.

    Args:
        checkpoint: `KerasCheckpoint` of the model, optimizer and metrics.
        model_dir: str. The run's folder.
        every, max_to_keep, before_save: as `CheckpointEvery`'s.
        backend: str. The Keras backend, recorded in `checkpoints.json`.
        position: callable returning the input position (batches read), saved with the step.
    """

    def __init__(self, checkpoint, model_dir, every, max_to_keep, backend, position, before_save=()):
        keras.callbacks.Callback.__init__(self)
        from electra_tf import atomic, run_files

        self.checkpoint, self.model_dir, self.backend, self.position = checkpoint, model_dir, backend, position
        self.every, self.max_to_keep, self.before_save = every, max_to_keep, list(before_save)
        self.strategy = None
        self.directory = os.path.join(model_dir, run_files.CHECKPOINT_DIR)
        for name in (os.listdir(self.directory) if os.path.isdir(self.directory) else ()):
            if name.startswith(atomic.PARTIAL_PREFIX):  # a save killed half-way (the run lock is ours)
                os.remove(os.path.join(self.directory, name))
        self.last_saved = self.step()

    def save(self, force=False):
        from electra_tf import run_files
        from electra_tf.sources import keras_checkpoint

        step = self.step()
        if step == self.last_saved and not force:
            return
        if not keras_checkpoint.all_finite(self.model.variables):
            raise FloatingPointError(f"The model holds NaN or Inf at step {step}; no checkpoint written.")
        for hook in self.before_save:
            hook()
        path = os.path.join(self.directory, run_files.KERAS_CHECKPOINT_FILE.format(step=step))
        self.checkpoint.write(path, position=self.position())
        kept = [path] + [p for p in run_files.kept_checkpoints(self.model_dir) if p != path]
        keras_checkpoint.write_index(self.model_dir, kept[:self.max_to_keep], self.backend)
        for old in kept[self.max_to_keep:]:
            if os.path.exists(old):
                os.remove(old)
        self.last_saved = step
        logging.info("Saved checkpoint %s", path)


class ResumeEpochMetrics(keras.callbacks.Callback):
    """Puts back, at the start of a resumed epoch, the metric state its earlier steps left in the checkpoint.

    Keras resets the metrics as each epoch begins; a run resumed inside an
    epoch would report the mean of its remaining steps only. With the totals
    (and counts) of the steps already done, the epoch's logs are those of an
    uninterrupted run.

    Args:
        metrics: the model's Keras metrics, holding the restored state now.
    """

    def __init__(self, metrics):
        super().__init__()
        self.values = [(v, v.numpy()) for m in metrics for v in m.variables]

    def on_epoch_begin(self, epoch, logs=None):
        for variable, value in self.values:
            variable.assign(value)
        self.values = []  # the first epoch only


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training with `FloatingPointError` naming the step when the loss is NaN or Inf.

    Keras' `loss` log is the running mean over the epoch, so it turns
    non-finite at the first bad step and stays so. Put it before
    `CheckpointEvery` so the bad step is never saved.
    """

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            step = int(self.model.optimizer.iterations.numpy())
            raise FloatingPointError(
                f"Non-finite loss ({float(loss)}) at step {step}: training stopped. The latest "
                "checkpoint holds the last finite weights; lower --learning_rate or check the data."
            )


class SaveOnPreemption(keras.callbacks.Callback):
    """On SIGTERM, saves a checkpoint at the next step boundary and ends `fit` cleanly.

    GCE, GKE, Slurm and TPU maintenance send SIGTERM before they stop a job.
    The handler only sets a flag; the save happens between two steps, through
    `save`, so the checkpoint is a consistent one. `preempted_at` holds the
    saved step afterwards. Keras 3's `BackupAndRestore` has no such hook and
    `tf.distribute.experimental.PreemptionCheckpointHandler` drives a custom
    loop, not `fit`; on multi-worker runs every worker receives the signal
    and stops at the same step boundary, as the save is collective.

    Args:
        save: `CheckpointEvery` whose `save` writes the checkpoint.
    """

    def __init__(self, save):
        super().__init__()
        self.save = save
        self.requested = False
        self.preempted_at = None
        self._previous = None

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._request)

    def _request(self, signum, frame):
        self.requested = True

    def on_train_batch_end(self, batch, logs=None):
        if self.requested and self.preempted_at is None:
            self.save.save()
            self.preempted_at = self.save.step()
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None


class StopAtStep(keras.callbacks.Callback):
    """Stops `fit` once the optimiser has made `train_steps` updates (resumed runs included)."""

    def __init__(self, train_steps):
        super().__init__()
        self.train_steps = train_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.train_steps:
            self.model.stop_training = True


class SkippedUpdates(keras.callbacks.Callback):
    """Adds `skipped_updates` to the logs under a loss scaler: the batches whose update it skipped.

    Under `mixed_float16` Keras' loss scaler skips the update of a batch whose
    scaled gradients overflow (and halves its scale); the loop trains on until
    `--train_steps` updates are applied, and this count (in the progress bar and
    TensorBoard) says how many batches that took beyond them. Nothing is added
    for an optimizer without a scaler.
    """

    def on_train_batch_end(self, batch, logs=None):
        self._add(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._add(logs)

    def _add(self, logs):
        if logs is not None and hasattr(self.model.optimizer, "skipped"):
            logs["skipped_updates"] = skipped_batches(self.model.optimizer)


class Throughput(keras.callbacks.Callback):
    """Adds `sequences_per_second` to the logs (so TensorBoard and the progress bar show it).

    Measured between consecutive batch ends, so it includes input and callback
    time: what training really achieves.

    Args:
        global_batch_size: int. Sequences per optimiser call, over all replicas.
    """

    def __init__(self, global_batch_size):
        super().__init__()
        self.global_batch_size = global_batch_size
        self._last = None

    def on_epoch_begin(self, epoch, logs=None):
        self._last = None

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        if self._last is not None and logs is not None and batch > self._last[0]:
            batches, seconds = batch - self._last[0], now - self._last[1]
            logs["sequences_per_second"] = batches * self.global_batch_size / seconds
        self._last = (batch, now)


# What the progress bar shows; TensorBoard (and the History) keep every metric.
PROGRESS_METRICS = ("loss", "masked_lm_accuracy", "disc_auc", "sequences_per_second", "skipped_updates")


class Progress(keras.callbacks.ProgbarLogger):
    """Keras' progress bar, showing only the metrics a user watches (`PROGRESS_METRICS`).

    Given to `fit` after `Throughput` (whose `sequences_per_second` it shows), it
    replaces the bar Keras would add; `verbose` still chooses bar, line or nothing.
    The logs other callbacks see are not changed.
    """

    def __init__(self, metrics=PROGRESS_METRICS):
        super().__init__()
        self.metrics = tuple(metrics)

    def _shown(self, logs):
        if not logs:
            return logs
        return {k: v for k, v in logs.items() if k.removeprefix("val_") in self.metrics}

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, self._shown(logs))

    def on_test_batch_end(self, batch, logs=None):
        super().on_test_batch_end(batch, self._shown(logs))

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, self._shown(logs))

    def on_test_end(self, logs=None):
        super().on_test_end(self._shown(logs))


class TensorBoard(keras.callbacks.TensorBoard):
    """Keras' TensorBoard, with batch summaries keyed on the optimizer's step.

    Keras counts batches from 0 in every `fit` call; a resumed run would log
    over its own earlier steps. Here the count starts at the batches already
    trained (`iterations x gradient_accumulation_steps`, plus the batches a loss
    scaler skipped), so the steps of a killed-and-resumed run continue without a gap. `flush` writes pending
    events (called before each checkpoint). An epoch cut short, as `cut_short()`
    says (the loop sets it: preempted inside an epoch), is not logged, nor its
    evaluation: the resumed run logs that epoch once, whole.
    """

    def __init__(self, log_dir, update_freq, accumulation=1):
        super().__init__(log_dir=log_dir, update_freq=update_freq)
        self.accumulation = accumulation
        self.cut_short = lambda: False

    def on_test_end(self, logs=None):
        super().on_test_end({} if self.cut_short() else logs)  # still leaves the validation writer

    def on_epoch_end(self, epoch, logs=None):
        if not self.cut_short():
            super().on_epoch_end(epoch, logs)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        optimizer = self.model.optimizer
        self._global_train_batch = int(optimizer.iterations.numpy()) * self.accumulation + skipped_batches(optimizer)

    def flush(self):
        for writer in self._writers.values():
            writer.flush()


def tensorboard(log_dir, update_freq, strategy, accumulation=1):
    """`TensorBoard` writing to `log_dir` (the chief) or a scratch folder."""
    return TensorBoard(distribute.worker_dir(log_dir, strategy), update_freq, accumulation)
