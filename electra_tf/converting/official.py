"""Official ELECTRA checkpoints (TF1, name-based) in and out.

The official release (google-research/electra) saves a `tf.compat.v1`
checkpoint whose variables carry the names listed in
`weight_map` (`electra/...`, `generator/...`, `discriminator_predictions/...`,
`generator_predictions/...`), plus `global_step` and the Adam slots
`<name>/adam_m`, `<name>/adam_v`, which are ignored on import. Reading uses
`tf.train.load_checkpoint`, so no TF1 graph is built.

`write_official_checkpoint` writes the same format from a dict of arrays
(`tf.raw_ops.SaveV2`: raw names, no object graph), so tests and users can
produce checkpoints the official code restores.
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.converting.weight_map import assign_weights, build_model, describe_sizes, read_weights

_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
_IGNORED_NAMES = ("global_step",)
_IGNORED_SCOPES = (
    "AdamWeightDecayOptimizer",
)  # slots under the optimizer's scope (some TF1 forks)


def checkpoint_prefix(path):
    """The checkpoint prefix for `path`: a prefix as is, a directory -> its latest checkpoint."""
    if os.path.isdir(path):
        prefix = tf.train.latest_checkpoint(path)
        if prefix is None:
            raise FileNotFoundError(
                f"No checkpoint (no `checkpoint` state file) in directory {path!r}."
            )
        return prefix
    if not tf.io.gfile.exists(path + ".index"):
        raise FileNotFoundError(f"No TF checkpoint at {path!r} (expected {path + '.index'!r}).")
    return path


def read_official_checkpoint(path):
    """Official name -> float32 array for every model variable in a TF1 checkpoint.

    Args:
        path: str. A checkpoint prefix (`.../model.ckpt-1000000`) or a
            directory with a `checkpoint` state file.

    Returns:
        dict str -> numpy array, `global_step` and Adam slots left out.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting.official import export_official, read_official_checkpoint
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
        export_official(build_pretrainer(config), "electra_small/model.ckpt-0")  # a tiny checkpoint
        weights = read_official_checkpoint("electra_small")  # a directory or a prefix
        weights["electra/embeddings/word_embeddings"].shape  # (100, 16)
        ```
    """
    reader = tf.train.load_checkpoint(checkpoint_prefix(path))
    names = reader.get_variable_to_shape_map()
    weights, ignored = {}, 0
    for name in sorted(names):
        if (
            name.endswith(_IGNORED_SUFFIXES)
            or name in _IGNORED_NAMES
            or name.startswith(_IGNORED_SCOPES)
        ):
            ignored += 1
            continue
        weights[name] = np.asarray(reader.get_tensor(name), np.float32)
    logging.info(
        "Read %d variables from %s (%d optimizer/step variables ignored).",
        len(weights),
        path,
        ignored,
    )
    return weights


def load_official(path, model, strict=False):
    """Loads an official checkpoint into `model`, all or nothing.

    Args:
        path: str. Checkpoint prefix or directory.
        model: `ElectraPretrainer` (discriminator, generator and heads) or
            `ElectraEncoder` (the discriminator body; heads and generator
            are dropped with a log line).
        strict: bool. Every part of `model` must be in the checkpoint.

    Returns:
        The report of `assign_weights`.

    Raises:
        ValueError: naming the sizes, variables and shapes that differ.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting.official import export_official, load_official
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
        export_official(build_pretrainer(config), "electra_small/model.ckpt-0")  # a tiny checkpoint
        report = load_official("electra_small", build_pretrainer(config))  # a folder: its latest checkpoint
        report["kept"]  # []: every part of the model was in the checkpoint
        ```
    """
    from electra_tf.models.encoder import ElectraEncoder

    weights = read_official_checkpoint(path)
    if isinstance(model, ElectraEncoder):
        dropped = sorted(n for n in weights if not n.startswith("electra/"))
        if dropped:
            logging.warning(
                "An encoder keeps the discriminator body only: dropped %d variables.", len(dropped)
            )
        weights = {n: w for n, w in weights.items() if n.startswith("electra/")}
    return assign_weights(model, weights, f"official checkpoint {path!r}", strict=strict)


def build_from_official(path, num_heads=None, generator_num_heads=None):
    """Builds a model shaped like an official checkpoint and loads it.

    Sizes are read off the variable shapes. Head counts are not stored in
    a checkpoint: they default to `max(1, hidden // 64)`, the rule of every
    official size (small 4, base 12, large 16; generators likewise).

    Returns:
        `ElectraPretrainer` when the checkpoint holds a generator and both
        heads, else `ElectraEncoder`.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting.official import build_from_official, export_official
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
        export_official(build_pretrainer(config), "electra_small/model.ckpt-0")  # a tiny checkpoint
        pretrainer = build_from_official("electra_small")  # sizes read off the shapes
        pretrainer.discriminator.hidden_dim  # 32
        ```
    """
    weights = read_official_checkpoint(path)
    sizes = describe_sizes({n: w.shape for n, w in weights.items()})
    try:
        hidden = sizes["discriminator.hidden_dim"]
        encoder = dict(
            vocab_size=sizes["vocab_size"],
            embedding_dim=sizes["embedding_dim"],
            max_sequence_length=sizes["max_sequence_length"],
            num_segments=sizes["num_segments"],
            num_layers=sizes["discriminator.num_layers"],
            hidden_dim=hidden,
            intermediate_dim=sizes["discriminator.intermediate_dim"],
            num_heads=num_heads or max(1, hidden // 64),
        )
    except KeyError as e:
        raise ValueError(
            f"{path!r} lacks the discriminator variable giving {e}; found {sorted(sizes)}."
        ) from None
    generator = None
    has_heads = any(n.startswith("discriminator_predictions/") for n in weights) and any(
        n.startswith("generator_predictions/") for n in weights
    )
    if "generator.hidden_dim" in sizes and has_heads:
        hidden = sizes["generator.hidden_dim"]
        generator = dict(
            num_layers=sizes["generator.num_layers"],
            hidden_dim=hidden,
            intermediate_dim=sizes["generator.intermediate_dim"],
            num_heads=generator_num_heads or max(1, hidden // 64),
        )
    model = build_model(encoder, generator)
    if generator is None:
        weights = {n: w for n, w in weights.items() if n.startswith("electra/")}
    assign_weights(model, weights, f"official checkpoint {path!r}")
    return model


def write_official_checkpoint(weights, path, global_step=0, optimizer_slots=False):
    """Writes `weights` under their raw names as a TF1-style checkpoint.

    Args:
        weights: dict official name -> array.
        path: str. Checkpoint prefix, e.g. `"/tmp/ckpt/model.ckpt-0"`; the
            directory gets a `checkpoint` state file naming it.
        global_step: int. Stored as the int64 `global_step` variable.
        optimizer_slots: bool. Also write zero `<name>/adam_m` and
            `<name>/adam_v`, as a training checkpoint has.

    Returns:
        The prefix written.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting.official import write_official_checkpoint
        from electra_tf.converting.weight_map import read_weights
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        pretrainer = build_pretrainer(config)
        write_official_checkpoint(read_weights(pretrainer), "ckpt/model.ckpt-0")  # 'ckpt/model.ckpt-0'
        ```
    """
    tensors = {name: np.asarray(value, np.float32) for name, value in weights.items()}
    if optimizer_slots:
        for name, value in list(tensors.items()):
            tensors[f"{name}/adam_m"] = np.zeros_like(value)
            tensors[f"{name}/adam_v"] = np.zeros_like(value)
    tensors["global_step"] = np.asarray(global_step, np.int64)
    names = sorted(tensors)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tf.raw_ops.SaveV2(
        prefix=path,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(tensors[n]) for n in names],
    )
    name = os.path.basename(path)
    with open(os.path.join(directory, "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')
    return path


def written_files(path):
    """The files `write_official_checkpoint(..., path)` writes: the prefix's index and data, and the `checkpoint` list."""
    prefix = os.path.abspath(path)
    return [prefix + ".index", prefix + ".data-00000-of-00001",
            os.path.join(os.path.dirname(prefix), "checkpoint")]


def export_official(model, path, global_step=0):
    """Writes `model` as an official-name checkpoint at prefix `path` (see `write_official_checkpoint`)."""
    return write_official_checkpoint(read_weights(model), path, global_step=global_step)
