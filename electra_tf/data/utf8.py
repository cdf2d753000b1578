"""UTF-8 text files: decoding with an error that names the file, the line and the byte.

Every reader of text the user supplies (vocabularies, task TSV/CSV, CoNLL
columns, SQuAD JSON, label lists) decodes through `decode_utf8`, so a file
saved as UTF-16 or Latin-1 ends with one line such as
`train.txt:3: not UTF-8 (byte 0xe9 at column 5); save it as UTF-8.`

Example:
>>> from electra_tf.data.utf8 import decode_utf8
>>> decode_utf8("café\\n".encode("utf-8"), "words.txt")
'café\\n'
>>> decode_utf8("a\\ncafé\\n".encode("latin-1"), "words.txt")
Traceback (most recent call last):
...
ValueError: words.txt:2: not UTF-8 (byte 0xe9 at column 4); save it as UTF-8.
"""


_BYTE_ORDER_MARKS = {b"\xff\xfe": "UTF-16 little-endian", b"\xfe\xff": "UTF-16 big-endian"}


def decode_utf8(raw, path):
    """`raw` bytes of the file `path` -> str.

    Raises:
        ValueError: `"<path>:<line>: not UTF-8 (byte 0x.. at column ..); save it as UTF-8."`,
            the 1-based line and byte column of the first invalid byte (and the
            encoding, when a UTF-16 byte-order mark starts the file).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(not_utf8_message(path, raw, e.start)) from None


def not_utf8_message(path, raw, position):
    """The one-line error for the invalid byte at `position` of `raw`, the content of `path`."""
    line = raw.count(b"\n", 0, position) + 1
    column = position - (raw.rfind(b"\n", 0, position) + 1) + 1
    bom = next((f", a {name} byte-order mark" for mark, name in _BYTE_ORDER_MARKS.items() if raw.startswith(mark)), "")
    return f"{path}:{line}: not UTF-8 (byte 0x{raw[position]:02x} at column {column}{bom}); save it as UTF-8."
