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

    Args:
        output_dir: str. Cache directory; holds `corpus.txt`, `vocab.txt`,
            the shards, `stats.json` and `demo_manifest.json`.
        seq_length: int. Example length.
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
    params = dict(
        version=VERSION, seq_length=seq_length, vocab_size=vocab_size, num_shards=num_shards, seed=seed,
        python=sys.version.split()[0], target_bytes=TARGET_BYTES,
    )
    data_glob = os.path.join(output_dir, SHARD_GLOB)
    vocab_file = os.path.join(output_dir, VOCAB_FILE)
    manifest_path = os.path.join(output_dir, MANIFEST_FILE)
    stats_path = os.path.join(output_dir, build_lib.STATS_FILE)
    result = dict(data=data_glob, vocab_file=vocab_file)
    if _cache_hit(output_dir, manifest_path, params, num_shards):
        with open(stats_path, encoding="utf-8") as f:
            stats = json.load(f)
        with open(manifest_path, encoding="utf-8") as f:
            stats["corpus"] = json.load(f)["corpus"]
        stats["cached"] = True
        logging.info("demo data: cache hit in %s", output_dir)
        return dict(result, stats=stats)

    start = time.time()
    os.makedirs(output_dir, exist_ok=True)
    if os.path.exists(manifest_path):
        os.remove(manifest_path)  # the manifest is written last: no manifest = incomplete
    corpus_file = os.path.join(output_dir, CORPUS_FILE)
    logging.info("demo data: building the corpus in %s", output_dir)
    corpus = build_demo_corpus(corpus_file, target_bytes=TARGET_BYTES)
    logging.info("demo data: training a %d-entry vocabulary", vocab_size)
    vocab_lib.build_vocab(corpus_file, vocab_size, vocab_file, lower_case=True)
    logging.info("demo data: packing %d-token examples into %d shards", seq_length, num_shards)
    stats = build_lib.build_pretraining_data(
        f"text:{corpus_file}", vocab_file, output_dir, max_seq_length=seq_length, num_shards=num_shards,
        seed=seed, pipeline_args=["--direct_running_mode=in_memory"], overwrite=True,
    )
    atomic.write_json(manifest_path, dict(params=params, corpus=corpus), sort_keys=True)
    logging.info("demo data: built in %.1fs: %d examples", time.time() - start, stats["examples"])
    return dict(result, stats=dict(stats, corpus=corpus, cached=False))


def _cache_hit(output_dir, manifest_path, params, num_shards):
    try:
        with open(manifest_path, encoding="utf-8") as f:
            if json.load(f)["params"] != params:
                return False
    except (OSError, ValueError, KeyError):
        return False
    needed = [build_lib.SUCCESS_FILE, build_lib.STATS_FILE, VOCAB_FILE, CORPUS_FILE]
    needed += [os.path.basename(p) for p in build_lib.shard_paths(output_dir, num_shards)]
    return all(tf.io.gfile.exists(os.path.join(output_dir, name)) for name in needed)
