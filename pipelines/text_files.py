"""Reader for plain-text corpora in the BERT convention.

One sentence per line, a blank (whitespace-only) line between documents. No
sentence splitting is done: lines are taken as they are. `.gz` and `.bz2`
files are decompressed by extension.

The builder reads these files as `text_io.DocumentBatch`es of whole
documents, about 1 MB of text each, found with array operations on the raw
bytes: per-line Python work is what limits a reader at this speed.
"""

import numpy as np

from electra_tf.pipelines import text_io

# Byte classes: 0 = ASCII whitespace (Python's `str.isspace`), 1 = other ASCII, 2 = part of a multi-byte character.
_BYTE_CLASS = np.array([(0 if chr(b).isspace() else 1) if b < 128 else 2 for b in range(256)], np.uint8)


def read_text_file(path, key, source="text"):
    """Yields the documents of one text file.

    Args:
        path: str. The file (`.txt`, `.txt.gz`, `.txt.bz2`, ...).
        key: str. Stable file key; documents get `<key>:<index>`.
        source: str. Source label stored in each document.

    Yields:
        `text_io.Document`s with at least one sentence (stripped lines).

    Raises:
        `text_io.CorruptInputError` if the compressed stream is truncated.

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.text_files import read_text_file

        for doc in read_text_file("corpus/brown.txt.gz", key="brown"):
            print(doc.key, len(doc.sentences))  # brown:0 2, then brown:1 1
        ```
    """
    for batch in read_text_batches(path, key, source):
        yield from text_io.unbatch_documents(batch)


def read_text_batches(path, key, source="text", batch_bytes=1 << 20):
    """Yields the documents of one text file as `text_io.DocumentBatch`es.

    A document is a run of lines up to and including the blank line that
    ends it; further blank lines count towards the next document's bytes. A
    document is never split across batches, so a batch holds at least one.

    Args:
        path: str. The file (`.txt`, `.txt.gz`, `.txt.bz2`, ...).
        key: str. Stable file key; documents get `<key>:<index>`.
        source: str. Source label stored in each batch.
        batch_bytes: int. About this many bytes per batch.

    Raises:
        `text_io.CorruptInputError` if the compressed stream is truncated.

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.text_files import read_text_batches

        for batch in read_text_batches("corpus/brown.txt.gz", key="brown"):
            print(len(batch.keys), len(batch.text))  # documents and bytes of each batch
        ```
    """
    index, lines_read, carry, read_size = 0, 0, b"", batch_bytes
    with text_io.CompressedReader(path) as reader:
        while True:
            try:
                chunk = reader.file.read(read_size)
            except reader.ERRORS as err:
                raise reader.error(err, f"after line {lines_read:,}") from err
            final = not chunk
            data = carry + chunk
            raw = data if final else data[: data.rfind(b"\n") + 1]  # complete lines
            if not raw:
                if final:
                    return
                carry, read_size = data, 2 * read_size  # one line longer than all read so far
                continue
            lines = _Lines(raw)
            # Documents end after a blank line that follows a sentence; at the end of the file,
            # after the last sentence.
            ends = np.flatnonzero(lines.blank[1:] & ~lines.blank[:-1]) + 2
            if final and not lines.blank[ends[-1] if len(ends) else 0:].all():
                ends = np.append(ends, len(lines.blank))
            if not len(ends):
                if final:
                    return
                carry, read_size = data, max(batch_bytes, len(data))  # one document longer than all read
                continue
            bounds = np.concatenate([[0], ends])
            yield lines.batch(bounds, [f"{key}:{i}" for i in range(index, index + len(ends))], source)
            if final:
                return
            index += len(ends)
            lines_read += int(ends[-1])
            carry, read_size = data[lines.raw_starts[ends[-1]]:], batch_bytes


class _Lines:
    """The lines of a block of raw bytes (complete lines; only the last line of a file may lack its
    newline): where they start, which are blank, invalid UTF-8 per line, the text to tokenize."""

    def __init__(self, raw):
        body = raw[:-1] if raw.endswith(b"\n") else raw
        self.text, self.starts, self.invalid = body, _line_starts(body), None
        self.raw_starts = self.starts.copy()
        self.raw_starts[-1] = len(raw)  # the last line of a file may have no newline
        if not body.isascii():
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:  # rare: decode line by line, replacing and counting
                decoded = [text_io.decode_utf8(line) for line in body.split(b"\n")]
                self.text = "\n".join(t for t, _ in decoded).encode("utf-8")
                self.starts = _line_starts(self.text)
                self.invalid = np.array([count for _, count in decoded], np.int64)
        self.blank = _blank_lines(self.text, self.starts)

    def batch(self, bounds, keys, source):
        """A `DocumentBatch` of lines `0:bounds[-1]`, with documents starting at `bounds[:-1]`."""
        stop = int(bounds[-1])
        invalid = np.zeros(len(keys), np.int64)
        if self.invalid is not None:
            invalid = np.add.reduceat(self.invalid[:stop], bounds[:-1])
        return text_io.DocumentBatch(
            text=self.text[: self.starts[stop] - 1],
            blank=self.blank[:stop],
            document_lines=bounds.astype(np.int64),
            keys=keys,
            source=source,
            invalid_utf8=invalid,
            num_bytes=np.diff(self.raw_starts[bounds]),  # with newlines
        )


def _line_starts(text):
    """Where each line of `text.split(b"\\n")` starts, then `len(text) + 1` (as if a newline followed)."""
    newlines = np.flatnonzero(np.frombuffer(text, np.uint8) == 10)
    return np.concatenate([[0], newlines + 1, [len(text) + 1]])


def _blank_lines(text, starts):
    """Whether each line is whitespace only (`not line.decode().strip()`).

    A line that starts with printable ASCII is not blank: that settles almost
    every line with array operations. The others are checked in Python.
    """
    data = np.frombuffer(text, np.uint8)
    blank = np.diff(starts) == 1
    first = _BYTE_CLASS[data[np.minimum(starts[:-1], max(len(data) - 1, 0))]] if len(data) else 0
    for i in np.flatnonzero(~blank & (first != 1)).tolist():
        blank[i] = not text[starts[i] : starts[i + 1] - 1].decode("utf-8").strip()
    return blank
