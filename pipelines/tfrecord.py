"""TFRecord files written in one piece: the framing of many records at once, compiled.

A TFRecord file is a sequence of records, each framed as

    uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

(little-endian; `masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xA282EAD8` for
`c = crc32c(x)`, CRC-32C being the Castagnoli CRC). `tf.io.TFRecordWriter`
writes the same bytes, but takes one Python call per record, which costs the
pre-training data builder as much as encoding its examples. `frame_records`
frames a whole shard in one compiled pass (slicing-by-8 CRC), and the
builder writes it with one call.
"""

import numba
import numpy as np

_CASTAGNOLI = 0x82F63B78  # CRC-32C polynomial, bit-reversed
_MASK_DELTA = 0xA282EAD8


def _crc_tables():
    """Slicing-by-8 tables: `tables[k][b]` is the CRC of byte `b` followed by `k` zero bytes."""
    tables = np.zeros((8, 256), np.uint32)
    for b in range(256):
        crc = b
        for _ in range(8):
            crc = (crc >> 1) ^ _CASTAGNOLI if crc & 1 else crc >> 1
        tables[0, b] = crc
    for k in range(1, 8):
        for b in range(256):
            previous = int(tables[k - 1, b])
            tables[k, b] = (previous >> 8) ^ int(tables[0, previous & 0xFF])
    return tables


_TABLES = _crc_tables()


@numba.njit(cache=True)
def _crc32c(data, start, stop, tables):
    crc = np.uint32(0xFFFFFFFF)
    i = start
    while i + 8 <= stop:
        low = crc ^ (np.uint32(data[i]) | (np.uint32(data[i + 1]) << 8) | (np.uint32(data[i + 2]) << 16)
                     | (np.uint32(data[i + 3]) << 24))
        crc = (tables[7, low & 0xFF] ^ tables[6, (low >> 8) & 0xFF] ^ tables[5, (low >> 16) & 0xFF]
               ^ tables[4, low >> 24] ^ tables[3, data[i + 4]] ^ tables[2, data[i + 5]]
               ^ tables[1, data[i + 6]] ^ tables[0, data[i + 7]])
        i += 8
    while i < stop:
        crc = tables[0, (crc ^ data[i]) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@numba.njit(cache=True)
def _masked(crc):
    return (((crc >> 15) | (crc << 17)) + np.uint32(_MASK_DELTA)) & np.uint32(0xFFFFFFFF)


@numba.njit(cache=True)
def _put_uint(out, at, value, size):
    for k in range(size):
        out[at + k] = (value >> (8 * k)) & 0xFF


@numba.njit(cache=True)
def _frame_kernel(data, offsets, tables):
    n = len(offsets) - 1
    out = np.empty(offsets[n] - offsets[0] + 16 * n, np.uint8)
    at = 0
    for i in range(n):
        length = offsets[i + 1] - offsets[i]
        _put_uint(out, at, np.uint64(length), 8)
        _put_uint(out, at + 8, _masked(_crc32c(out, at, at + 8, tables)), 4)
        out[at + 12 : at + 12 + length] = data[offsets[i] : offsets[i + 1]]
        _put_uint(out, at + 12 + length, _masked(_crc32c(data, offsets[i], offsets[i + 1], tables)), 4)
        at += 16 + length
    return out


def crc32c(data):
    """The CRC-32C (Castagnoli) of bytes.

    Example:
        >>> from electra_tf.pipelines.tfrecord import crc32c
        >>> hex(crc32c(b"123456789"))  # the standard check value
        '0xe3069283'
    """
    return int(_crc32c(np.frombuffer(data, np.uint8), 0, len(data), _TABLES))


def frame_records(data, offsets):
    """The bytes of a TFRecord file holding `data[offsets[i]:offsets[i + 1]]` for each `i`.

    Args:
        data: uint8 array (or bytes), the records back to back.
        offsets: int array of `n + 1` increasing offsets into `data`.

    Returns:
        bytes, byte-identical to what `tf.io.TFRecordWriter` writes for the
        same records (no compression).

    Example:
        >>> import tensorflow as tf
        >>> from electra_tf.pipelines.tfrecord import frame_records
        >>> path = "records.tfrecord"
        >>> with open(path, "wb") as f:
        ...     _ = f.write(frame_records(b"abcde", [0, 2, 5]))
        >>> [r.numpy() for r in tf.data.TFRecordDataset(path)]
        [b'ab', b'cde']
    """
    data = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else np.asarray(data, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    if len(offsets) < 1 or np.any(np.diff(offsets) < 0) or offsets[0] < 0 or offsets[-1] > len(data):
        raise ValueError(f"`offsets` must increase within the data ({len(data)} bytes). Received: {offsets[:8]}...")
    return _frame_kernel(data, offsets, _TABLES).tobytes()
