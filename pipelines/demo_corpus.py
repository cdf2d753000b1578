"""The embedded default corpus (`--data demo`): English prose from installed docstrings.

No corpus text ships with the repository. `build_demo_corpus` reads the
docstrings of the Python standard library and of installed packages (numpy,
absl, keras, apache_beam, tensorflow, ...) from their *source files* with `ast`
(nothing is imported), keeps the prose and drops code, doctests, parameter
tables and reST markup, splits sentences (`sentences.split_sentences`) and
writes one document per module in the BERT text format. Paragraphs seen
before are dropped (deduplication), files are visited in sorted order, so the
corpus is a function of the installed versions. `build_demo_data` then trains
a vocabulary (`build_vocab`) and packs TFRecords (`build_pretraining_data`),
and caches the lot in `output_dir`.
"""

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import sys
import sysconfig
import time

from absl import logging
import tensorflow as tf

from electra_tf import atomic
from electra_tf.data.records import SHARD_GLOB
from electra_tf.data.tokenizer import VOCAB_FILE
from electra_tf.pipelines import build_pretraining_data as build_lib
from electra_tf.pipelines import build_vocab as vocab_lib
from electra_tf.pipelines import sentences as sentences_lib

# Packages read after the standard library, in this order, until the size target is met.
PACKAGES = ("numpy", "absl", "keras", "apache_beam", "tensorflow", "tensorflow_text", "keras_hub")
SKIP_DIRS = frozenset(
    "test tests testing idlelib lib2to3 site-packages __pycache__ turtledemo tkinter "
    "ensurepip _vendor vendored third_party include".split()
)
CORPUS_FILE = "corpus.txt"
MANIFEST_FILE = "demo_manifest.json"
VERSION = 2  # bump when the corpus recipe changes, to invalidate caches (2: BERT's normalisation, recorded)
TARGET_BYTES = 4_000_000  # size of the demo corpus text (about 0.85M word pieces)

_ROLE = re.compile(r":[\w:.-]+:`(?:[^`<]*<)?([^`>]+)>?`")  # :func:`foo` / :class:`x <y>` -> foo / y
_LITERAL = re.compile(r"`{1,2}([^`]+)`{1,2}")
_EMPHASIS = re.compile(r"\*{1,2}([^*\s][^*]*)\*{1,2}")
_PARAM_LINE = re.compile(r"^\s*[\w*]+\s*(\(.*\))?\s*:\s")  # `x : int`, `name (str): ...`
_RULE = re.compile(r"^\s*[-=~^*#+]{3,}\s*$")
_SECTION = re.compile(
    r"^\s*(args|arguments|parameters|params|returns?|yields?|raises|attributes|examples?|"
    r"usage|notes?|see also|references|warnings?|todo|call arguments|input shape|output shape)\s*:?\s*$",
    re.IGNORECASE,
)


def _source_files():
    """(label, path) of every candidate source file, in a fixed order."""
    roots = [("stdlib", sysconfig.get_paths()["stdlib"])]
    for name in PACKAGES:
        try:
            spec = importlib.util.find_spec(name)  # locates without importing
        except (ImportError, ValueError):
            spec = None
        if spec and spec.submodule_search_locations:
            roots.append((name, sorted(spec.submodule_search_locations)[0]))
    for label, root in roots:
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith((".", "_test")))
            for name in sorted(files):
                if name.endswith(".py") and not name.endswith("_test.py") and not name.startswith("test_"):
                    yield label, os.path.join(directory, name)


def _docstrings(path):
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, ValueError, OSError, RecursionError):
        return []
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found = [n for n in ast.walk(tree) if isinstance(n, nodes)]
    found.sort(key=lambda n: getattr(n, "lineno", 0))
    out = []
    for node in found:
        doc = ast.get_docstring(node, clean=True)
        if doc:
            out.append(doc)
    return out


def prose_paragraphs(docstring):
    """The prose paragraphs of a docstring, markup removed.

    Dropped: paragraphs with an indented line (code, parameter descriptions),
    doctest/prompt lines, section headers and everything in an
    Args/Returns/Examples-style section, reST directives and rules, parameter
    lines (`x : int`), and paragraphs that are mostly not letters.

    Args:
        docstring: str. A docstring (already `inspect.cleandoc`-ed or not).

    Returns:
        list of str, one per kept paragraph, whitespace collapsed.

    Example:
        >>> from electra_tf.pipelines.demo_corpus import prose_paragraphs
        >>> prose_paragraphs("Adds two numbers together.\\n\\nArgs:\\n    x: int.\\n\\n>>> add(1)\\n1")
        ['Adds two numbers together.']
    """
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(docstring))
    kept, in_section = [], False
    for paragraph in paragraphs:
        lines = paragraph.split("\n")
        first = lines[0]
        if _SECTION.match(first) or (len(lines) > 1 and _RULE.match(lines[1])):
            in_section = True  # a header: skip it and the paragraphs of its section
            continue
        if in_section and (first.startswith(" ") or _PARAM_LINE.match(first)):
            continue
        in_section = False
        if any(line.startswith((" ", "\t")) for line in lines):
            continue
        if any(
            line.lstrip().startswith((">>>", "...", "$ ", ".. ", ":param", ":return", ":type", ":rtype",
                                      ":raise", "- ", "* ", "+ ", "|", "#", "```"))
            or _RULE.match(line)
            or _PARAM_LINE.match(line)
            for line in lines
        ):
            continue
        text = sentences_lib.normalize_whitespace(paragraph)
        if text.endswith("::"):
            text = text[:-1]
        text = _ROLE.sub(r"\1", text)
        text = _LITERAL.sub(r"\1", text)
        text = _EMPHASIS.sub(r"\1", text)
        letters = sum(c.isalpha() or c == " " for c in text)
        if len(text.split()) < 4 or letters < 0.8 * len(text):
            continue
        kept.append(text)
    return kept


def _prose_sentences(paragraph):
    out = []
    for sentence in sentences_lib.split_sentences(paragraph):
        words = sentence.split()
        if 3 <= len(words) <= 120 and sentence[0].isupper() and sentence[-1] in ".!?":
            out.append(sentence)
    return out


def build_demo_corpus(output_file, target_bytes=4_000_000):
    """Writes the demo corpus (BERT text format) from installed docstrings.

    Args:
        output_file: str. Path of the `corpus.txt` to write (atomically).
        target_bytes: int. Stop adding modules once the text reaches this size.

    Returns:
        dict of counts: `documents`, `sentences`, `bytes`, `files`, per-package `sources`.

    Example:
        ```python
        from electra_tf.pipelines.demo_corpus import build_demo_corpus

        counts = build_demo_corpus("corpus.txt", target_bytes=20_000)
        counts["bytes"] >= 20_000  # True
        ```
    """
    seen = set()
    documents, size, files = [], 0, 0
    per_source = {}
    for label, path in _source_files():
        files += 1
        sentences = []
        for doc in _docstrings(path):
            for paragraph in prose_paragraphs(doc):
                digest = hashlib.sha1(paragraph.lower().encode("utf-8")).digest()
                if digest in seen:
                    continue
                seen.add(digest)
                sentences.extend(_prose_sentences(paragraph))
        if len(sentences) < 2:
            continue
        text = "\n".join(sentences) + "\n"
        documents.append(text)
        size += len(text.encode("utf-8")) + 1
        per_source[label] = per_source.get(label, 0) + 1
        if len(documents) % 500 == 0:
            logging.info("demo corpus: %d documents, %.2f MB (%s)", len(documents), size / 1e6, label)
        if size >= target_bytes:
            break
    if not documents:
        raise RuntimeError("No docstrings found in the installed Python: cannot build the demo corpus.")
    atomic.write_text(output_file, "\n".join(documents).rstrip("\n") + "\n")
    counts = dict(
        documents=len(documents),
        sentences=sum(d.count("\n") for d in documents),
        bytes=os.path.getsize(output_file),
        files=files,
        sources=per_source,
    )
    logging.info("demo corpus: wrote %s: %s", output_file, counts)
    return counts


def build_demo_data(output_dir, seq_length=128, vocab_size=8192, num_shards=4, seed=0):
    """Builds (or reuses) the demo corpus, its vocabulary and packed TFRecords.

    The cache holds one folder per build's settings, `output_dir/seq_length_<N>-<digest>`
    (`build_folder`): another `seq_length` (or vocabulary size, shard count, seed, Python)
    is another folder, and a build never replaces one in place. A build is made in a
    temporary folder beside it and renamed into place whole, its manifest written last,
    so a run killed mid-build leaves nothing that looks built, and runs started at once
    each build and the first rename wins (the others use its folder). The corpus and
    vocabulary of another folder of the same recipe are reused (they do not depend on
    `seq_length`, `num_shards` or `seed`).

    Args:
        output_dir: str. Cache directory; each build folder holds `corpus.txt`,
            `vocab.txt`, the shards, `stats.json` and `demo_manifest.json`.
        seq_length: int. Example length, at least `MIN_SEQ_LENGTH`.
        vocab_size: int. Vocabulary size, special tokens included.
        num_shards: int. Number of TFRecord files.
        seed: int. Packing seed.

    Returns:
        dict: `data` (glob of the TFRecords), `vocab_file`, `stats`
        (the builder's `stats.json` plus `corpus` counts and `cached`).

    Example:
        ```python
        import tensorflow as tf

        from electra_tf.pipelines.demo_corpus import build_demo_data

        demo = build_demo_data("electra_demo", seq_length=128)  # minutes the first time, then cached
        dataset = tf.data.TFRecordDataset(tf.io.gfile.glob(demo["data"]))
        ```
    """
    check_seq_length(seq_length)
    params = _params(seq_length, vocab_size, num_shards, seed)
    folder = build_folder(output_dir, seq_length, vocab_size, num_shards, seed)
    result = dict(data=os.path.join(folder, SHARD_GLOB), vocab_file=os.path.join(folder, VOCAB_FILE))
    cached = _cached_stats(folder, params, num_shards)
    if cached is not None:
        logging.info("demo data: cache hit in %s", folder)
        return dict(result, stats=cached)

    start = time.time()
    try:
        # Built beside `folder`, renamed onto it whole; never onto a folder another run has filled meanwhile.
        with atomic.staged_folder(folder) as staging:
            corpus, stats = _build(staging, output_dir, params, seq_length, vocab_size, num_shards, seed)
    except OSError:
        cached = _cached_stats(folder, params, num_shards)
        if cached is None:
            raise
        logging.info("demo data: another run built %s meanwhile; using it", folder)
        return dict(result, stats=cached)
    logging.info("demo data: built %s in %.1fs: %d examples", folder, time.time() - start, stats["examples"])
    return dict(result, stats=dict(stats, corpus=corpus, cached=False))


# The shortest example the records builder packs: [CLS], a piece of each segment, two [SEP].
MIN_SEQ_LENGTH = build_lib.MIN_SEQ_LENGTH


def check_seq_length(seq_length):
    """Refuses, before anything is built, a `--seq_length` too short for the demo records (`MIN_SEQ_LENGTH`)."""
    if seq_length < MIN_SEQ_LENGTH:
        raise ValueError(
            f"`--seq_length={seq_length}` is too short for `--data=demo`: its records need at least "
            f"{MIN_SEQ_LENGTH} tokens ([CLS], a piece of each of two segments, two [SEP]). Use --seq_length >= "
            f"{MIN_SEQ_LENGTH}.")


def build_folder(output_dir, seq_length=128, vocab_size=8192, num_shards=4, seed=0):
    """The folder of `output_dir` that holds the demo build of these settings (`seq_length_<N>-<digest>`)."""
    params = _params(seq_length, vocab_size, num_shards, seed)
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return os.path.join(output_dir, f"seq_length_{seq_length}-{digest}")


def _params(seq_length, vocab_size, num_shards, seed):
    return dict(
        version=VERSION, seq_length=seq_length, vocab_size=vocab_size, num_shards=num_shards, seed=seed,
        python=sys.version.split()[0], target_bytes=TARGET_BYTES,
    )


# What the corpus and the vocabulary depend on: another build with the same values has the same two files.
_CORPUS_PARAMS = ("version", "python", "target_bytes", "vocab_size")


def _build(staging, output_dir, params, seq_length, vocab_size, num_shards, seed):
    """Fills `staging` with a whole build, its manifest last; returns (corpus counts, the builder's stats)."""
    corpus_file = os.path.join(staging, CORPUS_FILE)
    vocab_file = os.path.join(staging, VOCAB_FILE)
    corpus = _reuse_corpus(output_dir, params, staging)
    if corpus is None:
        logging.info("demo data: building the corpus in %s", staging)
        corpus = build_demo_corpus(corpus_file, target_bytes=TARGET_BYTES)
        logging.info("demo data: training a %d-entry vocabulary", vocab_size)
        vocab_lib.build_vocab(corpus_file, vocab_size, vocab_file, lower_case=True)
    logging.info("demo data: packing %d-token examples into %d shards", seq_length, num_shards)
    stats = build_lib.build_pretraining_data(
        f"text:{corpus_file}", vocab_file, staging, max_seq_length=seq_length, num_shards=num_shards,
        seed=seed, pipeline_args=["--direct_running_mode=in_memory"], overwrite=True,
    )
    atomic.write_json(os.path.join(staging, MANIFEST_FILE), dict(params=params, corpus=corpus), sort_keys=True)
    return corpus, stats


def _reuse_corpus(output_dir, params, staging):
    """Copies the corpus and vocabulary of a complete build of the same recipe into `staging`; its counts, or None."""
    wanted = {k: params[k] for k in _CORPUS_PARAMS}
    earlier = [output_dir]  # the flat layout of earlier releases, then the build folders
    earlier += [os.path.join(output_dir, n) for n in sorted(os.listdir(output_dir)) if not n.startswith(".")]
    for folder in earlier:
        try:
            with open(os.path.join(folder, MANIFEST_FILE), encoding="utf-8") as f:
                manifest = json.load(f)
            if {k: manifest["params"].get(k) for k in _CORPUS_PARAMS} != wanted:
                continue
            for file in (CORPUS_FILE, VOCAB_FILE):
                shutil.copyfile(os.path.join(folder, file), os.path.join(staging, file))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        logging.info("demo data: reusing the corpus and vocabulary of %s", folder)
        return manifest["corpus"]
    return None


def _cached_stats(folder, params, num_shards):
    """The stats of a complete build of `params` in `folder` (`cached: True`), or None."""
    manifest_path = os.path.join(folder, MANIFEST_FILE)
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest["params"] != params:
            return None
        needed = [build_lib.SUCCESS_FILE, build_lib.STATS_FILE, VOCAB_FILE, CORPUS_FILE]
        needed += [os.path.basename(p) for p in build_lib.shard_paths(folder, num_shards)]
        if not all(tf.io.gfile.exists(os.path.join(folder, name)) for name in needed):
            return None
        with open(os.path.join(folder, build_lib.STATS_FILE), encoding="utf-8") as f:
            stats = json.load(f)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(stats, corpus=manifest["corpus"], cached=True)
