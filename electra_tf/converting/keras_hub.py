"""keras-hub ELECTRA presets in: `ElectraBackbone.save_to_preset` folders as an `ElectraEncoder`.

The inverse of `electra_tf.exporting.keras_hub_preset`: the backbone is rebuilt by
keras-hub from the preset folder (`ElectraBackbone.from_preset(DIR)`, local,
no download) and its weights are copied layer by layer into an
`ElectraEncoder` with the backbone's dimensions and its tanh-approximate GELU
(`activation="gelu_approximate"`), so the encoder's sequence output equals the
backbone's. The backbone's `pooled_dense` has no counterpart (ELECTRA never
trains it) and is left out. The tokenizer's vocabulary and casing come from
the preset's `ElectraTokenizer` (`assets/tokenizer/vocabulary.txt`, its
`lowercase` and `strip_accents`).
"""

import json
import os

from electra_tf.models.encoder import ElectraEncoder

ACTIVATION = "gelu_approximate"  # keras-hub's ElectraBackbone hard-codes the tanh GELU
TOKENIZER_CONFIG = "tokenizer.json"  # keras-hub's own file names in a preset folder
VOCABULARY_ASSET = os.path.join("assets", "tokenizer", "vocabulary.txt")


PRESET_FILES = ("config.json", "metadata.json")  # keras-hub's own names: the backbone's config, the preset's
WEIGHTS_FILES = ("model.weights.h5", "model.weights.json")  # one file, or keras-hub's index of sharded weights


def check_preset(preset_dir, flag="init"):
    """Refuses a folder that is not a whole keras-hub ELECTRA preset, naming `--flag` and the file.

    The preset's `config.json` and `metadata.json` must be JSON objects, the backbone an
    `ElectraBackbone`, and its weights there (`model.weights.h5`, or keras-hub's sharded index).
    """
    given = f"`--{flag}=keras_hub:{preset_dir}`"
    values = {}
    for name in PRESET_FILES:
        path = os.path.join(preset_dir, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{given} is not a keras-hub preset folder (no {name}); save one with "
                                    "`ElectraBackbone.save_to_preset(DIR)`.")
        with open(path, encoding="utf-8") as f:
            try:
                values[name] = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ValueError(f"{given}: {path} is not valid JSON ({e}): the preset is truncated or "
                                 "damaged.") from None
        if not isinstance(values[name], dict):
            raise ValueError(f"{given}: {path} holds no JSON object: the preset is truncated or damaged.")
    config = values["config.json"]
    if config.get("class_name") != "ElectraBackbone" and "Electra" not in str(config.get("registered_name", "")):
        raise ValueError(f"{given} holds a {config.get('class_name')!r}, not an ElectraBackbone.")
    if not any(os.path.exists(os.path.join(preset_dir, name)) for name in WEIGHTS_FILES):
        raise FileNotFoundError(f"{given}: {os.path.join(preset_dir, WEIGHTS_FILES[0])} is missing: the preset "
                                "holds no weights (copied in part?). Copy the whole preset folder, or save it again "
                                "with `ElectraBackbone.save_to_preset(DIR)`.")


def layer_pairs(encoder, backbone):
    """`(ElectraEncoder layer, ElectraBackbone layer)` pairs holding the same weights in the same order.

    The one mapping between the two (`export_preset` copies one way, `read_keras_hub_preset` the other).
    """
    embeddings = encoder.embeddings
    pairs = [
        (embeddings.token_embedding, backbone.token_embedding),
        (embeddings.position_embedding, backbone.position_embedding),
        (embeddings.segment_embedding, backbone.segment_embedding),
        (embeddings.layer_norm, backbone.embeddings_layer_norm),
    ]
    if encoder.embeddings_project is not None:
        pairs.append((encoder.embeddings_project, backbone.embeddings_projection))
    return pairs + list(zip(encoder.transformer_layers, backbone.transformer_layers))


def read_keras_hub_preset(preset_dir, flag="init"):
    """An `ElectraEncoder` with the weights of the keras-hub `ElectraBackbone` preset in `preset_dir`.

    Args:
        preset_dir: str. A folder written by `ElectraBackbone.save_to_preset`
            (or downloaded by keras-hub).
        flag: str. The flag that named it, for messages.

    Returns:
        `ElectraEncoder`, built.

    Example:
        ```python
        import keras_hub
        from electra_tf.converting.keras_hub import read_keras_hub_preset

        backbone = keras_hub.models.ElectraBackbone(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32,
                                                    embedding_dim=16, intermediate_dim=64)
        backbone.save_to_preset("electra_preset")
        encoder = read_keras_hub_preset("electra_preset")
        encoder.hidden_dim, encoder.activation  # (32, 'gelu_approximate')
        ```
    """
    import keras_hub

    check_preset(preset_dir, flag)
    backbone = keras_hub.models.ElectraBackbone.from_preset(preset_dir)
    encoder = ElectraEncoder(
        vocab_size=backbone.vocab_size,
        num_layers=backbone.num_layers,
        num_heads=backbone.num_heads,
        hidden_dim=backbone.hidden_dim,
        embedding_dim=backbone.embedding_dim,
        intermediate_dim=backbone.intermediate_dim,
        dropout=backbone.dropout,
        max_sequence_length=backbone.max_sequence_length,
        num_segments=backbone.num_segments,
        activation=ACTIVATION,
    )
    encoder.build()
    for target, source in layer_pairs(encoder, backbone):
        if [w.shape for w in source.weights] != [w.shape for w in target.weights]:
            raise ValueError(f"keras-hub layer {source.name!r} of {preset_dir} does not match {target.name!r}: "
                             f"{[tuple(w.shape) for w in source.weights]} vs {[tuple(w.shape) for w in target.weights]}")
        for s, t in zip(source.weights, target.weights):
            t.assign(s)
    return encoder


def preset_tokenizer_settings(preset_dir):
    """`(vocabulary path, settings)` of the preset's `ElectraTokenizer` (`lower_case`, `strip_accents`; BERT's
    normalisation), or (None, None)."""
    vocab = os.path.join(preset_dir, VOCABULARY_ASSET)
    if not os.path.exists(vocab):
        return None, None
    config = {}
    path = os.path.join(preset_dir, TOKENIZER_CONFIG)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            config = json.load(f).get("config", {})
    from electra_tf.data.tokenizer import check_cased_vocabulary, new_settings

    lower_case = bool(config.get("lowercase", True))
    if not lower_case:
        check_cased_vocabulary(vocab, path)  # keras-hub's ElectraTokenizer defaults to lowercase=False
    return vocab, new_settings(lower_case, bool(config.get("strip_accents", lower_case)))
