"""The one way a command writes a file or a folder: whole or not at all, never replacing a link or a device.

Every output is written under a temporary name beside its target,
`<folder>/.partial-<token>-<name>` (`partial_path`; `<token>` is 8 random hex digits,
or `claim` for a folder claimed before the work, `claim_folder`), flushed to disk
(`fsync`, a local file) and renamed onto the target (`replace`): a reader never
sees half a file, and an interrupted or failed write leaves an earlier file of that
name as it was and no temporary file behind (removed on any error, and on SIGTERM
by `remove_partials`). `gs://` and other `tf.io.gfile` URLs are written the same
way through `tf.io.gfile` (no fsync; the rename is the store's).

What the target already is decides where the bytes go:

    absent, or a regular file   the temporary file is renamed onto it
    a symbolic link             written through: the link's resolved target is written
                                (as above), the link stays a link
    a character device, a FIFO  streamed: opened and written directly, nothing renamed
    (`/dev/null`, a terminal,   (`open_write` only: a writer that needs a path, such as
    `/proc/self/fd/1`)          Keras' `model.save`, refuses one)
    a folder, a block device,   refused with one `OSError` naming the flag and the path
    a socket

So a device node or a link is never replaced by a regular file. The guards
(`run_files.guard_output`, `predicting.writing.check_outputs`) compare the target
a write lands in (`real_path`, `same_file`) with the inputs, the model and the
artefacts, so a link, a hard link or a linked folder is refused as the file it is.

A folder (a LiteRT model, a Hugging Face model, a SavedModel version) is staged the same
way (`staged_folder`) and renamed onto a new or empty folder. `claim_folder` makes its
temporary folder (`.partial-claim-<name>`, holding its owner's host and pid) before the
work, so a second command writing the same folder at once is refused then, naming the
flag, not after it has done its work; the claim of a killed command (no such process on
this host) is taken over.

JSON goes through `write_json` (strict: a NaN or infinity is an error, never a bare `NaN` in
a file), the one JSON writer of the package.

A private working file or folder that is no output (a SavedModel's assets before they are
copied into it, a vocabulary with other settings, stdin spooled for a reader) lies in the
system's temporary folder as `electra_tf-<what>-<random>` (`scratch_folder`, `scratch_file`).
So every temporary name the package makes is one of two: `.partial-` beside an output, or
`electra_tf-` in the temporary folder (`tests/test_output_links.py` reads the package for others).

The only other rename in the package is `training/run_lock.py`'s stale-lock takeover
(a lock protocol, not a write).

Example:
>>> import os, tempfile
>>> from electra_tf import atomic
>>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
>>> atomic.write_text(path, "one\\n")
>>> with atomic.open_write(path) as f:
...     _ = f.write("two\\n")
>>> open(path).read(), [n for n in os.listdir(os.path.dirname(path)) if n != "notes.txt"]
('two\\n', [])
"""

import contextlib
import errno
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
import uuid

PARTIAL_PREFIX = ".partial-"  # every temporary output: `.partial-<token>-<name>`, beside its target
CLAIM_TOKEN = "claim"  # the token of a folder claimed before the work (`claim_folder`)
SCRATCH_PREFIX = "electra_tf-"  # every private working file or folder: `electra_tf-<what>-<random>`, in the temp folder
CLAIM_OWNER = ".owner.json"  # in a claimed folder while it is written: the claiming process's host and pid

_partials = set()  # temporary files and folders being written by this process (removed on SIGTERM)
_claims = {}  # target folder -> its claimed temporary folder
_created = {}  # target folder -> the folders above it that its claim created (removed again if left empty)
lock = threading.RLock()  # held while a partial is renamed or removed: SIGTERM waits for it


def is_url(path):
    return "://" in os.fspath(path)


def real_path(path):
    """The path a write to `path` lands in: links resolved (`os.path.realpath`) for a local path; a URL as is."""
    path = os.fspath(path)
    return path if is_url(path) else os.path.realpath(path)


def same_file(a, b):
    """Whether two local paths are one file (the same inode: a link, a hard link, a linked folder)."""
    a, b = os.fspath(a), os.fspath(b)
    if is_url(a) or is_url(b):
        return a.rstrip("/") == b.rstrip("/")
    if real_path(a) == real_path(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def inside(path, folder):
    """Whether `path` is `folder` or lies under it, links resolved on both sides."""
    path, folder = real_path(path), real_path(folder)
    sep = "/" if is_url(folder) else os.sep
    return path == folder or path.startswith(folder.rstrip(sep) + sep)


def _through_proc(path):
    """Whether a link on the way to `path` points into /proc (`/dev/stdout`, `/proc/self/fd/1`): a stream."""
    path = os.path.abspath(path)
    for _ in range(40):
        if path.startswith("/proc/"):
            return True
        if not os.path.islink(path):
            return False
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    return False


def _describe(flag, path):
    return f"`--{flag}={path}`" if flag else os.fspath(path)


def streamed(path, flag=None):
    """Whether `path` is written directly (a character device, a FIFO, a stream under /proc); raises for a
    target that can be neither streamed nor replaced (a folder, a block device, a socket)."""
    path = os.fspath(path)
    if is_url(path):
        return False
    if path.endswith(("/", os.sep)) or path == "":
        raise IsADirectoryError(f"Cannot write {_describe(flag, path)}: it names a folder, not a file.")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as e:
        raise OSError(f"Cannot write {_describe(flag, path)}: {e.strerror}.") from None
    if stat.S_ISREG(mode):
        return _through_proc(path)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    what = "a folder" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise OSError(f"Cannot write {_describe(flag, path)}: it is {what}; only a file, a character device or a "
                  "FIFO is written.")


def partial_path(path, token=None):
    """A temporary name beside the target of `path` (links resolved): `<folder>/.partial-<token>-<name>`."""
    target = real_path(path)
    folder, name = os.path.split(target.rstrip("/"))
    return os.path.join(folder, f"{PARTIAL_PREFIX}{token or uuid.uuid4().hex[:8]}-{name}")


def _gfile():
    import tensorflow as tf

    return tf.io.gfile


def _remove(partial):
    try:
        if is_url(partial):
            gfile = _gfile()
            if gfile.isdir(partial):
                gfile.rmtree(partial)
            elif gfile.exists(partial):
                gfile.remove(partial)
        elif os.path.isdir(partial) and not os.path.islink(partial):
            shutil.rmtree(partial, ignore_errors=True)
        elif os.path.lexists(partial):
            os.remove(partial)
    except OSError:
        pass


def remove_partials():
    """Removes every temporary output this process is writing (SIGTERM: `predicting.writing.stop_on_sigterm`)."""
    with lock:
        for partial in list(_partials):
            _remove(partial)
        _partials.clear()
        _claims.clear()


def _fsync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(partial, path):
    """Renames a finished temporary output onto `path`'s target (a file: after fsync; a folder: onto a new or
    empty folder). The one rename of a write in the package."""
    target = real_path(path)
    with lock:
        if is_url(partial):
            gfile = _gfile()
            gfile.rename(partial, target, overwrite=not gfile.isdir(partial))
        else:
            if not os.path.isdir(partial):
                _fsync(partial)
            os.replace(partial, target)
            with contextlib.suppress(OSError):  # the rename itself reaches the disk (not on every file system)
                _fsync(os.path.dirname(target) or ".")
        _partials.discard(partial)


class WriteError(OSError):
    """A write that failed (a full disk, `ulimit -f`), its message naming the flag and the file."""


def _failure(error, flag, path, stream=False):
    """One `WriteError` naming the flag and the file, with the cause (a full disk, a size limit) in its text."""
    if isinstance(error, WriteError):
        return error
    reason = (getattr(error, "strerror", None) or _tensorflow_write_reason(error) or getattr(error, "message", None)
              or str(error) or type(error).__name__)
    left = "the device or stream has what was written before" if stream else \
        "nothing was left there (an earlier file of that name is as it was)"
    return WriteError(f"Cannot write {_describe(flag, path)}: {reason.splitlines()[0][:300]}; {left}.")


# A write that failed for want of room or rights (a full disk, `ulimit -f`, a quota, a read-only mount).
_WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM,
                 errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR}


# TensorFlow's own file writes (a SavedModel's variables, a checkpoint) fail as an `OpError` whose message
# ends with the system's reason (`...; No space left on device [Op:SaveV2]`), ENOSPC a ResourceExhaustedError.
_TENSORFLOW_WRITE_REASONS = ("No space left on device", "File too large", "Disk quota exceeded",
                             "Read-only file system")


def _tensorflow_write_reason(error):
    """The system's reason in a TensorFlow error of a failed write (a full disk, `ulimit -f`), else None."""
    text = getattr(error, "message", None)
    if not isinstance(text, str) or not type(error).__module__.startswith("tensorflow"):
        return None
    return next((reason for reason in _TENSORFLOW_WRITE_REASONS if reason in text), None)


def _is_write_error(error):
    return (isinstance(error, OSError) and error.errno in _WRITE_ERRNOS) or _tensorflow_write_reason(error) is not None


def named_write_error(error, flag, path):
    """The `WriteError` naming `--flag` and `path` for a write refused by the file system (read-only, full, a
    size limit, a file where a folder belongs), or None for any other error (the product's own, which name
    their flag, included): `raise atomic.named_write_error(e, flag, path) or e`."""
    if not flag or isinstance(error, WriteError) or not _is_write_error(error):
        return None
    reason = getattr(error, "strerror", None) or _tensorflow_write_reason(error) or str(error)
    blocking = getattr(error, "filename", None) if error.errno in (errno.EEXIST, errno.ENOTDIR) else None
    while blocking and not os.path.lexists(blocking):  # the file in the way: the deepest existing part
        blocking = os.path.dirname(blocking)
    if blocking and os.path.isfile(blocking):
        reason += f" ({blocking} is a file, not a folder)"
    return WriteError(f"Cannot write {_describe(flag, path)}: {reason}.")


@contextlib.contextmanager
def _removed_on_error(partial, flag, path):
    """On an error inside, removes the temporary output `partial`; a write error is raised naming the flag."""
    try:
        yield
    except BaseException as e:
        with lock:
            _remove(partial)
            _partials.discard(partial)
        if flag and _is_write_error(e):
            raise _failure(e, flag, path) from e
        raise


@contextlib.contextmanager
def staged(path, flag=None):
    """Yields a temporary path beside `path`'s target for a writer that takes a path (Keras' `model.save`,
    `tf.io.gfile.GFile`); renames it onto the target when the block ends, removes it on an error.

    A target that is not a regular file (a device, a FIFO, a folder) is refused: it would be replaced.
    An `OSError` inside the block (a full disk) becomes one naming `--flag` and the path.
    """
    if streamed(path, flag):
        raise OSError(f"Cannot write {_describe(flag, path)}: it is a device or a stream, and this file is "
                      "written whole under a temporary name. Choose a file path.")
    partial = partial_path(path)
    with lock:
        _partials.add(partial)
    with _removed_on_error(partial, flag, path):
        yield partial
        replace(partial, path)


class _Checked:
    """A file object whose write errors (a full disk, `ulimit -f`) name the flag and the file."""

    def __init__(self, file, flag, path, stream=False):
        self._file, self._flag, self._path, self._stream = file, flag, path, stream

    def write(self, data):
        try:
            return self._file.write(data)
        except BrokenPipeError:  # the reader of a pipe has gone: the caller decides
            raise
        except OSError as e:
            raise _failure(e, self._flag, self._path, self._stream) from None

    def flush(self):
        try:
            self._file.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise _failure(e, self._flag, self._path, self._stream) from None

    def __getattr__(self, name):
        return getattr(self._file, name)


@contextlib.contextmanager
def open_write(path, mode="w", flag=None, encoding="utf-8"):
    """Yields a file object for `path`: a temporary file renamed onto the target when the block ends, or the
    device or FIFO itself, streamed (see the module's table). A write error names `--flag` and the path."""
    binary = "b" in mode
    kwargs = {} if binary else {"encoding": encoding}
    if streamed(path, flag):
        try:
            file = open(path, "wb" if binary else "w", **kwargs)
        except OSError as e:
            raise _failure(e, flag, path, stream=True) from None
        try:
            checked = _Checked(file, flag, path, stream=True)
            yield checked
            checked.flush()
        finally:
            with contextlib.suppress(OSError):
                file.close()
        return
    with staged(path, flag) as partial:
        if is_url(partial):
            with _gfile().GFile(partial, "wb" if binary else "w") as file:
                yield _Checked(file, flag, path)
            return
        try:  # 0o666 less the umask, as any file (mkstemp's would be 0600)
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as e:
            raise _failure(e, flag, path) from None
        with open(fd, "wb" if binary else "w", **kwargs) as file:
            yield _Checked(file, flag, path)


def write_text(path, text, flag=None):
    """Writes `text` (UTF-8) to `path` whole (`open_write`)."""
    with open_write(path, "w", flag) as f:
        f.write(text)


def write_bytes(path, data, flag=None):
    """Writes `data` to `path` whole (`open_write`)."""
    with open_write(path, "wb", flag) as f:
        f.write(data)


def write_json(path, value, flag=None, indent=2, sort_keys=False):
    """Writes `value` as strict JSON to `path` whole (`open_write`), its folder made when missing: the one JSON writer.

    A NaN or an infinity is a `ValueError`, never a bare `NaN` in the file (no JSON reader but Python's takes one).

    Example:
    >>> import json, os, tempfile
    >>> from electra_tf import atomic
    >>> path = os.path.join(tempfile.mkdtemp(), "run", "results.json")
    >>> atomic.write_json(path, {"accuracy": 0.5})
    >>> json.load(open(path))
    {'accuracy': 0.5}
    """
    text = json.dumps(value, indent=indent, sort_keys=sort_keys, allow_nan=False) + "\n"
    folder = os.path.dirname(os.fspath(path))
    if folder and is_url(folder):
        _gfile().makedirs(folder)
    elif folder:
        os.makedirs(folder, exist_ok=True)
    write_text(path, text, flag)


def scratch_folder(what):
    """A new private folder in the system's temporary folder, `electra_tf-<what>-<random>`, for files that are no
    output (removed by its user, or by the system)."""
    return tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{what}-")


def scratch_file(what, suffix="", mode="w+b", encoding=None):
    """A private temporary file (`tempfile.NamedTemporaryFile`, removed when closed), `electra_tf-<what>-<random>`."""
    return tempfile.NamedTemporaryFile(mode, prefix=f"{SCRATCH_PREFIX}{what}-", suffix=suffix, encoding=encoding)


def claim_folder(path, flag):
    """Makes `path`'s temporary folder now, before the work (`staged_folder` writes into it): a second command
    writing the same folder at once is refused here, naming `--flag`. A local path only (a URL: no claim)."""
    if is_url(path):
        return None
    target = real_path(path)
    with lock:
        if target in _claims:
            return _claims[target]
        claim = partial_path(target, CLAIM_TOKEN)
        missing, folder = [], os.path.dirname(claim)
        while folder and not os.path.lexists(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        try:
            os.makedirs(os.path.dirname(claim), exist_ok=True)
            _created[target] = missing
            try:
                os.mkdir(claim)
            except FileExistsError:
                if not _stale(claim):
                    raise FileExistsError(f"`--{flag}={path}` is being written by another command (its temporary "
                                          f"folder {claim} exists). Wait for it, choose another --{flag}, or remove "
                                          "that folder if no command is running.") from None
                shutil.rmtree(claim, ignore_errors=True)  # a killed command's: taken over
                os.mkdir(claim)
        except OSError as e:  # a read-only or full file system: named by the flag, before any work
            raise named_write_error(e, flag, path) or e
        _fix_mode(claim)
        with open(os.path.join(claim, CLAIM_OWNER), "w", encoding="utf-8") as f:
            json.dump({"host": socket.gethostname(), "pid": os.getpid()}, f)
        _claims[target] = claim
        _partials.add(claim)
    return claim


def _stale(claim):
    """Whether a claimed folder's owner is a process of this host that no longer runs."""
    try:
        with open(os.path.join(claim, CLAIM_OWNER), encoding="utf-8") as f:
            owner = json.load(f)
        if owner.get("host") != socket.gethostname():
            return False
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False  # unreadable, being written, or another user's live process
    return False


def release_claim(path):
    """Removes a claim `claim_folder` made, and the folders it created if left empty, once the command ends
    (a finished command's claim was renamed onto its folder)."""
    if path is None or is_url(path):
        return
    target = real_path(path)
    with lock:
        claim = _claims.pop(target, None)
        if claim is not None:
            _remove(claim)
            _partials.discard(claim)
        for folder in _created.pop(target, []):  # deepest first
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _fix_mode(folder):
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)  # as `os.makedirs` makes a folder (mkdtemp's is private)


class _Filled(FileExistsError):
    """The target folder was filled while the command worked (its message is the whole line)."""


@contextlib.contextmanager
def staged_folder(path, flag=None):
    """Yields a temporary folder beside `path` (the one `claim_folder` made, if any); renamed onto `path` (new or
    empty) when the block ends; removed on an error, which names `--flag` (a full disk, a folder filled meanwhile).
    """
    target = real_path(path)
    with lock:
        partial = _claims.pop(target, None)
    if partial is None:
        if is_url(path):
            partial = partial_path(target)
            _gfile().makedirs(partial)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            partial = partial_path(target)
            os.mkdir(partial)
            _fix_mode(partial)
        with lock:
            _partials.add(partial)
    with _removed_on_error(partial, flag, path):
        yield partial
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(partial, CLAIM_OWNER))  # a claim's owner: not part of the folder written
        if not is_url(target) and os.path.isdir(target) and os.listdir(target):
            raise _Filled(f"{_describe(flag, path)} was filled by another command meanwhile; nothing of this one "
                          "was written there. Choose another --" + (flag or "output") + ".")
        replace(partial, path)
