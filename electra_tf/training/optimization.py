"""Optimiser and learning-rate schedule of the reference (section 3)."""

import weakref

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
        >>> from electra_tf.training.optimization import WarmupLinearDecay
        >>> schedule = WarmupLinearDecay(1e-3, warmup_steps=10, total_steps=100)
        >>> round(float(schedule(5)), 8)  # 1e-3 * 0.5 * 0.95
        0.000475
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
        if keras.backend.backend() != "tensorflow":  # JAX's DataParallel: the gradients are the global batch's
            return super()._backend_apply_gradients(grads, trainable_variables)
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


class OptionalBiasCorrection:
    """Adam's update with or without bias correction (`bias_correction=False`: the official one), in one kernel.

    Keras' Adam steps by `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + eps)`;
    the official `AdamWeightDecayOptimizer` (google-research/electra
    `model/optimization.py`) by `lr * m / (sqrt(v) + eps)`: about
    `(1 - beta_1^t) / sqrt(1 - beta_2^t)` times Keras' step (defaults: 3.2 at
    t = 1, 6.5 at 10, 3.2 at 100, 1.3 at 1000, 1.03 at 3000). The moments and
    decoupled weight decay (`lr * weight_decay * param`, applied by Keras
    before the update, from the same pre-update param) are the same in both.
    Mixed into an Adam subclass; a subclass that scales `learning_rate` in its
    own `update_step` (layer-wise decay) composes with it.

    On TensorFlow both run as its fused `ResourceApplyAdam` kernel, which computes
    Keras' expressions (`m += (g - m) * (1 - beta_1)`, ...; beta powers 0 give
    the official step): one pass over each variable and its slots instead of
    Keras' ten element-wise ops, with the step's scalars made once per traced
    graph, so the train step's graph is smaller and traces faster
    (`benchmarks/results/finetune_end_to_end.md`). `amsgrad` keeps Keras' own
    update. A weight decay of 0 (the fine-tuning default) adds no ops. On JAX and PyTorch the update
    is Keras' own in `keras.ops` (`alpha = lr` for the official one).
    """

    def __init__(self, *args, bias_correction=True, **kwargs):
        super().__init__(*args, **kwargs)
        if not bias_correction and self.amsgrad:
            raise ValueError("`bias_correction=False` is the official Adam, which has no `amsgrad`.")
        self.bias_correction = bias_correction

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow" or self.amsgrad:  # Keras' own step, or the official one in ops
            if self.amsgrad or self.bias_correction:
                return super().update_step(gradient, variable, learning_rate)
            return self._official_update(gradient, variable, learning_rate)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        beta_1_power, beta_2_power, beta_1, beta_2, epsilon = self._adam_scalars(dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(self._momentums[index]), v=_handle(self._velocities[index]),
            beta1_power=beta_1_power, beta2_power=beta_2_power, lr=tf.cast(learning_rate, dtype),
            beta1=beta_1, beta2=beta_2, epsilon=epsilon, grad=tf.cast(tf.convert_to_tensor(gradient), dtype))

    def _official_update(self, gradient, variable, learning_rate):
        """The official step in `keras.ops` (JAX, PyTorch): `ResourceApplyAdam`'s expressions, beta powers 0."""
        ops = keras.ops
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        gradient = ops.cast(gradient, dtype)
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        step = ops.divide(ops.multiply(m, ops.cast(learning_rate, dtype)), ops.add(ops.sqrt(v), self.epsilon))
        self.assign_sub(variable, step)

    def _adam_scalars(self, dtype):
        """This step's beta powers, betas and epsilon as `dtype` tensors: made once per traced graph, not per variable."""
        graph = None if tf.executing_eagerly() else tf.compat.v1.get_default_graph()
        cached = getattr(self, "_scalars_cache", None)
        if graph is not None and cached is not None and cached[0]() is graph and cached[1] == dtype:
            return cached[2]
        if self.bias_correction:
            step = tf.cast(self.iterations + 1, dtype)
            powers = (tf.pow(tf.cast(self.beta_1, dtype), step), tf.pow(tf.cast(self.beta_2, dtype), step))
        else:
            powers = (tf.zeros([], dtype),) * 2  # alpha = lr * sqrt(1 - 0) / (1 - 0) = lr: the official step
        scalars = (*powers, tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype), tf.cast(self.epsilon, dtype))
        if graph is not None:
            self._scalars_cache = (weakref.ref(graph), dtype, scalars)
        return scalars

    def _apply_weight_decay(self, variables):
        if not self.weight_decay:
            return  # Keras adds `var -= var * 0 * lr` for every variable otherwise
        super()._apply_weight_decay(variables)

    def get_config(self):
        return super().get_config() | {"bias_correction": self.bias_correction}


def _handle(variable):
    """The resource handle of a Keras or TF variable (under a strategy's update: this device's copy)."""
    return (variable.value if isinstance(variable, keras.Variable) else variable).handle


@keras.saving.register_keras_serializable(package="electra_tf")
class AdamW(_SumThenClip, OptionalBiasCorrection, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` whose clipping sees the global gradient under any strategy.

    `bias_correction=False` gives the official update (see `OptionalBiasCorrection`).
    """


@keras.saving.register_keras_serializable(package="electra_tf")
class Lamb(_SumThenClip, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` whose clipping sees the global gradient under any strategy."""


@keras.saving.register_keras_serializable(package="electra_tf")
class CountingLossScaleOptimizer(keras.optimizers.LossScaleOptimizer):
    """Keras' dynamic loss scaling (`mixed_float16`), counting the batches whose update it skipped.

    The scaler multiplies the loss by its scale (2**15 to start) and skips the update of
    any batch whose scaled gradients overflow float16, halving the scale: the first few
    batches of a run are typically skipped while the scale settles. `iterations` is the
    inner optimizer's (applied updates); `skipped` counts the batches trained on without
    an update, so the batches read are `iterations x accumulation + skipped`.

    Example:
        >>> import keras
        >>> from electra_tf.training.optimization import CountingLossScaleOptimizer, skipped_batches
        >>> optimizer = CountingLossScaleOptimizer(keras.optimizers.SGD(0.1))
        >>> weight = keras.Variable(1.0)
        >>> optimizer.apply([keras.ops.convert_to_tensor(float("inf"))], [weight])
        >>> skipped_batches(optimizer), int(optimizer.iterations.numpy()), float(weight.numpy())
        (1, 0, 1.0)
    """

    def build(self, var_list):
        self.skipped = self.add_variable(
            shape=(), dtype="int", initializer=keras.initializers.Zeros(), aggregation="none",
            name="skipped_updates",
        )
        super().build(var_list)

    def _stateful_handle_non_finite_grads(self):
        super()._stateful_handle_non_finite_grads()
        self.skipped.assign_add(1)

    def state(self):
        """The scaler's own variables by name (scale, growth counter, skipped count): what a resume needs."""
        return {v.name: v for v in (self.dynamic_scale, self.step_counter, self.skipped)}


def loss_scaled(optimizer, precision):
    """`optimizer` wrapped in a `CountingLossScaleOptimizer` under `mixed_float16` (the only policy that needs one)."""
    return CountingLossScaleOptimizer(optimizer) if precision == "mixed_float16" else optimizer


def skipped_batches(optimizer):
    """Batches a `CountingLossScaleOptimizer` skipped (non-finite gradients); 0 for any other optimizer."""
    skipped = getattr(optimizer, "skipped", None)
    return int(skipped.numpy()) if skipped is not None else 0


def create_optimizer(config):
    """AdamW (or LAMB) with the reference's settings, from an `ElectraConfig`.

    Decoupled weight decay 0.01 on everything but LayerNorm and biases, global
    norm clipping, epsilon 1e-6, warmup times linear decay to 0, Keras'
    own gradient accumulation. Adam without bias correction, as the official
    TF1 optimizer, unless `config.adam_bias_correction` (Keras' AdamW as is;
    LAMB always has it).
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
    if config.optimizer == "adamw":
        optimizer = AdamW(bias_correction=config.adam_bias_correction, **kwargs)
    else:
        optimizer = Lamb(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
