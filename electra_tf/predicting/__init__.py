"""Predicting with a fine-tuned model (`python -m electra_tf.predict`); the model's task kind reads, formats, scores.

- `inputs`: the input read whole, its format told (extension, content), read by the kind.
- `predictor`: a fine-tuning dir or a serving export -> its serving signatures, run in batches.
- `scoring`: predictions against gold labels, by the kind (the metrics fine-tuning reports).
- `writing`: JSON Lines to stdout or a file written whole; the output guards; SIGTERM.
"""
