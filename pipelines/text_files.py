"""Reader for plain-text corpora in the BERT convention.

One sentence per line, a blank line between documents (no sentence splitting
is done: lines are taken as they are, stripped). `.gz` and `.bz2` files are
decompressed by extension.
"""

from pipelines import text_io


def read_text_file(path, key, source="text"):
    """Yields the documents of one text file.

    Args:
        path: str. The file (`.txt`, `.txt.gz`, `.txt.bz2`, ...).
        key: str. Stable file key; documents get `<key>:<index>`.
        source: str. Source label stored in each document.

    Yields:
        `text_io.Document`s with at least one sentence.

    Raises:
        `text_io.CorruptInputError` if the compressed stream is truncated.

    Example:
        ```python
        for doc in read_text_file("corpus/brown.txt.gz", key="brown"):
            print(doc.key, len(doc.sentences))
        ```
    """
    index = 0
    sentences, invalid, num_bytes = [], 0, 0
    with text_io.CompressedReader(path) as reader:
        line_number = 0
        try:
            for line, raw_size, bad in _lines(reader.file):
                line_number += 1
                num_bytes += raw_size
                invalid += bad
                line = line.strip()
                if line:
                    sentences.append(line)
                    continue
                if sentences:
                    yield text_io.Document(f"{key}:{index}", source, sentences, invalid, num_bytes)
                    index += 1
                sentences, invalid, num_bytes = [], 0, 0
        except reader.ERRORS as err:
            raise reader.error(err, f"after line {line_number:,}") from err
    if sentences:
        yield text_io.Document(f"{key}:{index}", source, sentences, invalid, num_bytes)


def _lines(file, block_size=1 << 22):
    """(text, raw byte size, invalid UTF-8 count) per line, read and decoded in large blocks."""
    rest = b""
    while True:
        block = file.read(block_size)
        if not block:
            break
        block = rest + block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        yield from _decode_block(block[:cut], final=False)
    if rest:
        yield from _decode_block(rest, final=True)


def _decode_block(block, final):
    lines = block.split(b"\n")
    if not final:
        lines.pop()  # the empty piece after the block's last newline
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        for raw in lines:  # slow path: decode and count per line
            line, bad = text_io.decode_utf8(raw)
            yield line, len(raw) + 1, bad
        return
    texts = text.split("\n")
    if not final:
        texts.pop()
    for raw, line in zip(lines, texts):
        yield line, len(raw) + 1, 0
