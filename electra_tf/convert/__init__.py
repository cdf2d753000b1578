"""Checkpoint interop: official TF1 checkpoints, Hugging Face ELECTRA and BERT.

Every format is translated to the official variable names (`weight_map`)
and loaded all or nothing: names and shapes are checked first, and a
mismatch is an error naming what differs.

    init_from("official:electra_small", pretrainer)       # TF1 checkpoint
    init_from("hf:disc_dir,gen_dir", pretrainer)          # Hugging Face pair
    init_from("bert:all-MiniLM-L6-v2", pretrainer)        # BERT body, E = H
"""

from electra_tf.convert.bert import build_from_bert, load_bert, read_bert
from electra_tf.convert.hugging_face import (
    build_from_hugging_face,
    export_hugging_face,
    load_hugging_face,
    read_hugging_face,
)
from electra_tf.convert.official import (
    build_from_official,
    export_official,
    load_official,
    read_official_checkpoint,
    write_official_checkpoint,
)
from electra_tf.convert.weight_map import assign_weights, model_variables, read_weights

LOADERS = {"official": load_official, "hf": load_hugging_face, "bert": load_bert}


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
    if not sep or kind not in LOADERS or not path:
        raise ValueError(
            f"`init_from` takes KIND:PATH with KIND in {sorted(LOADERS)}. Received: {spec!r}"
        )
    LOADERS[kind](path, pretrainer, strict=strict)


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
