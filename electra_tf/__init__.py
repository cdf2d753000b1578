"""ELECTRA pre-training, fine-tuning and serving on TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"
