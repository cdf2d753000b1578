"""Moved to `electra_tf.finetuning.layerwise_lr`; this name is kept for one release (docs/serving.md imports it)."""

from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW, layer_depth, layerwise_multiplier  # noqa: F401
