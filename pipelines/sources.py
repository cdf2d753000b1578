"""Input specs -> files -> documents, for any mix of sources in one build.

An input spec is `[format:]GLOB`; several are given as a list or comma-separated.
The corpus `format` is one of:

- `text`: BERT-convention text files (one sentence per line, blank line
  between documents), `.gz`/`.bz2` by extension (`text_files.py`);
- `wikipedia`: MediaWiki XML dumps, `*-pages-articles*.xml.bz2` (`wikipedia.py`);
- `books`: one book per `.txt` file; a directory means all `.txt` files under
  it (`books.py`).

Without a prefix the format is guessed: a directory is `books`, a name holding
`.xml` is `wikipedia`, anything else is `text`. Each spec is one *source*:
its label (`format:GLOB`) keys the per-source counts in `stats.json`.
"""

import collections
import os

import tensorflow as tf

from electra_tf.pipelines import books
from electra_tf.pipelines import text_files
from electra_tf.pipelines import text_io
from electra_tf.pipelines import wikipedia

FORMATS = ("text", "wikipedia", "books")  # the corpus formats, each read by its reader
READERS = {
    "text": text_files.read_text_file,
    "wikipedia": wikipedia.read_wikipedia_dump,
    "books": books.read_book,
}

InputFile = collections.namedtuple("InputFile", ["source", "format", "path", "key"])
InputFile.__doc__ = """One file to read: its source label, corpus format, path and stable key."""


def parse_specs(inputs):
    """Splits `inputs` (str or list of str, comma-separated allowed) into (format, glob) pairs."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    specs = []
    for item in inputs:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            corpus_format, sep, pattern = part.partition(":")
            if not sep or corpus_format not in FORMATS:
                if sep and _looks_like_a_format(corpus_format, pattern) and not tf.io.gfile.glob(part):
                    raise ValueError(f"Unknown corpus format `{corpus_format}:` in the input `{part}`. The formats are "
                                     f"{', '.join(f + ':' for f in FORMATS)} (or no prefix: guessed from the name).")
                corpus_format, pattern = _guess_format(part), part
            specs.append((corpus_format, pattern))
    if not specs:
        raise ValueError(f"No input given. Received: `inputs={inputs!r}`")
    return specs


def _looks_like_a_format(prefix, rest):
    """`prefix:rest` reads as `format:GLOB` (`pdf:docs/*.pdf`), not a URL (`gs://...`) or a Windows drive (`C:\\`)."""
    return prefix.isidentifier() and len(prefix) > 1 and not rest.startswith("//")


def _guess_format(pattern):
    if tf.io.gfile.isdir(pattern):
        return "books"
    if ".xml" in os.path.basename(pattern):
        return "wikipedia"
    return "text"


def expand_inputs(inputs):
    """Lists the files of every input spec, in a deterministic order.

    Args:
        inputs: str or list of str. Input specs `[format:]GLOB` (see module doc).

    Returns:
        list of `InputFile`. Keys are paths relative to the common directory
        of all files, so outputs do not depend on where the data lives.

    Raises:
        ValueError if a spec matches no file, or a file is given twice.

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.sources import expand_inputs

        files = expand_inputs("text:corpus/*.txt.gz")  # e.g. "text:corpus/*.txt.gz,wikipedia:dumps/*.xml.bz2"
        [f.key for f in files]  # ['brown.txt.gz']
        ```
    """
    found = []
    for corpus_format, pattern in parse_specs(inputs):
        source = f"{corpus_format}:{pattern}"
        if corpus_format == "books" and tf.io.gfile.isdir(pattern):
            paths = [
                os.path.join(root, name)
                for root, _, names in tf.io.gfile.walk(pattern)
                for name in names
                if name.endswith((".txt", ".txt.gz", ".txt.bz2"))
            ]
        else:
            paths = [p for p in tf.io.gfile.glob(pattern) if not tf.io.gfile.isdir(p)]
        if not paths and tf.io.gfile.isdir(pattern):
            raise IsADirectoryError(f"Input `{source}` is a folder; give a glob of its files, e.g. "
                                    f"`{corpus_format}:{os.path.join(pattern, '*')}` (only books: reads a folder: a book "
                                    "per .txt file).")
        if not paths:
            raise ValueError(f"Input `{pattern}` ({corpus_format}) matched no files.")
        found.extend((source, corpus_format, path) for path in sorted(paths))
    paths = [path for _, _, path in found]
    duplicates = sorted({p for p in paths if paths.count(p) > 1})
    if duplicates:
        raise ValueError(f"Files given more than once: {duplicates[:5]}")
    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return [
        InputFile(source, corpus_format, path, os.path.relpath(path, common) if common else path)
        for source, corpus_format, path in found
    ]


def read_documents(input_file):
    """Yields the `text_io.Document`s of one `InputFile` with its reader.

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.sources import expand_inputs, read_documents

        for f in expand_inputs("corpus/*.txt.gz"):
            for doc in read_documents(f):
                print(doc.key, doc.sentences)
        ```
    """
    reader = READERS[input_file.format]
    yield from reader(input_file.path, key=input_file.key, source=input_file.source)


def read_batches(input_file, batch_bytes=1 << 20):
    """Yields the documents of one `InputFile` as `text_io.DocumentBatch`es of about `batch_bytes`.

    Text files are batched straight from their bytes (`text_files.read_text_batches`);
    other formats batch their reader's `Document`s.

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.sources import expand_inputs, read_batches

        for f in expand_inputs("corpus/*.txt.gz"):
            for batch in read_batches(f):
                print(batch.keys)
        ```
    """
    if input_file.format == "text":
        yield from text_files.read_text_batches(input_file.path, input_file.key, input_file.source, batch_bytes)
    else:
        yield from text_io.batch_documents(read_documents(input_file), batch_bytes)
