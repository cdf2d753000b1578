"""What the embedding kind is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

IDS = ("token_ids", "segment_ids", "padding_mask")

DESCRIPTION = KindDescription(
    name="embedding",
    summary="one unit vector per text, for semantic search: (query, positive[, negative]) rows",
    data='train / dev (/ test) .jsonl of {"query": ..., "positive": ..., "negative": ...} (negative optional), '
         "or .tsv: query TAB positive [TAB negative], no header",
    predict_input='text lines, or JSON Lines {"text": ...}; with --passages FILE (--top_k K) each one\'s best '
                  "passages by cosine",
    record='{"line": 1, "embedding": [0.12, -0.03, ...]} (--passages: {"line": 1, "top_k": '
           '[{"index": 3, "score": 0.82, "text": "..."}, ...]})',
    files=("embedder.keras",),
    signatures=(
        Signature("serving_default", ("text",), ("embedding",)),
        Signature("predict_ids", IDS, ("embedding",)),
        Signature("preprocess", ("text",), IDS),
    ),
    guide="docs/finetuning.md#embeddings-semantic-search",
    serving_guide="docs/serving.md#an-embedding-model",
)
