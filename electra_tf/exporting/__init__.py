"""Exports of trained models (`python -m electra_tf.export --format encoder|preset|serving|tflite|rtd`): the generic
formats; each task kind's serving module lives in its folder (`electra_tf/tasks/<kind>/serving.py`).

- `encoder_saved_model`: pre-trained discriminator -> SavedModel (TF alone), with
  raw-text preprocessing signatures.
- `keras_hub_preset`: pre-trained discriminator -> keras-hub `ElectraBackbone` /
  `ElectraTokenizer` preset.
- `assets`: what every serving export holds and how a version folder is written.
- `word_windows`: words of raw text and the overlapping windows of pieces over them, in the graph.
- `tflite`, `tflite_runtime`: a serving module converted to LiteRT, and the interpreter that runs it.
- `serving_ops`: which ops a stock TF Serving model server has, and the ops an export uses.
"""
