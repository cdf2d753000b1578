"""A command started with stdin, stdout or stderr closed (`cmd >&-`, `2>&-`, a daemon's exec): each is opened on
the null device first, and a command whose output is stdout says it is closed.

A process whose file descriptor 0, 1 or 2 is closed starts Python with `sys.stdin`, `sys.stdout`
or `sys.stderr` None: any write to it is an `AttributeError`, and the next file the process
opens takes that descriptor, so that what TensorFlow's C++ code writes to its stderr (or a
`print`) lands in that file, an output file included. `open_closed()`, the first thing every
command does (`cli.run`, `cli.console_script`), opens the null device on each closed one
and makes its Python stream write there: nothing the command writes fails, no file it
opens becomes stdout or stderr. With stderr closed the command runs as ever, its messages
unseen (its exit status says how it ended). With stdout closed, a command whose output is
stdout (`predict` without `--output_file`) refuses to run (`require_stdout`): its
output would be lost.

Example:
    ```bash
    # predict writes its records to --output_file; stdout closed changes nothing
    python -m electra_tf.predict --init runs/ft --input dev.tsv --output_file predictions.jsonl >&-
    # the records would go nowhere: `error: stdout is closed: ...`, exit 1
    python -m electra_tf.predict --init runs/ft --input dev.tsv >&-
    ```
"""

import os
import sys

STREAMS = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))
_closed = set()  # the names of the streams that were closed when the command started


def open_closed():
    """Opens the null device on each of file descriptors 0, 1 and 2 that is closed, and its `sys` stream on it.

    Returns:
        set of str: the names of the streams found closed ("stdin", "stdout", "stderr"), by this
        call or an earlier one (kept for `require_stdout`).
    """
    for fd, name, mode in STREAMS:
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
        if null != fd:  # a lower descriptor is taken by another file: move it to its place
            os.dup2(null, fd)
            os.close(null)
        stream = open(fd, mode, buffering=1 if name == "stderr" else -1,  # noqa: SIM115  (stderr: line-buffered)
                      encoding="utf-8", errors="backslashreplace", closefd=False)
        setattr(sys, name, stream)
        _closed.add(name)
    return set(_closed)


def require_stdout(instead):
    """Raises `OSError` when stdout was closed at the start, naming `instead` (what writes the output elsewhere)."""
    if "stdout" in _closed:
        raise OSError(f"stdout is closed: the output would be lost. Give {instead}, or run with stdout open.")
