"""Shared helpers for the readers: the `Document` record, UTF-8 decoding, compressed files.

Every reader yields `Document`s. Bytes that are not valid UTF-8 are replaced by
U+FFFD and counted (`Document.invalid_utf8`). A truncated or corrupt compressed
stream raises `CorruptInputError` naming the file and the position reached.
"""

import bz2
import collections
import gzip
import zlib

import tensorflow as tf

Document = collections.namedtuple(
    "Document", ["key", "source", "sentences", "invalid_utf8", "num_bytes"]
)
Document.__doc__ = """One document: a list of sentences plus bookkeeping.

Args:
    key: str. Stable id, unique within a build (`<file key>:<index>`); seeds the
        document's packing RNG, so it must not depend on scheduling.
    source: str. Label of the input spec it came from (per-source stats).
    sentences: list of str. Non-empty sentences in order.
    invalid_utf8: int. Invalid UTF-8 byte sequences replaced by U+FFFD.
    num_bytes: int. Size of the raw text read for it (throughput figures).
"""


class CorruptInputError(ValueError):
    """A truncated or corrupt input file (the message names file and position)."""


def decode_utf8(data):
    """Decodes bytes as UTF-8, replacing invalid sequences.

    Args:
        data: bytes.

    Returns:
        (str, int): the text and the number of invalid sequences replaced.

    Example:
        >>> decode_utf8(b"caf\\xc3\\xa9 \\xff!")
        ('café \\ufffd!', 1)
    """
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        return text, text.count("\ufffd") - data.count(b"\xef\xbf\xbd")


class CompressedReader:
    """Opens a plain, `.gz` or `.bz2` file for binary reading and reports positions.

    Args:
        path: str. Local or `tf.io.gfile` path; compression from the extension.

    Example:
        ```python
        with CompressedReader("corpus.txt.gz") as reader:
            for line in reader.file:
                ...
        ```
    """

    ERRORS = (EOFError, OSError, zlib.error, tf.errors.OpError)

    def __init__(self, path):
        self.path = path
        self.raw = tf.io.gfile.GFile(path, "rb")
        if path.endswith(".gz"):
            self.file = gzip.GzipFile(fileobj=self.raw, mode="rb")
        elif path.endswith(".bz2"):
            self.file = bz2.BZ2File(self.raw, mode="rb")
        else:
            self.file = self.raw

    def position(self):
        """A human-readable position: compressed bytes consumed of the file size."""
        try:
            size = tf.io.gfile.stat(self.path).length
            return f"byte {self.raw.tell():,} of {size:,}"
        except Exception:  # pylint: disable=broad-except
            return "unknown position"

    def error(self, err, where=""):
        """Builds a `CorruptInputError` naming file, position and cause."""
        return CorruptInputError(
            f"Truncated or corrupt input {self.path!r} at {self.position()}"
            f"{', ' + where if where else ''}: {type(err).__name__}: {err}"
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()
        self.raw.close()
