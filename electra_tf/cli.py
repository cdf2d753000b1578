"""What every command line shares: the error boundary, the flag vocabulary, TensorFlow's start.

- Error boundary: `error: <message>` on one line, the traceback with --debug.
- Flag vocabulary: `--vocab_file`, `--seq_length`, `--init`, `--output_dir`, `--model_dir`
  (`define_*`), and the deprecated spellings each CLI still accepts (`aliases`).
- TensorFlow's start (`prepare_tensorflow`, before TensorFlow is imported): its oneDNN CPU
  kernels on (`cpu_kernels`), its and Beam's start-up lines left out (`quiet_console`), and
  those of Beam's worker processes (`quiet_beam_workers`).

Each CLI defines its flags in `define_flags()` (only when it runs as a program) and ends
with `cli.run(main, aliases=ALIASES)` instead of `app.run(main)`. Bad input
(`ValueError` and the project's errors built on it, `TypeError` for a model of
the wrong kind, `OSError` such as `FileNotFoundError`, corrupt data reported
by TensorFlow) prints

    error: No pre-training files match `--data=records/*`.

and exits 1; a missing or malformed flag prints one line and a `--help` hint
and exits 2. `--debug` adds the traceback. Anything else (a bug) keeps
Python's traceback.
"""

import contextlib
import glob
import logging as std_logging
import os
import re
import signal
import sys
import threading
import traceback

from absl import app, flags

from electra_tf import config_fields

USAGE_EXIT = 2
ERROR_EXIT = 1
PREEMPTED_EXIT = 128 + signal.SIGTERM  # SIGTERM stopped a run after saving its checkpoint: re-run to resume


def errors():
    """The exception types that are bad input, not bugs (TensorFlow's only when it is loaded)."""
    kinds = [ValueError, OSError, TypeError, FloatingPointError]  # TypeError: a model of the wrong kind
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        kinds.append(tf.errors.OpError)  # DataLossError, NotFoundError, InvalidArgumentError, ...
    return tuple(kinds)


def memory_errors():
    """The exception types of memory running out: Python's, and TensorFlow's when it is loaded."""
    kinds = [MemoryError]
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        kinds.append(tf.errors.ResourceExhaustedError)
    return tuple(kinds)


def out_of_memory(error, flag_values=None):
    """The one line for memory running out: what ran out, and the flags of the command that size the work.

    Names `--batch_size` and `--seq_length` with their values where the command has them (a batch's
    tensors grow with both), else says what to free.
    """
    flag_values = flags.FLAGS if flag_values is None else flag_values
    lines = [line.strip() for line in message(error).splitlines() if line.strip()]
    detail = next((line for line in lines if "OOM" in line or "memory" in line.lower()), lines[0] if lines else "")
    detail = detail if len(detail) <= 200 else detail[:200] + "..."
    given = [name for name in ("batch_size", "seq_length") if name in flag_values and flag_values.is_parsed()]
    sizes = [f"`--{name}`" if flag_values[name].value is None else f"`--{name}={flag_values[name].value}`"
             for name in given]
    advice = (f"lower {' or '.join(sizes)}" if sizes else "free memory, or run it on a machine with more")
    return f"out of memory ({type(error).__name__}{': ' + detail if detail else ''}): {advice}."


def message(error):
    """The one-line text of an error (TensorFlow errors carry theirs in `.message`)."""
    text = getattr(error, "message", None) if not isinstance(error, (ValueError, OSError, TypeError)) else None
    text = text or str(error) or type(error).__name__
    if isinstance(error, KeyError) and text.startswith("'"):
        text = text.strip("'")
    return text


def fail(text, exit_code=ERROR_EXIT, hint=""):
    sys.stderr.write(f"error: {text}{hint}\n")
    sys.stderr.flush()
    sys.exit(exit_code)


def guard(main, debug=lambda: False, program=None):
    """`main` wrapped: bad input -> `error: ...` and exit 1, usage errors -> one line and exit 2."""
    hint = f" (see `{program} --help`)" if program else " (see --help)"

    def wrapped(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except app.UsageError as e:
            if debug():
                traceback.print_exc()
            fail(str(e), USAGE_EXIT, hint)
        except ImportError as e:
            if debug():
                traceback.print_exc()
            fail(missing_module(e))
        except memory_errors() as e:
            if debug():
                traceback.print_exc()
            fail(out_of_memory(e))
        except errors() as e:
            if debug():
                traceback.print_exc()
            fail(message(e))

    return wrapped


def run_script(main):
    """`absl.app.run(main)` for the benchmark and experiment scripts: a usage error is one line.

    absl prints the module's docstring before an `app.UsageError`'s message; here the message is
    `error: ...` on one line and the exit status 2, as the commands' (`run`). Any other error
    keeps its traceback: these scripts measure, and a failure there should show where. Nothing
    here imports TensorFlow (the HF side of a benchmark runs where it is not installed).
    """
    def wrapped(argv):
        try:
            return main(argv)
        except app.UsageError as e:
            fail(str(e), USAGE_EXIT, " (see --help)")

    app.run(wrapped)


# A module the code imports -> what the user installs for it (most share their name).
INSTALL_NAMES = {"safetensors": "safetensors", "transformers": "transformers", "torch": "torch",
                 "keras_hub": "keras-hub", "tensorflow_text": "tensorflow-text", "seqeval": "seqeval",
                 "apache_beam": "apache-beam", "tensorflow_serving": "tensorflow-serving-api",
                 "mwxml": "mwxml", "mwparserfromhell": "mwparserfromhell", "isal": "isal", "numba": "numba",
                 "tokenizers": "tokenizers", "matplotlib": "matplotlib"}


def missing_module(error):
    """The one line for an `ImportError`: the module that is missing and what to install.

    Example:
        ```python
        from electra_tf.cli import missing_module

        missing_module(ModuleNotFoundError("No module named 'safetensors'", name="safetensors"))
        # "No module named 'safetensors': install it with `pip install safetensors` (or `pip install -e .`)."
        ```
    """
    name = (getattr(error, "name", None) or "").split(".")[0]
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if not name:
        return f"{text}: reinstall electra_tf with its requirements (`pip install -e .`)."
    package = INSTALL_NAMES.get(name, name.replace("_", "-"))
    return f"{text}: install it with `pip install {package}` (or `pip install -e .`)."


def _parse_flags(known_only, table=None):
    def parse(argv):
        try:
            return flags.FLAGS(rewrite_deprecated(argv, table), known_only=known_only)
        except ContradictoryFlags as e:
            fail(str(e), USAGE_EXIT)
        except flags.Error as e:
            text, named = flag_error(e)
            fail(text, USAGE_EXIT, "" if named else " (see --help)")

    return parse


_RANGE_ERROR = re.compile(r"^flag --\w+=.*?: (`--\w+` must be .*)$")


def flag_error(error):
    """(one line, whether it says what the flag takes) of an absl flag error.

    A range error (`config_fields.define_flag`) says what the flag takes; it loses absl's prefix.

    Example:
    >>> from absl import flags
    >>> from electra_tf.cli import flag_error
    >>> flag_error(flags.IllegalFlagValueError("flag --num=-1: `--num` must be >= 1. Received: `--num=-1`"))
    ('`--num` must be >= 1. Received: `--num=-1`', True)
    """
    lines = [line for line in str(error).splitlines() if line.strip()]
    ranges = [_RANGE_ERROR.match(line) for line in lines]
    if lines and all(ranges):
        return "; ".join(match.group(1) for match in ranges), True
    return " ".join(lines), False


def _show_in_help():
    """Makes the program's flags (wherever defined: here, its module, a console script) `--help`'s own."""
    program = sys.argv[0] if sys.argv else ""
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if module != program and module.split(".")[0] in ("electra_tf", "pipelines"):
            for flag in module_flags:
                flags.FLAGS.register_key_flag_for_module(program, flag)


def console_script(program):
    """The console script of a command module: TensorFlow's start prepared, the module's flags defined
    (`define_flags`), its `main` run behind the error boundary (`run`) with its deprecated spellings
    (`ALIASES`). Each command ends with `run = cli.console_script(sys.modules[__name__])`."""
    def script():
        prepare_tensorflow()  # before `define_flags`, which may import TensorFlow
        program.define_flags()
        run(program.main, aliases=getattr(program, "ALIASES", None))

    script.__doc__ = f"The `{program.__name__}` command."
    return script


def run(main, known_only=False, aliases=None):
    """`absl.app.run(main)` behind the error boundary; defines `--debug`.

    Args:
        main: callable(argv), the program.
        known_only: bool. Leave unknown flags in argv (the Beam builder passes them to Beam).
        aliases: dict old flag name -> new, the deprecated spellings accepted (see `aliases`).
    """
    prepare_tensorflow()
    if "debug" not in flags.FLAGS:
        flags.DEFINE_bool("debug", False, "Print the traceback of an error, not only its message.")
    _show_in_help()
    app.run(guard(main, debug=lambda: flags.FLAGS.debug), flags_parser=_parse_flags(known_only, aliases))


# --- The one CLI vocabulary ---------------------------------------------------------------------
#
# Every command line spells the shared ideas the same way:
#
#     --vocab_file   the WordPiece vocab.txt (read, or written by pipelines.build_vocab)
#     --seq_length   tokens per example, [CLS]/[SEP] included
#     --init         the model to start from / to export
#     --output_dir   where a command writes (convert: a directory, a .keras file or a prefix)
#     --model_dir    the pre-training run (electra_tf.pretrain only: read and written)
#
# The spellings of electra_tf 0.1 keep working for one release: each prints one line
# `warning: --vocab is deprecated; use --vocab_file` and is read as the new flag.

DEPRECATED_FLAGS = {
    "vocab": "vocab_file",
    "max_seq_length": "seq_length",
    "init_from": "init",
    "output": "output_dir",
}


def aliases(*old, **renamed):
    """The deprecated spellings a CLI accepts: `old` names from `DEPRECATED_FLAGS`, `renamed` its own.

    For instance `cli.aliases("vocab", "max_seq_length")`; `pipelines.build_vocab` writes the
    vocabulary, so its `--output` becomes `cli.aliases(output="vocab_file")`.
    """
    table = {name: DEPRECATED_FLAGS[name] for name in old}
    table.update(renamed)
    return table


class ContradictoryFlags(flags.Error):
    """A deprecated spelling and its new name given together with different values."""


def rewrite_deprecated(argv, table, stderr=None):
    """`argv` with every deprecated spelling of `table` (old -> new) replaced by the new one.

    Accepts `--old`, `-old`, `--old=value` and `--noold` (boolean flags); stops at `--`.
    Writes one warning line per deprecated flag used. A deprecated spelling given with its
    new name and another value (`--max_seq_length 64 --seq_length 96`) raises
    `ContradictoryFlags` naming both, before any warning: neither value is picked silently.
    """
    if not table:
        return list(argv)
    stderr = stderr or sys.stderr
    out, warned = list(argv[:1]), []
    given = {}  # new name -> [(name as given, its spelling, value)]
    rest = list(argv[1:])
    for i, arg in enumerate(rest):
        if arg == "--":
            out.extend(rest[i:])
            break
        new_arg = arg
        if arg.startswith("-") and not arg.startswith("---"):
            dashes = "--" if arg.startswith("--") else "-"
            name, eq, value = arg[len(dashes):].partition("=")
            prefix = ""
            if name not in table and name.startswith("no") and name[2:] in table:
                prefix, name = "no", name[2:]
            if name in table:
                new_arg = f"{dashes}{prefix}{table[name]}{eq}{value}"
                if name not in warned:
                    warned.append(name)
            target = table.get(name, name)
            if target in table.values():
                value = _flag_value(target, prefix, eq, value, rest[i + 1:i + 2])
                given.setdefault(target, []).append((name, f"--{prefix}{name}", value))
        out.append(new_arg)
    _refuse_contradictions(given, table)
    for name in warned:
        stderr.write(f"warning: --{name} is deprecated; use --{table[name]} "
                     "(the old spelling goes in the next release)\n")
    return out


def _flag_value(name, prefix, eq, value, following):
    """The value a flag given as `--[no]name[=value]` takes (the next argument when no `=`), parsed when defined."""
    flag = flags.FLAGS[name] if name in flags.FLAGS else None
    boolean = flag is not None and isinstance(flag, flags.BooleanFlag)
    if not eq:
        value = ("false" if prefix else "true") if boolean or prefix else (following[0] if following else None)
    if flag is not None and value is not None:
        try:
            return flag.parser.parse(value)
        except (ValueError, TypeError):
            pass  # absl names the bad value itself
    return value


def _refuse_contradictions(given, table):
    """Raises `ContradictoryFlags` when the old and the new spelling of a flag (`given`) carry different values."""
    for target, uses in given.items():
        if len({name for name, _, _ in uses}) > 1 and len({repr(value) for _, _, value in uses}) > 1:
            shown = " and ".join(dict.fromkeys(f"`{spelling}={value}`" for _, spelling, value in uses))
            old = "/--".join(sorted(name for name, new in table.items() if new == target))
            raise ContradictoryFlags(f"{shown} contradict each other: --{old} is the deprecated spelling of "
                                     f"--{target}. Give --{target} once.")


def define(kind, name, default, help_text, flag_values=None, range=None, check=None, **kwargs):  # noqa: A002
    """`flags.DEFINE_<kind>(name, ...)` unless `name` is already defined (so defining twice is harmless).

    `range` (e.g. "[0, inf)") and `check` (a function raising `ValueError`) apply when the flags
    are parsed, as a config field's range does: a value they refuse is a bad flag, refused
    naming it (`config_fields.define_flag`).
    """
    flag_values = flags.FLAGS if flag_values is None else flag_values
    config_fields.define_flag(kind, name, default, help_text, flag_values, range=range, check=check, **kwargs)


def define_vocab_file(help_text="WordPiece vocab.txt.", default=None, flag_values=None):
    define("string", "vocab_file", default, help_text, flag_values)


def define_seq_length(default, help_text="Tokens per example, [CLS]/[SEP] included.", flag_values=None,
                      range="[3, inf)"):  # noqa: A002  ([CLS] x [SEP])
    define("integer", "seq_length", default, help_text, flag_values, range=range)


def define_init(help_text="The model to start from.", flag_values=None):
    define("string", "init", None, help_text, flag_values)


def define_output_dir(help_text="Output directory.", flag_values=None):
    define("string", "output_dir", None, help_text, flag_values)


def define_model_dir(help_text="The pre-training run: checkpoints, logs, config and the trained "
                     "discriminator.", flag_values=None):
    define("string", "model_dir", None, help_text, flag_values)


def invoke(program, args):
    """Runs the CLI module `program` in-process on the flags `args`, without the error boundary (tests).

    Defines its flags, parses `args` from the defaults (deprecated spellings included; a bad
    flag is one line and exit 2), then calls `program.main`. The global flags are left as they
    were: the flags defined here are removed again, so another module may define them later.
    """
    from absl.testing import flagsaver

    was_parsed = flags.FLAGS.is_parsed()
    try:
        with flagsaver.flagsaver():
            program.define_flags()
            if "debug" not in flags.FLAGS:
                flags.DEFINE_bool("debug", False, "Print the traceback of an error, not only its message.")
            flags.FLAGS.unparse_flags()
            argv = _parse_flags(False, getattr(program, "ALIASES", None))([program.__name__, *args])
            return program.main(argv)
    finally:
        if not was_parsed:
            flags.FLAGS.unparse_flags()

# --- TensorFlow's start ------------------------------------------------------------------------


def prepare_tensorflow():
    """What every CLI sets up before TensorFlow is imported: `cpu_kernels`, then `quiet_console`."""
    cpu_kernels()
    quiet_console()


def cpu_kernels():
    """Turns on TensorFlow's oneDNN CPU kernels on a machine without a GPU, unless the user set TF_ENABLE_ONEDNN_OPTS.

    TensorFlow turns them on by itself only on CPUs with AVX-512 (or newer) instructions. On a
    CPU with AVX2 only (a 2-core AMD EPYC), the fine-tuning step of a MiniLM-size encoder ran
    1.7x faster with them and the pre-training step 1.6x (`benchmarks/results/onednn.md`). Where
    a GPU trains, the CPU only feeds it, so TensorFlow's choice is kept (and its oneDNN notices,
    which the GPU log level shows, stay away). Set TF_ENABLE_ONEDNN_OPTS=0 to keep TensorFlow's
    choice. Has no effect once TensorFlow is imported; a script of your own sets the variable
    before its imports.
    """
    if not gpu_device_present():
        os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


# --- A quiet console ----------------------------------------------------------------------------
#
# What TensorFlow and Apache Beam print on start-up is not the user's business: on a CPU-only
# machine TensorFlow reports the GPU it did not find (`failed call to cuInit`), the oneDNN
# build, the CPU instructions it was not compiled for and the int64 ops oneDNN leaves to Eigen;
# Beam reports the BigQuery clients it lacks. The CLIs drop exactly those lines, and only when
# the user has not set TF_CPP_MIN_LOG_LEVEL (set it, to 0 say, to see everything).

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


def gpu_device_present():
    """Whether this machine has a GPU device node (NVIDIA, or WSL's /dev/dxg); no TensorFlow needed."""
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.exists("/dev/dxg")


def quiet_console():
    """Quiets TensorFlow's and Beam's start-up; called by `prepare_tensorflow`, before TensorFlow is imported.

    Unless the user set TF_CPP_MIN_LOG_LEVEL (then theirs is kept), sets it to 3 (C++
    errors off: they surface as Python exceptions) on a machine without a GPU device, to 1
    (C++ INFO off) where there is one, so nothing about a GPU that exists is hidden. Always
    drops the lines TensorFlow's libraries print while they load and filters the Beam and
    TensorFlow Python log records in `_LOG_NOISE`. CUDA_VISIBLE_DEVICES is never touched.
    """
    global _quieted
    if _quieted:
        return
    _quieted = True
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1" if gpu_device_present() else "3")
    for name in sorted({name for name, _ in _LOG_NOISE}):
        std_logging.getLogger(name or None).addFilter(
            _DropMessages(tuple(text for owner, text in _LOG_NOISE if owner == name)))
    if "tensorflow" not in sys.modules:
        with _hidden(KERAS_EXTRAS):
            _import_quietly("tensorflow")


# Libraries Keras imports with TensorFlow when they are installed, for its scikit-learn wrappers
# (scikit-learn, and SciPy through it) and its image-plotting helpers (matplotlib): about 4 s of a
# CLI's start-up where they are. No CLI uses either, and Keras defines both without them, so they stay
# out of that import; a later `import sklearn` or `import matplotlib` (by a user's script) works as ever.
KERAS_EXTRAS = ("sklearn", "matplotlib", "scipy")


@contextlib.contextmanager
def _hidden(packages):
    """Inside: importing any of `packages` (or their modules) not yet imported raises `ModuleNotFoundError`.

    Example:
    >>> import sys
    >>> from electra_tf.cli import _hidden
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
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
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
