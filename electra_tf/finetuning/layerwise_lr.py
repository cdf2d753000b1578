"""Layer-wise learning-rate decay for fine-tuning (reference section 5).

Each variable trains at `learning_rate * decay ** (num_layers + 2 - depth)`:
depth 0 for the embeddings (and `embeddings_project`), `i + 1` for
transformer layer `i`, `num_layers + 2` for the task head (rate unscaled).

The rule is applied to the *update*, not the gradient: Adam normalises the
gradient by its running RMS, so scaling a gradient by `m` leaves Adam's step
(almost) unchanged. `LayerwiseAdamW` multiplies the learning rate each
variable sees, which is what the official `AdamWeightDecayOptimizer` does.
"""

import re

import keras

from electra_tf.training.optimization import OptionalBiasCorrection, _SumThenClip

_LAYER = re.compile(r"^transformer_layer_(\d+)$")
_EMBEDDINGS = ("embeddings", "embeddings_project")


def layer_depth(variable_path, num_layers):
    """Depth of a variable for layer-wise decay, from its Keras path.

    Path components (the variable's own name excluded) are read left to right:
    `embeddings` or `embeddings_project` gives 0, `transformer_layer_{i}` gives
    `i + 1`; a variable matching neither (the task head) gets `num_layers + 2`.

    Args:
        variable_path: str. `variable.path`, e.g.
            "electra_classifier/electra_encoder/transformer_layer_1/...".
        num_layers: int. Transformer layers of the encoder.

    Returns:
        int in `[0, num_layers + 2]`.

    Example:
        >>> from electra_tf.finetuning.layerwise_lr import layer_depth
        >>> layer_depth("clf/encoder/transformer_layer_0/query/kernel", 12)
        1
    """
    for part in variable_path.split("/")[:-1]:
        if part in _EMBEDDINGS:
            return 0
        match = _LAYER.match(part)
        if match:
            layer = int(match.group(1))
            if layer >= num_layers:
                raise ValueError(
                    f"Variable {variable_path!r} belongs to layer {layer}, but "
                    f"`num_layers={num_layers}`."
                )
            return layer + 1
    return num_layers + 2


def layerwise_multiplier(variable_path, num_layers, decay):
    """`decay ** (num_layers + 2 - depth)` for one variable path."""
    return decay ** (num_layers + 2 - layer_depth(variable_path, num_layers))


@keras.saving.register_keras_serializable(package="electra_tf")
class LayerwiseAdamW(_SumThenClip, OptionalBiasCorrection, keras.optimizers.AdamW):
    """AdamW whose learning rate is scaled per variable by layer-wise decay.

    Drop-in for `model.compile(optimizer=...)` on an `ElectraClassifier`
    (any model whose encoder layers are named `embeddings`,
    `embeddings_project`, `transformer_layer_{i}`). Weight decay defaults to 0,
    as in the reference fine-tuning; when set, it is decoupled and *not*
    layer-scaled. `learning_rate` may be a schedule. Gradients are summed
    over replicas before `global_clipnorm` clips them, so N replicas train
    like one device (see `optimization._SumThenClip`).

    Args:
        learning_rate: float or schedule. The task head's rate.
        num_layers: int. Transformer layers of the encoder.
        layerwise_decay: float. Decay per layer (0.8 small/base, 0.9 large);
            1.0 disables it.
        weight_decay: float. Decoupled weight decay (reference: 0).
        bias_correction: bool. Adam's bias correction (default True, Keras'
            AdamW; False is the official update, see
            `electra_tf.training.optimization.OptionalBiasCorrection`).
        **kwargs: passed to `keras.optimizers.AdamW` (`beta_1`, `epsilon`,
            `global_clipnorm`, ...).

    Example:
        ```python
        from electra_tf.tasks.classification.model import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW

        encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)
        classifier.build()
        optimizer = LayerwiseAdamW(3e-4, num_layers=2, layerwise_decay=0.8, epsilon=1e-6)
        classifier.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
        optimizer.build(classifier.trainable_variables)
        multipliers = optimizer.multipliers()  # {variable path: multiplier}
        sorted({round(m, 4) for m in multipliers.values()})  # [0.4096, 0.512, 0.64, 1.0]: embeddings .. head
        ```
    """

    def __init__(
        self,
        learning_rate=3e-4,
        num_layers=12,
        layerwise_decay=0.8,
        weight_decay=0.0,
        name="layerwise_adamw",
        **kwargs,
    ):
        if not 0.0 < layerwise_decay <= 1.0:
            raise ValueError(
                f"`layerwise_decay` must be in (0, 1]. Received: `layerwise_decay={layerwise_decay}`"
            )
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name, **kwargs)
        self.num_layers = num_layers
        self.layerwise_decay = layerwise_decay
        self._lr_multipliers = []

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._lr_multipliers = [
            layerwise_multiplier(v.path, self.num_layers, self.layerwise_decay) for v in var_list
        ]

    def multipliers(self):
        """dict variable path -> learning-rate multiplier (after `build`)."""
        return {v.path: m for v, m in zip(self._trainable_variables, self._lr_multipliers)}

    def update_step(self, gradient, variable, learning_rate):
        multiplier = self._lr_multipliers[self._get_variable_index(variable)]
        return super().update_step(gradient, variable, learning_rate if multiplier == 1 else learning_rate * multiplier)

    def get_config(self):
        config = super().get_config()
        config.update({"num_layers": self.num_layers, "layerwise_decay": self.layerwise_decay})
        return config
