"""What every fine-tuning kind shares: the argument checks, the strategy, the encoder copy, the optimiser.

The recipe is the reference's (section 5): AdamW without weight decay,
epsilon 1e-6, clip 1.0, 10 % warmup then linear decay, layer-wise LR decay.
"""

import contextlib
import os
import statistics

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf import atomic, run_files, sources
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW
from electra_tf.layers.initializers import weights_set_after_build
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.training import distribute
from electra_tf.training.optimization import WarmupLinearDecay


def check_required(config):
    """`task`, `data_dir`, `init` and `output_dir` are set."""
    for name in ("task", "data_dir", "init", "output_dir"):
        if not getattr(config, name):
            raise ValueError(f"`--{name}` is required. Received: `--{name}={getattr(config, name)!r}`")


def check_output_dir(config):
    """Refuses an `output_dir` that is `init` or overlaps it, is `data_dir`, holds another artefact or lies inside
    one (`run_files.refuse_foreign_output`), before anything is written.

    The one place fine-tuning guards its output folder (every kind calls it).
    """
    init, output_dir = config.init, config.output_dir
    if init and atomic.same_file(output_dir, init):  # links resolved: a link to a folder is that folder
        raise ValueError(f"`--output_dir={output_dir}` is `--init`: the fine-tuned model would be written into "
                         "the model it starts from. Choose another --output_dir.")
    if config.data_dir and atomic.same_file(output_dir, config.data_dir):
        raise ValueError(f"`--output_dir={output_dir}` is `--data_dir`: the run's files would mix with (or "
                         "replace) the task's. Choose another --output_dir.")
    run_files.refuse_foreign_output(output_dir, "output_dir", run_files.FINETUNING_OUTPUT,
                                    inputs=sources.init_inputs(init))


def check_model(encoder, vocab_file, seq_length):
    """The encoder's tables hold `seq_length` positions and every id of `vocab_file`; returns its `WordPieceTokenizer`.

    The tokenizer is the one the task then tokenizes with (building it costs a fraction of a second).
    """
    if seq_length > encoder.max_sequence_length:
        raise ValueError(f"`--seq_length={seq_length}` exceeds the encoder's position table "
                         f"(max_sequence_length={encoder.max_sequence_length}).")
    sources.check_vocabulary(vocab_file, encoder.vocab_size)
    return WordPieceTokenizer(vocab_file)


def create_strategy(config):
    """The config's dtype policy set globally, and its `tf.distribute` strategy (on JAX or PyTorch: the default
    one, TensorFlow kept off the GPUs; `--strategy auto|cpu|gpu` are then the backend's own placement).

    A second run in one process may ask for the logical CPUs the first one
    made (they cannot be made twice): those are reused.
    """
    keras.mixed_precision.set_global_policy(config.precision)  # also resets an earlier run's policy
    if keras.backend.backend() != "tensorflow":  # the backend places the model; TensorFlow only feeds the batches
        try:
            tf.config.set_visible_devices([], "GPU")  # and leaves the GPUs' memory to the backend
        except RuntimeError:  # TensorFlow's devices are set up already (a second run in the process)
            pass
        return tf.distribute.get_strategy()
    if config.strategy is None:
        return tf.distribute.get_strategy()
    try:
        return distribute.create_strategy(config.strategy, config.tpu, config.num_cpu_devices)
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != config.num_cpu_devices:
            raise
        return distribute.create_strategy(config.strategy, config.tpu, 0)


@contextlib.contextmanager
def cpu_graph_options():
    """On a machine with neither GPU nor TPU: TensorFlow's graph optimiser (Grappler) off while inside.

    On CPU its rewrites buy the fine-tuning step nothing measurable while optimising each traced
    function costs seconds at its first call: the 16-step MiniLM run's first step took 5.9 CPU s
    without them against 9.1 with them, the later steps 1.67 against 1.75
    (`benchmarks/results/finetune_end_to_end.md`). Where an accelerator trains, TensorFlow's choice is
    kept. The process's setting is restored on the way out, so what runs after a fine-tuning run in
    the same process (a served model, a user's own functions) is optimised as before.
    """
    before = tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)
    if not tf.config.list_logical_devices("GPU") and not tf.config.list_logical_devices("TPU"):
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before})


def jit_compile(config, strategy):
    """`config.jit_compile`, except where XLA cannot run (mirrored over logical CPUs).

    On JAX the train step is always XLA-compiled (Keras' default there: JAX runs op by op
    otherwise); on PyTorch never (`torch.compile` is not what the recipe was measured with).
    """
    backend = keras.backend.backend()
    if backend != "tensorflow":
        if config.jit_compile and backend == "torch":
            logging.warning("--jit_compile is TensorFlow's and JAX's XLA; PyTorch trains without it.")
        return backend == "jax"
    if config.jit_compile and distribute.uses_logical_cpus(strategy):
        logging.warning("XLA is unavailable for MirroredStrategy over logical CPUs; training without it.")
        return False
    return config.jit_compile


def rebuild_encoder(encoder):
    """A copy of `encoder` made in the current strategy scope and global dtype policy."""
    config = dict(encoder.get_config(), dtype=keras.mixed_precision.global_policy().name)
    with weights_set_after_build():  # every weight is set below: nothing to draw
        copy = ElectraEncoder.from_config(config)
        copy.build()
    copy.set_weights(encoder.get_weights())
    return copy


def create_optimizer(config, num_layers, total_steps):
    """The reference's fine-tuning optimiser: layer-wise AdamW, epsilon 1e-6, warmup then linear decay."""
    schedule = WarmupLinearDecay(config.learning_rate, int(config.warmup_proportion * total_steps), total_steps)
    return LayerwiseAdamW(
        schedule,
        num_layers=num_layers,
        layerwise_decay=config.layerwise_lr_decay,
        weight_decay=config.weight_decay,
        epsilon=1e-6,
        global_clipnorm=config.clip_norm or None,
    )


def summarize(values):
    """mean / median / std / min / max of per-trial values (None where a value is not finite).

    Example:
    >>> from electra_tf.finetuning.recipe import summarize
    >>> summarize([1.0, 3.0])
    {'mean': 2.0, 'median': 2.0, 'std': 1.0, 'min': 1.0, 'max': 3.0}
    """
    values = [v for v in values if v is not None]
    if not values:
        return {name: None for name in ("mean", "median", "std", "min", "max")}
    return finite({
        "mean": float(np.mean(values)),
        "median": float(statistics.median(values)),
        "std": float(np.std(values)),
        "min": float(np.min(values)),
        "max": float(np.max(values)),
    })


def finite(metrics):
    """`metrics` with every NaN or infinite float replaced by None (JSON holds no NaN)."""
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in metrics.items()}
