"""The one WordPiece tokenizer: data builder, pre-training, fine-tuning and serving.

Every path from text to token ids goes through `WordPieceTokenizer`, an in-graph
tensorflow-text `FastBertTokenizer` (BERT basic tokenization + WordPiece), so the
ids written by `electra_tf.pipelines.build_pretraining_data` are the ids a served model sees
(TF Serving and LiteRT run the same ops). Its text normalisation is BERT's own
(`electra_tf.data.bert_normalizer`), not tensorflow-text's Unicode case folding.

Which normalisation a vocabulary is used with is recorded in its `electra_tokenizer.json`
(`normalization`, `normalization_version`): `"bert"` for everything written now, and
`"nfkc_casefold"`, the previous release's (tensorflow-text's ICU NFKC case folding, words
limited to 100 bytes), which a settings file without the record is read as, so a run or an
export of that release gives the ids it was trained with.
"""

import json
import os
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from absl import logging

from electra_tf import atomic
from electra_tf.data import bert_normalizer
from electra_tf.data.utf8 import decode_utf8

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Beside every `vocab.txt` a pipeline, a run or an export writes: how text is normalised before
# WordPiece (`{"lower_case": bool, "strip_accents": bool}`), under a name Hugging Face does not
# use. A vocabulary without settings is uncased, as every vocabulary before this file existed was.
SETTINGS_FILE = "electra_tokenizer.json"
# Read too: electra_tf 0.1 wrote its settings under this name, and Hugging Face writes its own
# tokenizer settings (`do_lower_case`, `strip_accents`, `tokenize_chinese_chars`, ...) there.
HF_SETTINGS_FILE = "tokenizer_config.json"
VOCAB_FILE = "vocab.txt"  # the file name a vocabulary keeps in every run folder and export
# The normalisations, each with the newest version this code implements. "bert": BERT's
# `tokenization.py` (`bert_normalizer`), words of more than `MAX_CHARS_PER_WORD` characters
# `[UNK]`. "nfkc_casefold": the previous release's, read from settings files that lack the
# record: tensorflow-text's own normaliser (ICU NFKC case folding, NFD, marks dropped) when
# `lower_case` and `strip_accents` are both on, `tf.strings.lower` or NFD without marks for one
# alone, words of more than 100 bytes `[UNK]`.
BERT, LEGACY = "bert", "nfkc_casefold"
NORMALIZATIONS = {BERT: 1, LEGACY: 1}
RECORD = ("normalization", "normalization_version")
DEFAULT_SETTINGS = {"lower_case": True, "strip_accents": True, "normalization": BERT,
                    "normalization_version": NORMALIZATIONS[BERT]}
MAX_CHARS_PER_WORD = 100  # BERT's `max_input_chars_per_word`: a longer word is one [UNK]
_LEGACY_MAX_BYTES_PER_WORD = 100  # what the previous release's words were limited to (UTF-8 bytes)


def new_settings(lower_case=True, strip_accents=None, normalization=BERT):
    """The settings record of a vocabulary used from now on (`lower_case`, `strip_accents`, the normalisation).

    Example:
        >>> from electra_tf.data.tokenizer import new_settings
        >>> new_settings(lower_case=False)
        {'lower_case': False, 'strip_accents': False, 'normalization': 'bert', 'normalization_version': 1}
    """
    return {"lower_case": lower_case, "strip_accents": lower_case if strip_accents is None else strip_accents,
            "normalization": normalization, "normalization_version": NORMALIZATIONS[normalization]}


def recorded_settings(values, source):
    """Settings as an electra_tf file holds them (`electra_tokenizer.json`, a build's `stats.json`
    `tokenizer`), completed: without the normalisation record they are the previous release's
    (`"nfkc_casefold"`, version 1). A normalisation or version this code does not know is refused,
    naming `source`.

    Example:
        >>> from electra_tf.data.tokenizer import recorded_settings
        >>> recorded_settings({"lower_case": True, "strip_accents": True}, "electra_tokenizer.json")
        {'lower_case': True, 'strip_accents': True, 'normalization': 'nfkc_casefold', 'normalization_version': 1}
    """
    unknown = sorted(set(values) - set(DEFAULT_SETTINGS))
    if unknown or not all(isinstance(values.get(k, True), bool) for k in ("lower_case", "strip_accents")):
        raise ValueError(f"{source}: expected boolean lower_case and strip_accents, and {list(RECORD)}; "
                         f"found {values}.")
    normalization = values.get("normalization", LEGACY)
    version = values.get("normalization_version", 1)
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"{source}: unknown normalization {normalization!r}; this electra_tf knows "
                         f"{sorted(NORMALIZATIONS)}.")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{source}: normalization_version must be a whole number >= 1; found {version!r}.")
    if version > NORMALIZATIONS[normalization]:
        raise ValueError(f"{source}: normalization {normalization!r} version {version} is newer than this "
                         f"electra_tf's ({NORMALIZATIONS[normalization]}): tokenize it with the release that wrote it.")
    lower_case = values.get("lower_case", True)
    return {"lower_case": lower_case, "strip_accents": values.get("strip_accents", lower_case),
            "normalization": normalization, "normalization_version": version}


def read_settings(vocab_file):
    """The tokenizer settings saved beside `vocab_file`, or None when there are none.

    Read from `electra_tokenizer.json` (the project's), else `tokenizer_config.json`:
    electra_tf 0.1's settings or Hugging Face's own (`do_lower_case`; `strip_accents`
    None follows it, as in transformers; `tokenize_chinese_chars` must be true, the only
    way this tokenizer splits). Settings that contradict the vocabulary (cased, but no
    piece has an upper-case letter, so every capitalised word would be `[UNK]`) are
    refused, naming the file.

    The result holds the normalisation too (`recorded_settings`): the project's files
    without the record are the previous release's (`"nfkc_casefold"`); Hugging Face's
    settings are BERT's (`"bert"`).

    Example:
        ```python
        import json, os, pathlib
        from electra_tf.data.tokenizer import read_settings

        os.makedirs("hf_model", exist_ok=True)
        pathlib.Path("hf_model/vocab.txt").write_text("\\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Paris"]))
        pathlib.Path("hf_model/tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
        read_settings("hf_model/vocab.txt")["lower_case"]  # False, and strip_accents False, normalization "bert"
        ```
    """
    path = settings_path(vocab_file)
    if not tf.io.gfile.exists(path):
        return None
    name = os.path.basename(path)
    with tf.io.gfile.GFile(path) as f:
        try:
            values = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(f"{path}: expected a JSON object; found {values!r}.")
    if name == HF_SETTINGS_FILE and not set(values) <= set(DEFAULT_SETTINGS):
        settings = _hugging_face_settings(values, path)
    else:
        settings = recorded_settings(values, path)
    if not settings["lower_case"]:
        check_cased_vocabulary(vocab_file, path)
    return settings


def _hugging_face_settings(values, path):
    """`lower_case` and `strip_accents` from Hugging Face's `tokenizer_config.json` (BERT / ELECTRA tokenizers)."""
    lower_case = values.get("do_lower_case", True)  # BertTokenizer's and ElectraTokenizer's default
    strip_accents = values.get("strip_accents")
    if not isinstance(lower_case, bool) or not isinstance(strip_accents, (bool, type(None))):
        raise ValueError(f"{path}: expected boolean do_lower_case and strip_accents (or null); found "
                         f"do_lower_case={lower_case!r}, strip_accents={strip_accents!r}.")
    if values.get("tokenize_chinese_chars", True) is not True:
        raise ValueError(f"{path}: tokenize_chinese_chars={values['tokenize_chinese_chars']!r}; electra_tf's "
                         "tokenizer always splits CJK characters, so the ids would differ.")
    return new_settings(lower_case, strip_accents)


def check_cased_vocabulary(vocab_file, source):
    """Refuses cased settings (read from `source`) over a vocabulary without one upper-case piece (special tokens aside)."""
    if not tf.io.gfile.exists(vocab_file):
        return  # `load_vocab` names a missing vocabulary
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    pieces = (t for t in text.split("\n") if t and not (t.startswith("[") and t.endswith("]")))
    if not any(piece != piece.lower() for piece in pieces):
        raise ValueError(
            f"{source}: lower_case false (a cased vocabulary), but {vocab_file} has no upper-case piece: "
            "every capitalised word would become [UNK]. Set lower_case (do_lower_case) true, or use the cased "
            "vocabulary."
        )


def settings_path(vocab_file):
    """The settings file read for `vocab_file` (`SETTINGS_FILE`, else `HF_SETTINGS_FILE`), or where one is written."""
    folder = os.path.dirname(os.fspath(vocab_file))
    for name in (SETTINGS_FILE, HF_SETTINGS_FILE):
        if tf.io.gfile.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return os.path.join(folder, SETTINGS_FILE)


def write_settings(directory, settings):
    """Writes `electra_tokenizer.json` into `directory` (beside its `vocab.txt`), its normalisation
    recorded (`settings` without one are a new vocabulary's: `"bert"`)."""
    settings = dict(settings)
    if "normalization" not in settings:
        settings.update(new_settings(settings.get("lower_case", True), settings.get("strip_accents")))
    atomic.write_json(os.path.join(directory, SETTINGS_FILE), settings, sort_keys=True)


def warn_unless_bert(settings, vocab_file):
    """Logs a warning when `settings` record a normalisation Hugging Face's BERT tokenizer does not implement
    (the previous release's): text with ligatures, `ß`, `İ` and the like gets other ids there."""
    if settings["normalization"] != BERT:
        logging.warning("%s's tokenizer settings record the previous release's normalisation (%r: NFKC case "
                        "folding); transformers' tokenizer normalises as BERT does, so text with ligatures, 'ß', "
                        "'İ' or other compatibility characters gets other ids there than the model was trained "
                        "with.", vocab_file, settings["normalization"])


def write_hugging_face_settings(directory, settings):
    """Writes Hugging Face's `tokenizer_config.json` for `settings` (a `--to hf` folder), so transformers'
    `AutoTokenizer` normalises as the model was trained; an existing one is left alone."""
    path = os.path.join(directory, HF_SETTINGS_FILE)
    if tf.io.gfile.exists(path):
        return
    atomic.write_json(path, {"tokenizer_class": "ElectraTokenizer", "do_lower_case": settings["lower_case"],
                             "strip_accents": settings["strip_accents"], "tokenize_chinese_chars": True},
                      sort_keys=True)


def vocab_digest(vocab_file):
    """SHA-256 of a vocabulary's tokens, one a line: which vocabulary records were built with.

    Over the tokens `load_vocab` reads, not the file's bytes: a copy with Windows line ends or
    a UTF-8 byte-order mark is the same vocabulary. For a file as `build_vocab` writes it (each
    token on a line ending in `\\n`) it is the SHA-256 of the file's bytes.

    Example:
        ```python
        import pathlib

        from electra_tf.data.tokenizer import vocab_digest

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"]
        pathlib.Path("vocab.txt").write_text("".join(t + "\\n" for t in tokens))
        pathlib.Path("copy.txt").write_bytes(b"\\xef\\xbb\\xbf" + "".join(t + "\\r\\n" for t in tokens).encode())
        assert vocab_digest("vocab.txt") == vocab_digest("copy.txt")
        ```
    """
    import hashlib

    text = "".join(token + "\n" for token in load_vocab(vocab_file))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def built_with(vocab_file, digest):
    """Whether `digest` (a build's `vocab_sha256`) is that of `vocab_file`: of its tokens, or of its bytes
    (a build of an earlier version, for a file that `vocab_digest` reads otherwise)."""
    import hashlib

    if digest == vocab_digest(vocab_file):
        return True
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        return digest == hashlib.sha256(f.read()).hexdigest()


def copy_vocab(vocab_file, destination):
    """Copies `vocab_file` to the path `destination` and its tokenizer settings beside it (nothing when they are one file)."""
    if atomic.same_file(vocab_file, destination):
        return
    with tf.io.gfile.GFile(vocab_file, "rb") as f:
        atomic.write_bytes(destination, f.read())
    write_settings(os.path.dirname(destination), read_settings(vocab_file) or DEFAULT_SETTINGS)


def load_vocab(vocab_file):
    """Reads a `vocab.txt` (one token per line) and checks its special tokens.

    Args:
        vocab_file: str. Path of the vocabulary.

    Returns:
        list of str, the tokens in id order.

    Raises:
        FileNotFoundError / ValueError naming the file and what is wrong.
    """
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"Vocabulary file not found: `vocab_file={vocab_file}`")
    with tf.io.gfile.GFile(vocab_file, "rb") as f:  # one read: gfile's per-line reads cost 0.2 s here
        raw = f.read()
    text = decode_utf8(raw, vocab_file).removeprefix("\ufeff")  # a UTF-8 byte-order mark (Windows editors)
    tokens = [line.rstrip("\r") for line in text.split("\n")]
    while tokens and not tokens[-1]:
        tokens.pop()
    missing = [t for t in SPECIAL_TOKENS if t not in tokens]
    if missing:
        raise ValueError(
            f"Vocabulary {vocab_file} lacks the special token(s) {missing}; "
            f"ELECTRA needs all of {list(SPECIAL_TOKENS)}."
        )
    if tokens[0] != "[PAD]":
        raise ValueError(
            f"Vocabulary {vocab_file} must have [PAD] at id 0 (padding is id 0 "
            f"in the records); found {tokens[0]!r} at line 1."
        )
    duplicates = len(tokens) - len(set(tokens))
    if duplicates:
        raise ValueError(f"Vocabulary {vocab_file} has {duplicates} duplicate tokens.")
    return tokens


class WordPieceTokenizer(tf.Module):
    """BERT WordPiece tokenization as TensorFlow ops (lower-casing, accents, punctuation).

    The ids are those of the official BERT / ELECTRA `tokenization.py` (and so of Hugging
    Face's `BertTokenizer`): control characters (Cc, Cf) deleted, `str.lower()`, NFD with
    combining marks dropped, punctuation and CJK ideographs cut out, WordPiece, a word of
    more than 100 characters one `[UNK]` (`electra_tf.data.bert_normalizer` has the
    normalisation's details). One exception: a capital sigma at the end of a word is
    lower-cased to `σ`, where `str.lower()` gives `ς` (Hugging Face's fast tokenizer gives
    `σ` too). A vocabulary whose settings record the previous release's normalisation
    (`"nfkc_casefold"`, or no record) is tokenized as that release did (`LEGACY`).

    Args:
        vocab_file: str. A `vocab.txt` with [PAD] at id 0 and [UNK], [CLS],
            [SEP], [MASK] somewhere in it.
        lower_case: optional bool. Lower-case the text (uncased vocabularies).
            Default: the `electra_tokenizer.json` (or `tokenizer_config.json`)
            beside `vocab_file`, else True.
        strip_accents: optional bool. Remove accents (NFD, then drop
            combining marks). Default: the saved setting, else `lower_case`.
        normalization: optional str, one of `NORMALIZATIONS`. Default: the
            saved one, else `"bert"`.
            Given values that differ from the saved ones are an error: a
            vocabulary is tokenized the way it was built.

    Example:
        ```python
        import pathlib

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")

        from electra_tf.data.tokenizer import WordPieceTokenizer

        tokenizer = WordPieceTokenizer("vocab.txt")
        ids = tokenizer.tokenize(["Hello world!"])  # tf.RaggedTensor, int32: [[5, 6, 7]]
        inputs = tokenizer.pack(["Hello"], ["world"], seq_length=16)
        inputs["token_ids"].shape  # (1, 16)
        ```
    """

    def __init__(self, vocab_file, lower_case=None, strip_accents=None, normalization=None, name=None,
                 normalization_version=None):
        super().__init__(name=name)
        self.vocab_file = os.fspath(vocab_file)
        saved = read_settings(self.vocab_file)
        given = {k: v for k, v in (("lower_case", lower_case), ("strip_accents", strip_accents),
                                   ("normalization", normalization),
                                   ("normalization_version", normalization_version)) if v is not None}
        if saved is not None and any(saved[k] != v for k, v in given.items()):
            raise ValueError(
                f"Tokenizer settings {given} differ from those saved with the vocabulary "
                f"({settings_path(self.vocab_file)}: {saved}); "
                "a vocabulary must be used the way it was built."
            )
        if saved is None:
            if normalization is not None and normalization not in NORMALIZATIONS:
                raise ValueError(f"`normalization` must be one of {sorted(NORMALIZATIONS)}. "
                                 f"Received: `normalization={normalization!r}`")
            saved = new_settings(True if lower_case is None else lower_case, strip_accents, normalization or BERT)
        self.lower_case, self.strip_accents = saved["lower_case"], saved["strip_accents"]
        self.normalization, self.normalization_version = saved["normalization"], saved["normalization_version"]
        self.vocab = tuple(load_vocab(self.vocab_file))  # a list would be wrapped and tracked item by item (0.2 s)
        self.vocab_size = len(self.vocab)
        index = {t: i for i, t in enumerate(self.vocab)}
        self.pad_id = index["[PAD]"]
        self.unk_id = index["[UNK]"]
        self.cls_id = index["[CLS]"]
        self.sep_id = index["[SEP]"]
        self.mask_id = index["[MASK]"]
        if self.normalization == LEGACY:  # exactly the previous release's tokenizer
            self._tokenizer = tf_text.FastBertTokenizer(
                self.vocab,
                suffix_indicator="##",
                unknown_token="[UNK]",
                token_out_type=tf.int32,
                max_bytes_per_word=_LEGACY_MAX_BYTES_PER_WORD,
                lower_case_nfd_strip_accents=self.lower_case and self.strip_accents,
            )
        else:
            # Every word of up to 100 characters (4 bytes each at most) reaches WordPiece; a longer
            # word's pieces become one [UNK] after it (`_limit_word_length`).
            self._tokenizer = tf_text.FastBertTokenizer(
                self.vocab,
                suffix_indicator="##",
                unknown_token="[UNK]",
                token_out_type=tf.int32,
                max_bytes_per_word=4 * MAX_CHARS_PER_WORD,
                fast_bert_normalizer_model_buffer=bert_normalizer.normalizer_tensor(self.lower_case,
                                                                                    self.strip_accents),
            )
            # Characters each piece adds to its word (a `##` piece's after the mark), and which pieces begin one.
            self._piece_chars_np = np.array([len(t) - 2 if t.startswith("##") else len(t) for t in self.vocab],
                                            np.int32)
            self._begins_word_np = ~self.continues_word()
            self._piece_chars = tf.constant(self._piece_chars_np)
            self._begins_word = tf.constant(self._begins_word_np)
        self._id_to_token = tf.constant(self.vocab)
        self._line_markers = self._line_marker = None  # see `tokenize_lines`

    @property
    def settings(self):
        """dict: `lower_case`, `strip_accents` and the normalisation record, as `electra_tokenizer.json` holds them."""
        return {"lower_case": self.lower_case, "strip_accents": self.strip_accents,
                "normalization": self.normalization, "normalization_version": self.normalization_version}

    @property
    def special_ids(self):
        """dict: the ids the model needs (`pad_id`, `cls_id`, `sep_id`, `mask_id`, `unk_id`)."""
        return dict(
            pad_id=self.pad_id,
            unk_id=self.unk_id,
            cls_id=self.cls_id,
            sep_id=self.sep_id,
            mask_id=self.mask_id,
        )

    def tokenize(self, texts):
        """Texts to word-piece ids.

        Args:
            texts: string tensor of shape `(batch,)`.

        Returns:
            int32 `tf.RaggedTensor` of shape `(batch, None)`.
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        if self.normalization == LEGACY:
            return self._tokenizer.tokenize(self._legacy_prenormalize(texts))
        ids = self._tokenizer.tokenize(texts)
        return _on_inner_rows(ids, lambda inner: self._limit_word_length(inner)[0])

    def tokenize_with_offsets(self, texts):
        """Texts to word-piece ids and each piece's UTF-8 byte offsets in its text.

        Args:
            texts: string tensor of shape `(batch,)`.

        Returns:
            `(ids, starts, ends)`: `tf.RaggedTensor`s `(batch, None)`, int32 ids
            and int64 byte offsets into the input strings (end exclusive), for
            every setting: a piece of a character the normalisation replaces
            (`Ä` to `a`, `ß`) spans the whole character. (With the previous release's
            normalisation, `"nfkc_casefold"`, a vocabulary that strips accents without
            lower-casing has no offsets and raises, as it did there.)
        """
        texts = tf.convert_to_tensor(texts, tf.string)
        if self.normalization == LEGACY:
            if self.lower_case != self.strip_accents and not self.lower_case:
                raise NotImplementedError("Offsets need a vocabulary that lower-cases when it strips accents.")
            return self._tokenizer.tokenize_with_offsets(self._legacy_prenormalize(texts))
        ids, starts, ends = self._tokenizer.tokenize_with_offsets(texts)
        if not isinstance(ids, tf.RaggedTensor) or isinstance(ids.values, tf.RaggedTensor):
            raise ValueError(f"tokenize_with_offsets takes a batch of texts, shape (batch,); got {texts.shape}.")
        values, row_splits, begin, end = self._limit_word_length(ids, starts.values, ends.values)
        return tuple(tf.RaggedTensor.from_row_splits(v, row_splits, validate=False) for v in (values, begin, end))

    def _legacy_prenormalize(self, texts):
        """The previous release's text preparation for a vocabulary that lower-cases or strips accents alone
        (its `FastBertTokenizer` did both or neither)."""
        if self.lower_case == self.strip_accents:
            return texts
        if self.lower_case:
            return tf.strings.lower(texts, encoding="utf-8")
        return tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFD"), r"\p{Mn}", "")

    def _limit_word_length(self, ids, starts=None, ends=None):
        """A ragged row of ids (rank 2) with each word of more than `MAX_CHARS_PER_WORD` characters one [UNK].

        BERT counts a word's characters (code points) after normalisation; the pieces of a word
        WordPiece could cut spell it exactly, so their lengths add up to the word's. Returns the
        new flat ids and row splits, and the first piece's start and the word's end (offsets)."""
        values, row_splits = ids.values, ids.row_splits
        begins = tf.gather(self._begins_word, values)
        word = tf.cumsum(tf.cast(begins, tf.int32)) - 1  # each piece's word, counted over the batch
        chars = tf.math.unsorted_segment_sum(tf.gather(self._piece_chars, values), word, tf.size(values))
        too_long = tf.gather(chars, word) > MAX_CHARS_PER_WORD
        keep = begins | ~too_long  # a word too long keeps its first piece, as [UNK]
        kept = tf.concat([tf.zeros([1], row_splits.dtype), tf.cumsum(tf.cast(keep, row_splits.dtype))], 0)
        new_values = tf.boolean_mask(tf.where(too_long, tf.constant(self.unk_id, values.dtype), values), keep)
        new_splits = tf.gather(kept, row_splits)
        if starts is None:
            return tf.RaggedTensor.from_row_splits(new_values, new_splits, validate=False), None
        word_end = tf.math.unsorted_segment_max(ends, word, tf.size(values))
        ends = tf.where(too_long, tf.gather(word_end, word), ends)
        return new_values, new_splits, tf.boolean_mask(starts, keep), tf.boolean_mask(ends, keep)

    def tokenize_lines(self, text):
        """The word-piece ids of every line of a UTF-8 text, in one tokenizer call.

        For bulk text (`electra_tf.pipelines.build_pretraining_data`): the same ids as
        `tokenize(text.split(b"\\n"))`, about 10 % faster on one-sentence-per-line
        text because the op sees one long string instead of many short ones.
        Each newline is swapped for a punctuation character of the vocabulary
        that `text` does not contain; BERT tokenization always cuts punctuation
        out as a token of its own, so those tokens mark the line ends. Exactly
        one mark must come back per newline; if not, or no such character is
        free, it falls back to tokenizing the lines as a batch.

        Args:
            text: bytes. Valid UTF-8, lines separated by `b"\\n"`.

        Returns:
            `(ids, row_splits)`: int32 array of all ids, int64 array of
            `len(text.split(b"\\n")) + 1` offsets into it.

        Example:
            >>> import pathlib
            >>> from electra_tf.data.tokenizer import WordPieceTokenizer
            >>> tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "bye", "."]
            >>> _ = pathlib.Path("vocab.txt").write_text("\\n".join(tokens))
            >>> tokenizer = WordPieceTokenizer("vocab.txt")
            >>> ids, splits = tokenizer.tokenize_lines(b"Hello world!\\n\\nBye.")
            >>> ids.tolist(), splits.tolist()
            ([5, 6, 7, 8, 9], [0, 3, 3, 5])
        """
        num_newlines = text.count(b"\n")
        if num_newlines and self._markers():
            # The mark that worked last is tried without searching the text for it: a text that
            # holds it gives too many marks, and then a free one is searched for.
            result = self._tokenize_marked(text, num_newlines, self._line_marker)
            if result is None:
                free = next((m for m in self._markers() if m[0] not in text), None)
                result = free and self._tokenize_marked(text, num_newlines, free)
                if result is not None:
                    self._line_marker = free
            if result is not None:
                return result
        return self._tokenize_numpy(text.split(b"\n"))

    def _tokenize_numpy(self, texts):
        """`tokenize(texts)` as numpy arrays (flat ids, row splits), for bulk text: the word limit's
        pass runs only when a word is too long, which numpy checks in a fifth of the pass's time."""
        if self.normalization == LEGACY:
            ragged = self.tokenize(texts)
        else:
            ragged = self._tokenizer.tokenize(tf.convert_to_tensor(texts, tf.string))
            values = ragged.flat_values.numpy()
            begins = np.flatnonzero(self._begins_word_np[values])  # the first piece begins a word
            if begins.size and (np.add.reduceat(self._piece_chars_np[values], begins) > MAX_CHARS_PER_WORD).any():
                ragged = self._limit_word_length(ragged)[0]
        return ragged.flat_values.numpy(), ragged.row_splits.numpy()

    def _tokenize_marked(self, text, num_newlines, marker):
        """`tokenize_lines` with newlines swapped for `marker`; None unless exactly one mark per newline."""
        marker_bytes, marker_id = marker
        ids, _ = self._tokenize_numpy([text.replace(b"\n", marker_bytes)])
        marks = np.flatnonzero(ids == marker_id)
        if len(marks) != num_newlines:
            return None
        row_splits = np.empty(num_newlines + 2, np.int64)
        row_splits[0], row_splits[-1] = 0, len(ids) - num_newlines
        row_splits[1:-1] = marks - np.arange(num_newlines)
        return np.delete(ids, marks), row_splits

    def _markers(self):
        """Line-end marks for `tokenize_lines`: (UTF-8 bytes, id) of single-character
        punctuation tokens that tokenize to themselves; rare (non-ASCII) ones first."""
        if self._line_markers is None:
            candidates = [(t, i) for i, t in enumerate(self.vocab) if len(t) == 1 and is_bert_punctuation(t)]
            candidates = sorted(candidates, key=lambda c: c[0].isascii())[:16]
            pieces = self.tokenize([c for c, _ in candidates]).to_list() if candidates else []
            self._line_markers = tuple(
                (c.encode("utf-8"), i) for (c, i), got in zip(candidates, pieces) if got == [i]
            )
            self._line_marker = self._line_markers[0] if self._line_markers else None
        return self._line_markers

    def continues_word(self):
        """numpy bool array, one per id: True for a `##` piece (it continues the word before it).

        A word is a first piece and the `##` pieces after it (an `[UNK]` is a whole word), as
        the BERT basic tokenizer cuts words: at whitespace and around punctuation.
        """
        return np.array([token.startswith("##") for token in self.vocab], bool)

    def detokenize(self, ids):
        """Ids (dense or ragged, any rank) to word-piece strings, for inspection."""
        return tf.gather(self._id_to_token, ids)

    def pack(self, texts_a, texts_b=None, seq_length=128, pad_multiple=None):
        """Builds model inputs `[CLS] a [SEP] (b [SEP])`, truncated and zero-padded.

        Pairs are truncated longest-first, one word piece at a time, as BERT's
        `_truncate_seq_pair` does.

        Args:
            texts_a: string tensor `(batch,)`.
            texts_b: optional string tensor `(batch,)` for sentence pairs.
            seq_length: int. Longest output, including special tokens.
            pad_multiple: int or None. None: every row padded to `seq_length`.
                An int: rows padded to the batch's longest, rounded up to a
                multiple of it, never past `seq_length` (`padded_length`), so a
                short request is not computed at full length.

        Returns:
            dict of int32 tensors `(batch, length)`: `token_ids`,
            `segment_ids`, `padding_mask`.
        """
        if texts_b is None:
            segments = tf_text.WaterfallTrimmer(seq_length - 2).trim([self.tokenize(texts_a)])
        else:
            segments = _truncate_longest_first(
                self.tokenize(texts_a), self.tokenize(texts_b), seq_length - 3
            )
        ids, segment_ids = tf_text.combine_segments(
            segments, start_of_sequence_id=self.cls_id, end_of_segment_id=self.sep_id
        )
        if pad_multiple is not None:
            return pad_ragged({"token_ids": ids, "segment_ids": segment_ids}, seq_length, pad_multiple,
                              pad_id=self.pad_id)
        token_ids, padding_mask = tf_text.pad_model_inputs(ids, seq_length, pad_value=self.pad_id)
        segment_ids, _ = tf_text.pad_model_inputs(segment_ids, seq_length, pad_value=0)
        return {
            "token_ids": tf.cast(token_ids, tf.int32),
            "segment_ids": tf.cast(segment_ids, tf.int32),
            "padding_mask": tf.cast(padding_mask, tf.int32),
        }


SERVING_PAD_MULTIPLE = 8  # served graphs pad a batch to its longest row rounded up to this (`padded_length`)


def padded_length(longest, seq_length, multiple=SERVING_PAD_MULTIPLE):
    """The length a batch whose longest row has `longest` tokens is padded to: `longest` rounded up to a
    multiple of `multiple` (at least one multiple), never past `seq_length`.

    A served model computes on this length instead of `seq_length`; the attention mask makes
    the padding irrelevant to the outputs, and the rounding bounds the shapes a server
    sees to `ceil(seq_length / multiple)`.

    Args:
        longest: int scalar (Python or tensor).
        seq_length: int.
        multiple: int >= 1.

    Returns:
        int32 scalar tensor.

    Example:
        >>> from electra_tf.data.tokenizer import padded_length
        >>> [int(padded_length(n, 128)) for n in (0, 1, 8, 9, 26, 121, 128)]
        [8, 8, 8, 16, 32, 128, 128]
    """
    longest = tf.maximum(tf.cast(longest, tf.int32), 1)
    return tf.minimum((longest + multiple - 1) // multiple * multiple, seq_length)


def pad_ragged(inputs, seq_length, multiple=SERVING_PAD_MULTIPLE, pad_id=0):
    """Ragged `token_ids` (and same-shaped id tensors) padded to `padded_length` of their longest row.

    Args:
        inputs: dict of int ragged tensors `(batch, None)`, rows no longer than `seq_length`;
            `token_ids` among them (padded with `pad_id`, the others with 0).
        seq_length: int.
        multiple: int.
        pad_id: int.

    Returns:
        dict of int32 tensors `(batch, length)`: the inputs and `padding_mask`.
    """
    ids = inputs["token_ids"]
    longest = tf.maximum(tf.reduce_max(ids.row_lengths()), 0)  # an empty batch's max is int64's lowest
    length = padded_length(longest, seq_length, multiple)
    shape = tf.stack([tf.cast(ids.nrows(), tf.int32), length])
    inputs = dict(inputs, padding_mask=tf.ones_like(ids))
    return {k: tf.cast(v, tf.int32).to_tensor(pad_id if k == "token_ids" else 0, shape=shape)
            for k, v in inputs.items()}


def _on_inner_rows(ragged, function):
    """`function` applied to the innermost ragged rows of `ragged` (their values are flat)."""
    if isinstance(ragged.values, tf.RaggedTensor):
        return ragged.with_values(_on_inner_rows(ragged.values, function))
    return function(ragged)


def is_bert_punctuation(char):
    """BERT's punctuation rule: ASCII symbols and Unicode category P*. The tokenizer always cuts
    these out as tokens of their own (so they are never a `##` piece)."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _truncate_longest_first(a, b, budget):
    """BERT pair truncation of two ragged segments to `budget` pieces together (`pair_lengths`)."""
    keep_a, keep_b = pair_lengths(a.row_lengths(), b.row_lengths(), budget)
    return [_head(a, keep_a), _head(b, keep_b)]


def pair_lengths(len_a, len_b, budget):
    """Pieces kept of each segment of a pair by BERT's longest-first truncation to `budget` pieces.

    Closed form of BERT's `_truncate_seq_pair` loop, which pops from `b` on ties:
    a segment no longer than half the budget is kept whole, otherwise the two
    end at `ceil(budget / 2)` for `a` and `floor(budget / 2)` for `b`.

    Args:
        len_a: int tensor `(batch,)`. Pieces of the first segments.
        len_b: int tensor `(batch,)`. Pieces of the second segments.
        budget: int. Pieces the two may keep together.

    Returns:
        `(keep_a, keep_b)`, int32 tensors `(batch,)`.

    Example:
        >>> from electra_tf.data.tokenizer import pair_lengths
        >>> [k.numpy().tolist() for k in pair_lengths([3, 10, 2], [4, 10, 9], 8)]
        [[3, 4, 2], [4, 4, 6]]
    """
    len_a = tf.cast(len_a, tf.int32)
    len_b = tf.cast(len_b, tf.int32)
    half_hi = (budget + 1) // 2
    half_lo = budget // 2
    keep_a = tf.where(
        len_a + len_b <= budget,
        len_a,
        tf.where(len_a <= half_lo, len_a, tf.maximum(budget - len_b, half_hi)),
    )
    keep_b = tf.minimum(len_b, budget - keep_a)
    return keep_a, keep_b


def _head(ragged, lengths):
    """First `lengths[i]` items of each row of a ragged tensor."""
    mask = tf.ragged.range(tf.cast(ragged.row_lengths(), tf.int32)) < tf.expand_dims(lengths, 1)
    return tf.ragged.boolean_mask(ragged, mask)
