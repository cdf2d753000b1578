"""The official-name view of an electra_tf model: one name per variable, validated assignment.

Every converter translates its format to and from the names of the official
TF1 release (`../shared/docs/electra-reference.md`, section 6), kernels
stored `[in, out]`:

    electra/embeddings/word_embeddings                     [V, E]
    electra/embeddings_project/kernel                      [E, H]   (E != H only)
    electra/encoder/layer_{i}/attention/self/query/kernel  [H, H]
    discriminator_predictions/dense_1/kernel               [H, 1]
    generator/encoder/layer_{i}/...                         (generator body)
    generator_predictions/output_bias                      [V]

and this module maps those names onto the Keras variables of an
`ElectraPretrainer`, `ElectraDiscriminator` or `ElectraEncoder`. Keras keeps attention kernels
per head, `(H, heads, head_dim)` and `(heads, head_dim, H)`; the official
`[H, heads * head_dim]` layout is the same memory in C order, so the
conversion is a reshape.

A model is split into parts (`PARTS`). `assign_weights` loads atomically: it
checks every name and shape first and raises, naming what differs, before
touching a variable. A part absent from the source altogether (a BERT
checkpoint has no generator) is left at its initial values and reported;
a part present only in part is an error.
"""

import re

import numpy as np
from absl import logging

from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer, pretrainer_from_sizes

# Name prefix -> part. Order matters: the first match wins.
PARTS = (
    ("electra/embeddings/", "embeddings"),
    ("electra/", "discriminator"),
    ("discriminator_predictions/", "discriminator_head"),
    ("generator/", "generator"),
    ("generator_predictions/", "generator_head"),
)

_LAYER = re.compile(r"/encoder/layer_(\d+)/")


def part_of(name):
    """The part (`"embeddings"`, `"discriminator"`, ...) an official name belongs to, or None."""
    for prefix, part in PARTS:
        if name.startswith(prefix):
            return part
    return None


def model_variables(model):
    """Official name -> Keras variable for every weight of `model`.

    Args:
        model: `ElectraPretrainer`, `ElectraDiscriminator` (the discriminator and its head) or
            `ElectraEncoder`. A standalone encoder is named as the discriminator (`electra/...`).

    Returns:
        dict str -> `keras.Variable`.

    Example:
        ```python
        from electra_tf.converting.weight_map import model_variables
        from electra_tf.models.encoder import ElectraEncoder

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=1,
                                 hidden_dim=32, embedding_dim=16, intermediate_dim=64)
        encoder.build()
        sorted(model_variables(encoder))[0]  # 'electra/embeddings/LayerNorm/beta'
        ```
    """
    if isinstance(model, ElectraPretrainer):
        names = _encoder_variables(model.discriminator, "electra")
        if model.generator is not None:
            generator = _encoder_variables(model.generator, "generator")
            names.update({k: v for k, v in generator.items() if part_of(k) == "generator"})
            head = model.generator_head
            names.update(
                {
                    "generator_predictions/dense/kernel": head._intermediate_dense.kernel,
                    "generator_predictions/dense/bias": head._intermediate_dense.bias,
                    "generator_predictions/LayerNorm/gamma": head._intermediate_layer_norm.gamma,
                    "generator_predictions/LayerNorm/beta": head._intermediate_layer_norm.beta,
                    "generator_predictions/output_bias": head._bias,
                }
            )
        if model.discriminator_head is not None:
            names.update(_discriminator_head_variables(model.discriminator_head))
        if model.mlm_head is not None:
            raise ValueError(
                "Checkpoint conversion covers the ELECTRA heads only. Received a pretrainer with "
                f"`objective={model.objective!r}` (an MLM head on the discriminator)."
            )
        return names
    if isinstance(model, ElectraDiscriminator):
        return {**_encoder_variables(model.encoder, "electra"), **_discriminator_head_variables(model.head)}
    if isinstance(model, ElectraEncoder):
        return _encoder_variables(model, "electra")
    raise TypeError(
        "Expected an `ElectraPretrainer`, `ElectraDiscriminator` or `ElectraEncoder`. "
        f"Received: `model={type(model).__name__}`"
    )


def _discriminator_head_variables(head):
    return {
        "discriminator_predictions/dense/kernel": head.dense.kernel,
        "discriminator_predictions/dense/bias": head.dense.bias,
        "discriminator_predictions/dense_1/kernel": head.dense_prediction.kernel,
        "discriminator_predictions/dense_1/bias": head.dense_prediction.bias,
    }


def _encoder_variables(encoder, scope):
    encoder.build()
    emb = encoder.embeddings
    names = {
        "electra/embeddings/word_embeddings": emb.token_embedding.embeddings,
        "electra/embeddings/position_embeddings": emb.position_embedding.position_embeddings,
        "electra/embeddings/token_type_embeddings": emb.segment_embedding.embeddings,
        "electra/embeddings/LayerNorm/gamma": emb.layer_norm.gamma,
        "electra/embeddings/LayerNorm/beta": emb.layer_norm.beta,
    }
    if encoder.embeddings_project is not None:
        names[f"{scope}/embeddings_project/kernel"] = encoder.embeddings_project.kernel
        names[f"{scope}/embeddings_project/bias"] = encoder.embeddings_project.bias
    for i, block in enumerate(encoder.transformer_layers):
        prefix = f"{scope}/encoder/layer_{i}"
        attention = block._self_attention_layer
        dense_layers = {
            "attention/self/query": attention._query_dense,
            "attention/self/key": attention._key_dense,
            "attention/self/value": attention._value_dense,
            "attention/output/dense": attention._output_dense,
            "intermediate/dense": block._feedforward_intermediate_dense,
            "output/dense": block._feedforward_output_dense,
        }
        for name, layer in dense_layers.items():
            names[f"{prefix}/{name}/kernel"] = layer.kernel
            names[f"{prefix}/{name}/bias"] = layer.bias
        norms = {
            "attention/output/LayerNorm": block._self_attention_layer_norm,
            "output/LayerNorm": block._feedforward_layer_norm,
        }
        for name, layer in norms.items():
            names[f"{prefix}/{name}/gamma"] = layer.gamma
            names[f"{prefix}/{name}/beta"] = layer.beta
    return names


def official_shape(name, variable):
    """The `[in, out]` shape the official release stores for `variable`."""
    shape = tuple(variable.shape)
    if "/attention/" in name and len(shape) == 3:
        if "/attention/self/" in name:  # (H, heads, head_dim) -> [H, heads * head_dim]
            return (shape[0], shape[1] * shape[2])
        return (shape[0] * shape[1], shape[2])  # (heads, head_dim, H) -> [heads * head_dim, H]
    if "/attention/self/" in name and len(shape) == 2 and name.endswith("/bias"):
        return (shape[0] * shape[1],)
    return shape


def read_weights(model):
    """Official name -> float32 numpy array (official shape) for every weight of `model`.

    Example:
        ```python
        from electra_tf.converting.weight_map import read_weights
        from electra_tf.models.encoder import ElectraEncoder

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=1,
                                 hidden_dim=32, embedding_dim=16, intermediate_dim=64)
        encoder.build()
        weights = read_weights(encoder)
        weights["electra/embeddings/word_embeddings"].shape  # (100, 16)
        ```
    """
    return {
        name: np.asarray(variable.numpy(), np.float32).reshape(official_shape(name, variable))
        for name, variable in model_variables(model).items()
    }


def assign_weights(model, weights, source="checkpoint", strict=False):
    """Loads official-name `weights` into `model`, all or nothing.

    Every name of `weights` must be a variable of `model` with the same number
    of values in the official layout, and every part of `model` that `weights`
    touches must be complete. Parts with no weight at all in `weights` keep
    their current values and are logged (an error when `strict`).

    Args:
        model: `ElectraPretrainer`, `ElectraDiscriminator` or `ElectraEncoder`.
        weights: dict str -> array, official names and shapes.
        source: str. Names the source in messages.
        strict: bool. Also require every part of `model`.

    Returns:
        dict with `"loaded"` (names), `"kept"` (parts left as they were).

    Raises:
        ValueError: naming the unused, missing and mis-shaped variables and the
            sizes that differ (`vocab_size`, `hidden_dim`, `num_layers`, ...).

    Example:
        ```python
        import numpy as np

        from electra_tf.converting.weight_map import assign_weights, read_weights
        from electra_tf.models.encoder import ElectraEncoder

        sizes = dict(vocab_size=100, num_layers=1, num_heads=1, hidden_dim=32,
                     embedding_dim=16, intermediate_dim=64)
        encoder, other_encoder = ElectraEncoder(**sizes), ElectraEncoder(**sizes)
        encoder.build(), other_encoder.build()
        assign_weights(other_encoder, read_weights(encoder))
        np.array_equal(other_encoder.embeddings.token_embedding.embeddings,
                       encoder.embeddings.token_embedding.embeddings)  # True
        ```
    """
    targets = model_variables(model)
    given_parts = {part_of(name) for name in weights}
    kept = sorted({part_of(n) for n in targets} - given_parts)
    unused = sorted(set(weights) - set(targets))
    missing = sorted(n for n in set(targets) - set(weights) if strict or part_of(n) in given_parts)
    mismatched = [
        (name, tuple(np.shape(weights[name])), official_shape(name, targets[name]))
        for name in sorted(set(weights) & set(targets))
        if tuple(np.shape(weights[name])) != official_shape(name, targets[name])
    ]
    if unused or missing or mismatched:
        source_sizes = describe_sizes({n: np.shape(w) for n, w in weights.items()})
        model_sizes = describe_sizes({n: official_shape(n, v) for n, v in targets.items()})
        lines = [f"The {source} does not match the model ({type(model).__name__})."]
        differing = [
            f"{key} {source_sizes.get(key)} vs {model_sizes.get(key)}"
            for key in sorted(set(source_sizes) | set(model_sizes))
            if source_sizes.get(key) != model_sizes.get(key)
            and (key.split(".")[0] if "." in key else "embeddings") in given_parts
        ]
        if differing:
            lines.append("Sizes that differ (checkpoint vs model): " + "; ".join(differing) + ".")
        if mismatched:
            lines.append(
                f"{len(mismatched)} shape mismatch(es) (checkpoint vs model): "
                + "; ".join(f"`{n}` {s} vs {m}" for n, s, m in mismatched[:8])
                + (" ..." if len(mismatched) > 8 else "")
            )
        if unused:
            lines.append(f"{len(unused)} unused checkpoint variable(s): {_short(unused)}")
        if missing:
            lines.append(
                f"{len(missing)} model variable(s) missing from the checkpoint: {_short(missing)}"
            )
        raise ValueError("\n".join(lines))
    for name, value in weights.items():
        variable = targets[name]
        variable.assign(
            np.reshape(np.asarray(value, np.float32), variable.shape).astype(variable.dtype)
        )
    if kept:
        logging.warning(
            "The %s has no weights for part(s) %s of the model: left at their current "
            "(initial) values.",
            source,
            kept,
        )
    logging.info("Loaded %d variables from the %s.", len(weights), source)
    return {"loaded": sorted(weights), "kept": kept}


def describe_sizes(shapes):
    """Model sizes read off official names -> shapes: `vocab_size`, `discriminator.hidden_dim`, ...

    Example:
        >>> from electra_tf.converting.weight_map import describe_sizes
        >>> describe_sizes({"electra/embeddings/word_embeddings": (100, 16)})
        {'vocab_size': 100, 'embedding_dim': 16}
    """
    sizes = {}
    word = shapes.get("electra/embeddings/word_embeddings")
    if word is not None:
        sizes["vocab_size"], sizes["embedding_dim"] = tuple(word)
    position = shapes.get("electra/embeddings/position_embeddings")
    if position is not None:
        sizes["max_sequence_length"] = tuple(position)[0]
    segment = shapes.get("electra/embeddings/token_type_embeddings")
    if segment is not None:
        sizes["num_segments"] = tuple(segment)[0]
    for scope, part in (("electra", "discriminator"), ("generator", "generator")):
        layers = {
            int(m.group(1)) for n in shapes if n.startswith(scope + "/") and (m := _LAYER.search(n))
        }
        if layers:
            sizes[f"{part}.num_layers"] = max(layers) + 1
        ffn = shapes.get(f"{scope}/encoder/layer_0/intermediate/dense/kernel")
        if ffn is not None:
            sizes[f"{part}.hidden_dim"], sizes[f"{part}.intermediate_dim"] = tuple(ffn)
    output_bias = shapes.get("generator_predictions/output_bias")
    if output_bias is not None:
        sizes["generator_head.vocab_size"] = tuple(output_bias)[0]
    return sizes


def build_model(sizes, generator_sizes=None, **pretrainer_kwargs):
    """A model of the given sizes: an `ElectraEncoder`, or an `ElectraPretrainer` with a generator.

    Args:
        sizes: dict of `ElectraEncoder` arguments for the discriminator
            (`vocab_size`, `num_layers`, `num_heads`, `hidden_dim`,
            `embedding_dim`, `intermediate_dim`, optionally
            `max_sequence_length`, `num_segments`, `activation`,
            `layer_norm_epsilon`).
        generator_sizes: dict or None. `num_layers`, `num_heads`,
            `hidden_dim`, `intermediate_dim` of the generator; given, the
            result is an `ElectraPretrainer` sharing the embeddings
            (`models.pretrainer.pretrainer_from_sizes`).
        **pretrainer_kwargs: passed to `ElectraPretrainer`.

    Example:
        ```python
        from electra_tf.converting.weight_map import build_model

        sizes = dict(vocab_size=200, num_layers=1, num_heads=1, hidden_dim=32,
                     embedding_dim=16, intermediate_dim=64)
        pretrainer = build_model(sizes, dict(num_layers=1, num_heads=1, hidden_dim=8,
                                             intermediate_dim=32))
        ```
    """
    if generator_sizes is not None:
        return pretrainer_from_sizes(sizes, generator_sizes, **pretrainer_kwargs)
    discriminator = ElectraEncoder(**sizes, name="discriminator")
    discriminator.build()
    return discriminator


def _short(names, limit=12):
    shown = ", ".join(f"`{n}`" for n in names[:limit])
    return shown + (f" ... (+{len(names) - limit} more)" if len(names) > limit else "")
