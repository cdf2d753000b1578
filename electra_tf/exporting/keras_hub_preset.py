"""The discriminator as a keras-hub preset: `ElectraBackbone` + `ElectraTokenizer`.

The preset directory loads with keras-hub alone:

    backbone = keras_hub.models.ElectraBackbone.from_preset(preset_dir)
    tokenizer = keras_hub.tokenizers.ElectraTokenizer.from_preset(preset_dir)

Weights are copied layer by layer (our `ElectraEncoder` mirrors the
backbone's layer structure). Two differences to know:

- Activation. keras-hub's `ElectraBackbone` hard-codes the tanh-approximate
  GELU. An encoder trained with `activation="gelu"` (exact erf, our default
  and the released checkpoints') gives outputs that differ by about 1e-3 in
  the backbone; an encoder trained with `activation="gelu_approximate"`
  matches to float32 round-off. `export_preset` logs a warning for the former.
- Pooler. The backbone has a `pooled_dense` (tanh) layer ELECTRA never
  trained; it keeps its random initialisation. Use `sequence_output[:, 0]`,
  as the ELECTRA fine-tuning head does, not `pooled_output`.
"""

import os

import keras_hub
from absl import logging

from electra_tf.converting.keras_hub import layer_pairs
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.models.encoder import ElectraEncoder

KERAS_HUB_LAYER_NORM_EPSILON = 1e-12


def to_keras_hub_backbone(encoder):
    """An `ElectraBackbone` with `encoder`'s dimensions and weights.

    Args:
        encoder: `ElectraEncoder`.

    Returns:
        `keras_hub.models.ElectraBackbone`.
    """
    if not isinstance(encoder, ElectraEncoder):
        raise TypeError(f"`encoder` must be an ElectraEncoder. Received: {type(encoder).__name__}")
    if encoder.layer_norm_epsilon != KERAS_HUB_LAYER_NORM_EPSILON:
        raise ValueError(
            "keras-hub's ElectraBackbone fixes the LayerNorm epsilon at 1e-12. Received an encoder "
            f"with `layer_norm_epsilon={encoder.layer_norm_epsilon}`."
        )
    if encoder.activation not in ("gelu", "gelu_approximate"):
        raise ValueError(
            "keras-hub's ElectraBackbone uses the approximate GELU; an encoder with "
            f"`activation={encoder.activation!r}` cannot be exported to it."
        )
    if encoder.activation == "gelu":
        logging.warning(
            "The encoder uses the exact GELU; keras-hub's ElectraBackbone uses the tanh approximation, "
            "so its outputs will differ by about 1e-3. Train with `activation='gelu_approximate'` "
            "for an exact match."
        )
    encoder.build()
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=encoder.vocab_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_dim,
        embedding_dim=encoder.embedding_dim,
        intermediate_dim=encoder.intermediate_dim,
        dropout=encoder.dropout,
        max_sequence_length=encoder.max_sequence_length,
        num_segments=encoder.num_segments,
    )
    for source, target in layer_pairs(encoder, backbone):
        source_weights, target_weights = source.weights, target.weights
        if [w.shape for w in source_weights] != [w.shape for w in target_weights]:
            raise ValueError(
                f"Layer {source.name!r} does not match keras-hub's {target.name!r}: "
                f"{[w.path for w in source_weights]} vs {[w.path for w in target_weights]}"
            )
        for s, t in zip(source_weights, target_weights):
            t.assign(s)
    return backbone


def export_preset(encoder, vocab_file, preset_dir, lowercase=None):
    """Writes a keras-hub preset (backbone + tokenizer) to `preset_dir`.

    Args:
        encoder: `ElectraEncoder`.
        vocab_file: str. Its WordPiece vocabulary.
        preset_dir: str. Output folder.
        lowercase: optional bool. Tokenizer lower-casing; default: the
            `electra_tokenizer.json` saved beside `vocab_file` (accent
            stripping follows it too), else True.

    Returns:
        str, `preset_dir`.

    Example:
        ```python
        import pathlib

        import keras_hub

        from electra_tf.exporting.keras_hub_preset import export_preset
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")

        # A trained one in practice: `sources.load_discriminator(run_dir)`.
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        encoder.build()

        export_preset(encoder, "vocab.txt", "electra_preset")
        backbone = keras_hub.models.ElectraBackbone.from_preset("electra_preset")
        backbone.hidden_dim  # 32
        ```
    """
    backbone = to_keras_hub_backbone(encoder)
    os.makedirs(preset_dir, exist_ok=True)
    backbone.save_to_preset(preset_dir)
    settings = WordPieceTokenizer(vocab_file, lower_case=lowercase).settings  # refuses a contradiction
    tokenizer = keras_hub.tokenizers.ElectraTokenizer(
        vocabulary=vocab_file, lowercase=settings["lower_case"], strip_accents=settings["strip_accents"]
    )
    tokenizer.save_to_preset(preset_dir)
    return preset_dir
