"""Exports of trained models (`python -m electra_tf.export --kind encoder|preset|serving|tflite|rtd`).

- `encoder_saved_model`: pre-trained discriminator -> SavedModel (TF alone), with
  raw-text preprocessing signatures.
- `keras_hub_preset`: pre-trained discriminator -> keras-hub `ElectraBackbone` /
  `ElectraTokenizer` preset.
- `serving`: fine-tuned `ElectraClassifier` -> TF Serving `<base>/<name>/<version>/`
  (`tagging_serving`, `qa_serving`: taggers and QA models).
- `rtd_serving`: pre-trained discriminator (and generator) -> TF Serving: each word's probability of
  having been replaced.
- `serving_ops`: which ops a stock TF Serving model server has, and the ops an export uses.
"""
