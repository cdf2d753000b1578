"""What the multiple_choice kind is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

IDS = ("token_ids", "segment_ids", "padding_mask")
TEXTS = ("context", "question", "choices")
OUTPUTS = ("probabilities", "choice", "logits")

DESCRIPTION = KindDescription(
    name="multiple_choice",
    summary="a question and its choices, one score per choice: SWAG CSVs or JSON Lines",
    auto_tasks=("swag",),
    data='SWAG\'s train.csv / val.csv (/ test.csv), or JSON Lines train.jsonl / dev.jsonl (/ test.jsonl) of '
         '{"context": ..., "question": ..., "choices": [...], "answer": 0}',
    predict_input='JSON Lines {"context": ..., "question": ..., "choices": [...], "answer": 0} or a SWAG CSV '
                  "(scored when it has answers)",
    record='{"line": 1, "choice": 2, "answer": "the chosen text", "probabilities": [0.1, 0.2, 0.7]}',
    files=("multiple_choice.keras",),
    signatures=(
        Signature("serving_default", TEXTS, OUTPUTS),
        Signature("predict_ids", IDS, OUTPUTS),
        Signature("preprocess", TEXTS, IDS),
    ),
    guide="docs/finetuning.md#multiple-choice-swag-arc--or-race-style-sets",
    serving_guide="docs/serving.md#a-multiple-choice-model",
)
