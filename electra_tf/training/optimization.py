"""Optimiser and learning-rate schedule of the reference (section 3)."""

import keras
import tensorflow as tf

# Variables whose name contains one of these get no weight decay (LayerNorm and biases).
NO_DECAY = ("bias", "gamma", "beta")


@keras.saving.register_keras_serializable(package="electra_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * min(1, step / warmup) * max(0, 1 - step / total)`: warmup times decay.

    The reference multiplies the two (it does not switch from one to the
    other), so the peak is a little under `peak` when `warmup < total`.

    Args:
        peak: float. Learning rate before warmup and decay.
        warmup_steps: int. Steps of linear warmup (0: none).
        total_steps: int. Step at which the rate reaches 0.
        steps_per_update: int. Optimiser calls per update (gradient
            accumulation): the schedule counts updates, not calls.

    Example:
        ```python
        schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=100)
        float(schedule(5))  # 1e-3 * 0.5 * 0.95
        ```
    """

    def __init__(self, peak, warmup_steps, total_steps, steps_per_update=1):
        self.peak = peak
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.steps_per_update = steps_per_update

    def __call__(self, step):
        step = keras.ops.cast(step // self.steps_per_update, "float32")
        decay = keras.ops.maximum(0.0, 1.0 - step / float(max(1, self.total_steps)))
        warmup = 1.0
        if self.warmup_steps > 0:
            warmup = keras.ops.minimum(1.0, step / float(self.warmup_steps))
        return self.peak * warmup * decay

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "steps_per_update": self.steps_per_update,
        }


class _SumThenClip:
    """Sums gradients over replicas *before* clipping them.

    Keras 3 (TF backend) clips each replica's gradients and sums them after,
    so `global_clipnorm` bounds every replica's share instead of the global
    gradient, and training changes with the number of replicas. Summing
    first (one all-reduce, as before) makes N replicas train like one device.
    """

    def _backend_apply_gradients(self, grads, trainable_variables):
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            present = [i for i, g in enumerate(grads) if g is not None]
            summed = context.all_reduce(tf.distribute.ReduceOp.SUM, [grads[i] for i in present])
            grads = list(grads)
            for i, g in zip(present, summed):
                grads[i] = g
        return super()._backend_apply_gradients(grads, trainable_variables)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        return grads_and_vars  # summed in `_backend_apply_gradients`


@keras.saving.register_keras_serializable(package="electra_tf")
class AdamW(_SumThenClip, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose clipping sees the global gradient under any strategy."""


@keras.saving.register_keras_serializable(package="electra_tf")
class Lamb(_SumThenClip, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` whose clipping sees the global gradient under any strategy."""


def create_optimizer(config):
    """AdamW (or LAMB) with the reference's settings, from an `ElectraConfig`.

    Decoupled weight decay 0.01 on everything but LayerNorm and biases, global
    norm clipping, epsilon 1e-6, warmup times linear decay to 0, Keras'
    own gradient accumulation. Differs from the official TF1 Adam only in that
    Keras applies Adam's bias correction (the official one does not).
    """
    accumulation = config.gradient_accumulation_steps
    schedule = WarmupLinearDecay(
        config.learning_rate, config.warmup_steps, config.train_steps, steps_per_update=accumulation
    )
    kwargs = dict(
        learning_rate=schedule,
        weight_decay=config.weight_decay,
        beta_1=config.adam_beta1,
        beta_2=config.adam_beta2,
        epsilon=config.adam_epsilon,
        global_clipnorm=config.clip_norm or None,
        gradient_accumulation_steps=accumulation if accumulation > 1 else None,
    )
    optimizer_class = {"adamw": AdamW, "lamb": Lamb}[config.optimizer]
    optimizer = optimizer_class(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
