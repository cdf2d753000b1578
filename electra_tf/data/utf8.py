"""UTF-8 text files: decoding with an error that names the file, the line and the byte.

Every reader of text the user supplies (vocabularies, task TSV/CSV, CoNLL
columns, SQuAD JSON, label lists) decodes through `decode_utf8`, so a file
saved as UTF-16 or Latin-1 ends with one line such as
`train.txt:3: not UTF-8 (byte 0xe9 at column 5); save it as UTF-8.`

JSON can spell what UTF-8 cannot: an escape of half a UTF-16 surrogate pair
(`"\\ud800"` alone) decodes to a code point that is no character, which Python
keeps in a str and TensorFlow refuses to turn into a tensor (`Error converting
unicode string`). Every JSON reader of user text checks its text with
`check_json_escapes`, which names the file, the line and the column.

Example:
>>> from electra_tf.data.utf8 import decode_utf8
>>> decode_utf8("café\\n".encode("utf-8"), "words.txt")
'café\\n'
>>> decode_utf8("a\\ncafé\\n".encode("latin-1"), "words.txt")
Traceback (most recent call last):
...
ValueError: words.txt:2: not UTF-8 (byte 0xe9 at column 4); save it as UTF-8.
"""

import re

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


# A \uXXXX escape of a surrogate (D800-DFFF), with the low half that may follow a high one; the
# backslashes before it are counted so that an escaped backslash (`\\ud800`, text) is not one.
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([dD][89a-fA-F][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?")


def check_json_escapes(text, name, line=None):
    """Refuses JSON `text` holding an escape of a lone UTF-16 surrogate (see the module docstring).

    Args:
        text: str. JSON text: one JSON Lines line (`line` its number) or a whole document (`line` None).
        name: str. The file, for the error.
        line: int or None. The line `text` is; None: lines are counted in `text`.

    Raises:
        ValueError: `"<name>:<line>: \\ud800 at column 15 is a lone UTF-16 surrogate ..."`.

    Example:
    >>> from electra_tf.data.utf8 import check_json_escapes
    >>> check_json_escapes('{"text": "ok \\\\ud83d\\\\ude00 and \\\\\\\\ud800"}', "q.jsonl", 1)  # a pair, and text
    >>> check_json_escapes('{"text": "bad \\\\ud800"}', "q.jsonl", 3)
    Traceback (most recent call last):
    ...
    ValueError: q.jsonl:3: \\ud800 at column 15 is a lone UTF-16 surrogate (half of a pair), which is no character: write the character itself, or both escapes of its pair.
    """
    if "\\u" not in text:
        return
    for match in _SURROGATE_ESCAPE.finditer(text):
        code = int(match.group(2), 16)
        if code < 0xDC00 and match.group(3):
            continue  # a high half and its low half: one character
        start = match.start() + len(match.group(1))
        where = line if line is not None else text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        raise ValueError(f"{name}:{where}: \\u{match.group(2)} at column {column} is a lone UTF-16 surrogate (half "
                         "of a pair), which is no character: write the character itself, or both escapes of its "
                         "pair.")
