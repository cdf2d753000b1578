"""The Keras backends electra_tf's model runs on, and which of its paths are TensorFlow's alone.

The model core (`ElectraEmbeddings`, `ElectraEncoder`, the discriminator and generator heads, the
task heads, masking, sampling and the pre-training loss) is written in `keras.ops` /
`keras.random` and runs under `KERAS_BACKEND=tensorflow`, `jax` and `torch`. TensorFlow's speed
paths (the fused element-wise kernels, integer-bits dropout, the flat attention projections,
`sampler="inverse_cdf"`, `tf.distribute` replicas) are taken only on the TensorFlow backend;
elsewhere the `keras.ops` version, which they are tested against, runs. Nothing here imports
Keras or TensorFlow at import time: the commands read `BACKENDS` before Keras is imported.
"""

BACKENDS = ("tensorflow", "jax", "torch")  # in this order in help texts and error messages
DEFAULT = "tensorflow"
# Backend -> the module it needs, and what installs it.
PACKAGES = {"tensorflow": ("tensorflow", "tensorflow"), "jax": ("jax", "jax"), "torch": ("torch", "torch")}


def name():
    """The backend Keras runs on: "tensorflow", "jax" or "torch" (Keras fixes it when it is first imported).

    Example:
        >>> from electra_tf import backends
        >>> backends.name() in backends.BACKENDS
        True
    """
    import keras

    return keras.backend.backend()


def is_tensorflow():
    """True when Keras runs on TensorFlow, where the TensorFlow-only paths are taken."""
    return name() == "tensorflow"
