"""Shared helpers for the readers: `Document`, `DocumentBatch`, UTF-8 decoding, compressed files.

Readers yield `Document`s; the builder tokenizes them as `DocumentBatch`es
(many documents in one UTF-8 text, one tokenizer call each). Bytes that are
not valid UTF-8 are replaced by U+FFFD and counted (`invalid_utf8`). A
truncated or corrupt compressed stream raises `CorruptInputError` naming the
file and the position reached.
"""

import bz2
import collections
import io
import zlib

from isal import igzip  # ISA-L inflate: the gzip format at 3x zlib's speed (the builder's reading cost)
from isal import isal_zlib
import numpy as np
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


DocumentBatch = collections.namedtuple(
    "DocumentBatch", ["text", "blank", "document_lines", "keys", "source", "invalid_utf8", "num_bytes"]
)
DocumentBatch.__doc__ = """Consecutive documents of one file as one UTF-8 text: one tokenizer call.

Args:
    text: bytes. Valid UTF-8; its lines, `text.split(b"\\n")`, are sentences
        and blank lines.
    blank: bool array, one per line: whitespace only, so no sentence (in
        BERT-convention text files, a blank line ends a document).
    document_lines: int64 array, `len(keys) + 1` line offsets: document `i`
        is lines `document_lines[i]:document_lines[i + 1]`.
    keys: list of str. The documents' keys (see `Document.key`).
    source: str. The input spec they come from.
    invalid_utf8: int64 array, per document (see `Document.invalid_utf8`).
    num_bytes: int64 array, per document (see `Document.num_bytes`).
"""


def batch_documents(documents, batch_bytes):
    """Groups `Document`s of one source into `DocumentBatch`es of about `batch_bytes` of text.

    Example:
        ```python
        import pathlib

        from electra_tf.pipelines.books import read_book
        from electra_tf.pipelines.text_io import batch_documents

        pathlib.Path("moby_dick.txt").write_text("Call me Ishmael.\\n")
        for batch in batch_documents(read_book("moby_dick.txt", "moby"), 1 << 20):
            print(batch.keys)
        ```
    """
    batch, size = [], 0
    for doc in documents:
        batch.append(doc)
        size += doc.num_bytes
        if size >= batch_bytes:
            yield _to_batch(batch)
            batch, size = [], 0
    if batch:
        yield _to_batch(batch)


def _to_batch(documents):
    # Sentences are one line each: a stray newline becomes the space it stands for.
    sentences = [s.replace("\n", " ") for doc in documents for s in doc.sentences]
    return DocumentBatch(
        text="\n".join(sentences).encode("utf-8"),
        blank=np.array([not s.strip() for s in sentences], bool),
        document_lines=np.cumsum([0] + [len(doc.sentences) for doc in documents], dtype=np.int64),
        keys=[doc.key for doc in documents],
        source=documents[0].source,
        invalid_utf8=np.array([doc.invalid_utf8 for doc in documents], np.int64),
        num_bytes=np.array([doc.num_bytes for doc in documents], np.int64),
    )


def unbatch_documents(batch):
    """The `Document`s of a `DocumentBatch`: its non-blank lines, stripped, as sentences."""
    lines = batch.text.decode("utf-8").split("\n")
    bounds = batch.document_lines.tolist()
    for i, key in enumerate(batch.keys):
        sentences = [lines[j].strip() for j in range(bounds[i], bounds[i + 1]) if not batch.blank[j]]
        yield Document(key, batch.source, sentences, int(batch.invalid_utf8[i]), int(batch.num_bytes[i]))


class CorruptInputError(ValueError):
    """A truncated or corrupt input file (the message names file and position)."""


def decode_utf8(data):
    """Decodes bytes as UTF-8, replacing invalid sequences.

    Args:
        data: bytes.

    Returns:
        (str, int): the text and the number of invalid sequences replaced.

    Example:
        >>> from electra_tf.pipelines.text_io import decode_utf8
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
        import gzip

        from electra_tf.pipelines.text_io import CompressedReader

        with gzip.open("corpus.txt.gz", "wt") as f:
            f.write("one line\\nanother\\n")
        with CompressedReader("corpus.txt.gz") as reader:
            for line in reader.file:
                print(line)  # b'one line\\n', then b'another\\n'
        ```
    """

    ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error, tf.errors.OpError)

    def __init__(self, path):
        self.path = path
        self.raw = tf.io.gfile.GFile(path, "rb")
        if path.endswith(".gz"):
            self.file = igzip.IGzipFile(fileobj=_RawGFile(self.raw), mode="rb")
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


class _RawGFile(io.RawIOBase):
    """A `tf.io.gfile.GFile` with `readinto`, which ISA-L's reader needs."""

    def __init__(self, gfile):
        super().__init__()
        self._gfile = gfile

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._gfile.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
