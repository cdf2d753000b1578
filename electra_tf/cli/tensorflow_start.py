"""TensorFlow's start, set up before TensorFlow is imported (`prepare_tensorflow`): what every command does first.

- its oneDNN CPU kernels on where no GPU trains (`cpu_kernels`);
- its C++ log level: errors off without a GPU, INFO off with one (`log_level`);
- its and Beam's start-up lines left out (`electra_tf.cli.quiet`);
- Python's garbage collector paused while it imports, and its objects frozen (`electra_tf.cli.collector`).

Each setting is TensorFlow's environment variable, set only when the user has not set it.
Nothing here imports TensorFlow but `prepare_tensorflow`, which imports it quietly.
"""

import glob
import os

from electra_tf.cli import collector, quiet


def prepare_tensorflow():
    """What every CLI sets up before TensorFlow is imported: `cpu_kernels`, `log_level`, then a quiet import
    without garbage collection (`collector.importing`)."""
    cpu_kernels()
    log_level()
    with collector.importing():
        quiet.quiet_console()


def gpu_device_present():
    """Whether this machine has a GPU device node (NVIDIA, or WSL's /dev/dxg); no TensorFlow needed."""
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/dxg")


def cpu_kernels():
    """Turns on TensorFlow's oneDNN CPU kernels on a machine without a GPU, unless the user set TF_ENABLE_ONEDNN_OPTS.

    TensorFlow turns them on by itself only on CPUs with AVX-512 (or newer) instructions. On a
    CPU with AVX2 only (a 2-core AMD EPYC), the fine-tuning step of a MiniLM-size encoder ran
    1.7x faster with them and the pre-training step 1.6x (`benchmarks/results/finetune_speed.md`,
    `benchmarks/results/train_step.md`). Where
    a GPU trains, the CPU only feeds it, so TensorFlow's choice is kept (and its oneDNN notices,
    which the GPU log level shows, stay away). Set TF_ENABLE_ONEDNN_OPTS=0 to keep TensorFlow's
    choice. Has no effect once TensorFlow is imported; a script of your own sets the variable
    before its imports.
    """
    if not gpu_device_present():
        os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def log_level():
    """Sets TF_CPP_MIN_LOG_LEVEL unless the user did (then theirs is kept; 0 shows everything).

    3 (C++ errors off: they surface as Python exceptions) on a machine without a GPU device,
    1 (C++ INFO off) where there is one, so nothing about a GPU that exists is hidden.
    CUDA_VISIBLE_DEVICES is never touched.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1" if gpu_device_present() else "3")
