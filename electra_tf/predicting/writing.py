"""Where predictions go: JSON Lines on stdout, or a file written whole or not at all.

`check_outputs` refuses, before the model loads, an output that would replace
what `predict` reads or another command wrote: `--output_file` or
`--metrics_file` equal to `--input`, to `--init` or inside it, to each other,
or a file inside a pre-training run, a fine-tuning output, an export or a
Hugging Face model (`run_files.enclosing_artefact`), or an existing model file
anywhere (`.keras`, `.safetensors`, ...). Paths are compared as the files they
name (`atomic.real_path`, `atomic.same_file`): a link, a hard link or a linked
folder is refused as the file it leads to; an existing file with other hard
links is refused too (replacing it would part it from its other names). An
ordinary file of that name is replaced (a re-run of the same command); a link is
written through to its target; a character device or a FIFO (`/dev/null`,
`/dev/stdout`) is written directly, never replaced (`electra_tf.atomic`). Files
are created as any other (mode 0666 less the umask).

`stop_on_sigterm` ends the command at once on SIGTERM, even inside a long
signature call: the output files being written are removed (an earlier file
of that name stays as it was), one line on stderr, exit 143
(`cli.PREEMPTED_EXIT`).

Example:
>>> import os, tempfile
>>> from electra_tf.predicting.writing import JsonLines
>>> path = os.path.join(tempfile.mkdtemp(), "out.jsonl")
>>> with JsonLines(path) as out:
...     out.write({"label": "positive"})
>>> open(path).read()
'{"label": "positive"}\\n'
"""

import json
import os
import signal
import sys
import threading
import uuid

from electra_tf import atomic, cli
from electra_tf.run_files import enclosing_artefact

MODEL_SUFFIXES = (".keras", ".h5", ".safetensors", ".bin", ".pb", ".tflite", ".index")  # never a predictions file


def check_outputs(outputs, inputs):
    """Refuses outputs that would replace what the command reads or another artefact's files.

    Args:
        outputs: dict flag name -> path (None: not written, e.g. stdout).
        inputs: dict flag name -> path the command reads (`-`/None: stdin or unset); a folder
            input (a model) refuses every path inside it.

    Raises:
        ValueError, FileExistsError, FileNotFoundError, IsADirectoryError, PermissionError (a folder
        that cannot be written: a file is created there and removed), naming the flag.
    """
    seen = {}
    for flag, path in outputs.items():
        if path is None:
            continue
        if path == "":
            raise ValueError(f"`--{flag}` is empty: give a file name (or leave --{flag} out"
                             f"{' to write to stdout' if flag == 'output_file' else ''}).")
        if path.endswith(("/", os.sep)) or os.path.isdir(path):
            raise IsADirectoryError(f"Cannot write `--{flag}={path}`: it names a folder, not a file. "
                                    f"Give a file name.")
        target = atomic.real_path(path)  # links resolved: the file a write lands in
        stream = atomic.streamed(path, flag)  # a device or a FIFO is written directly (a folder, a socket: refused)
        for other, source in inputs.items():
            if source in (None, "-"):
                continue
            if atomic.same_file(path, source) or atomic.inside(target, source):
                where = "is" if atomic.same_file(path, source) else "lies inside"
                raise ValueError(f"`--{flag}={path}` {where} `--{other}={source}`: writing it would replace what "
                                 f"is being read. Choose another --{flag}.")
        for other_target, other in seen.items():
            if other_target == target or atomic.same_file(other_target, target):
                raise ValueError(f"`--{flag}={path}` is also `--{other}`. Choose another --{flag}.")
        seen[target] = flag
        if stream:
            continue  # a device or a stream: nothing is created or replaced beside it
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"Cannot write `--{flag}={path}`: no folder "
                                    f"{os.path.dirname(os.path.abspath(path))}.")
        if os.path.exists(target) and target.endswith(MODEL_SUFFIXES):
            raise FileExistsError(f"`--{flag}={path}` is a model file{_via(path, target)}; predictions never "
                                  f"replace one. Choose another --{flag}.")
        artefact = enclosing_artefact(target) or _serving_folder(folder)  # the file's folder counts as a parent
        if artefact is not None:
            raise FileExistsError(f"`--{flag}={path}` lies inside {artefact[1]} ({artefact[0]}); a prediction file "
                                  f"there would mix with (or replace) its files. Choose another --{flag}.")
        if os.path.exists(target) and os.stat(target).st_nlink > 1:
            raise FileExistsError(f"`--{flag}={path}` is one of {os.stat(target).st_nlink} hard links of a file; "
                                  f"replacing it would part it from its other names. Choose another --{flag}.")
        _probe(folder, flag, path)


def _via(path, target):
    return "" if os.path.abspath(path) == target else f" (through a link: {target})"


def _probe(folder, flag, path):
    """Creates and removes a file in `folder`: a folder that cannot be written fails here, naming `--flag`."""
    probe = os.path.join(folder, f"{atomic.PARTIAL_PREFIX}{uuid.uuid4().hex[:8]}-probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise PermissionError(f"Cannot write `--{flag}={path}`: {e.strerror} (in {folder}).") from None
    os.remove(probe)


def _serving_folder(folder):
    """`(folder, what)` when `folder` is a TF Serving model folder or base folder (numbered versions), else None."""
    from electra_tf.predicting.predictor import export_version

    try:
        found = export_version(folder)
    except ValueError:  # a base folder of several models
        found = True
    return None if found is None else (folder, "a TF Serving export's folder")


class JsonLines:
    """Writes one JSON object per line to `path` (None: stdout).

    A file is written under a temporary name beside it and renamed when the
    block ends without an error (`atomic.open_write`): an interrupted or failed run
    leaves an earlier file of that name as it was, and no temporary file. A device
    or a FIFO is written directly. A write error (a full disk) names the flag and the file.

    Args:
        path: str or None.
        flag: str. The flag that named `path`, for errors (`--output_file`).
    """

    def __init__(self, path=None, flag="output_file"):
        self.path = path
        self.flag = flag
        self._file = None
        self._writing = None

    def __enter__(self):
        if self.path is None:
            self._file = sys.stdout
            return self
        self._writing = atomic.open_write(self.path, "w", self.flag)
        self._file = self._writing.__enter__()
        return self

    def write(self, record):
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")

    def __exit__(self, error_type, error, traceback):
        if self.path is None:
            self._file.flush()
            return None
        return self._writing.__exit__(error_type, error, traceback)


def _stop(message):
    """Removes the files being written, writes `message`, exits 143: callable from any thread."""
    with atomic.lock:  # waits for a rename under way: a file is either complete or gone
        atomic.remove_partials()
        try:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()
        finally:
            os._exit(cli.PREEMPTED_EXIT)


class stop_on_sigterm:  # noqa: N801  (a context manager, used as a `with` block)
    """Inside (main thread): SIGTERM ends the process at once, its partial output files removed, exit 143.

    A Python signal handler runs only between two bytecodes of the main thread,
    so a long signature call (a 5 MB QA context is one call) would hold it back:
    the C-level handler wakes a thread through `signal.set_wakeup_fd`, and the
    thread stops the process without waiting for the main one.

    Args:
        message: str. The stderr line.
    """

    def __init__(self, message="stopped by SIGTERM: no output written"):
        self.message = message
        self._previous = self._previous_fd = None
        self._pipe = None

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._pipe = (read_end, write_end)
        self._previous_fd = signal.set_wakeup_fd(write_end)
        self._previous = signal.signal(signal.SIGTERM, lambda signum, frame: _stop(self.message))
        threading.Thread(target=self._watch, name="stop_on_sigterm", daemon=True).start()
        return self

    def _watch(self):
        read_end = self._pipe[0]
        try:
            while True:
                data = os.read(read_end, 64)
                if not data:  # the block ended
                    return
                if signal.SIGTERM in data:
                    _stop(self.message)
        except OSError:
            return
        finally:
            os.close(read_end)

    def __exit__(self, *exc):
        if self._pipe is None:
            return
        signal.signal(signal.SIGTERM, self._previous)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._pipe[1])  # the watcher's read ends
        self._pipe = None
