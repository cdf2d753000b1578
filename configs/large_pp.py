"""ELECTRA-Large++ (the released large model): large, 1.75M steps at batch 2048, seq 512."""

from electra_tf.configs import large

CONFIG = dict(large.CONFIG, train_steps=1750000)
