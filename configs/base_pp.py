"""ELECTRA-Base++ (the released base model): base, 4M steps at batch 256, seq 512."""

from electra_tf.configs import base

CONFIG = dict(base.CONFIG, train_steps=4000000)
