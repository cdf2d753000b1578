"""`--backend`: the Keras backend a command runs on, chosen before Keras is imported.

Keras fixes its backend when it is first imported, from `KERAS_BACKEND`. A command that takes
`--backend` (its module sets `BACKEND_FLAG = True`) reads the flag from its arguments before
anything imports Keras (`select_backend`, the first thing its console script does), checks that
the backend's package imports, and sets `KERAS_BACKEND`; the flag is then defined and parsed as
any other (`define_backend`): an unknown value is absl's one line, exit 2. Without the flag,
`KERAS_BACKEND` chooses, else TensorFlow. `check_backend` refuses, before anything is written,
what the chosen backend cannot run: the TensorFlow-only flags (`--strategy
mirrored|multi_worker|tpu`, `--fused_elementwise`) and a command not available on it yet.
Nothing here imports Keras or TensorFlow.
"""

import importlib
import os

from electra_tf import backends
from electra_tf.cli import collector
from electra_tf.cli.errors import fail

FLAG = "backend"
# `tf.distribute` strategies that exist on TensorFlow alone (`cpu` and `gpu` name a device, any backend has one).
TENSORFLOW_ONLY_STRATEGIES = ("mirrored", "multi_worker", "tpu")


def given_backend(argv):
    """The value of the last `--backend` in `argv` (`--backend=X` or `--backend X`), or None.

    Example:
        >>> from electra_tf.cli.backend_start import given_backend
        >>> given_backend(["--config", "tiny", "--backend", "jax"]), given_backend(["--backend=torch"])
        ('jax', 'torch')
        >>> given_backend(["--config", "tiny"]) is None
        True
    """
    value = None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":  # absl's end of flags
            break
        name, equals, rest = arg.lstrip("-").partition("=")
        if arg.startswith("-") and name == FLAG:
            if equals:
                value = rest
            elif i + 1 < len(args):
                value = args[i + 1]
                i += 1
        i += 1
    return value


def select_backend(argv):
    """Sets `KERAS_BACKEND` from `--backend` in `argv` (else the environment's, else TensorFlow), before Keras is
    imported; one `error:` line and exit 1 when that backend is not one electra_tf runs on or its package does not
    import. An unknown `--backend` value is left to the flag parser (absl's line, exit 2)."""
    given = given_backend(argv)
    if given is not None and given not in backends.BACKENDS:
        os.environ["KERAS_BACKEND"] = backends.DEFAULT  # Keras imports; parsing then refuses the value
        return
    name = given or os.environ.get("KERAS_BACKEND") or backends.DEFAULT
    source = f"`--backend={name}`" if given else f"`KERAS_BACKEND={name}`"
    choices = ", ".join(backends.BACKENDS)
    if name not in backends.BACKENDS:
        fail(f"{source} is not a backend electra_tf runs on: choose --backend {choices}.")
    os.environ["KERAS_BACKEND"] = name
    if name == backends.DEFAULT:  # imported next, quietly and after its settings (`prepare_tensorflow`)
        return
    module, package = backends.PACKAGES[name]
    try:
        with collector.importing():
            importlib.import_module(module)
    except ImportError as e:
        fail(f"{source} needs the {package} package, which does not import here ({str(e).splitlines()[0]}): "
             f"install it with `pip install {package}`, or choose another --backend ({choices}).")


def define_backend(flag_values=None):
    """Defines `--backend` (its default: the backend `select_backend` chose when the flag is not given)."""
    from electra_tf.cli.flag_vocabulary import define

    chosen = os.environ.get("KERAS_BACKEND")
    define("enum", FLAG, chosen if chosen in backends.BACKENDS else backends.DEFAULT,
           "Keras backend to run on (default: KERAS_BACKEND when set, else tensorflow).", flag_values,
           enum_values=backends.BACKENDS)


def check_backend(flag_values, doing, available=(backends.DEFAULT,)):
    """Refuses (a `ValueError`) a TensorFlow-only flag given with another `--backend`, naming both, then a backend
    `doing` (e.g. "Pre-training") is not available on yet. `available`: the backends it runs on."""
    backend = flag_values[FLAG].value
    if backend == backends.DEFAULT:
        return
    named = f"`--backend={backend}`"
    if "strategy" in flag_values and flag_values["strategy"].value in TENSORFLOW_ONLY_STRATEGIES:
        raise ValueError(f"`--strategy={flag_values['strategy'].value}` is a tf.distribute strategy, which runs on "
                         f"the TensorFlow backend only, not with {named}: leave out --strategy, or choose "
                         "--backend tensorflow.")
    if "fused_elementwise" in flag_values and flag_values["fused_elementwise"].value:
        raise ValueError(f"`--fused_elementwise` runs TensorFlow's XLA kernels, on the TensorFlow backend only, not "
                         f"with {named} (which runs Keras' ops): leave it out, or choose --backend tensorflow.")
    if backend not in available:
        raise ValueError(f"{doing} under {named} is not available yet: it runs on "
                         f"{', '.join(f'--backend {b}' for b in available)} (the default).")
