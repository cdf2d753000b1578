"""The array form of pre-training data (`electra_tf.data.arrays`): read without TensorFlow, in an order that is a
function of the seed, resumed at any batch exactly."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import REPO
from electra_tf.data import arrays

SEQ = 6


def folder_of(tmp_path, sizes=(7, 5)):
    rows = []
    start = 0
    for n in sizes:
        shard = np.zeros((n, 3, SEQ), np.int32)
        shard[:, 0] = (np.arange(start, start + n) + 100)[:, None]  # every token of example i is 100 + i
        shard[:, 1] = 1
        rows.append(shard)
        start += n
    arrays.write_folder(str(tmp_path), rows, SEQ, [f"records-{i}" for i in range(len(sizes))])
    return str(tmp_path)


def examples(batch):
    return [int(row[0]) - 100 for row in batch["token_ids"]]


def test_every_example_once_per_epoch_in_an_order_set_by_the_seed(tmp_path):
    folder = folder_of(tmp_path)
    reader = arrays.ArrayBatches(folder, batch_size=4, seq_length=SEQ, vocab_size=200, seed=3)
    stream = [e for i in range(6) for e in examples(reader.batch(i))]  # 24 examples: two epochs of 12
    assert sorted(stream[:12]) == sorted(stream[12:]) == list(range(12))
    assert stream[:12] != stream[12:] and stream[:12] != list(range(12))
    again = arrays.ArrayBatches(folder, batch_size=4, seq_length=SEQ, vocab_size=200, seed=3)
    other = arrays.ArrayBatches(folder, batch_size=4, seq_length=SEQ, vocab_size=200, seed=4)
    assert [examples(again.batch(i)) for i in range(6)] == [examples(reader.batch(i)) for i in range(6)]
    assert [examples(other.batch(i)) for i in range(3)] != [examples(reader.batch(i)) for i in range(3)]


def test_a_resumed_reader_starts_at_the_next_batch(tmp_path):
    folder = folder_of(tmp_path)
    whole = arrays.ArrayBatches(folder, batch_size=5, seq_length=SEQ, vocab_size=200, seed=0)
    resumed = arrays.ArrayBatches(folder, batch_size=5, seq_length=SEQ, vocab_size=200, seed=0, skip_batches=3)
    for i in range(4):
        got, want = resumed.batch(i), whole.batch(i + 3)
        assert all(np.array_equal(got[k], want[k]) for k in want)
    assert set(want) == {"token_ids", "segment_ids", "padding_mask"} and want["token_ids"].dtype == np.int32


def test_evaluation_reads_in_order(tmp_path):
    reader = arrays.ArrayBatches(folder_of(tmp_path), batch_size=5, seq_length=SEQ, vocab_size=200, shuffle=False)
    assert [examples(reader.batch(i)) for i in range(3)] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 0, 1, 2]]


@pytest.mark.parametrize("edit,expected", [
    (lambda m: m.update(seq_length=8), "`seq_length` is 8, but `--seq_length=6`"),
    (lambda m: m.update(format="other"), "`format` is not"),
    (lambda m: m["shards"][1].update(examples=9), "shard-00001.npy: int32 (5, 3, 6) where"),
])
def test_a_damaged_manifest_is_named(tmp_path, edit, expected):
    folder = folder_of(tmp_path)
    path = tmp_path / arrays.MANIFEST_FILE
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=None) as error:
        arrays.ArrayBatches(folder, batch_size=2, seq_length=SEQ, vocab_size=200)
    assert expected in str(error.value)


def test_a_token_id_past_the_vocabulary_names_the_shard(tmp_path):
    reader = arrays.ArrayBatches(folder_of(tmp_path), batch_size=12, seq_length=SEQ, vocab_size=105, shuffle=False)
    with pytest.raises(ValueError, match=r"vocab_size=105 .* in .*shard-0000[01].npy"):
        reader.batch(0)


def test_the_reader_imports_no_tensorflow(tmp_path):
    """With `import tensorflow` failing, the reader opens a folder and batches it."""
    folder = folder_of(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        sys.modules["tensorflow"] = None  # any `import tensorflow` raises ImportError
        from electra_tf.data import arrays
        reader = arrays.ArrayBatches({folder!r}, batch_size=4, seq_length={SEQ}, vocab_size=200, seed=3)
        print(sorted(int(t) - 100 for i in range(3) for t in reader.batch(i)["token_ids"][:, 0]))
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("tensorflow", "keras", "jax", "torch")))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == [str(list(range(12))), "['tensorflow']"]  # the blocked entry only
