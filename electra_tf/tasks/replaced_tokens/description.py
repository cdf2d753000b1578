"""What the replaced-token kind ("rtd") is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

WORDS = ("words", "word_start", "word_end", "word_p_replaced", "num_words", "pieces", "piece_word",
         "piece_p_replaced", "num_pieces")
CORRUPTED = ("corrupted_pieces", "piece_replaced", "corrupted_words", "word_replaced")

DESCRIPTION = KindDescription(
    name="rtd",
    summary="served only: a pre-trained discriminator's replaced-token scores per word (nothing to fine-tune)",
    finetunes=False,
    predict_input='text lines, or JSON Lines {"text": ..., "id": ...}; --corrupt: scored on the generator\'s own '
                  "corruption of each text (AUC)",
    record='{"line": 1, "text": "The cat sat.", "words": [{"text": "sat", "start": 8, "end": 11, "p_replaced": 0.91, '
           '"pieces": ["sat"], "piece_p_replaced": [0.91]}, ...], "max_p_replaced": 0.91, "mean_p_replaced": 0.2, '
           '"num_flagged": 1}',
    export="export --format rtd",
    signatures=(
        Signature("serving_default", ("text",), WORDS),
        Signature("serve_corrupted", ("text", "seed"), WORDS + CORRUPTED,
                  when="a model exported with its generator", always=False),
        Signature("predict_ids", ("token_ids", "segment_ids", "padding_mask"), ("logits", "probabilities")),
    ),
    guide="docs/pretraining.md#using-the-discriminator-replaced-token-scores",
    serving_guide="docs/serving.md#a-replaced-token-detector---format-rtd",
)
