"""Hugging Face BERT checkpoints (safetensors) as ELECTRA discriminators.

A BERT encoder is an ELECTRA discriminator body with `embedding_dim ==
hidden_dim` (no `embeddings_project`): the same embeddings, post-LN blocks and
names. The BERT pooler (`pooler.*`) and pre-training heads (`cls.*`) have no
ELECTRA counterpart and are dropped with a log line listing them; any other
unknown weight is an error. Into an `ElectraPretrainer` a BERT checkpoint
fills the shared embeddings and the discriminator; the discriminator head and
the generator keep their initial values (logged).
"""

from absl import logging

from electra_tf.converting import hf_names
from electra_tf.converting.hugging_face import check_config, encoder_kwargs, read_safetensors_dir
from electra_tf.converting.weight_map import assign_weights, build_model
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer

_DROPPED = ("pooler.", "cls.")
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


def read_bert(directory):
    """Reads a Hugging Face BERT directory into official ELECTRA names.

    Args:
        directory: str. `config.json` + `model.safetensors` of a `BertModel`
            (or `BertFor*`: the `bert.` body is read).

    Returns:
        dict with `"config"` and `"weights"` (official name -> float32 array).

    Example:
        ```python
        import transformers

        # A tiny BERT checkpoint, as `save_pretrained` writes one (E = H: BERT has no projection).
        transformers.BertModel(transformers.BertConfig(
            vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=128)).save_pretrained("bert")

        from electra_tf.converting.bert import read_bert

        bert = read_bert("bert")
        bert["weights"]["electra/embeddings/word_embeddings"].shape  # (100, 32)
        ```
    """
    config, state = read_safetensors_dir(directory, model_type="bert")  # the family first, then the weights
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            "Only absolute position embeddings convert. Received: "
            f"`position_embedding_type={config['position_embedding_type']!r}`"
        )
    dropped, kept = [], []
    for name, value in state.items():
        body = name[len("bert.") :] if name.startswith("bert.") else name
        if body.endswith(_BUFFERS):
            continue
        if body.startswith(_DROPPED) or name.startswith(_DROPPED):
            dropped.append(name)
            continue
        kept.append((name, body, value))
    weights, unused = hf_names.map_to_official(
        kept, "model", accept=lambda official: official.startswith("electra/")
    )
    if unused:
        raise ValueError(
            f"{len(unused)} weight(s) in {directory!r} have no ELECTRA counterpart: {sorted(unused)[:12]}"
        )
    if dropped:
        logging.info("BERT weights with no ELECTRA counterpart, dropped: %s", sorted(dropped))
    return {"config": config, "weights": weights}


def load_bert(directory, model, strict=False):
    """Loads a BERT checkpoint into an encoder or a pretrainer's discriminator, all or nothing.

    Args:
        directory: str. Hugging Face BERT directory.
        model: `ElectraEncoder` or `ElectraPretrainer`, with
            `embedding_dim == hidden_dim` and BERT's sizes.
        strict: bool. Every part of `model` must be in the checkpoint (never
            true of a pretrainer: BERT has no generator).

    Raises:
        ValueError: naming every architecture setting that differs.

    Example:
        ```python
        import transformers

        # A tiny BERT checkpoint, as `save_pretrained` writes one (E = H: BERT has no projection).
        transformers.BertModel(transformers.BertConfig(
            vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=128)).save_pretrained("bert")

        from electra_tf.config import get_config
        from electra_tf.converting.bert import load_bert
        from electra_tf.models.pretrainer import build_pretrainer

        # The discriminator takes BERT's sizes, with `embedding_dim` = `hidden_dim`.
        config = get_config("tiny", vocab_size=100, embedding_dim=32, hidden_dim=32,
                            num_layers=1, intermediate_dim=64)
        load_bert("bert", build_pretrainer(config))
        ```
    """
    bert = read_bert(directory)
    source = f"BERT checkpoint {directory!r}"
    if isinstance(model, ElectraPretrainer):
        check_config(bert["config"], model.discriminator, source)
    elif isinstance(model, ElectraEncoder):
        check_config(bert["config"], model, source)
    return assign_weights(model, bert["weights"], source, strict=strict)


def build_from_bert(directory):
    """An `ElectraEncoder` (E = H, no projection) holding a BERT checkpoint.

    Example:
        ```python
        import transformers
        from electra_tf.converting.bert import build_from_bert

        config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, intermediate_size=64)
        transformers.BertForMaskedLM(config).save_pretrained("bert")  # a `BertFor*`: its `bert.` body is read
        encoder = build_from_bert("bert")
        encoder.hidden_dim, encoder.num_layers  # (32, 1)
        ```
    """
    bert = read_bert(directory)
    encoder = build_model(encoder_kwargs(bert["config"]))
    assign_weights(encoder, bert["weights"], f"BERT checkpoint {directory!r}")
    return encoder
