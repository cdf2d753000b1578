"""What the classification kind is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

IDS = ("token_ids", "segment_ids", "padding_mask")
OUTPUTS = ("probabilities", "label_id", "label")

DESCRIPTION = KindDescription(
    name="classification",
    summary="sentence(-pair) classification and regression: GLUE, or any TSV/CSV",
    auto_tasks=("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli"),
    data="train / dev (/ test) .tsv or .csv: the text column(s) and a label column (`--text_a_column`, "
         "`--text_b_column`, `--label_column`), or a GLUE task in its released layout",
    predict_input="TSV / CSV with the task's columns by header name (sentence, text, text_a, sentence1, question, "
                  '...; --text_a_column, --text_b_column, --label_column choose), JSON Lines {"text": ..., "text_b": '
                  '..., "label": ...}, or text lines (pairs: text_a TAB text_b); scored when it has labels',
    record='{"line": 2, "label": "positive", "probabilities": {"negative": 0.1, "positive": 0.9}} '
           '(regression: {"line": 2, "score": 3.2})',
    files=("classifier.keras", "<TASK>.tsv (GLUE test predictions to submit, when the test split is unlabelled)"),
    signatures=(
        Signature("serving_default", ("text",), OUTPUTS, optional=("text_b", "score"),
                  when="pair tasks also take `text_b`; regression returns `score` instead"),
        Signature("predict_ids", IDS, OUTPUTS, optional=("score",), when="regression returns `score` instead"),
        Signature("preprocess", ("text",), IDS, optional=("text_b",), when="pair tasks also take `text_b`"),
    ),
    guide="docs/finetuning.md#sentence-classification",
    serving_guide="docs/serving.md#a-classifier",
)
