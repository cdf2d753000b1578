r"""Decodes pre-training records back to text, for eyeballing a build.

    python -m electra_tf.pipelines.inspect_records --data '/tmp/pretrain/pretrain_data.tfrecord-*' \
        --vocab_file vocab.txt --num 5

Prints, per example, the A and B segments as text (word pieces joined: a `##`
piece continues the previous word), the number of real tokens and the
segment lengths. Records built with another vocabulary (`stats.json`'s
`vocab_sha256`) and ids outside the vocabulary (negative, or past its end) are
refused, naming the file.
"""

if __name__ == "__main__":  # a program: quiet TensorFlow's start-up before it is imported (electra_tf.cli)
    from electra_tf import cli as _cli

    _cli.prepare_tensorflow()


import os

from absl import app
from absl import flags
import tensorflow as tf

from electra_tf import cli
from electra_tf.config_fields import check_range
from electra_tf.data import tokenizer as tokenizer_lib
from electra_tf.data.records import FEATURES, check_vocabulary


def pieces_to_text(pieces):
    """Joins word pieces into text (`##x` glues to the previous piece).

    Example:
        >>> from electra_tf.pipelines.inspect_records import pieces_to_text
        >>> pieces_to_text(["the", "token", "##izer", "works", "."])
        'the tokenizer works .'
    """
    words = []
    for piece in pieces:
        if piece.startswith("##") and words:
            words[-1] += piece[2:]
        else:
            words.append(piece)
    return " ".join(words)


def decode_examples(data, vocab_file, num=5):
    """Reads the first `num` records of `data` and decodes them.

    Args:
        data: str. Glob of TFRecord files (`pretrain_data.tfrecord-*`).
        vocab_file: str. The vocabulary the records were built with.
        num: int. Number of examples.

    Returns:
        list of dicts: `a`, `b` (str), `num_tokens`, `len_a`, `len_b` (ints),
        `input_ids` (list of int, unpadded).

    Example:
        ```python
        import pathlib

        import numpy as np
        import tensorflow as tf

        from electra_tf.pipelines.inspect_records import decode_examples
        from electra_tf.pipelines.packing import serialize_examples

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "."]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        # One record as `build_pretraining_data` writes them: [CLS] the cat [SEP] sat . [SEP] [PAD]
        records = serialize_examples(np.array([[2, 5, 6, 3, 7, 8, 3, 0]]), [2], [2])
        with tf.io.TFRecordWriter("pretrain_data.tfrecord-00000-of-00001") as writer:
            writer.write(records[0])
        for ex in decode_examples("pretrain_data.tfrecord-*", "vocab.txt", 2):
            print(ex["a"], "||", ex["b"])  # the cat || sat .
        ```
    """
    check_range("num", num, "[1, inf)")
    vocab = tokenizer_lib.load_vocab(vocab_file)
    special = {vocab.index(t) for t in ("[CLS]", "[SEP]")}
    files = sorted(tf.io.gfile.glob(data))
    if not files:
        raise ValueError(f"No records match `data={data!r}`")
    for directory in sorted({os.path.dirname(path) for path in files}):
        check_vocabulary(directory, vocab_file)  # as pretrain does: stats.json's vocab_sha256
    names = FEATURES
    spec = {n: tf.io.VarLenFeature(tf.int64) for n in names}
    out = []
    for path, record in _records(files, num):
        found = tf.train.Example.FromString(record.numpy()).features.feature
        missing = [n for n in names if n not in found]
        if missing:
            raise ValueError(f"{path}: records lack feature(s) {missing}; found {sorted(found)}. Pre-training "
                             f"records hold Int64 {list(names)}.")
        example = {k: tf.sparse.to_dense(v).numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        n = int(example["input_mask"].sum())
        ids, segments = example["input_ids"][:n].tolist(), example["segment_ids"][:n].tolist()
        outside = sorted({i for i in ids if not 0 <= i < len(vocab)})
        if outside:
            raise ValueError(f"{path}: record {len(out)} holds token id(s) {outside[:10]} outside the vocabulary "
                             f"{vocab_file} (ids 0..{len(vocab) - 1}): records of another vocabulary, or damaged.")
        a = [vocab[i] for i, s in zip(ids, segments) if s == 0 and i not in special]
        b = [vocab[i] for i, s in zip(ids, segments) if s == 1 and i not in special]
        out.append(dict(a=pieces_to_text(a), b=pieces_to_text(b), num_tokens=n, len_a=len(a), len_b=len(b),
                        input_ids=ids))
    return out


def _records(files, num):
    """(path, record) of the first `num` records of `files`, in order; a corrupt file is named."""
    for path in files:
        try:
            for record in tf.data.TFRecordDataset(path).take(num):
                yield path, record
                num -= 1
        except tf.errors.DataLossError as e:
            raise ValueError(f"{path} is not a readable TFRecord file: {e.message}") from None
        if num <= 0:
            return


def define_flags():
    """Defines the CLI flags (only when run as a script)."""
    flags.DEFINE_string("data", None, "Glob of TFRecord files.")
    cli.define_vocab_file("vocab.txt used for the build.")
    cli.define("integer", "num", 5, "Number of examples to print.", range="[1, inf)")
    flags.mark_flags_as_required(["data", "vocab_file"])


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    for i, example in enumerate(decode_examples(FLAGS.data, FLAGS.vocab_file, FLAGS.num)):
        print(f"--- example {i}: {example['num_tokens']} tokens (A {example['len_a']}, B {example['len_b']})")
        print(f"A: {example['a']}")
        print(f"B: {example['b'] or '(single segment)'}")


def run():
    """`python -m electra_tf.pipelines.inspect_records`."""
    define_flags()
    cli.run(main, aliases=ALIASES)


ALIASES = cli.aliases("vocab")

if __name__ == "__main__":
    run()
