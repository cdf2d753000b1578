"""Predicting with a fine-tuned model (`python -m electra_tf.predict`).

- `inputs`: TSV/CSV, CoNLL, SQuAD JSON, JSON Lines, text lines -> examples (and gold labels).
- `predictor`: a fine-tuning dir or a serving export -> its serving signatures, run in batches.
- `scoring`: predictions against gold labels (accuracy, entity F1, SQuAD EM / F1).
- `writing`: JSON Lines to stdout or a file written whole.
"""
