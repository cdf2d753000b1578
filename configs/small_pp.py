"""ELECTRA-Small++ (the released small model): small, 4M steps at seq 512, full-size generator."""

from electra_tf.configs import small

CONFIG = dict(
    small.CONFIG,
    generator_hidden_fraction=1.0,
    seq_length=512,
    train_steps=4000000,
)
