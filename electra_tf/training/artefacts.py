"""What a folder holds, so a command never writes its files into another kind of artefact.

    a pre-training run         config.json with checkpoints/ or discriminator.keras
    a fine-tuning output       classifier.keras, finetune_config.json or results.json
    an exported SavedModel     saved_model.pb (export --kind encoder|serving)
    a Hugging Face model       config.json + model.safetensors (convert --to hf)
"""

import os

import tensorflow as tf

PRETRAINING_RUN = "a pre-training run"
FINETUNING_OUTPUT = "a fine-tuning output"
SAVED_MODEL = "an exported SavedModel"
HUGGING_FACE = "a Hugging Face model"


def artefact_kind(folder):
    """The kind of artefact `folder` holds (one of the constants above), or None (absent, empty, other files)."""
    def has(*names):
        return any(tf.io.gfile.exists(os.path.join(folder, name)) for name in names)

    if not tf.io.gfile.isdir(folder):
        return None
    if has("checkpoints", "discriminator.keras"):
        return PRETRAINING_RUN
    if has("classifier.keras", "finetune_config.json", "results.json"):
        return FINETUNING_OUTPUT
    if has("saved_model.pb"):
        return SAVED_MODEL
    if has("model.safetensors", "model.safetensors.index.json"):
        return HUGGING_FACE
    if has("config.json"):  # a run's config without results yet
        return PRETRAINING_RUN
    return None


def refuse_other_artefact(folder, flag, own_kind):
    """Raises `FileExistsError` when `folder` holds an artefact of another kind than `own_kind`, before anything is written."""
    kind = artefact_kind(folder)
    if kind not in (None, own_kind):
        raise FileExistsError(
            f"`--{flag}={folder}` holds {kind}; writing {own_kind} there would replace its files. "
            "Choose another folder."
        )
