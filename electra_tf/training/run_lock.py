"""One writer per run directory: `hold(directory)` locks it for the life of a training process.

The lock is a file in the directory (`run_files.LOCK_FILE`) created atomically
(`O_CREAT | O_EXCL`) and holding its holder's host and process id. A second
process that finds it gets a one-line error naming the holder. A lock whose
holder is gone (same host, no such process: it was killed, `SIGKILL` included)
is stale and taken over; a holder on another host cannot be checked, so its
lock must be deleted by hand once that run is over (the error says where).
Only local directories are locked (a `gs://` run is not: object stores have
no atomic create); the run logs that.
"""

import contextlib
import json
import os
import socket
import time

from absl import logging

from electra_tf import atomic, run_files


class RunLockedError(OSError):
    """Another live process holds the run directory's lock."""


def _holder(path):
    """The holder's dict of a lock file, or None when it vanished or is unreadable (being written, or not a lock)."""
    try:
        with open(path, encoding="utf-8") as f:
            holder = json.load(f)
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _try_create(path, record):
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f)
    return True


def acquire(directory):
    """Takes the lock of `directory` (creating it); returns the lock path. `RunLockedError` names a live holder."""
    path = os.path.join(directory, run_files.LOCK_FILE)
    record = {"host": socket.gethostname(), "pid": os.getpid(),
              "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    unreadable = 0
    for _ in range(20):
        if _try_create(path, record):
            return path
        holder = _holder(path)
        if holder is None:  # created but not yet written, or just released: look again
            unreadable += os.path.exists(path)
            time.sleep(0.05)
            continue
        if holder.get("host") == record["host"] and not _alive(int(holder.get("pid", -1))):
            logging.warning("Taking over the stale lock %s of pid %s (no such process on this host).",
                            path, holder.get("pid"))
            stale = f"{path}.stale.{os.getpid()}"
            try:
                # A lock protocol, not a write (the one rename outside `electra_tf.atomic`): one taker wins the
                # rename; the others see the new lock.
                os.rename(path, stale)
                os.remove(stale)
            except FileNotFoundError:
                pass
            continue
        raise RunLockedError(
            f"{directory} is in use by another run: pid {holder.get('pid')} on {holder.get('host')} (since "
            f"{holder.get('since')}; {path}). Wait for it to finish or use another directory; if that process is "
            f"gone (another host), delete {path}."
        )
    if unreadable == 20:  # never a holder's record in a second: no process of this program wrote it
        raise RunLockedError(
            f"The lock {path} is unreadable (not a host and pid as this program writes them): if no run is using "
            f"{directory}, delete {path} and start again.")
    raise RunLockedError(f"Could not take the lock {path}: it changed hands 20 times.")


@contextlib.contextmanager
def hold(directory, flag=None):
    """Holds the lock of run `directory` inside the block; released (and an empty directory it made removed) after.

    `flag` (e.g. "model_dir") names the flag that gave `directory` in an error.

    Example:
        ```python
        from electra_tf.training import run_lock

        with run_lock.hold("runs/demo"):
            pass  # train: a second process on runs/demo gets "runs/demo is in use by another run: pid ..."
        ```
    """
    if "://" in directory:
        logging.warning("%s is not a local folder: not locked against a second writer.", directory)
        yield
        return
    if os.path.exists(directory) and not os.path.isdir(directory):
        given = f"`--{flag}={directory}`" if flag else directory
        raise NotADirectoryError(f"{given} is a file, not a folder: a run needs a folder (new, or its own).")
    created = not os.path.isdir(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:  # a read-only or full file system
        raise atomic.named_write_error(e, flag, directory) or e
    try:
        path = acquire(directory)
    except BaseException as e:
        if created and not os.listdir(directory):
            os.rmdir(directory)
        named = atomic.named_write_error(e, flag, directory) if isinstance(e, OSError) else None
        if named is not None:
            raise named from e
        raise
    try:
        yield
    finally:
        holder = _holder(path)
        if holder is not None and holder.get("pid") == os.getpid():
            os.remove(path)
        if created and os.path.isdir(directory) and not os.listdir(directory):
            os.rmdir(directory)  # a run refused before writing leaves nothing behind
