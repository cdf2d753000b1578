r"""Trains a WordPiece vocabulary with Hugging Face `tokenizers`.

    python -m electra_tf.pipelines.build_vocab --input 'corpus/*.txt.gz' --vocab_size 8192 \
        --vocab_file vocab.txt --lower_case --num_unused 100

The text is normalized and pre-tokenized exactly as BERT (and our
`WordPieceTokenizer`) does it: `BertNormalizer` (clean text, CJK spacing,
lower-case + strip accents when `lower_case`) and `BertPreTokenizer`
(whitespace and punctuation splits). `vocab.txt` is laid out as:

    [PAD]                       id 0 (padding in the records)
    [unused0] ... [unusedN-1]   free slots for later special tokens
    [UNK] [CLS] [SEP] [MASK]
    learned pieces               single characters, `##` continuations, words

`vocab_size` counts every line. Training is deterministic for the same input
files (same order) and parameters. Inputs are read with `sources`, so
`text:`, `wikipedia:` and `books:` specs all work.
`--output` is the deprecated spelling of `--vocab_file`. Installed as
`electra-build-vocab`.

`--vocab_file` never replaces an input file; an existing one (a run's, an
export's or an earlier build's vocabulary) is replaced only with
`--overwrite`, and so is an `electra_tokenizer.json` beside it that holds
other settings (another vocabulary's in that folder) (`check_output`).
Paths are compared as files (a link or a hard link to an input is the input);
a link is written through to the file it names; a device is refused.
"""

if __name__ == "__main__":  # a program: quiet TensorFlow's start-up before it is imported (electra_tf.cli)
    from electra_tf import cli as _cli

    _cli.prepare_tensorflow()


import collections
import json
import os

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf
import tokenizers
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import trainers

from electra_tf import atomic
from electra_tf import cli
from electra_tf.config_fields import check_range
from electra_tf.data.tokenizer import (SETTINGS_FILE, is_bert_punctuation, new_settings, recorded_settings,
                                       write_settings)
from electra_tf.pipelines import sources

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _sentences(files):
    for input_file in files:
        count = 0
        for doc in sources.read_documents(input_file):
            count += 1
            yield from doc.sentences
        logging.info("build_vocab: read %s (%d documents)", input_file.path, count)


def _alphabet(files, normalizer, limit):
    """The `limit` most frequent normalized characters, ordered by (-count, char)."""
    raw = collections.Counter()
    for sentence in _sentences(files):
        raw.update(sentence)
    counts = collections.Counter()
    for char, count in raw.items():
        for normalized in normalizer.normalize_str(char):
            if not normalized.isspace():
                counts[normalized] += count
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [char for char, _ in ranked[:limit]]


def build_vocab(inputs, vocab_size, output, lower_case=True, num_unused=100, limit_alphabet=1000,
                min_frequency=2):
    """Trains a WordPiece vocabulary and writes `vocab.txt`.

    Args:
        inputs: str or list of str. Input specs `[format:]GLOB` (see `sources`).
        vocab_size: int. Total lines of `vocab.txt`, special tokens included.
        output: str. Path of the `vocab.txt` to write (atomically).
        lower_case: bool. Lower-case and strip accents (an uncased vocabulary).
        num_unused: int. Number of `[unusedK]` slots after [PAD].
        limit_alphabet: int. Most frequent characters kept as pieces.
        min_frequency: int. Least count for a merged piece.

    Returns:
        list of str, the vocabulary in id order.

    Example:
        ```python
        import pathlib

        from electra_tf.pipelines.build_vocab import build_vocab

        pathlib.Path("corpus.txt").write_text("The cat sat on the mat.\\nThe dog sat on the log.\\n" * 50)
        vocab = build_vocab("corpus.txt", vocab_size=200, output="vocab.txt")
        vocab[0], vocab[101:104]  # ('[PAD]', ['[UNK]', '[CLS]', '[SEP]'])
        ```
    """
    check_range("num_unused", num_unused, "[0, inf)")
    head = ["[PAD]"] + [f"[unused{i}]" for i in range(num_unused)] + list(SPECIAL_TOKENS)
    if vocab_size <= len(head) + 1:
        raise ValueError(
            f"`vocab_size` must exceed the {len(head)} special tokens. Received: `vocab_size={vocab_size}`"
        )
    files = sources.expand_inputs(inputs)
    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=lower_case, lowercase=lower_case
    )
    alphabet = _alphabet(files, normalizer, limit_alphabet)
    if not alphabet:  # nothing but special tokens would be written
        raise ValueError(f"Inputs {inputs!r} hold no text: no vocabulary can be learned; nothing written.")
    tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size - len(head),
        min_frequency=min_frequency,
        limit_alphabet=len(alphabet),
        initial_alphabet=alphabet,
        # Fixing the ids of every character and `##` continuation up front makes the
        # trainer's tie-breaking (by token id) independent of its hash-map order.
        special_tokens=alphabet + [f"##{c}" for c in alphabet if not is_bert_punctuation(c)],
        continuing_subword_prefix="##",
        show_progress=False,
    )
    logging.info("build_vocab: training %d pieces (alphabet %d) on %d files",
                 vocab_size - len(head), len(alphabet), len(files))
    tokenizer.train_from_iterator(_sentences(files), trainer=trainer)
    learned = sorted(tokenizer.get_vocab().items(), key=lambda item: (item[1], item[0]))
    reserved = set(head)
    vocab = head + [token for token, _ in learned if token not in reserved and token.strip()]
    vocab = vocab[:vocab_size]
    if len(vocab) < vocab_size:
        logging.warning("build_vocab: the corpus yields only %d of %d entries", len(vocab), vocab_size)
    output_dir = os.path.dirname(atomic.real_path(output))  # through a link: beside the file it names
    if output_dir:
        tf.io.gfile.makedirs(output_dir)
    with atomic.open_write(output, "w", "vocab_file") as f:
        f.write("".join(token + "\n" for token in vocab))
        # The settings first: a vocab.txt never stands without the normalisation it was built with.
        write_settings(output_dir or ".", new_settings(lower_case))
    logging.info("build_vocab: wrote %s (%d entries)", output, len(vocab))
    return vocab


def check_output(inputs, output, lower_case, overwrite=False):
    """Refuses, before any work, a `--vocab_file` that is an input, or would replace a file without `overwrite`.

    Replaced only with `overwrite`: an existing `output`, and a tokenizer settings file beside it
    that holds other settings than `lower_case` gives (shared by another vocabulary of the folder).
    """
    if atomic.streamed(output, "vocab_file"):  # a folder, a socket: refused by `streamed` itself
        raise ValueError(f"`--vocab_file={output}` is a device or a stream; a vocabulary is a file with its "
                         f"{SETTINGS_FILE} beside it. Choose a file path.")
    settings = os.path.join(os.path.dirname(atomic.real_path(output)), SETTINGS_FILE)
    for found in sources.expand_inputs(inputs):
        if atomic.same_file(found.path, output) or atomic.same_file(found.path, settings):
            raise ValueError(f"`--vocab_file={output}` is an --input file ({found.path}): it would be replaced. "
                             "Choose another --vocab_file.")
    if overwrite:
        return
    if tf.io.gfile.exists(output):
        raise FileExistsError(f"`--vocab_file={output}` exists (a run's, an export's or an earlier vocabulary); "
                              "nothing is overwritten. Choose a new --vocab_file, or pass --overwrite.")
    if tf.io.gfile.exists(settings):
        with tf.io.gfile.GFile(settings) as f:
            saved = f.read()
        try:
            values = recorded_settings(json.loads(saved), settings)
        except ValueError:
            values = None
        if values != new_settings(lower_case):
            raise FileExistsError(
                f"`--vocab_file={output}`: {settings} beside it holds other settings ({saved.strip()[:80]}), another "
                "vocabulary's; nothing is overwritten. Choose another folder, or pass --overwrite.")


def define_flags():
    """Defines the CLI flags (only when run as a script)."""
    flags.DEFINE_list("input", None, "Input specs `[format:]GLOB`, comma-separated.")
    cli.define("integer", "vocab_size", 30522, "Total vocabulary size, special tokens included.", range="[1, inf)")
    cli.define_vocab_file("Path of the vocab.txt to write.")
    flags.DEFINE_bool("lower_case", True, "Uncased vocabulary (lower-case, strip accents); saved in "
                      "electra_tokenizer.json beside the vocab.txt.")
    cli.define("integer", "num_unused", 100, "Number of [unusedK] slots.", range="[0, inf)")
    flags.DEFINE_bool("overwrite", False, "Replace an existing --vocab_file (and the tokenizer settings beside it).")
    flags.mark_flags_as_required(["input", "vocab_file"])


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    check_output(FLAGS.input, FLAGS.vocab_file, FLAGS.lower_case, FLAGS.overwrite)
    build_vocab(FLAGS.input, FLAGS.vocab_size, FLAGS.vocab_file, FLAGS.lower_case, FLAGS.num_unused)


def run():
    """`python -m electra_tf.pipelines.build_vocab` (console script: `electra-build-vocab`)."""
    define_flags()
    cli.run(main, aliases=ALIASES)


# The vocabulary is what this program writes: its `--output` is now `--vocab_file`.
ALIASES = cli.aliases(output="vocab_file")

if __name__ == "__main__":
    run()
