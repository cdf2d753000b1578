"""ElectraPretrainer: replaced token detection as a Keras model trained by `fit`.

One step, one owner: `compute_losses` reads the batch, masks it, runs the
generator, samples, corrupts, runs the discriminator and returns every loss
and statistic; `train_step` / `test_step` only add gradients and metrics.
The objective (`compute_losses`, the metrics) is `keras.ops` and runs on any
Keras backend; `train_step` is TensorFlow's (a gradient tape under
`tf.distribute`); under JAX `fit` takes a stateless step over the same
objective (`_stateless_train_step`), under PyTorch autograd (`_torch_train_step`).
"""

import typing

import keras
from keras import ops
from keras_hub.layers import MaskedLMHead

from electra_tf import backends
from electra_tf.layers.discriminator_head import DiscriminatorHead
from electra_tf.layers.masking import mask_tokens, scatter_positions
from electra_tf.layers.replicas import all_gather, all_reduce_sum, global_mean, is_multi_worker
from electra_tf.layers.sampling import SAMPLERS, check_sampler
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.objectives import get_objective

if backends.is_tensorflow():  # `train_step`'s gradient tape
    import tensorflow as tf


class StepOutputs(typing.NamedTuple):
    """What `ElectraPretrainer.compute_losses` computed for one batch (None: not by this objective).

    `loss` is this replica's share of the global-batch loss; the rest are per
    slot `(batch, slots)` or per position `(batch, seq_len)` tensors of this
    replica's rows.
    """

    loss: typing.Any  # scalar: gen_weight * generator MLM + disc_weight * discriminator loss
    weights: typing.Any  # (batch, slots) 1.0 at chosen positions, 0.0 at padding slots
    targets: typing.Any  # (batch, slots) the original ids at the chosen positions
    positions: typing.Any  # (batch, slots) the chosen positions
    mlm_losses: typing.Any = None  # (batch, slots) generator MLM (BERT: the encoder's MLM) cross-entropy
    mlm_correct: typing.Any = None  # (batch, slots) its argmax is the original
    sampled_correct: typing.Any = None  # (batch, slots) the generator's sample is the original
    disc_logits: typing.Any = None  # (batch, seq_len) replaced-token logits (RTD objectives)
    disc_labels: typing.Any = None  # (batch, seq_len) 1.0 where the token was replaced
    disc_weights: typing.Any = None  # the discriminator loss's weights: per position (RTD) or per slot
    disc_ids: typing.Any = None  # (batch, seq_len) the corrupted input (RTD objectives)
    disc_losses: typing.Any = None  # the discriminator loss per position (RTD) or slot (MLM objectives)
    disc_correct: typing.Any = None  # the discriminator-sized MLM's argmax is the original (MLM objectives)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraPretrainer(keras.Model):
    """ELECTRA pre-training: a generator and a discriminator sharing embeddings.

    `fit` on batches of `{"token_ids", "segment_ids", "padding_mask"}` (int32,
    `(batch, seq_len)`, no labels: masking happens in the step). Each step masks
    the batch (`mask_tokens`), runs the generator and its tied MLM head at the
    chosen positions only, draws Gumbel-max samples (no gradient), builds the
    corrupted input and its labels (a sample equal to the original is real),
    runs the discriminator and minimises `gen_weight * mlm + disc_weight * disc`.
    Losses are means over the *global* batch, so N replicas train like one.

    Args:
        discriminator: `ElectraEncoder`. Kept after pre-training.
        generator: `ElectraEncoder` or None. Must read through the
            discriminator's `embeddings` (the same layer object). None for
            `objective="mlm"`.
        objective: str. A key of `electra_tf.objectives.OBJECTIVES`.
        num_predictions: int. Prediction slots per sequence.
        mask_prob, mask_token_prob, mask_with_replacement: masking, see `mask_tokens`.
        gen_weight, disc_weight: float. Loss weights (1 and 50 in the paper).
        temperature: float. Sampling temperature.
        disallow_correct: bool. Never sample the original token.
        sampler: str. A key of `sampling.SAMPLERS`: "gumbel" (the reference's
            Gumbel-max) or "inverse_cdf" (same distribution, cheaper on CPU).
        pad_id, cls_id, sep_id, mask_id: int. Special token ids.
        seed: int. Base of the stateless masking/sampling stream.
        discriminator_output_initializer: str. Kernel initializer of the
            discriminator head's dense(1), see `DiscriminatorHead`.
        fused_elementwise: bool. Run the encoders' GELU, LayerNorm, masked
            softmax and dropout masks in training as XLA-fused kernels
            (`electra_tf.layers.fused_elementwise`: the same math, fewer passes
            over memory); False keeps Keras' ops. TensorFlow backend only:
            other backends keep Keras' ops either way.

    Example:
        ```python
        import keras
        import numpy as np
        import tensorflow as tf

        from electra_tf.config import get_config
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=1000, hidden_dim=32, embedding_dim=16, intermediate_dim=64)
        pretrainer = build_pretrainer(config)
        pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-3))
        ids = np.random.randint(200, 1000, (8, 32)).astype("int32")
        batch = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}
        pretrainer.fit(tf.data.Dataset.from_tensors(batch).repeat(3), shuffle=False)
        ```
    """

    def __init__(
        self,
        discriminator,
        generator=None,
        objective="electra",
        num_predictions=19,
        mask_prob=0.15,
        mask_token_prob=0.85,
        mask_with_replacement=True,
        gen_weight=1.0,
        disc_weight=50.0,
        temperature=1.0,
        disallow_correct=False,
        sampler="gumbel",
        pad_id=0,
        cls_id=101,
        sep_id=102,
        mask_id=103,
        seed=0,
        discriminator_output_initializer="glorot_uniform",
        fused_elementwise=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        spec = get_objective(objective)
        if spec.generator != (generator is not None):
            raise ValueError(
                f"`objective={objective!r}` {'needs' if spec.generator else 'takes no'} "
                f"generator. Received: `generator={generator!r}`"
            )
        if generator is not None and generator.embeddings is not discriminator.embeddings:
            raise ValueError(
                "The generator must read through the discriminator's embeddings: build "
                "it with `ElectraEncoder(..., embeddings=discriminator.embeddings)`."
            )
        # === Layers ===
        self.discriminator = discriminator
        self.generator = generator
        self.embeddings = discriminator.embeddings
        initializer = keras.initializers.TruncatedNormal(stddev=discriminator.initializer_range)
        head_kwargs = dict(
            token_embedding=self.embeddings.token_embedding,
            intermediate_activation=keras.activations.gelu,
            layer_norm_epsilon=discriminator.layer_norm_epsilon,
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
        )
        self.generator_head = (
            MaskedLMHead(name="generator_predictions", **head_kwargs) if generator else None
        )
        self.task = spec.task
        if spec.detects_replacements:
            self.discriminator_head = DiscriminatorHead(
                discriminator.hidden_dim,
                initializer_range=discriminator.initializer_range,
                output_initializer=discriminator_output_initializer,
                dtype=self.dtype_policy,
                name="discriminator_predictions",
            )
            self.mlm_head = None
        else:
            self.discriminator_head = None
            self.mlm_head = MaskedLMHead(name="mlm_predictions", **head_kwargs)

        # === Metrics (the official names) ===
        mean = keras.metrics.Mean
        self.loss_tracker = mean(name="loss")
        self.mlm_loss_tracker = mean(name="masked_lm_loss")
        self.mlm_accuracy = mean(name="masked_lm_accuracy")
        self.sampled_mlm_accuracy = mean(name="sampled_masked_lm_accuracy") if generator else None
        self.disc_loss_tracker = self.disc_accuracy = self.disc_auc = None
        self.disc_precision = self.disc_recall = None
        if self.discriminator_head is not None:
            self.disc_loss_tracker = mean(name="disc_loss")
            self.disc_accuracy = mean(name="disc_accuracy")
            self.disc_auc = keras.metrics.AUC(name="disc_auc")
            self.disc_precision = keras.metrics.Precision(name="disc_precision")
            self.disc_recall = keras.metrics.Recall(name="disc_recall")
        if self.mlm_head is not None and generator is not None:
            self.disc_loss_tracker = mean(name="disc_mlm_loss")
            self.disc_accuracy = mean(name="disc_mlm_accuracy")

        # === Config ===
        self.objective = objective
        self.num_predictions = num_predictions
        self.mask_prob = mask_prob
        self.mask_token_prob = mask_token_prob
        self.mask_with_replacement = mask_with_replacement
        self.gen_weight = gen_weight
        self.disc_weight = disc_weight
        self.temperature = temperature
        self.disallow_correct = disallow_correct
        check_sampler(sampler)
        self.sampler = sampler
        self.pad_id = pad_id
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.mask_id = mask_id
        self.seed = seed
        self.discriminator_output_initializer = discriminator_output_initializer
        self.fused_elementwise = fused_elementwise
        if backends.name() == "jax":  # Keras' JAX trainer calls `train_step(state, data)`: a stateless step
            self.train_step, self.test_step = self._stateless_train_step, self._stateless_test_step
        elif backends.name() == "torch":  # eager autograd
            self.train_step = self._torch_train_step
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        self.discriminator.build()
        if self.generator is not None:
            self.generator.build()
            self.generator_head.build((None, None, self.generator.hidden_dim))
        if self.fused_elementwise and backends.is_tensorflow():
            from electra_tf.layers.fused_elementwise import use_fused_elementwise

            for encoder in (self.discriminator, self.generator):
                if encoder is not None:
                    use_fused_elementwise(encoder)
        hidden_shape = (None, None, self.discriminator.hidden_dim)
        for head in (self.discriminator_head, self.mlm_head):
            if head is not None:
                head.build(hidden_shape)
        self.built = True

    def call(self, inputs, training=False):
        """Discriminator replaced-token logits `(batch, seq_len)` (MLM objectives: its sequence output)."""
        hidden = self.discriminator(inputs, training=training)
        if self.discriminator_head is None:
            return hidden
        return self.discriminator_head(hidden)

    # --- The ELECTRA step ---
    def compute_losses(self, batch, seed, training, masked=None, sampled=None):
        """Masks, generates, samples, corrupts, discriminates. Returns a `StepOutputs`.

        Losses are this replica's share of the global-batch mean: summed over
        local positions and divided by the global count, so summing over
        replicas (as gradient all-reduce does) gives the global mean.

        `masked` (what `mask_tokens` returns) and `sampled` (int32 `(batch,
        slots)` generator samples) replace the step's own draws when given:
        the loss as a function of the weights alone, the same on every backend.
        """
        token_ids = ops.cast(batch["token_ids"], "int32")
        padding_mask = ops.cast(batch["padding_mask"], "int32")
        segment_ids = ops.cast(batch["segment_ids"], "int32")
        if masked is None:
            masked = self.mask(token_ids, padding_mask, seed)
        positions, targets, weights = masked["positions"], masked["target_ids"], masked["weights"]
        positions, targets = ops.cast(positions, "int32"), ops.cast(targets, "int32")
        weights = ops.cast(weights, "float32")
        out = {"weights": weights, "targets": targets, "positions": positions}
        real = ops.cast(padding_mask, "float32")
        seq_len = token_ids.shape[1]

        def inputs(ids):
            return {"token_ids": ids, "segment_ids": segment_ids, "padding_mask": padding_mask}

        disc_ids = ops.cast(masked["masked_ids"], "int32")
        total = 0.0
        if self.generator is not None:
            hidden = self.generator(inputs(disc_ids), training=training)
            logits = ops.cast(self.generator_head(hidden, mask_positions=positions), "float32")
            out["mlm_losses"] = _cross_entropy(targets, logits)
            out["mlm_correct"] = _correct(targets, logits)
            if sampled is None:
                sampled = SAMPLERS[self.sampler](
                    logits,
                    seed,
                    self.temperature,
                    disallow_ids=targets if self.disallow_correct else None,
                )
            sampled = ops.cast(sampled, "int32")
            out["sampled_correct"] = ops.cast(ops.equal(sampled, targets), "float32")
            replaced_at = scatter_positions(ops.cast(weights, "int32"), positions, seq_len) > 0
            sampled_at = scatter_positions(sampled * ops.cast(weights, "int32"), positions, seq_len)
            disc_ids = ops.where(replaced_at, sampled_at, token_ids)
            total += self.gen_weight * global_mean(out["mlm_losses"], weights)

        hidden = self.discriminator(inputs(disc_ids), training=training)
        if self.task.startswith("rtd"):
            disc_logits = ops.cast(self.discriminator_head(hidden), "float32")
            labels = ops.cast(ops.not_equal(disc_ids, token_ids), "float32")
            disc_weights = real
            if self.task == "rtd_chosen":
                disc_weights = scatter_positions(weights, positions, seq_len)
            out.update(disc_logits=disc_logits, disc_labels=labels, disc_weights=disc_weights)
            out["disc_ids"] = disc_ids
            out["disc_losses"] = ops.binary_crossentropy(labels, disc_logits, from_logits=True)
            total += self.disc_weight * global_mean(out["disc_losses"], disc_weights)
        else:
            if self.task == "mlm_all":
                task_positions = ops.broadcast_to(ops.arange(seq_len, dtype="int32")[None], ops.shape(token_ids))
                task_targets, task_weights = token_ids, real
            else:
                task_positions, task_targets, task_weights = positions, targets, weights
            logits = ops.cast(self.mlm_head(hidden, mask_positions=task_positions), "float32")
            task_losses = _cross_entropy(task_targets, logits)
            task_correct = _correct(task_targets, logits)
            if self.generator is None:  # BERT: the encoder's MLM is the main loss
                out.update(mlm_losses=task_losses, mlm_correct=task_correct)
                total += global_mean(task_losses, task_weights)
            else:
                out.update(disc_losses=task_losses, disc_correct=task_correct)
                out["disc_weights"] = task_weights
                total += global_mean(task_losses, task_weights)
        return StepOutputs(loss=total, **out)

    def mask(self, token_ids, padding_mask, seed):
        """`mask_tokens` of a batch with this model's masking settings: what `compute_losses` predicts."""
        return mask_tokens(
            token_ids,
            padding_mask,
            seed,
            num_predictions=self.num_predictions,
            mask_prob=self.mask_prob,
            mask_id=self.mask_id,
            special_ids=(self.cls_id, self.sep_id, self.mask_id),
            mask_token_prob=self.mask_token_prob,
            with_replacement=self.mask_with_replacement,
        )

    def _step_seed(self, salt):
        # Keras' `iterations` counts updates; with gradient accumulation every
        # micro-batch needs its own numbers, so key on the call counter.
        step = 0
        optimizer = getattr(self, "optimizer", None)  # absent before `compile`
        if optimizer is not None:
            step = getattr(optimizer, "inner_optimizer", optimizer)._iterations
        dtype = "int64" if backends.is_tensorflow() else "int32"  # (JAX keeps 32-bit ints)
        return ops.stack([ops.convert_to_tensor(self.seed * 2 + salt, dtype), ops.cast(step, dtype)])

    def train_step(self, data):
        data, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            out = self.compute_losses(data, self._step_seed(0), training=True)
            loss = self.optimizer.scale_loss(out.loss)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return self._update_metrics(out)

    def test_step(self, data):
        data, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        out = self.compute_losses(data, self._step_seed(1), training=False)
        return self._update_metrics(out)

    # --- The step under JAX: the same objective as a function of the variables' values ---
    def _stateless_train_step(self, state, data):
        """`train_step` for Keras' JAX trainer: `(logs, state)` from `state`, the variables' values (no assignment)."""
        import jax

        trainable, non_trainable, optimizer_values, metrics_values = state
        data, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        optimizer_variables = self.optimizer.variables

        def loss_of(trainable, non_trainable):
            mapping = [*zip(self.trainable_variables, trainable), *zip(self.non_trainable_variables, non_trainable),
                       *zip(optimizer_variables, optimizer_values)]
            with keras.StatelessScope(state_mapping=mapping) as scope:
                out = self.compute_losses(data, self._step_seed(0), training=True)
                loss = self.optimizer.scale_loss(out.loss)
            return loss, (out, _current_values(scope, self.non_trainable_variables, non_trainable))

        (_, (out, non_trainable)), gradients = jax.value_and_grad(loss_of, has_aux=True)(trainable, non_trainable)
        trainable, optimizer_values = self.optimizer.stateless_apply(optimizer_values, gradients, trainable)
        logs, metrics_values = self._stateless_metrics(out, metrics_values, optimizer_values)
        return logs, (trainable, non_trainable, optimizer_values, metrics_values)

    def _torch_train_step(self, data):
        """`train_step` for Keras' PyTorch trainer: autograd on the same objective."""
        import torch

        data, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        self.zero_grad()
        out = self.compute_losses(data, self._step_seed(0), training=True)
        self.optimizer.scale_loss(out.loss).backward()
        variables = self.trainable_variables
        gradients = [v.value.grad for v in variables]
        with torch.no_grad():
            self.optimizer.apply(gradients, variables)
        return self._update_metrics(out)

    def _stateless_test_step(self, state, data):
        """`test_step` for Keras' JAX trainer."""
        trainable, non_trainable, metrics_values = state
        data, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        optimizer_values = [v.value for v in self.optimizer.variables] if self.optimizer is not None else []
        mapping = [*zip(self.trainable_variables, trainable), *zip(self.non_trainable_variables, non_trainable)]
        with keras.StatelessScope(state_mapping=mapping):
            out = self.compute_losses(data, self._step_seed(1), training=False)
        logs, metrics_values = self._stateless_metrics(out, metrics_values, optimizer_values)
        return logs, (trainable, non_trainable, metrics_values)

    def _stateless_metrics(self, out, metrics_values, optimizer_values):
        optimizer_variables = self.optimizer.variables if self.optimizer is not None else []
        mapping = [*zip(self.metrics_variables, metrics_values), *zip(optimizer_variables, optimizer_values)]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            logs = self._update_metrics(out)
        return logs, _current_values(scope, self.metrics_variables, metrics_values)

    def _update_metrics(self, out):
        # Metrics see the whole global batch on every replica (gathered), so
        # each replica's result is the global one and Keras' mean over
        # replicas is exact, AUC included.
        out = out._replace(
            loss=all_reduce_sum(out.loss),
            **{k: all_gather(getattr(out, k)) for k in _METRIC_INPUTS if getattr(out, k) is not None},
        )
        self.loss_tracker.update_state(out.loss)
        weights = out.weights
        if out.mlm_losses is not None:
            self.mlm_loss_tracker.update_state(out.mlm_losses, sample_weight=weights)
            self.mlm_accuracy.update_state(out.mlm_correct, sample_weight=weights)
        if self.sampled_mlm_accuracy is not None:
            self.sampled_mlm_accuracy.update_state(out.sampled_correct, sample_weight=weights)
        if out.disc_losses is not None:
            self.disc_loss_tracker.update_state(out.disc_losses, sample_weight=out.disc_weights)
        if out.disc_logits is not None:
            labels, probs, disc_weights = out.disc_labels, ops.sigmoid(out.disc_logits), out.disc_weights
            correct = ops.cast(ops.equal(labels, ops.cast(probs > 0.5, "float32")), "float32")
            self.disc_accuracy.update_state(correct, sample_weight=disc_weights)
            for metric in (self.disc_auc, self.disc_precision, self.disc_recall):
                metric.update_state(labels, probs, sample_weight=disc_weights)
        elif out.disc_correct is not None:
            self.disc_accuracy.update_state(out.disc_correct, sample_weight=out.disc_weights)
        logs = {m.name: m.result() for m in self.metrics}
        if self.optimizer is not None:
            logs["learning_rate"] = ops.cast(self.optimizer.learning_rate, "float32")
        if is_multi_worker():
            # Keras reduces multi-worker logs with MEAN over axis 0, which a
            # scalar lacks; the values are already global, so rank 1 is exact.
            logs = {k: ops.reshape(v, [1]) for k, v in logs.items()}
        return logs

    @property
    def metrics(self):
        trackers = [
            self.loss_tracker,
            self.mlm_loss_tracker,
            self.mlm_accuracy,
            self.sampled_mlm_accuracy,
            self.disc_loss_tracker,
            self.disc_accuracy,
            self.disc_auc,
            self.disc_precision,
            self.disc_recall,
        ]
        return [m for m in trackers if m is not None]

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Every layer is built in `__init__`. Keras' symbolic build would
        # `strategy.reduce` the first int32 batch just to read its shapes,
        # which MultiWorkerMirroredStrategy's collectives reject; only the
        # optimizer is left to build.
        if self.optimizer is not None and not self.optimizer.built:
            if not backends.is_tensorflow():
                self.optimizer.build(self.trainable_variables)
                return
            with self.distribute_strategy.scope():
                self.optimizer.build(self.trainable_variables)

    # === Config ===
    def get_config(self):
        return {
            "name": self.name,
            "discriminator": self.discriminator.get_config(),
            "generator": self.generator.get_config() if self.generator is not None else None,
            "objective": self.objective,
            "num_predictions": self.num_predictions,
            "mask_prob": self.mask_prob,
            "mask_token_prob": self.mask_token_prob,
            "mask_with_replacement": self.mask_with_replacement,
            "gen_weight": self.gen_weight,
            "disc_weight": self.disc_weight,
            "temperature": self.temperature,
            "disallow_correct": self.disallow_correct,
            "sampler": self.sampler,
            "pad_id": self.pad_id,
            "cls_id": self.cls_id,
            "sep_id": self.sep_id,
            "mask_id": self.mask_id,
            "seed": self.seed,
            "discriminator_output_initializer": self.discriminator_output_initializer,
            "fused_elementwise": self.fused_elementwise,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        discriminator = ElectraEncoder.from_config(config.pop("discriminator"))
        generator_config = config.pop("generator")
        generator = None
        if generator_config is not None:
            generator = ElectraEncoder(**generator_config, embeddings=discriminator.embeddings)
        return cls(discriminator=discriminator, generator=generator, **config)


def build_pretrainer(config):
    """An `ElectraPretrainer` from an `electra_tf.config.ElectraConfig` (see `pretrainer_from_sizes`)."""
    sizes = dict(
        vocab_size=config.vocab_size,
        embedding_dim=config.embedding_dim,
        dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
        num_segments=config.num_segments,
        activation=config.activation,
        layer_norm_epsilon=config.layer_norm_epsilon,
        initializer_range=config.initializer_range,
        embeddings_project_initializer=config.embeddings_project_initializer,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        hidden_dim=config.hidden_dim,
        intermediate_dim=config.intermediate_dim,
    )
    generator_sizes = None
    if get_objective(config.objective).generator:
        generator_sizes = dict(
            num_layers=config.num_layers,
            num_heads=config.generator_num_heads,
            hidden_dim=config.generator_hidden_dim,
            intermediate_dim=config.generator_intermediate_dim,
        )
    return pretrainer_from_sizes(
        sizes,
        generator_sizes,
        objective=config.objective,
        num_predictions=config.num_predictions,
        mask_prob=config.mask_prob,
        mask_token_prob=config.mask_token_prob,
        mask_with_replacement=config.mask_with_replacement,
        gen_weight=config.gen_weight,
        disc_weight=config.disc_weight,
        temperature=config.temperature,
        disallow_correct=config.disallow_correct,
        sampler=config.sampler,
        pad_id=config.pad_id,
        cls_id=config.cls_id,
        sep_id=config.sep_id,
        mask_id=config.mask_id,
        seed=config.seed,
        discriminator_output_initializer=config.discriminator_output_initializer,
        fused_elementwise=config.fused_elementwise,
    )


def pretrainer_from_sizes(sizes, generator_sizes=None, **pretrainer_kwargs):
    """The one way an `ElectraPretrainer` is assembled: a discriminator, a generator sharing its embeddings.

    Args:
        sizes: dict of `ElectraEncoder` arguments for the discriminator.
        generator_sizes: dict or None. The generator's own arguments (`num_layers`,
            `num_heads`, `hidden_dim`, `intermediate_dim`); the others are the
            discriminator's. None: no generator (`objective="mlm"`).
        **pretrainer_kwargs: passed to `ElectraPretrainer`.

    Example:
        ```python
        from electra_tf.models.pretrainer import pretrainer_from_sizes

        sizes = dict(vocab_size=200, num_layers=1, num_heads=1, hidden_dim=32,
                     embedding_dim=16, intermediate_dim=64)
        pretrainer = pretrainer_from_sizes(sizes, dict(num_layers=1, num_heads=1, hidden_dim=8,
                                                       intermediate_dim=32))
        ```
    """
    discriminator = ElectraEncoder(**sizes, name="discriminator")
    generator = None
    if generator_sizes is not None:
        shared = {k: v for k, v in sizes.items() if k not in generator_sizes}
        generator = ElectraEncoder(**shared, **generator_sizes, embeddings=discriminator.embeddings, name="generator")
    return ElectraPretrainer(
        discriminator=discriminator,
        generator=generator,
        name="electra_pretrainer",
        **pretrainer_kwargs,
    )


# What `_update_metrics` reads of `compute_losses`' output (the rest is not gathered).
_METRIC_INPUTS = (
    "weights", "mlm_losses", "mlm_correct", "sampled_correct",
    "disc_losses", "disc_weights", "disc_labels", "disc_logits", "disc_correct",
)


def _current_values(scope, variables, values):
    """The values `variables` hold at the end of a `keras.StatelessScope` (`values` for those it did not assign)."""
    found = [scope.get_current_value(v) for v in variables]
    return [value if new is None else new for new, value in zip(found, values)]


def _cross_entropy(targets, logits):
    return ops.sparse_categorical_crossentropy(targets, logits, from_logits=True)


def _correct(targets, logits):
    return ops.cast(ops.equal(ops.cast(ops.argmax(logits, -1), "int32"), targets), "float32")
