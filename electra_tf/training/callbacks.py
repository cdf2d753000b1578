"""Keras callbacks of the pre-training loop: checkpoints, throughput, stopping."""

import shutil
import time

import keras
import tensorflow as tf
from absl import logging

from electra_tf.training import distribute


class CheckpointEvery(keras.callbacks.Callback):
    """Saves model + optimizer every `every` updates through a `tf.train.CheckpointManager`.

    The manager writes a checkpoint's files first and its index (`checkpoint`)
    last, so a run killed mid-save leaves the previous checkpoint the latest
    one; it keeps the newest `max_to_keep`. On multi-worker runs every worker
    saves (reading synchronised variables is collective); only the chief's
    copy is kept.

    Args:
        checkpoint: `tf.train.Checkpoint` of the model and optimizer.
        directory: str. Where the chief writes.
        every: int. Updates between saves.
        max_to_keep: int.
        strategy: the `tf.distribute.Strategy` training runs under.
    """

    def __init__(self, checkpoint, directory, every, max_to_keep, strategy):
        super().__init__()
        self.every = every
        self.strategy = strategy
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

    def save(self):
        step = self.step()
        if step == self.last_saved:
            return
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
        self.save()


class StopAtStep(keras.callbacks.Callback):
    """Stops `fit` once the optimiser has made `train_steps` updates (resumed runs included)."""

    def __init__(self, train_steps):
        super().__init__()
        self.train_steps = train_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.train_steps:
            self.model.stop_training = True


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


def tensorboard(log_dir, update_freq, strategy):
    """Keras' TensorBoard callback writing to `log_dir` (the chief) or a scratch folder."""
    return keras.callbacks.TensorBoard(
        log_dir=distribute.worker_dir(log_dir, strategy), update_freq=update_freq
    )
