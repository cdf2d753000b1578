"""The `--strategy` values and the multi-worker start-up wait: what the commands' flags read before TensorFlow's start.

`distribute` builds a `tf.distribute` strategy from one of them; `pretrain --help`, `finetune --help` and a
refused flag need only these names, not TensorFlow (`cli.console_script`).
"""

STRATEGIES = ("auto", "cpu", "gpu", "mirrored", "multi_worker", "tpu")
STARTUP_TIMEOUT = 300  # seconds a multi-worker run waits for its peers before it gives up
