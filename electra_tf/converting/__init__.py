"""Checkpoint interop: official TF1 checkpoints, Hugging Face ELECTRA and BERT.

Every format is translated to the official variable names (`weight_map`)
and loaded all or nothing: names and shapes are checked first, and a
mismatch is an error naming what differs.

    load_official("electra_small", pretrainer)             # TF1 checkpoint
    load_hugging_face("disc_dir,gen_dir", pretrainer)      # Hugging Face pair
    load_bert("all-MiniLM-L6-v2", pretrainer)              # BERT body, E = H

Commands read these through the `--init` registry (`electra_tf.sources`: `official:DIR`,
`hf:DIR[,DIR]`, `bert:DIR`, ...).
"""

import importlib

# name -> the submodule that defines it. Imported on first use (PEP 562), so that
# `python -m electra_tf.convert` quiets TensorFlow's start-up before TensorFlow loads.
_LAZY = {
    "build_from_bert": "bert", "load_bert": "bert", "read_bert": "bert",
    "build_from_hugging_face": "hugging_face", "build_discriminator_from_hugging_face": "hugging_face",
    "export_hugging_face": "hugging_face",
    "load_hugging_face": "hugging_face", "read_hugging_face": "hugging_face",
    "build_from_official": "official", "export_official": "official", "load_official": "official",
    "read_official_checkpoint": "official", "write_official_checkpoint": "official",
    "assign_weights": "weight_map", "model_variables": "weight_map", "read_weights": "weight_map",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "assign_weights",
    "build_discriminator_from_hugging_face",
    "build_from_bert",
    "build_from_hugging_face",
    "build_from_official",
    "export_hugging_face",
    "export_official",
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
