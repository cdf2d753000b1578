"""Reader for BooksCorpus-style text: one book per `.txt` file.

Paragraphs are separated by blank lines; line breaks inside a paragraph are
spaces. Lines end at `\\n` (or `\\r\\n`) only (`data.lines`): a form feed
between pages is a space, as are U+2028 and the other characters
`str.splitlines` breaks at. Each paragraph is sentence-split with `sentences.split_sentences`;
a book is one document.
"""

from electra_tf.data.lines import split_lines
from electra_tf.pipelines import sentences as sentences_lib
from electra_tf.pipelines import text_io


def read_book(path, key, source="books"):
    """Yields the one document of a book file (nothing if it holds no text).

    Args:
        path: str. A `.txt` (or `.txt.gz`/`.txt.bz2`) file holding one book.
        key: str. Stable file key; the document key is `<key>:0`.
        source: str. Source label stored in the document.

    Yields:
        One `text_io.Document`.

    Example:
        ```python
        import pathlib

        from electra_tf.pipelines.books import read_book

        pathlib.Path("moby_dick.txt").write_text("Call me Ishmael. Some years ago I went to sea.\\n")
        doc = next(read_book("moby_dick.txt", key="moby_dick"))
        doc.key, doc.sentences  # ('moby_dick:0', ['Call me Ishmael.', 'Some years ago I went to sea.'])
        ```
    """
    with text_io.CompressedReader(path) as reader:
        try:
            data = reader.file.read()
        except reader.ERRORS as err:
            raise reader.error(err) from err
    text, invalid = text_io.decode_utf8(data)
    sentences, paragraph = [], []
    for line in split_lines(text) + [""]:
        if line.strip():
            paragraph.append(line)
        elif paragraph:
            sentences.extend(sentences_lib.split_sentences(" ".join(paragraph)))
            paragraph = []
    if sentences:
        yield text_io.Document(f"{key}:0", source, sentences, invalid, len(data))
