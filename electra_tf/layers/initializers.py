"""Kernel initializers by name, as the config spells them."""

import keras

# The names `ElectraConfig` accepts (`electra_tf.config.INITIALIZERS`):
# "glorot_uniform": what the official TF1 code gets from `tf.layers.dense` without a
# `kernel_initializer` (`embeddings_project`, the discriminator's dense(1));
# "truncated_normal": `TruncatedNormal(stddev=initializer_range)`, the rest of the model.


def kernel_initializer(name, initializer_range):
    """The Keras kernel initializer called `name`: "glorot_uniform" or "truncated_normal".

    Example:
        ```python
        from electra_tf.layers.initializers import kernel_initializer

        kernel_initializer("truncated_normal", 0.02).get_config()["stddev"]  # 0.02
        ```
    """
    if name == "truncated_normal":
        return keras.initializers.TruncatedNormal(stddev=initializer_range)
    if name == "glorot_uniform":
        return keras.initializers.GlorotUniform()
    raise ValueError(f"Unknown initializer. Received: `{name!r}`. Choose 'glorot_uniform' or 'truncated_normal'.")
