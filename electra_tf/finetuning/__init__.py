"""Token classification fine-tuning (NER, chunking, POS): data, features, metrics.

- `conll`: CoNLL-column files, tag schemes (IOB1, IOB2, BIOES -> IOB2), label sets, tasks.
- `tagging_features`: words -> WordPieces, the label on each word's first piece,
  windows over long sentences, and piece predictions back to word predictions.
- `tagging_metrics`: entity-level precision / recall / F1 (CoNLL semantics) and token accuracy.
"""
