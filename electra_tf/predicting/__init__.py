"""Predicting with a served model (`python -m electra_tf.predict`); the model's served kind reads, formats, scores.

- `inputs`: the input read whole, its format told (extension, content), read by the kind.
- `predictor`: a served model's signatures, run in batches (`electra_tf.tasks.served` opens a fine-tuning dir,
  a serving export or a pre-trained model as one, with its kind).
- `scoring`: predictions against gold labels, by the kind (the metrics fine-tuning reports).
- `writing`: JSON Lines to stdout or a file written whole; the output guards; SIGTERM.
"""
