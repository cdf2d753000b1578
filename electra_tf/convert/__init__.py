"""Checkpoint interop: official TF1 checkpoints, Hugging Face ELECTRA and BERT.

Every format is translated to the official variable names (`weight_map`)
and loaded all or nothing: names and shapes are checked first, and a
mismatch is an error naming what differs.

    init_from("official:electra_small", pretrainer)       # TF1 checkpoint
    init_from("hf:disc_dir,gen_dir", pretrainer)          # Hugging Face pair
    init_from("bert:all-MiniLM-L6-v2", pretrainer)        # BERT body, E = H
"""

import importlib

# name -> the submodule that defines it. Imported on first use (PEP 562), so that
# `python -m electra_tf.convert` quiets TensorFlow's start-up before TensorFlow loads.
_LAZY = {
    "build_from_bert": "bert", "load_bert": "bert", "read_bert": "bert",
    "build_from_hugging_face": "hugging_face", "export_hugging_face": "hugging_face",
    "load_hugging_face": "hugging_face", "read_hugging_face": "hugging_face",
    "build_from_official": "official", "export_official": "official", "load_official": "official",
    "read_official_checkpoint": "official", "write_official_checkpoint": "official",
    "assign_weights": "weight_map", "model_variables": "weight_map", "read_weights": "weight_map",
}
_LOADER_NAMES = {"official": "load_official", "hf": "load_hugging_face", "bert": "load_bert"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    if name == "LOADERS":
        return {kind: __getattr__(loader) for kind, loader in _LOADER_NAMES.items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | {"LOADERS"})


def init_from(spec, pretrainer, strict=False):
    """Initialises a freshly built model from a checkpoint, for continued pre-training.

    Call before the optimizer is built. Parts the checkpoint lacks
    altogether (a BERT or discriminator-only checkpoint has no generator)
    keep their initial values and are logged, or are an error when
    `strict`; anything else that differs is always an error, raised before
    any variable changes.

    Args:
        spec: str. `"official:PATH"` (TF1 checkpoint prefix or directory),
            `"hf:DIR[,DIR]"` (Hugging Face ELECTRA directories) or
            `"bert:DIR"` (Hugging Face BERT directory).
        pretrainer: `ElectraPretrainer` (or `ElectraEncoder`).
        strict: bool. Require every part of `pretrainer` (embeddings,
            discriminator, discriminator head, generator, generator head).

    Raises:
        ValueError: an unknown kind, or a checkpoint that does not match.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.convert import export_hugging_face, init_from
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)
        export_hugging_face(build_pretrainer(config), "hf")  # hf/discriminator, hf/generator
        pretrainer = build_pretrainer(config)
        init_from("hf:hf/discriminator,hf/generator", pretrainer)
        ```
    """
    kind, sep, path = spec.partition(":")
    if not sep or kind not in _LOADER_NAMES or not path:
        raise ValueError(
            f"`init_from` takes KIND:PATH with KIND in {sorted(_LOADER_NAMES)}. Received: {spec!r}"
        )
    __getattr__(_LOADER_NAMES[kind])(path, pretrainer, strict=strict)


__all__ = [
    "assign_weights",
    "build_from_bert",
    "build_from_hugging_face",
    "build_from_official",
    "export_hugging_face",
    "export_official",
    "init_from",
    "load_bert",
    "load_hugging_face",
    "load_official",
    "model_variables",
    "read_bert",
    "read_hugging_face",
    "read_official_checkpoint",
    "read_weights",
    "write_official_checkpoint",
]
