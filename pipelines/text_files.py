"""Reader for plain-text corpora in the BERT convention.

One sentence per line, a blank line between documents (no sentence splitting
is done: lines are taken as they are, stripped). `.gz` and `.bz2` files are
decompressed by extension.
"""

import itertools

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
    sentences, invalid, num_bytes = [], 0, 0  # the document being read (it may span blocks)
    with text_io.CompressedReader(path) as reader:
        line_number = 0
        try:
            for texts, offsets, bad in _blocks(reader.file):
                # Whole blocks at a time: per-line Python work is what limits a reader.
                stripped = [t.strip() for t in texts]
                ends = [i for i, t in enumerate(stripped) if not t]
                bad_offsets = list(itertools.accumulate(bad, initial=0)) if bad else None
                start = 0
                for end in ends + [len(stripped)]:
                    sentences.extend(stripped[start:end])
                    stop = min(end + 1, len(stripped))  # the blank line's bytes belong to its document
                    num_bytes += offsets[stop] - offsets[start] + stop - start  # + the newlines
                    if bad_offsets:
                        invalid += bad_offsets[stop] - bad_offsets[start]
                    if end < len(stripped) and sentences:
                        yield text_io.Document(f"{key}:{index}", source, sentences, invalid, num_bytes)
                        index += 1
                        sentences, invalid, num_bytes = [], 0, 0
                    start = stop
                line_number += len(texts)
        except reader.ERRORS as err:
            raise reader.error(err, f"after line {line_number:,}") from err
    if sentences:
        yield text_io.Document(f"{key}:{index}", source, sentences, invalid, num_bytes)


def _blocks(file, block_size=1 << 22):
    """Decoded lines of large blocks: (texts, byte offset of each line and of the block's end,
    not counting newlines, invalid UTF-8 per line or None)."""
    rest = b""
    while True:
        block = file.read(block_size)
        if not block:
            break
        block = rest + block
        cut = block.rfind(b"\n") + 1
        rest = block[cut:]
        if cut:
            yield _decode_block(block[:cut], final=False)
    if rest:
        yield _decode_block(rest, final=True)


def _decode_block(block, final):
    try:
        texts = block.decode("utf-8").split("\n")
        ascii_only = block.isascii()
        bad = None
    except UnicodeDecodeError:  # slow path: decode and count per line
        decoded = [text_io.decode_utf8(raw) for raw in block.split(b"\n")]
        texts, bad = [text for text, _ in decoded], [count for _, count in decoded]
        ascii_only = False
    if not final:
        texts.pop()  # the empty piece after the block's last newline
        bad = bad[:-1] if bad else bad
    # Byte sizes: characters when the block is ASCII (the common case), else the raw lines.
    sizes = map(len, texts) if ascii_only else map(len, block.split(b"\n")[: len(texts)])
    return texts, list(itertools.accumulate(sizes, initial=0)), bad
