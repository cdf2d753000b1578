"""Exports of trained models (`python -m electra_tf.export --kind encoder|preset|serving`).

- `encoder_saved_model`: pre-trained discriminator -> SavedModel (TF alone), with
  raw-text preprocessing signatures.
- `keras_hub_preset`: pre-trained discriminator -> keras-hub `ElectraBackbone` /
  `ElectraTokenizer` preset.
- `serving`: fine-tuned `ElectraClassifier` -> TF Serving `<base>/<name>/<version>/`.
"""
