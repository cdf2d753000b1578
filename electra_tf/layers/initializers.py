"""Kernel initializers by name, as the config spells them; zeros where every weight is set after the build."""

import contextlib
import contextvars
import copy
import functools

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


_SET_AFTER_BUILD = contextvars.ContextVar("electra_tf_weights_set_after_build", default=False)


@contextlib.contextmanager
def weights_set_after_build():
    """Within it, the encoder and its embeddings start from zeros instead of drawing their tables.

    For a model built only to receive every weight right after (`rebuild_encoder`'s copy, a `.keras` file
    being loaded): drawing a 6-layer, 384-wide encoder's truncated-normal tables takes about 0.4 s on a
    CPU, and each draw would be overwritten. A weight left unset is no silent zero: Keras' `set_weights`
    and `load_model` raise when the weights given do not cover the model. The initializers are still
    made and cloned as before (`drawn`), so whatever is drawn after them draws what it drew before.

    Example:
        ```python
        import numpy as np
        from electra_tf.layers.initializers import weights_set_after_build
        from electra_tf.models.encoder import ElectraEncoder

        with weights_set_after_build():
            encoder = ElectraEncoder(vocab_size=9, num_layers=1, num_heads=1, hidden_dim=8,
                                     embedding_dim=8, intermediate_dim=16)
            encoder.build()
        np.abs(encoder.embeddings.token_embedding.embeddings.numpy()).max()  # 0.0
        ```
    """
    token = _SET_AFTER_BUILD.set(True)
    try:
        yield
    finally:
        _SET_AFTER_BUILD.reset(token)


def drawn(initializer):
    """`initializer`, or within `weights_set_after_build` a copy of it that gives zeros.

    The copy is of a subclass of `initializer`'s class, made and cloned as that class is (keras-hub and
    Keras clone initializers through `from_config`, which draws an unseeded initializer's seed): every
    seed drawn after it, a new task head's included, is the one drawn before.
    """
    if not _SET_AFTER_BUILD.get():
        return initializer
    undrawn = copy.copy(initializer)
    undrawn.__class__ = _undrawn(type(initializer))
    return undrawn


@functools.cache
def _undrawn(cls):
    """`cls`, whose call gives zeros."""
    def zeros(self, shape, dtype=None):
        return keras.ops.zeros(shape, dtype=dtype)

    return type(cls.__name__, (cls,), {"__call__": zeros, "__module__": cls.__module__})
