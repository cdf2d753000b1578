r"""Apache Beam pipeline: text -> packed ELECTRA pre-training TFRecords.

    python -m electra_tf.pipelines.build_pretraining_data \
        --input 'text:data/corpus/*.txt.gz' \
        --vocab_file data/vocab/bert_uncased_vocab.txt \
        --output_dir /tmp/pretrain --seq_length 128 --num_shards 8 --seed 0

Stages: list files (`sources.expand_inputs`) -> reshuffle the file names (so
files are read in parallel; a single huge file is read by one worker) -> read
documents in batches of about 1 MB of text -> tokenize each batch with the one
`WordPieceTokenizer` (one TF call) and pack its documents (`packing.pack`,
compiled; RNG seeded from (seed, document key)) -> key each example by a hash
of (document key, index in document) -> shard = key mod `num_shards` ->
group compact example rows (and each batch's counts) by shard -> sort each
shard by key -> encode the `tf.train.Example`s (`packing.encode_examples`,
compiled) -> frame them as a TFRecord file in one piece
(`tfrecord.frame_records`) -> write `pretrain_data.tfrecord-{i:05d}-of-{N:05d}`
and the shard's counts beside it -> sum the counts into `stats.json`.

Output, shards and `stats.json`, is a function of (inputs, vocab,
seq_length, num_shards, seed) only: byte-identical across runs, runners and
worker counts (the run time is printed, not saved). Each shard is
written under a hidden temporary name and renamed; `stats.json` and then
`_SUCCESS` are written last, so a directory without `_SUCCESS` is incomplete
and a re-run after a crash overwrites it with identical shards. A complete
earlier build (`stats.json` + `_SUCCESS`) is never touched without
`--overwrite`, and with it is replaced only after the new build succeeded
(it is built in a hidden staging folder first). `stats.json` records
`truncated_token_share` and `empty_shards`; a build that truncates most of
its tokens or leaves a shard empty says so in a warning and in
`stats.json["warnings"]`. Any Beam
option passes through (`--runner DataflowRunner --project ...`); the default
is the DirectRunner in multi-processing mode on all cores, and
`--runner DaskRunner --dask_client_address HOST:PORT` runs on a Dask cluster
(`runners`). `--vocab` and
`--max_seq_length` are the deprecated spellings of `--vocab_file` and
`--seq_length`. Installed as `electra-build-data`.
"""

if __name__ == "__main__":  # a program: quiet TensorFlow's start-up before it is imported (electra_tf.cli)
    from electra_tf import cli as _cli

    _cli.prepare_tensorflow()


import functools
import hashlib
import json
import os
import re
import time

from absl import app
from absl import flags
from absl import logging
import apache_beam as beam
import numpy as np
import tensorflow as tf

from electra_tf import atomic
from electra_tf import cli
from electra_tf.data import tokenizer as tokenizer_lib
from electra_tf.data.records import SHARD_PATTERN, SHARD_PREFIX, STATS_FILE, SUCCESS_FILE
from electra_tf.pipelines import packing
from electra_tf.pipelines import runners
from electra_tf.pipelines import sources
from electra_tf.pipelines import text_io
from electra_tf.pipelines import tfrecord

_STATS_TOKEN = "shard"  # each shard's counts, summed by the build: .partial-shard-stats-<shard>.json
_OLDER_TEMP_PREFIXES = (".tmp-", ".stats.partial-")  # older builds' temporary names: still removed, never written
_TMP_PREFIXES = (atomic.PARTIAL_PREFIX, *_OLDER_TEMP_PREFIXES)  # temporary files and staging folders
_STAGING = "build"  # the name of a staging folder (`atomic.partial_path`): .partial-<token>-build


def shard_paths(output_dir, num_shards):
    """The final shard paths of a build, in shard order."""
    return [
        os.path.join(output_dir, SHARD_PATTERN.format(index=i, num_shards=num_shards))
        for i in range(num_shards)
    ]


def _partial_stats_path(output_dir, shard):
    return atomic.partial_path(os.path.join(output_dir, f"stats-{shard:05d}.json"), _STATS_TOKEN)


def _sum_stats(dicts):
    """Adds nested dicts of numbers key-wise."""
    total = {}
    for d in dicts:
        for key, value in d.items():
            if isinstance(value, dict):
                total[key] = _sum_stats([total.get(key, {}), value])
            else:
                total[key] = total.get(key, 0) + value
    return total


def row_dtype(max_seq_length, vocab_size):
    """The compact record of one example between packing and writing (what the shuffle moves).

    `key` orders examples and picks their shard; `document` (a hash of the
    document key) and `index` (the example's place in its document) break ties,
    so the order never depends on scheduling.
    """
    ids = np.uint16 if vocab_size <= 1 << 16 else np.uint32
    return np.dtype([("key", "<u8"), ("document", "<u8"), ("index", "<u4"), ("num_a", "<u2"),
                     ("num_b", "<u2"), ("input_ids", ids, (max_seq_length,))])


def _mix64(x):
    """splitmix64's finalizer: a bijection of uint64 that spreads neighbouring values."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def example_rows(packed, document_keys, vocab_size):
    """`row_dtype` rows of a batch's packed examples, keyed by (document key, index in document).

    Args:
        packed: `packing.Packed`.
        document_keys: list of str, the key of each document of the batch.
        vocab_size: int. Picks the id width.
    """
    hashes = np.array([int.from_bytes(hashlib.sha1(k.encode("utf-8")).digest()[:8], "little")
                       for k in document_keys], np.uint64)
    document = hashes[packed.document]
    index = (np.arange(len(packed.document)) - np.searchsorted(packed.document, packed.document)).astype(np.uint64)
    rows = np.empty(len(document), row_dtype(packed.input_ids.shape[1], vocab_size))
    with np.errstate(over="ignore"):
        rows["key"] = _mix64(document + (index + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15))
    rows["document"], rows["index"] = document, index
    rows["num_a"], rows["num_b"], rows["input_ids"] = packed.num_a, packed.num_b, packed.input_ids
    return rows


def _no_rows(num_shards):
    """`(shard, b"")` for every shard: no example, but the shard is grouped (and written) even if empty."""
    return [(shard, b"") for shard in range(num_shards)]


def _read_batches(input_file, batch_bytes):
    """The documents of one file as `text_io.DocumentBatch`es (one tokenizer call each)."""
    logging.info("Reading %s", input_file.path)
    count = 0
    for batch in sources.read_batches(input_file, batch_bytes):
        count += len(batch.keys)
        yield batch
    logging.info("Read %s: %d documents", input_file.path, count)


@functools.lru_cache(maxsize=4)
def _tokenizer(vocab_file, settings):
    """One `WordPieceTokenizer` per process and vocabulary: Beam's DaskRunner calls `setup` once per bundle."""
    return tokenizer_lib.WordPieceTokenizer(vocab_file, **dict(settings))


class TokenizeAndPackFn(beam.DoFn):
    """Tokenizes a batch of documents in one TF call, packs them, encodes the examples.

    Args:
        vocab_file: str. The vocabulary.
        lower_case: bool or None. Passed to `WordPieceTokenizer` (None: the vocabulary's setting).
        max_seq_length: int. Example length.
        num_shards: int. Number of output shards.
        seed: int. Build seed (with the document key it seeds the packing RNG).

    Outputs: `(shard, blob)`, one per shard present in the batch, the blob
    holding the shard's `example_rows` as bytes, and `(shard, stats)`: the
    batch's dict of counts, keyed to its first shard (0 when it packed no
    example). One output, no tagged ones: Beam's DaskRunner merges tagged
    outputs into the main one. The counts travel with the rows to
    `WriteShardFn`, which sums its shard's.
    """

    def __init__(self, vocab_file, lower_case, max_seq_length, num_shards, seed):
        self.vocab_file = vocab_file
        # The resolved settings (dict) travel to the workers; a bool is the caller's choice.
        self.lower_case = lower_case if isinstance(lower_case, dict) else {"lower_case": lower_case}
        self.max_seq_length = max_seq_length
        self.num_shards = num_shards
        self.seed = seed
        self._tokenizer = None

    def setup(self):
        runners.undo_worker_malloc_trim()
        self._tokenizer = _tokenizer(self.vocab_file, tuple(sorted(self.lower_case.items())))
        self._documents = self._examples = 0

    def process(self, batch):
        flat, line_splits = self._tokenizer.tokenize_lines(batch.text)
        sentence_lines = np.flatnonzero(~batch.blank)
        # Blank lines hold no word pieces, so the sentences' rows are contiguous.
        splits = np.append(line_splits[sentence_lines], line_splits[-1])
        document_splits = np.concatenate([[0], np.cumsum(~batch.blank)])[batch.document_lines]
        packed = packing.pack(
            flat, splits, document_splits, [packing.document_seed(self.seed, key) for key in batch.keys],
            self.max_seq_length, self._tokenizer.cls_id, self._tokenizer.sep_id,
        )
        stats = self._stats(batch, flat, splits, document_splits, packed)
        self._documents += len(batch.keys)
        self._examples += len(packed.document)
        logging.log_every_n_seconds(
            logging.INFO, "TokenizeAndPack: %d documents, %d examples so far (this worker)", 30,
            self._documents, self._examples,
        )
        rows = example_rows(packed, batch.keys, self._tokenizer.vocab_size)
        shards = rows["key"] % np.uint64(self.num_shards)
        order = np.argsort(shards, kind="stable")
        rows, shards = rows[order], shards[order]
        starts = np.flatnonzero(np.diff(shards, prepend=shards[:1] + 1))  # where each shard's run begins
        yield (int(shards[0]) if len(rows) else 0), stats
        for start, stop in zip(starts, [*starts[1:], len(rows)]):
            yield int(shards[start]), rows[start:stop].tobytes()  # one compact value per shard and batch

    def _stats(self, batch, flat, splits, document_splits, packed):
        lengths = np.diff(splits)
        counts = dict(
            documents=len(batch.keys),
            sentences=int(np.count_nonzero(lengths)),
            tokens=len(flat),
            examples=len(packed.document),
            bytes=int(batch.num_bytes.sum()),
            invalid_utf8=int(batch.invalid_utf8.sum()),
        )
        return dict(
            counts,
            per_source={batch.source: counts},
            unknown_tokens=int(np.count_nonzero(flat == self._tokenizer.unk_id)),
            empty_sentences=int(np.count_nonzero(lengths == 0)),
            single_segment_drawn=int(packed.single_segment.sum()),
            single_segment=int(np.count_nonzero(packed.num_b == 0)),
            short_target=int(packed.short_target.sum()),
            truncated_tokens=int(packed.truncated.sum()),
            example_tokens=int(packing.num_tokens(packed.num_a, packed.num_b).sum()),
        )


class WriteShardFn(beam.DoFn):
    """Sorts one shard's examples by key, encodes them and writes them atomically (temp file + rename).

    Input: `(shard, values)`, the values being `TokenizeAndPackFn`'s row blobs
    and count dicts for that shard. Writes, beside the shard, a hidden JSON of
    the sum of its count dicts plus `empty_shards` and `written` (its examples;
    the build sums the shards' files and checks that the written examples add
    up to the packed ones). No output: a global combine would cost the
    DaskRunner a second all-to-all shuffle of tasks. An example delivered twice
    (one runner bug away) is an error, not a duplicate in the data.
    """

    def __init__(self, output_dir, num_shards, max_seq_length, vocab_size):
        self.output_dir = output_dir
        self.num_shards = num_shards
        self.dtype = row_dtype(max_seq_length, vocab_size)

    def setup(self):
        runners.undo_worker_malloc_trim()

    def process(self, shard_and_values):
        shard, values = shard_and_values
        blobs, stats = [], []
        for value in values:
            (blobs if isinstance(value, bytes) else stats).append(value)
        rows = np.frombuffer(b"".join(blobs), self.dtype)
        rows = rows[np.lexsort((rows["index"], rows["document"], rows["key"]))]
        twice = (rows["document"][1:] == rows["document"][:-1]) & (rows["index"][1:] == rows["index"][:-1])
        if twice.any():
            raise RuntimeError(f"Shard {shard}: the runner delivered {int(twice.sum())} examples more than once.")
        records, offsets = packing.encode_examples(rows["input_ids"], rows["num_a"], rows["num_b"])
        final = shard_paths(self.output_dir, self.num_shards)[shard]
        atomic.write_bytes(final, tfrecord.frame_records(records, offsets))
        logging.info("Wrote %s (%d examples)", final, len(rows))
        _write_json(_partial_stats_path(self.output_dir, shard),
                    _sum_stats([*stats, {"empty_shards": int(len(rows) == 0), "written": len(rows)}]))


def _write_json(path, value):
    atomic.write_json(path, value, sort_keys=True)


def _prepare_output_dir(output_dir, num_shards):
    """Marks the directory incomplete and removes temp files and foreign shards."""
    tf.io.gfile.makedirs(output_dir)
    keep = set(os.path.basename(p) for p in shard_paths(output_dir, num_shards))
    for name in tf.io.gfile.listdir(output_dir):
        stale = (
            name in (SUCCESS_FILE, STATS_FILE)
            or name.startswith(_TMP_PREFIXES)
            or (name.startswith(SHARD_PREFIX) and name not in keep)
        )
        if stale:
            path = os.path.join(output_dir, name)
            if tf.io.gfile.isdir(path):  # a staging folder of a crashed --overwrite build
                tf.io.gfile.rmtree(path)
            else:
                tf.io.gfile.remove(path)


def _remove_temp_files(output_dir):
    """Removes the hidden temp files that killed or retried tasks left (`_prepare_output_dir` removed older ones)."""
    for name in tf.io.gfile.listdir(output_dir):
        path = os.path.join(output_dir, name)
        if name.startswith(_TMP_PREFIXES) and not tf.io.gfile.isdir(path):
            tf.io.gfile.remove(path)


def _owned(name):
    """Whether the build writes or removes a file of this name in its output folder."""
    return name in (SUCCESS_FILE, STATS_FILE) or name.startswith((*_TMP_PREFIXES, SHARD_PREFIX))


def check_output_dir(output_dir, input_paths, only_a_build=True):
    """Refuses, before any work, an output folder that holds an input or (`only_a_build`) other files.

    `output_dir` must not be an input file nor hold one the build would replace or remove.
    With `only_a_build` (the command's check) it may hold only a build's files and a vocabulary
    (`vocab.txt`, its `electra_tokenizer.json`, which `pretrain` looks for beside the records): a
    folder holding anything else (a run's checkpoints, an export, a corpus) is another
    artefact's. (The demo data keeps its corpus beside its records: the library allows it.)
    """
    target = atomic.real_path(output_dir)  # links resolved: the folder the build writes into
    for path in input_paths:
        source = atomic.real_path(path)
        if atomic.same_file(source, target) or (os.path.dirname(source) == target and _owned(os.path.basename(source))):
            raise ValueError(f"`--output_dir={output_dir}` would replace the input {path}. Choose another "
                             "--output_dir.")
    if not tf.io.gfile.isdir(output_dir):
        if tf.io.gfile.exists(output_dir):
            raise FileExistsError(f"`--output_dir={output_dir}` is a file, not a folder. Choose a folder.")
        return
    if not only_a_build:
        return
    vocabulary = (tokenizer_lib.VOCAB_FILE, tokenizer_lib.SETTINGS_FILE)
    other = sorted(n.rstrip("/") for n in tf.io.gfile.listdir(output_dir)
                   if not _owned(n.rstrip("/")) and n.rstrip("/") not in vocabulary)
    if other:
        raise FileExistsError(f"`--output_dir={output_dir}` holds other files than a build's ({', '.join(other[:5])}"
                              f"{', ...' if len(other) > 5 else ''}); the records would mix with them. Choose a new "
                              "or empty --output_dir.")


def is_complete_build(output_dir):
    """True when `output_dir` holds a finished build (`stats.json` and `_SUCCESS`)."""
    return all(tf.io.gfile.exists(os.path.join(output_dir, name)) for name in (STATS_FILE, SUCCESS_FILE))


def _replace_build(staging, output_dir):
    """Moves a finished build from `staging` over the one in `output_dir`: `_SUCCESS` goes first and comes last."""
    tf.io.gfile.remove(os.path.join(output_dir, SUCCESS_FILE))
    for name in tf.io.gfile.listdir(output_dir):
        if name == STATS_FILE or name.startswith(SHARD_PREFIX):
            tf.io.gfile.remove(os.path.join(output_dir, name))
    names = sorted(tf.io.gfile.listdir(staging))
    for name in [n for n in names if n not in (STATS_FILE, SUCCESS_FILE)] + [STATS_FILE, SUCCESS_FILE]:
        atomic.replace(os.path.join(staging, name), os.path.join(output_dir, name))
    tf.io.gfile.rmtree(staging)


# A build warns (and records it in stats.json) when more than this share of its word pieces was cut off.
MAX_TRUNCATED_SHARE = 0.5


def _warnings(stats):
    """What is probably wrong with a build that ran: most tokens truncated, empty shards."""
    found = []
    if stats["truncated_token_share"] > MAX_TRUNCATED_SHARE:
        found.append(
            f"{stats['truncated_token_share']:.2%} of the word pieces were truncated away "
            f"({stats['truncated_tokens']} of {stats['tokens']}; {stats['examples']} examples of "
            f"{stats['max_seq_length']} tokens): documents are far longer than an example. Is the text one "
            "sentence per line, with blank lines between documents?"
        )
    if stats["empty_shards"]:
        found.append(f"{stats['empty_shards']} of {stats['num_shards']} shards hold no example: "
                     "lower --num_shards or add text.")
    return found


def _finalize_stats(stats, max_seq_length, num_shards, seed):
    examples = max(stats.get("examples", 0), 1)
    tokens = max(stats.get("tokens", 0), 1)
    positions = examples * max_seq_length
    return dict(
        documents=stats.get("documents", 0),
        sentences=stats.get("sentences", 0),
        examples=stats.get("examples", 0),
        tokens=stats.get("tokens", 0),
        bytes=stats.get("bytes", 0),
        example_tokens=stats.get("example_tokens", 0),
        truncated_tokens=stats.get("truncated_tokens", 0),
        truncated_token_share=stats.get("truncated_tokens", 0) / tokens,
        empty_shards=stats.get("empty_shards", 0),
        padding_fraction=(positions - stats.get("example_tokens", 0)) / positions,
        single_segment_share=stats.get("single_segment", 0) / examples,
        single_segment_drawn_share=stats.get("single_segment_drawn", 0) / examples,
        short_target_share=stats.get("short_target", 0) / examples,
        unknown_token_rate=stats.get("unknown_tokens", 0) / tokens,
        invalid_utf8=stats.get("invalid_utf8", 0),
        empty_sentences=stats.get("empty_sentences", 0),
        per_source=stats.get("per_source", {}),
        max_seq_length=max_seq_length,
        num_shards=num_shards,
        seed=seed,
    )


# The shortest example packed: [CLS], one piece of each of two segments, two [SEP].
MIN_SEQ_LENGTH = 5


def build_pretraining_data(
    inputs,
    vocab_file,
    output_dir,
    max_seq_length=128,
    num_shards=8,
    seed=0,
    pipeline_args=None,
    lower_case=None,
    batch_bytes=1 << 20,
    overwrite=False,
):
    """Builds packed pre-training TFRecords with Apache Beam; returns the stats.

    Args:
        inputs: str or list of str. Input specs `[format:]GLOB`, see `sources`.
        vocab_file: str. WordPiece `vocab.txt` (checked before any work).
        output_dir: str. Destination (local or `tf.io.gfile` path).
        max_seq_length: int. Example length, including [CLS]/[SEP].
        num_shards: int. Number of output files.
        seed: int. Packing seed.
        pipeline_args: list of str. Beam options; default
            `runners.default_pipeline_args()` (DirectRunner, multi-processing). Use
            `["--direct_running_mode=in_memory"]` for small in-process builds.
        lower_case: bool or None. Tokenizer lower-casing; None (default):
            the vocabulary's `electra_tokenizer.json`, else uncased. A value
            that contradicts the saved settings is an error.
        batch_bytes: int. Text per tokenizer call: documents are batched up to
            about this many bytes (a longer document is one batch).
        overwrite: bool. Replace a complete earlier build in `output_dir`
            (only once the new one succeeded); without it, such a folder is
            refused before any work.

    Returns:
        dict, the content of `output_dir/stats.json`, and `seconds`, the pipeline's run time.

    Raises:
        FileNotFoundError/ValueError for a bad vocabulary or inputs matching
        nothing (before the pipeline starts), FileExistsError for a complete
        earlier build without `overwrite`, ValueError if the inputs hold no text or
        `output_dir` is an input (`check_output_dir`; the command also refuses a folder
        holding other files), `text_io.CorruptInputError` for a truncated input,
        `runners.BadPipelineFlag` for a Dask flag the runner would misread,
        `ConnectionError` for a Dask scheduler that does not answer within the
        connection timeout (before `output_dir` is made) and
        `runners.WorkersLostError` for a cluster that lost a task's workers
        (the folder stays incomplete; a rerun finishes it).

    Example:
        ```python
        import gzip
        import os

        os.makedirs("corpus", exist_ok=True)
        with gzip.open("corpus/brown.txt.gz", "wt") as f:  # a sentence a line; a blank line ends a document
            f.write("The cat sat on the mat.\\nIt purred.\\n\\nA dog barked at the cat.\\n")

        from electra_tf.pipelines.build_pretraining_data import build_pretraining_data
        from electra_tf.pipelines.build_vocab import build_vocab

        build_vocab("corpus/*.txt.gz", vocab_size=200, output="vocab.txt", min_frequency=1)
        stats = build_pretraining_data(
            "corpus/*.txt.gz", "vocab.txt", "out", max_seq_length=16,
            num_shards=2, pipeline_args=["--direct_running_mode=in_memory"])
        ```
    """
    if max_seq_length < MIN_SEQ_LENGTH:
        raise ValueError(f"`max_seq_length` must be >= {MIN_SEQ_LENGTH}. Received: `max_seq_length={max_seq_length}`")
    if num_shards < 1:
        raise ValueError(f"`num_shards` must be >= 1. Received: `num_shards={num_shards}`")
    tokenizer = tokenizer_lib.WordPieceTokenizer(vocab_file, lower_case=lower_case)  # fails fast on a bad vocabulary
    vocab_size, settings = tokenizer.vocab_size, tokenizer.settings
    files = sources.expand_inputs(inputs)
    check_output_dir(output_dir, [f.path for f in files], only_a_build=False)
    runners.check_pipeline_args(pipeline_args)
    runners.check_scheduler(pipeline_args)  # before the folder is made: a wrong address leaves nothing behind
    logging.info("Building from %d files (%d sources) into %s", len(files),
                 len({f.source for f in files}), output_dir)
    if not is_complete_build(output_dir):
        _prepare_output_dir(output_dir, num_shards)
        return _build(files, inputs, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards,
                      seed, pipeline_args, batch_bytes)
    if not overwrite:
        raise FileExistsError(
            f"`--output_dir={output_dir}` holds a complete earlier build ({STATS_FILE}, {SUCCESS_FILE}). "
            "Pass --overwrite to replace it (only once the new build has succeeded), or choose another folder."
        )
    for name in tf.io.gfile.listdir(output_dir):  # staging folders of crashed --overwrite builds
        if name.rstrip("/").startswith(_TMP_PREFIXES) and tf.io.gfile.isdir(os.path.join(output_dir, name)):
            tf.io.gfile.rmtree(os.path.join(output_dir, name))
    staging = atomic.partial_path(os.path.join(output_dir, _STAGING))
    tf.io.gfile.makedirs(staging)
    try:
        stats = _build(files, inputs, vocab_file, settings, vocab_size, staging, max_seq_length, num_shards,
                       seed, pipeline_args, batch_bytes)
    except BaseException:
        tf.io.gfile.rmtree(staging)  # the earlier build stays as it was
        raise
    _replace_build(staging, output_dir)
    logging.info("Replaced the earlier build in %s", output_dir)
    return stats


def _read_partial_stats(output_dir, num_shards):
    """Each shard's counts (`WriteShardFn`), the files removed; a missing one is the runner's error."""
    paths = [_partial_stats_path(output_dir, shard) for shard in range(num_shards)]
    missing = [os.path.basename(p) for p in paths if not tf.io.gfile.exists(p)]
    if missing:
        raise RuntimeError(f"The runner finished without writing {len(missing)} of the {num_shards} shards "
                           f"(no {missing[0]}); {output_dir} is incomplete.")
    found = []
    for path in paths:
        with tf.io.gfile.GFile(path) as f:
            found.append(json.load(f))
        tf.io.gfile.remove(path)
    return found


def _build(files, inputs, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards, seed,
           pipeline_args, batch_bytes):
    """Runs the pipeline into `output_dir`, then writes `stats.json` and `_SUCCESS`; returns the stats."""
    options = runners.pipeline_options(pipeline_args)
    start = time.time()
    try:
        _run_pipeline(files, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards, seed,
                      options, batch_bytes)
    except text_io.CorruptInputError:
        raise
    except Exception as e:  # a worker's error arrives wrapped in the runner's traceback: keep its message
        found = re.search(r"CorruptInputError: ([^\n]+)", str(e))
        if found:
            raise text_io.CorruptInputError(found.group(1).strip()) from None
        if isinstance(e, runners.WorkersLostError):
            raise runners.WorkersLostError(
                f"The build in {output_dir} stopped incomplete (no {SUCCESS_FILE}): {e} "
                "Rerun the same command to finish it."
            ) from e
        raise
    elapsed = time.time() - start
    raw = _sum_stats(_read_partial_stats(output_dir, num_shards))
    if raw.get("written", 0) != raw.get("examples", 0):  # a runner that lost or repeated work
        raise RuntimeError(f"The runner wrote {raw.get('written', 0)} examples of the {raw.get('examples', 0)} "
                           f"packed; {output_dir} is incomplete.")
    stats = _finalize_stats(raw, max_seq_length, num_shards, seed)
    stats.update(vocab_size=vocab_size, vocab_sha256=tokenizer_lib.vocab_digest(vocab_file), tokenizer=settings)
    if stats["documents"] == 0 or stats["examples"] == 0:
        raise ValueError(f"Inputs {inputs!r} hold no text: 0 documents with word pieces were read.")
    stats["warnings"] = _warnings(stats)
    for warning in stats["warnings"]:
        logging.warning("build_pretraining_data: WARNING: %s", warning)
    _remove_temp_files(output_dir)  # of writes whose task a runner ran again (a worker was lost)
    _write_json(os.path.join(output_dir, STATS_FILE), stats)
    with tf.io.gfile.GFile(os.path.join(output_dir, SUCCESS_FILE), "w") as f:
        f.write("")
    stats["seconds"] = round(elapsed, 3)  # returned and printed; not in stats.json, a function of the inputs
    logging.info(
        "Done in %.1fs: %d documents, %d examples, %d tokens (%.2f MB/s); padding %.3f, "
        "single-segment %.3f, short-target %.3f, unknown %.5f, invalid utf-8 %d",
        elapsed, stats["documents"], stats["examples"], stats["tokens"], stats["bytes"] / 1e6 / max(elapsed, 1e-9),
        stats["padding_fraction"], stats["single_segment_share"], stats["short_target_share"],
        stats["unknown_token_rate"], stats["invalid_utf8"],
    )
    return stats


def _run_pipeline(files, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards, seed, options,
                  batch_bytes):
    pipeline = beam.Pipeline(runner=runners.runner(options), options=options)
    _pipeline(pipeline, files, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards, seed,
              batch_bytes)
    runners.run(pipeline, options)


def _pipeline(pipeline, files, vocab_file, settings, vocab_size, output_dir, max_seq_length, num_shards, seed,
              batch_bytes):
    """Adds the build's transforms to `pipeline`.

    Shaped for every runner, the DaskRunner included: one output per ParDo (it
    merges tagged outputs), no side input, one shuffle, and one sink,
    `WriteShards`, downstream of everything (it computes the last transform's
    graph only). The counts go to files beside the shards, summed by `_build`.
    """
    documents = (
        pipeline
        | "ListFiles" >> beam.Create(files)
        | "SpreadFiles" >> beam.Reshuffle()  # files, not documents, cross the network
        | "ReadDocuments" >> beam.FlatMap(_read_batches, batch_bytes)
    )
    packed = documents | "TokenizeAndPack" >> beam.ParDo(
        TokenizeAndPackFn(vocab_file, settings, max_seq_length, num_shards, seed)
    )
    all_shards = (  # every shard gets written, an empty one too; one element: one Dask partition, not one a shard
        pipeline
        | "NumShards" >> beam.Create([num_shards])
        | "ShardIds" >> beam.FlatMap(_no_rows)
    )
    _ = (
        (packed, all_shards)
        | "AllShards" >> beam.Flatten()
        | "GroupByShard" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(WriteShardFn(output_dir, num_shards, max_seq_length, vocab_size))
    )


def define_flags():
    """Defines the CLI flags (only when run as a script, so imports never clash)."""
    flags.DEFINE_list("input", None, "Input specs `[format:]GLOB` (format: text, wikipedia, books).")
    cli.define_vocab_file("WordPiece vocab.txt.")
    cli.define_output_dir("Output directory.")
    cli.define_seq_length(128, "Example length including [CLS]/[SEP].", range="[5, inf)")
    cli.define("integer", "num_shards", 8, "Number of TFRecord shards.", range="[1, inf)")
    flags.DEFINE_integer("seed", 0, "Packing seed.")
    flags.DEFINE_bool("overwrite", False, "Replace a complete earlier build in --output_dir (only once the new "
                      "build has succeeded).")
    flags.DEFINE_bool("lower_case", None, "Lower-case (default: the vocabulary's electra_tokenizer.json, else true).")
    flags.mark_flags_as_required(["input", "vocab_file", "output_dir"])


def main(argv):
    # Call through the importable module so Beam pickles DoFns by reference, not from __main__.
    from electra_tf.pipelines import build_pretraining_data as lib  # pylint: disable=import-self

    FLAGS = flags.FLAGS
    try:
        runners.check_pipeline_args(argv[1:])
    except runners.BadPipelineFlag as e:  # a bad flag: one line saying what it takes, exit 2
        cli.fail(str(e), cli.USAGE_EXIT)
    lib.check_output_dir(FLAGS.output_dir, [f.path for f in sources.expand_inputs(FLAGS.input)])
    with cli.quiet_beam_workers():
        stats = lib.build_pretraining_data(
            FLAGS.input, FLAGS.vocab_file, FLAGS.output_dir, FLAGS.seq_length, FLAGS.num_shards,
            FLAGS.seed, pipeline_args=argv[1:], lower_case=FLAGS.lower_case, overwrite=FLAGS.overwrite,
        )
    print(json.dumps({k: v for k, v in stats.items() if k != "per_source"}, indent=2))


def run():
    """`python -m electra_tf.pipelines.build_pretraining_data` (console script: `electra-build-data`)."""
    define_flags()
    cli.run(main, known_only=True, aliases=ALIASES)


ALIASES = cli.aliases("vocab", "max_seq_length")

if __name__ == "__main__":
    run()
