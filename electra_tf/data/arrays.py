"""Pre-training records decoded once into arrays: a folder that trains with no TensorFlow to read it.

`python -m electra_tf.pipelines.records_to_arrays --data 'records/*' --output_dir arrays` writes

    arrays/arrays.json          the manifest (written last): format, seq_length, the shards and their examples
    arrays/shard-00000.npy      int32 (examples, 3, seq_length): `input_ids`, `input_mask`, `segment_ids`
    ...                         (one shard per record file, in the records' sorted order)
    arrays/vocab.txt            the records' vocabulary (+ electra_tokenizer.json, stats.json when beside them)

and `--data arrays` (the folder) trains on it under any backend: a folder holding `arrays.json` is read
here, with numpy memory maps, a glob is read as TFRecords (`pretraining_dataset`). The order is a function
of (folder, seed) alone: epoch `e` is the permutation `numpy.random.default_rng([seed, e])` of every
example of every shard, the stream is the epochs one after another, and a batch is the next `batch_size`
examples of it (across an epoch's end), so a resumed run starts at batch `skip_batches` exactly.
Evaluation reads the examples in order, from the first, every time.

This module imports numpy and the standard library only: never TensorFlow (`tests/data/test_arrays.py`
runs it with TensorFlow blocked).

Example:
>>> import os, tempfile
>>> import numpy as np
>>> from electra_tf.data import arrays
>>> folder = tempfile.mkdtemp()
>>> rows = np.zeros((5, 3, 4), "int32"); rows[:, 0] = np.arange(5)[:, None] + 100; rows[:, 1] = 1
>>> arrays.write_folder(folder, [rows], seq_length=4, sources=["records-0"])["examples"]
5
>>> batches = arrays.ArrayBatches(folder, batch_size=2, seq_length=4, vocab_size=200, seed=0)
>>> sorted(batches.batch(0)), batches.batch(0)["token_ids"].shape
(['padding_mask', 'segment_ids', 'token_ids'], (2, 4))
"""

import json
import os

import numpy as np

from electra_tf import atomic

MANIFEST_FILE = "arrays.json"
FORMAT = "electra_tf pre-training arrays"
VERSION = 1
SHARD_FILE = "shard-{:05d}.npy"
FEATURES = ("input_ids", "input_mask", "segment_ids")  # the records' features, in the shards' second axis


def is_array_folder(data):
    """True when `--data` names a folder of arrays (one holding `arrays.json`), not TFRecord globs."""
    return bool(data) and "," not in data and "://" not in data and os.path.isfile(os.path.join(data, MANIFEST_FILE))


def write_folder(folder, shards, seq_length, sources, write=None):
    """Writes `shards` (int32 `(examples, 3, seq_length)` arrays) and, last, the manifest into `folder`.

    `write(path, array)` writes one `.npy` file (default: `numpy.save`); the command passes an atomic writer.
    """
    write = write or (lambda path, array: np.save(path, array))
    entries = []
    for index, (rows, source) in enumerate(zip(shards, sources)):
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        if rows.ndim != 3 or rows.shape[1:] != (len(FEATURES), seq_length):
            raise ValueError(f"shard {index}: shape {rows.shape}, expected (examples, 3, {seq_length}).")
        name = SHARD_FILE.format(index)
        write(os.path.join(folder, name), rows)
        entries.append({"file": name, "examples": int(rows.shape[0]), "source": os.path.basename(source)})
    manifest = {"format": FORMAT, "version": VERSION, "seq_length": int(seq_length), "features": list(FEATURES),
                "dtype": "int32", "examples": sum(e["examples"] for e in entries), "shards": entries}
    atomic.write_json(os.path.join(folder, MANIFEST_FILE), manifest)
    return manifest


def read_manifest(folder, flag="data"):
    """The manifest of an array folder, checked: one `ValueError` naming the file and the field otherwise."""
    path = os.path.join(folder, MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"`--{flag}={folder}` holds no {MANIFEST_FILE}: not a folder of pre-training "
                                "arrays (python -m electra_tf.pipelines.records_to_arrays writes one).") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}): a damaged manifest; convert the records again.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: `format` is not {FORMAT!r}: not a manifest of pre-training arrays.")
    if manifest.get("version") != VERSION:
        raise ValueError(f"{path}: `version` {manifest.get('version')!r} is not {VERSION}, the one this version "
                         "reads: convert the records again.")
    shards = manifest.get("shards")
    if not isinstance(shards, list) or not shards:
        raise ValueError(f"{path}: `shards` lists no shard.")
    return manifest


class ArrayBatches:
    """Batches of an array folder: dicts of int32 `(batch_size, seq_length)` `token_ids`, `segment_ids`,
    `padding_mask` (the model's names), memory-mapped, in the order the module describes.

    Args:
        folder: str. A folder holding `arrays.json`.
        batch_size: int. Examples per batch (global).
        seq_length: int. The model's; the manifest's must be the same.
        vocab_size: int. A token id at or past it (or negative) is an error naming the shard.
        seed: int. Seed of the order.
        shuffle: bool. Shuffled epochs (training), or the examples in order (evaluation).
        skip_batches: int. Batches already read (a resumed run's position): `batch(0)` is the next one.
        flag: str. The flag errors name.
    """

    def __init__(self, folder, batch_size, seq_length, vocab_size, seed=0, shuffle=True, skip_batches=0,
                 flag="data"):
        manifest = read_manifest(folder, flag)
        path = os.path.join(folder, MANIFEST_FILE)
        if manifest.get("seq_length") != seq_length:
            raise ValueError(f"{path}: `seq_length` is {manifest.get('seq_length')}, but `--seq_length={seq_length}`.")
        self.folder, self.flag = folder, flag
        self.batch_size, self.vocab_size = batch_size, vocab_size
        self.seed, self.shuffle, self.skip_batches = seed, shuffle, skip_batches
        self.files, self.shards = [], []
        for entry in manifest["shards"]:
            file = os.path.join(folder, str(entry.get("file", "")))
            try:
                rows = np.load(file, mmap_mode="r")
            except (OSError, ValueError) as e:
                raise ValueError(f"{file}: not a readable shard of {path} ({e}).") from None
            if rows.dtype != np.int32 or rows.shape[1:] != (len(FEATURES), seq_length) \
                    or rows.shape[0] != entry.get("examples"):
                raise ValueError(f"{file}: int32 {tuple(rows.shape)} where {path} says int32 ({entry.get('examples')},"
                                 f" {len(FEATURES)}, {seq_length}): a damaged shard; convert the records again.")
            self.files.append(file)
            self.shards.append(rows)
        self.offsets = np.cumsum([0] + [len(s) for s in self.shards])
        self.num_examples = int(self.offsets[-1])
        if self.num_examples < batch_size:
            raise ValueError(f"`--{flag}={folder}` holds {self.num_examples} examples, fewer than one batch "
                             f"(`--batch_size={batch_size}`).")
        self._order = (None, None)

    def _epoch(self, epoch):
        if self._order[0] != epoch:
            order = (np.random.default_rng([self.seed, epoch]).permutation(self.num_examples) if self.shuffle
                     else np.arange(self.num_examples))
            self._order = (epoch, order)
        return self._order[1]

    def indices(self, i):
        """The examples (global indices) of batch `i` after the skipped ones."""
        start = (self.skip_batches + i) * self.batch_size
        picked, done = [], 0
        while done < self.batch_size:
            epoch, offset = divmod(start + done, self.num_examples)
            take = self._epoch(epoch)[offset:offset + self.batch_size - done]
            picked.append(take)
            done += len(take)
        return np.concatenate(picked)

    def batch(self, i):
        """Batch `i` (counted after the skipped ones)."""
        index = self.indices(i)
        shard = np.searchsorted(self.offsets, index, side="right") - 1
        rows = np.empty((len(index), len(FEATURES), self.shards[0].shape[2]), np.int32)
        for s in np.unique(shard):
            at = shard == s
            local = index[at] - self.offsets[s]
            order = np.argsort(local)  # memory maps read forwards
            gathered = np.empty((len(local),) + rows.shape[1:], np.int32)
            gathered[order] = self.shards[s][local[order]]
            ids = gathered[:, 0]
            if ids.size and (ids.max() >= self.vocab_size or ids.min() < 0):
                bad = int(ids.max()) if ids.max() >= self.vocab_size else int(ids.min())
                raise ValueError(f"A token id is >= vocab_size={self.vocab_size} or negative ({bad}) in "
                                 f"{self.files[s]} (`--{self.flag}={self.folder}`): the records were built with "
                                 "another vocabulary than the model's.")
            rows[at] = gathered
        return {"token_ids": np.ascontiguousarray(rows[:, 0]), "segment_ids": np.ascontiguousarray(rows[:, 2]),
                "padding_mask": np.ascontiguousarray(rows[:, 1])}

    def __iter__(self):
        i = 0
        while True:
            yield self.batch(i)
            i += 1
