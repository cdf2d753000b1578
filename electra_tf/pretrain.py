r"""Pre-trains ELECTRA: `python -m electra_tf.pretrain --config small --data 'gs://b/*' --model_dir DIR`.

Every `ElectraConfig` field is a flag (`--learning_rate 1e-4`, its help the
field's), applied over the preset: a flag left unset keeps the preset's value.
Re-running the same command resumes from the latest checkpoint in
`--model_dir` (step, weights and optimizer state) and stops at `--train_steps`.
`--data` is required; `--data demo` trains on the embedded demo corpus (built
on first use), the default of `--config tiny` only. `--init` starts a new run
from other weights: any `--init` form (`electra_tf.sources` lists them: another
run, `hf:DIR`, `bert:DIR`, a `.keras` file, ...); `--init_from` is its deprecated spelling. Installed as `electra-pretrain`.
`--backend` is the Keras backend, set before Keras is imported (`electra_tf.cli.backend_start`): tensorflow
(the default), jax or torch, from the same flags and data; a run resumes under the backend that trained it.
"""

import contextlib
import os
import sys

from absl import app, flags

from electra_tf import cli

FLAGS = flags.FLAGS
ALIASES = cli.aliases("init_from")
FLAGS_BEFORE_TENSORFLOW = True  # `define_flags` imports no TensorFlow: `main` prepares its start after the checks
BACKEND_FLAG = True  # `--backend`, read before Keras is imported


def define_flags(flag_values=None):
    """The flags: every `ElectraConfig` field plus the run's own (only when run as a program)."""
    from electra_tf import config as config_lib
    from electra_tf import config_fields
    from electra_tf.training import strategies

    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("string", "config", "small", f"Preset: {config_lib.preset_names()}.", fv)
    cli.define_backend(fv)
    cli.define_model_dir(flag_values=fv)
    cli.define("enum", "strategy", "auto", "tf.distribute strategy; auto: tpu with --tpu, mirrored over several "
               "GPUs, the one GPU, else the CPU (logged at start).", fv, enum_values=strategies.STRATEGIES)
    cli.define("string", "tpu", None, "TPU name or address for --strategy=tpu.", fv)
    cli.define("float", "worker_startup_timeout", strategies.STARTUP_TIMEOUT,
               "--strategy=multi_worker: seconds to wait for every worker of TF_CONFIG.", fv, range="(0, inf)")
    cli.define("integer", "num_cpu_devices", 0, "Logical CPU devices for --strategy=mirrored without GPUs.", fv,
               range="[0, inf)")
    cli.define_init("Start a new run from other weights: another run's model_dir (continued pre-training, e.g. "
                    "seq 128 then 512), a .keras file, an encoder export, hf:DIR[,DIR], official:DIR, bert:DIR "
                    "or keras_hub:DIR.", flag_values=fv)
    cli.define("string", "demo_dir", os.path.join("~", ".cache", "electra_tf", "demo"),
               "Where the embedded demo corpus is built (--data=demo).", fv)
    cli.define("integer", "verbose", 1, "Keras progress: 1 bar, 2 one line per epoch, 0 silent.", fv, range="[0, 2]")
    config_fields.define_flags(config_lib.ElectraConfig, fv, preset_defaults=True)


def main(argv):
    from electra_tf import backends
    from electra_tf import config as config_lib
    from electra_tf.config_fields import fields

    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    cli.check_backend(FLAGS, "Pre-training", available=backends.BACKENDS)
    cli.prepare_tensorflow()  # before anything below imports it
    from electra_tf.training import distribute, run_lock
    from electra_tf.training.pretraining import check_prediction_slots

    _check_model_dir(FLAGS.model_dir, FLAGS.init, FLAGS["data"].value if "data" in FLAGS else None)
    overrides = {name: FLAGS[name].value for name in fields(config_lib.ElectraConfig) if FLAGS[name].value is not None}
    config = config_lib.get_config(FLAGS.config, **overrides)
    if config.data == "demo":  # before the strategy, the lock or the demo build
        from electra_tf.demo_data import check_demo_settings

        check_demo_settings(config)
    check_prediction_slots(config)
    strategy = None  # JAX, PyTorch: Keras' own devices (`pretraining.KerasDevices`)
    if FLAGS.backend == backends.DEFAULT:
        strategy = distribute.create_strategy(FLAGS.strategy, FLAGS.tpu, FLAGS.num_cpu_devices,
                                              FLAGS.worker_startup_timeout)
    # One writer per run: a second process on --model_dir is refused naming the holder (the chief holds it).
    with (run_lock.hold(FLAGS.model_dir, "model_dir") if distribute.is_chief(strategy) else contextlib.nullcontext()):
        _train(config, strategy, overrides)


def _check_model_dir(model_dir, init, data):
    """Refuses, before anything is written (the run lock included), a `--model_dir` that is or overlaps `--init`,
    holds the `--data` records, holds another artefact or lies inside one."""
    from electra_tf import atomic, run_files, sources

    run_files.refuse_foreign_output(model_dir, "model_dir", run_files.PRETRAINING_RUN,
                                    inputs=sources.init_inputs(init))
    from electra_tf.data.arrays import is_array_folder

    for pattern in (data or "").split(","):
        folder = pattern if is_array_folder(pattern) else os.path.dirname(os.path.abspath(pattern))
        if pattern not in ("", "demo") and "://" not in pattern and atomic.same_file(folder, model_dir):
            raise ValueError(f"`--model_dir={model_dir}` is the folder of the `--data` records ({pattern}): the run's "
                             "files would mix with them. Choose another --model_dir.")


def _train(config, strategy, overrides):
    from absl import logging

    from electra_tf import run_files
    from electra_tf.demo_data import resolve_data
    from electra_tf.training.pretraining import train

    config = resolve_data(config, FLAGS.demo_dir, FLAGS.model_dir)
    _check_vocab_size(overrides.get("vocab_size"), config)
    # One line; every field is in model_dir/config.json (and here with --verbosity=1).
    logging.info("Config: preset %s%s; every field in %s", FLAGS.config,
                 "".join(f" --{k}={v}" for k, v in sorted(overrides.items())),
                 os.path.join(FLAGS.model_dir, run_files.CONFIG_FILE))
    logging.debug("Config:\n%s", config.to_json())
    train(config, FLAGS.model_dir, strategy, init=FLAGS.init, verbose=FLAGS.verbose)


def _check_vocab_size(given, config):
    """Refuses a `--vocab_size` given on the command line that is not the size of the vocabulary the run uses.

    The vocabulary (`--vocab_file`, or the one beside the records) sets the token table's rows;
    a preset's `vocab_size` gives way to it, a flag given by hand that differs is a contradiction.
    """
    if given is not None and config.vocab_file and given != config.vocab_size:
        named = (f"`--vocab_file={FLAGS.vocab_file}`" if FLAGS.vocab_file
                 else f"the vocabulary of the `--data` records ({config.vocab_file})")
        raise ValueError(f"`--vocab_size={given}` contradicts {named}, which holds {config.vocab_size:,} entries: the "
                         "token table has a row per entry. Leave out --vocab_size (it follows the vocabulary).")


run = cli.console_script(sys.modules[__name__])  # the `electra-pretrain` console script

if __name__ == "__main__":
    run()
