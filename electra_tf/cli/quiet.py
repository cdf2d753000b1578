"""A quiet console: TensorFlow's and Apache Beam's start-up lines left out, the commands' own kept.

What TensorFlow and Apache Beam print on start-up is not the user's business: on a CPU-only
machine TensorFlow reports the GPU it did not find (`failed call to cuInit`), the oneDNN
build, the CPU instructions it was not compiled for and the int64 ops oneDNN leaves to Eigen;
Beam reports the BigQuery clients it lacks. The commands drop exactly those lines: while
TensorFlow loads (`quiet_console`), as Python log records (`_LOG_NOISE`), and as Beam's worker
processes write them (`quiet_beam_workers`). TensorFlow's C++ log level is its start-up's
setting (`electra_tf.cli.tensorflow_start.log_level`; set TF_CPP_MIN_LOG_LEVEL=0 to see everything).
"""

import contextlib
import importlib.util
import logging as std_logging
import os
import re
import sys
import threading

from absl import flags

# Lines TensorFlow's shared libraries write while they load, before any log level applies.
_IMPORT_NOISE = (
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "oneDNN custom operations are on.",
    "Could not find cuda drivers on your machine",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions:",
)
# Python log records nobody acts on: (logger name, text in the message).
_LOG_NOISE = (
    ("", "apitools not found, and bigquery client libraries are not available"),  # Beam, on the root logger
    ("apache_beam.io.gcp.bigquery", "google.cloud.bigquery_storage_v1"),
    ("absl", "Sharding callback duration"),  # TensorFlow, at every checkpoint save
    ("apache_beam.runners.worker.statecache", "Creating state cache"),  # Beam, when the demo data is built
    ("apache_beam.runners.portability.fn_api_runner.worker_handlers", "server on port"),  # multi-processing
    # The runner's copy of each worker log record (`Worker: severity: ... message: ...`): the worker
    # writes the record itself (see `quiet_beam_workers`), errors and warnings included.
    ("apache_beam.runners.portability.local_job_service", "Worker: "),
)
# Lines a multi-processing Beam worker writes on start-up and exit, besides `_IMPORT_NOISE`
# (its log records of the pipeline's own code, `INFO:absl:...`, pass).
_BEAM_WORKER_NOISE = (
    "INFO:__main__:",  # sdk_worker_main: logging handler, options, harness start and exit
    "No semi_persistent_directory found",
    "INFO:apache_beam.",  # channels, state cache, bundle processing
    "Discarding unparseable args",
    "apitools not found, and bigquery client libraries are not available",
)
_quieted = False


class _DropMessages(std_logging.Filter):
    def __init__(self, texts):
        super().__init__()
        self.texts = texts

    def filter(self, record):
        message = record.getMessage()
        return not any(text in message for text in self.texts)


def quiet_console():
    """Filters the log records in `_LOG_NOISE` and imports TensorFlow without its loading lines (`_IMPORT_NOISE`).

    Called by `electra_tf.cli.prepare_tensorflow`, once TensorFlow's environment is set (a
    second call does nothing).
    """
    global _quieted
    if _quieted:
        return
    _quieted = True
    for name in sorted({name for name, _ in _LOG_NOISE}):
        std_logging.getLogger(name or None).addFilter(
            _DropMessages(tuple(text for owner, text in _LOG_NOISE if owner == name)))
    if "tensorflow" not in sys.modules and importlib.util.find_spec("tensorflow") is not None:
        # (A JAX or PyTorch host may have no TensorFlow; where it is installed, it is imported here, quietly.)
        with _hidden(keras_extras(os.environ.get("KERAS_BACKEND"))):
            _import_quietly("tensorflow")


# Libraries TensorFlow and Keras import with TensorFlow when they are installed, for what no command uses:
# Keras' scikit-learn wrappers (scikit-learn, and SciPy through it) and image-plotting helpers (matplotlib),
# about 4 s of a command's start-up where they are; and JAX, which `tf.lite` imports for its JAX converter
# (0.3 CPU-s of a start, and JAX's collector callback in every TensorFlow process). TensorFlow and Keras
# define all else without them, so they stay out of that import; a later `import sklearn` or `import jax`
# (by a user's script) works as ever, only `tf.lite`'s JAX converter stays off in that process.
KERAS_EXTRAS = ("sklearn", "matplotlib", "scipy", "jax")


def keras_extras(backend):
    """`KERAS_EXTRAS` on the TensorFlow backend; none on another (JAX's Keras backend imports SciPy and JAX,
    PyTorch's start looks for scikit-learn: hidden, Keras' import would fail half-way).

    Example:
    >>> from electra_tf.cli.quiet import keras_extras
    >>> keras_extras("tensorflow"), keras_extras("jax")
    (('sklearn', 'matplotlib', 'scipy', 'jax'), ())
    """
    return KERAS_EXTRAS if backend in (None, "", "tensorflow") else ()


@contextlib.contextmanager
def _hidden(packages):
    """Inside: importing any of `packages` (or their modules) not yet imported raises `ModuleNotFoundError`.

    Example:
    >>> import sys
    >>> from electra_tf.cli.quiet import _hidden
    >>> sys.modules.pop("tabnanny", None) and None
    >>> with _hidden(("tabnanny",)):
    ...     try:
    ...         import tabnanny
    ...     except ModuleNotFoundError as e:
    ...         print(e.name)
    tabnanny
    >>> import tabnanny; "tabnanny" in sys.modules  # outside: imports as ever
    True
    """
    finder = _HidingFinder(packages)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class _HidingFinder:
    """A `sys.meta_path` finder that refuses `packages` (see `_hidden`)."""

    def __init__(self, packages):
        self.packages = tuple(packages)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.packages:
            raise ModuleNotFoundError(f"No module named {name!r} (left out of TensorFlow's import)", name=name)
        return None


class _WorkerLines:
    """`keep(line)`: False for a worker's start-up noise and, unless `debug`, its error tracebacks."""

    _TRACE_START = (b"Traceback (most recent call last):", b"ERROR:apache_beam.", b"ERROR:__main__:")
    _TRACE_BODY = (b" ", b"\t", b"\n", b"Traceback (most recent call last):", b"The above exception",
                   b"During handling of the above exception")
    _EXCEPTION = re.compile(rb"^[A-Za-z_][\w.]*: ")  # `module.SomeError: message`, the traceback's last line

    def __init__(self, debug=False):
        self.noise = tuple(text.encode() for text in _IMPORT_NOISE + _BEAM_WORKER_NOISE)
        self.debug = debug
        self.in_trace = False

    def __call__(self, line):
        if not self.debug:
            if line.startswith(self._TRACE_START):
                self.in_trace = True
                return False
            if self.in_trace:
                if line.startswith(self._TRACE_BODY) or (
                        self._EXCEPTION.match(line) and not line.startswith((b"error: ", b"warning: "))):
                    return False
                self.in_trace = False
        return not any(text in line for text in self.noise)


@contextlib.contextmanager
def quiet_beam_workers():
    """Inside: lines written to file descriptor 2 by this process or its children, less the noise.

    Beam's multi-processing DirectRunner starts worker processes that inherit this
    process's stderr; each writes TensorFlow's and Beam's start-up lines
    (`_IMPORT_NOISE`, `_BEAM_WORKER_NOISE`), and the traceback of any error it
    meets, which the error boundary reports on one line once it reaches this
    process (`--debug` keeps the tracebacks). Descriptor 2 becomes a pipe that a
    thread copies to the real stderr line by line, as the lines come, less those.
    """
    keep = _WorkerLines(debug="debug" in flags.FLAGS and flags.FLAGS.is_parsed() and flags.FLAGS.debug)
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    out = os.dup(saved)  # the thread's own: it may outlive this block if a worker lingers

    def copy():
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if keep(line):
                    os.write(out, line)
        os.close(out)

    thread = threading.Thread(target=copy, name="quiet_beam_workers", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # the pipe's last write end here: the copy ends when the workers' do
        os.close(saved)
        thread.join(timeout=10)


def _import_quietly(module):
    """Imports `module` with file descriptor 2 captured; writes back every line but `_IMPORT_NOISE`."""
    import importlib

    from electra_tf import atomic

    sys.stderr.flush()
    saved = os.dup(2)
    with atomic.scratch_file("stderr") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            importlib.import_module(module)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines = capture.read().decode("utf-8", "replace").splitlines(keepends=True)
            sys.stderr.write("".join(line for line in lines if not any(t in line for t in _IMPORT_NOISE)))
            sys.stderr.flush()
