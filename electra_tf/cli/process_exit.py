"""A command's end without the interpreter's teardown: what Python's exit writes still runs, the freeing does not.

When a program's `main` returns, CPython (1) waits for its non-daemon threads, (2) runs the
`atexit` handlers (logging's flush, temporary folders' removal, multiprocessing's children,
`weakref.finalize` callbacks), (3) flushes `sys.stdout` / `sys.stderr`, then (4) finalizes the
interpreter: it frees every module and object one by one (a TensorFlow command holds several
hundred thousand: TensorFlow, Keras, the traced graphs, the model) and runs TensorFlow's C++
destructors. Step 4 frees memory that the operating system takes back at once anyway. Measured
from a command's last output to its process's end, 5 rounds alternated
(`git show 8108a41:benchmarks/results/command_exit.md`, a benchmark removed since): a 256-row fine-tuning run
(`python -m electra_tf.finetune`)
ends in 0.21 s without step 4 against 0.63 s with it, a `convert` in 0.07 s against 0.28 s.

`leave(stop, script)` does steps 2 and 3, flushes C's stdio buffers too, and ends the process
with `os._exit` and the exit status Python would have given. It does this only where step 4 can
matter to nothing else (and step 1 has nothing to wait for):

- the command is the program: `python -m electra_tf.<command>` or its console script, so its
  `SystemExit` would end the process uncaught. A script that runs a command inside its own
  process (`runpy.run_module`, a profiler, a test) goes on after it as before;
- no non-daemon thread is still running (else Python's exit, which waits for it);
- not a multi-worker run (`TF_CONFIG` set): there TensorFlow's coordination service takes leave
  of the other workers when its context is destroyed, in step 4.

`ELECTRA_TF_FULL_EXIT=1` keeps Python's own exit in every case (for a leak checker or a
profiler that reports at finalization).

Used by every command module (`cli.console_script`), after its `main`.
"""

import atexit
import ctypes
import linecache
import os
import sys
import threading

FULL_EXIT_VARIABLE = "ELECTRA_TF_FULL_EXIT"


def leave(stop, script):
    """Ends the process after the `atexit` handlers with `stop`'s exit status, without the teardown;
    returns (doing nothing) where Python's own exit must run instead (`applies`).

    Args:
        stop: the `SystemExit` that ends the program.
        script: the code object of the command's console-script function, which calls this.
    """
    if not applies(script):
        return
    code = exit_status(stop)
    atexit._run_exitfuncs()  # pylint: disable=protected-access  # what Python's exit runs, in its order
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: Python's exit makes a 0 status 120 for stdout
            if stream is sys.stdout and code == 0:
                code = 120
    try:
        ctypes.CDLL(None).fflush(None)  # C's stdout/stderr buffers (TensorFlow's own prints)
    except (OSError, AttributeError):
        pass
    os._exit(code)  # pylint: disable=protected-access


def applies(script):
    """Whether the process may end without the interpreter's teardown (see the module's docstring)."""
    if os.environ.get(FULL_EXIT_VARIABLE, "").strip() not in ("", "0"):
        return False
    if os.environ.get("TF_CONFIG", "").strip() or not _is_the_program(script):
        return False
    main = threading.main_thread()
    return not any(thread is not main and not thread.daemon and thread.is_alive()
                   for thread in threading.enumerate())


def _is_the_program(script):
    """Whether the frames above `script` (the console-script function running) are only how Python
    starts a program: runpy's `_run_module_as_main` and `_run_code` over an `electra_tf` module
    (`python -m`), or a console script's stub at its `sys.exit(run())` line."""
    frames = []
    frame = sys._getframe(1)  # pylint: disable=protected-access
    while frame is not None and frame.f_code is not script:
        frame = frame.f_back
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    if len(frames) == 4 and [f.f_code.co_name for f in frames[2:]] == ["_run_code", "_run_module_as_main"]:
        spec = frames[1].f_globals.get("__spec__")
        return frames[1].f_code.co_name == "<module>" and spec is not None and spec.name.startswith("electra_tf.")
    if len(frames) == 2 and frames[1].f_code.co_name == "<module>":
        line = linecache.getline(frames[1].f_code.co_filename, frames[1].f_lineno).strip()
        return line.startswith("sys.exit(") and frames[1].f_globals.get("__name__") == "__main__"
    return False


def exit_status(stop):
    """The process's exit status for `SystemExit` `stop`, as Python gives it: None is 0, an int
    itself, anything else is written to stderr and is 1.

    Example:
        >>> from electra_tf.cli.process_exit import exit_status
        >>> exit_status(SystemExit()), exit_status(SystemExit(3))
        (0, 3)
    """
    code = stop.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except (OSError, ValueError):
        pass
    return 1
