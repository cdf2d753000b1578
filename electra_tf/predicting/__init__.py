"""Predicting with a served model (`python -m electra_tf.predict`); the model's served kind reads, formats, scores.

- `served_kinds`: what `predict` serves, by kind: the fine-tuning task kinds, and replaced-token scores.
- `replaced_tokens`: a pre-trained discriminator's probability that each word was replaced (the kind "rtd").
- `inputs`: the input read whole, its format told (extension, content), read by the kind.
- `predictor`: a fine-tuning dir, a serving export or a pre-trained model -> its serving signatures, run in
  batches.
- `scoring`: predictions against gold labels, by the kind (the metrics fine-tuning reports).
- `writing`: JSON Lines to stdout or a file written whole; the output guards; SIGTERM.
"""
