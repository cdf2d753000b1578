"""The commands' error boundary: bad input is one line `error: <message>` and an exit status, never a traceback.

Bad input (`ValueError` and the project's errors built on it, `TypeError` for a model of the
wrong class, `OSError` such as `FileNotFoundError`, corrupt data reported by TensorFlow) prints

    error: No pre-training files match `--data=records/*`.

and exits 1 (`ERROR_EXIT`); a usage error exits 2 (`USAGE_EXIT`) with a `--help` hint; memory
running out names the flags that size the work (`out_of_memory`); a write the file system refuses
(full, read-only, `ulimit -f`; TensorFlow reports a full disk as `ResourceExhaustedError`) names the
output flags (`write_failure`), and stdout on a full device says so (`stdout_failure`); a missing
package names what to install (`missing_module`). `--debug` adds the traceback. Anything else (a bug) keeps Python's
traceback. Nothing here imports TensorFlow: its errors count once it is loaded.
"""

import errno
import math
import os
import re
import signal
import stat
import sys
import traceback

from absl import app, flags

USAGE_EXIT = 2
ERROR_EXIT = 1
PREEMPTED_EXIT = 128 + signal.SIGTERM  # SIGTERM stopped a run after saving its checkpoint: re-run to resume


def errors():
    """The exception types that are bad input, not bugs (TensorFlow's only when it is loaded)."""
    types = [ValueError, OSError, TypeError, FloatingPointError]  # TypeError: a model of the wrong class
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        types.append(tf.errors.OpError)  # DataLossError, NotFoundError, InvalidArgumentError, ...
    return tuple(types)


def memory_errors():
    """The exception types of memory running out: Python's, and TensorFlow's when it is loaded."""
    types = [MemoryError]
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        types.append(tf.errors.ResourceExhaustedError)
    return tuple(types)


# TensorFlow makes a graph's constants (the zeros Grappler adds to sum a batch's gradients among
# them) from their protos when it instantiates the graph; a constant whose memory cannot be
# allocated fails as this `InvalidArgumentError`, not as `ResourceExhaustedError`. The graphs run
# here are TensorFlow's own, so the proto itself is never what is wrong.
_CONSTANT_NOT_ALLOCATED = "Cannot parse tensor from proto"


def is_memory_error(error):
    """True for memory running out: Python's `MemoryError`, TensorFlow's `ResourceExhaustedError`, or a
    graph constant TensorFlow could not allocate (an `InvalidArgumentError` that says so)."""
    if isinstance(error, memory_errors()):
        return True
    tf = sys.modules.get("tensorflow")
    return (tf is not None and isinstance(error, tf.errors.InvalidArgumentError)
            and _CONSTANT_NOT_ALLOCATED in message(error))


def _constant_not_allocated(text):
    """'a constant of shape [1000000, 32, 32] float32 (4.1 GB) could not be allocated', from the error's proto."""
    from tensorflow.core.framework import types_pb2  # pylint: disable=import-outside-toplevel

    tf = sys.modules["tensorflow"]  # loaded: the error is TensorFlow's
    dims = [int(size) for size in re.findall(r"size: (\d+)", text)]
    found = re.search(r"dtype: (DT_\w+)", text)
    dtype = tf.dtypes.as_dtype(types_pb2.DataType.Value(found.group(1))) if found else None
    shape = f" of shape [{', '.join(map(str, dims))}]" if dims else ""
    name = f" {dtype.name}" if dtype else ""
    size = f" ({math.prod(dims) * dtype.size / 1e9:.1f} GB)" if dtype and dtype.size else ""  # a string's size is 0
    return f"a constant{shape}{name}{size} could not be allocated"


def out_of_memory(error, flag_values=None):
    """The one line for memory running out: what ran out, and the flags of the command that size the work.

    Names `--batch_size` and `--seq_length` with their values where the command has them (a batch's
    tensors grow with both), else says what to free.
    """
    flag_values = flags.FLAGS if flag_values is None else flag_values
    lines = [line.strip() for line in message(error).splitlines() if line.strip()]
    detail = next((line for line in lines if "OOM" in line or "memory" in line.lower()), lines[0] if lines else "")
    if _CONSTANT_NOT_ALLOCATED in message(error):
        detail = _constant_not_allocated(message(error))
    detail = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", detail)  # where in TensorFlow's graphs: no help here
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


# What a write refused by the device says: full, over a size limit or quota, an I/O error.
_WRITE_FAILURES = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO)


def stdout_failure(error):
    """The one line for a write to stdout that the device refused (`> /dev/full`, a full disk), else None.

    Such an error names no file; stdout is the stream that still cannot be flushed. It is then pointed at
    the null device, so Python's exit does not report it again.
    """
    if not isinstance(error, OSError) or error.errno not in _WRITE_FAILURES or error.filename is not None:
        return None
    if sys.stdout is None or not _refuses_writes(sys.stdout, error.errno):
        return None
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return (f"Cannot write stdout: {error.strerror or error} (is it redirected to a full device?); what was "
            "written before this is all the output. Redirect stdout elsewhere.")


# What only a write is refused with (an I/O error may be a read's): full, a size limit or quota, read-only.
_FILE_SYSTEM_REFUSALS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS)

# The flags that name where a command writes, for a write failure that names only a file.
OUTPUT_FLAGS = ("output_dir", "model_dir", "output_file", "metrics_file")


def write_failure(error, flag_values=None):
    """The one line for a file write the file system refused (full, read-only, a size limit) that no flag named
    yet: TensorFlow's errors (ENOSPC is its `ResourceExhaustedError`, not memory) and `OSError`s alike; None
    for any other error. Names the output flags the command was given."""
    from electra_tf import atomic  # pylint: disable=import-outside-toplevel

    if isinstance(error, atomic.WriteError):
        return None
    reason = atomic._tensorflow_write_reason(error)  # pylint: disable=protected-access
    path = None
    if reason is not None:
        found = re.search(r"(\S+);\s*" + re.escape(reason), message(error))  # `<file>; No space left on device`
        path = found.group(1) if found else None
    elif isinstance(error, OSError) and error.errno in _FILE_SYSTEM_REFUSALS and error.filename:
        reason, path = error.strerror or str(error), error.filename
    if reason is None:
        return None
    flag_values = flags.FLAGS if flag_values is None else flag_values
    given = [f"`--{name}={flag_values[name].value}`" for name in OUTPUT_FLAGS
             if flag_values.is_parsed() and name in flag_values and flag_values[name].value]
    where = " or ".join(given) or "the output"
    return f"Cannot write {where}: {reason}" + (f" ({path})" if path else "") + "."


def _refuses_writes(stream, code):
    """Whether `stream` cannot take what it was given: its buffer cannot be flushed, or it is the full device, a
    file on a full file system (ENOSPC, EDQUOT) or a file under a size limit (EFBIG, `ulimit -f`)."""
    try:
        stream.flush()
    except (OSError, ValueError):
        return True
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISCHR(info.st_mode):
            return os.path.exists("/dev/full") and info.st_rdev == os.stat("/dev/full").st_rdev
        if not stat.S_ISREG(info.st_mode):
            return False
        if code == errno.EFBIG:
            import resource  # pylint: disable=import-outside-toplevel  # POSIX only

            return resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY
        space = os.fstatvfs(stream.fileno())
        return code in (errno.ENOSPC, errno.EDQUOT) and min(space.f_bavail, space.f_bfree) == 0
    except (OSError, ValueError, AttributeError, ImportError):
        return False


def fail(text, exit_code=ERROR_EXIT, hint=""):
    """Writes `error: <text><hint>` to stderr and exits with `exit_code`."""
    sys.stderr.write(f"error: {text}{hint}\n")
    sys.stderr.flush()
    sys.exit(exit_code)


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
        from electra_tf.cli.errors import missing_module

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
            fail(write_failure(e) or out_of_memory(e))
        except errors() as e:
            if debug():
                traceback.print_exc()
            fail(stdout_failure(e) or write_failure(e) or (out_of_memory(e) if is_memory_error(e) else message(e)))

    return wrapped
