r"""Pre-trains ELECTRA: `python -m electra_tf.pretrain --config small --data 'gs://b/*' --model_dir DIR`.

Every `ElectraConfig` field is a flag (`--learning_rate 1e-4`), applied over the
preset. Re-running the same command resumes from the latest checkpoint in
`--model_dir` (step, weights and optimizer state) and stops at `--train_steps`.
Without `--data` it trains on the embedded demo corpus (built on first use).
"""

import os

from absl import app, flags, logging

from electra_tf import cli

from electra_tf import config as config_lib
from electra_tf.training import distribute
from electra_tf.demo_data import resolve_data
from electra_tf.training.pretraining import train

FLAGS = flags.FLAGS
flags.DEFINE_string("config", "small", f"Preset: {config_lib.preset_names()}.")
flags.DEFINE_string("model_dir", None, "Checkpoints, logs, config and the trained discriminator.")
flags.DEFINE_enum("strategy", "cpu", distribute.STRATEGIES, "tf.distribute strategy.")
flags.DEFINE_string("tpu", None, "TPU name or address for --strategy=tpu.")
flags.DEFINE_float("worker_startup_timeout", distribute.STARTUP_TIMEOUT,
                   "--strategy=multi_worker: seconds to wait for every worker of TF_CONFIG.")
flags.DEFINE_integer("num_cpu_devices", 0, "Logical CPU devices for --strategy=mirrored without GPUs.")
flags.DEFINE_string("init_from", None, "Start from other weights: official:CKPT, hf:DIR or bert:DIR.")
flags.DEFINE_string("demo_dir", os.path.join("~", ".cache", "electra_tf", "demo"),
                    "Where the embedded demo corpus is built (--data=demo).")
flags.DEFINE_integer("verbose", 1, "Keras progress: 1 bar, 2 one line per epoch, 0 silent.")
_FLAG_TYPES = {int: flags.DEFINE_integer, float: flags.DEFINE_float, bool: flags.DEFINE_bool,
               str: flags.DEFINE_string}
for _name, (_kind, _default) in config_lib.fields().items():
    _FLAG_TYPES[_kind](_name, None, f"Config override (default: the preset's, else {_default!r}).")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    overrides = {name: FLAGS[name].value for name in config_lib.fields() if FLAGS[name].value is not None}
    config = config_lib.get_config(FLAGS.config, **overrides)
    strategy = distribute.create_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_cpu_devices,
                                          FLAGS.worker_startup_timeout)
    config = resolve_data(config, FLAGS.demo_dir, FLAGS.model_dir)
    logging.info("Config:\n%s", config.to_json())
    train(config, FLAGS.model_dir, strategy, init_from=FLAGS.init_from, verbose=FLAGS.verbose)


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
