"""Lines and table rows of the text a user gives: a line ends at `\\n` (a `\\r\\n` too), nowhere else.

`str.splitlines()` also ends a line at `\\v`, `\\f`, `\\x1c`-`\\x1e`, U+0085,
U+2028, U+2029 and a lone `\\r`; a text may hold any of them (JSON writes
U+2028 raw with `ensure_ascii=False`), and `tf.io.gfile`'s line reads drop
every `\\r`. Every reader of lines (predict's inputs, fine-tuning's task files,
the corpus readers) splits with `split_lines` and reads TSV and CSV records
with `table_rows`, so records and their line numbers follow the `\\n`s.

- `split_lines(text)`: the lines, each without its `\\n` and the `\\r` before
  it; a lone `\\r` stays in its line.
- `table_rows(name, text, delimiter)`: `(first line, fields)` of each record.
  TSV (`"\\t"`): a line is a record, fields are never quoted. CSV (any other
  delimiter): quoted as RFC 4180, a quoted field may span lines and keeps its
  line ends; a field may be of any size. A quote never closed is named by the
  line it opens on; other bad CSV by its line.

Example:
>>> from electra_tf.data.lines import split_lines, table_rows
>>> split_lines("one\\x0cpage\\r\\ntwo\\u2028lines\\nthree\\n")
['one\\x0cpage', 'two\\u2028lines', 'three']
>>> list(table_rows("x.csv", 'a,b\\n"two\\nlines",c\\n\\nd,e\\n', ","))
[(1, ['a', 'b']), (2, ['two\\nlines', 'c']), (4, []), (5, ['d', 'e'])]
"""

import csv

# What `str.splitlines()` ends a line at besides "\n" and "\r": within a line here, never its end.
NOT_LINE_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# The largest field csv accepts (a C long on every platform; its default is 131,072 characters).
_FIELD_LIMIT = 2 ** 31 - 1


def split_lines(text, keepends=False):
    """The lines of `text`, ended by `\\n` or `\\r\\n` only (no last empty line after a final line end).

    Args:
        text: str.
        keepends: bool. Keep each line's `\\n` or `\\r\\n` (what `csv.reader` needs).

    Returns:
        list of str.
    """
    lines = text.split("\n")
    last = lines.pop()  # what follows the last "\n": a line without its end, or nothing
    if keepends:
        lines = [line + "\n" for line in lines]
    else:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines + [last] if last else lines


def table_rows(name, text, delimiter):
    """Yields `(first line, fields)` of each record of a TSV (`delimiter="\\t"`) or CSV text; a blank line: `[]`.

    Args:
        name: str. The file, as errors name it.
        text: str. The whole text (or an iterable of its lines, ends kept: `split_lines(text, keepends=True)`).
        delimiter: str. "\\t": TSV, one record a line, no quoting; else CSV with that delimiter.

    Raises:
        ValueError: `"<name>:<line>: ..."`, a quote never closed (the line it opens on) or other bad CSV.
    """
    lines = split_lines(text, keepends=True) if isinstance(text, str) else text
    if delimiter == "\t":
        for number, line in enumerate(lines, start=1):
            line = line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")
            yield number, line.split("\t") if line else []
        return
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    ended = []

    def fed():
        yield from lines
        ended.append(True)

    reader = csv.reader(fed(), delimiter=delimiter)
    first = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"{name}:{reader.line_num}: {_csv_problem(e)}") from None
        if ended:  # the lines ran out inside a quoted field: csv gives what it holds as a record
            raise ValueError(f"{name}:{first}: a quote opened in the record that starts on this line is never "
                             "closed (the file ends inside the quoted field).")
        yield first, row
        first = reader.line_num + 1


def _csv_problem(error):
    text = str(error)
    if text.startswith("new-line character seen in unquoted field"):
        return ("a carriage return (\\r) inside an unquoted field: lines end at \\n or \\r\\n only; quote the field "
                "or remove the \\r.")
    return f"not valid CSV ({text})."
