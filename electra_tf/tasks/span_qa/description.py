"""What the span_qa kind is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

DESCRIPTION = KindDescription(
    name="span_qa",
    summary="extractive question answering over SQuAD 1.1 / 2.0 files",
    auto_tasks=("squad*",),  # any name starting with squad
    data="SQuAD-format train.json / dev.json (/ test.json)",
    predict_input='SQuAD JSON (scored: EM / F1), or JSON Lines {"id": ..., "question": ..., "context": ..., '
                  '"answers": [...]}',
    record='{"id": "q1", "answer": "Normandy", "start": 31, "end": 39, "score": -0.7, "no_answer": false}',
    files=("question_answerer.keras", "predictions.json", "null_odds.json (SQuAD 2.0)"),
    signatures=(
        Signature("serving_default", ("question", "context"), ("answer", "start", "end", "score"),
                  optional=("no_answer", "null_odds"), when="SQuAD 2.0 models also return `no_answer`, `null_odds`"),
        Signature("predict_ids", ("token_ids", "segment_ids", "padding_mask"),
                  ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index"),
                  optional=("answerable_logit",), when="SQuAD 2.0 models also return `answerable_logit`"),
    ),
    guide="docs/finetuning.md#extractive-question-answering-squad-11--20",
    serving_guide="docs/serving.md#a-question-answering-model",
)
