"""Where predictions go: JSON Lines on stdout, or a file written whole or not at all.

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
import sys
import tempfile


def check_writable(*paths):
    """Each path (None: skipped) can be written: its folder exists and it is not a folder."""
    for path in paths:
        if path is None:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"Cannot write {path}: no folder {folder}.")
        if os.path.isdir(path):
            raise IsADirectoryError(f"Cannot write {path}: it is a folder.")


class JsonLines:
    """Writes one JSON object per line to `path` (None: stdout).

    A file is written under a temporary name beside it and renamed when the
    block ends without an error: an interrupted or failed run leaves an earlier
    file of that name as it was.
    """

    def __init__(self, path=None):
        self.path = path
        self._file = None
        self._tmp = None

    def __enter__(self):
        if self.path is None:
            self._file = sys.stdout
        else:
            fd, self._tmp = tempfile.mkstemp(prefix=".partial-", dir=os.path.dirname(os.path.abspath(self.path)))
            self._file = os.fdopen(fd, "w", encoding="utf-8")
        return self

    def write(self, record):
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")

    def __exit__(self, kind, error, traceback):
        if self.path is None:
            self._file.flush()
            return
        self._file.close()
        if kind is None:
            os.replace(self._tmp, self.path)
        else:
            os.remove(self._tmp)


def write_json(path, value):
    """Writes `value` as indented JSON to `path` (whole, as `JsonLines`)."""
    with JsonLines(path) as out:
        out._file.write(json.dumps(value, indent=2) + "\n")
