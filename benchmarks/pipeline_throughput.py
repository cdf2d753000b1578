r"""Throughput of `electra_tf.pipelines.build_pretraining_data` vs the raw `WordPieceTokenizer`.

    python -m benchmarks.pipeline_throughput \
        --corpus '../shared/data/corpus/*.txt.gz' \
        --vocab ../shared/data/vocab/bert_uncased_vocab.txt \
        --output benchmarks/results/pipeline_throughput.md

Measures, on the same text and cores:

1. raw tokenizer: `WordPieceTokenizer.tokenize` on batches of 4096 lines
   (text already in memory; ids fetched to numpy), one process;
2. the Beam builder with `--direct_running_mode=in_memory` (one process,
   one core): read + tokenize + pack + shuffle + encode + write;
3. the Beam builder on the multi-processing DirectRunner with one worker per core;
4. the Beam builder on a `dask.distributed` cluster (`--runner DaskRunner`) with
   1, then 2 one-thread worker processes (`--dask_workers`): a local cluster
   (`distributed.LocalCluster`, its scheduler in this process), started once per
   worker count and kept warm across that count's builds, as a standing cluster is.

Wall time of the builder is its pipeline run (`stats["seconds"]`); CPU time
(this process plus finished worker processes, all threads; on Dask this process,
with the scheduler and client, plus every worker process) includes setup.
Per-core rates are tokens per *marginal* CPU-second: the CPU time of the full
run minus that of the same build on the first 200 lines of each file (start-up:
TensorFlow imports, vocabulary, pipeline construction and worker processes),
which is what a long build pays per token. A first such build, not measured,
loads the numba kernels (compiled once per machine and cached). Rounds
alternate the raw tokenizer, the start-up build and the full build, and the
ratio of each round is printed too: this machine is shared and its speed
drifts by 10 % within minutes. Each row gives the median of its rounds (wall,
CPU and fixed CPU seconds separately).
CPU seconds are far less skewed by other jobs on a shared machine than wall time.
It then extrapolates the wall time of a 3.3B-token Wikipedia + BooksCorpus
build from the per-core token rate. Figures are printed and written as
Markdown.
"""

import contextlib
import gzip
import os
import resource
import platform
import shlex
import sys
import tempfile
import time

from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

from benchmarks import common
from electra_tf import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from electra_tf.data.tokenizer import WordPieceTokenizer  # pylint: disable=wrong-import-position
from electra_tf.pipelines import build_pretraining_data as build_lib  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", os.path.join(REPO, "..", "shared", "data", "corpus", "*.txt.gz"), "Text glob.")
flags.DEFINE_string("vocab", os.path.join(REPO, "..", "shared", "data", "vocab", "bert_uncased_vocab.txt"),
                    "Vocabulary.")
flags.DEFINE_string("output", None, "Markdown file for the results (optional).")
flags.DEFINE_integer("max_seq_length", 128, "Example length.")
flags.DEFINE_integer("workers", os.cpu_count() or 1, "Processes for the multi-processing run (0 = skip).")
flags.DEFINE_integer("repeats", 3, "Repeats of each measurement (the median is reported).")
flags.DEFINE_list("dask_workers", ["1", "2"], "Worker processes of the Dask runs, one cluster each (empty = skip).")
flags.DEFINE_integer("multi_copies", 3, "The multi-processing run reads the corpus this many times over (copies "
                     "under other names), so its ~11 CPU-s of worker start-up is a smaller share.")

TARGET_TOKENS = 3.3e9  # Wikipedia 2.5B words + BooksCorpus 0.8B words (reference section 4)


def _cpu_seconds():
    """CPU time of this process and its finished children (Beam workers), all threads."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _dask_cpu_seconds(client):
    """A function: CPU time of this process (client, scheduler) plus every worker process of `client`'s cluster."""
    def cpu():
        workers = client.run(lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))  # user + system
        return _cpu_seconds() + sum(workers.values())

    return cpu


def wikitext_rate(repeats=40):
    """Wikitext cleaning speed (mwparserfromhell) on the test suite's sample article."""
    import importlib.util  # pylint: disable=import-outside-toplevel

    from electra_tf.pipelines import wikipedia  # pylint: disable=import-outside-toplevel

    spec = importlib.util.spec_from_file_location(  # the sample, read from its file: no sys.path edit
        "wikipedia_sample", os.path.join(REPO, "tests", "pipelines", "test_wikipedia_reader.py"))
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    ADA, ENGINE = sample.ADA, sample.ENGINE  # pylint: disable=invalid-name

    articles = [ADA.replace("Ada", f"Ada{i}") + ENGINE for i in range(repeats)]
    start = _cpu_seconds()
    for text in articles:
        wikipedia.wikitext_to_sentences("Article", text)
    return sum(len(a.encode("utf-8")) for a in articles) / (_cpu_seconds() - start)


def raw_tokenizer(files, vocab):
    """A function that tokenizes the corpus once (lines in memory, batches of 4096) and returns its figures."""
    lines = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines.extend(line.strip() for line in f if line.strip())
    num_bytes = sum(len(line.encode("utf-8")) for line in lines)
    tokenizer = WordPieceTokenizer(vocab)
    tokenizer.tokenize(lines[:100])

    def run():
        start, cpu, tokens = time.perf_counter(), _cpu_seconds(), 0
        for i in range(0, len(lines), 4096):
            ragged = tokenizer.tokenize(lines[i : i + 4096])
            tokens += len(ragged.flat_values.numpy())
            ragged.row_splits.numpy()
        return dict(bytes=num_bytes, tokens=tokens, seconds=time.perf_counter() - start, cpu=_cpu_seconds() - cpu)

    return run


def builder_rate(files, vocab, max_seq_length, pipeline_args, cpu_seconds=_cpu_seconds):
    with tempfile.TemporaryDirectory() as out:
        cpu = cpu_seconds()
        stats = build_lib.build_pretraining_data(
            files, vocab, out, max_seq_length=max_seq_length, num_shards=16, pipeline_args=pipeline_args
        )
        cpu = cpu_seconds() - cpu
    return dict(bytes=stats["bytes"], tokens=stats["tokens"], seconds=stats["seconds"], cpu=cpu,
                examples=stats["examples"])


def _medians(rounds):
    """One round's figures (bytes, tokens, examples), with the median of each timing over `rounds`."""
    timed = ("seconds", "cpu", "fixed_cpu", "marginal_cpu")
    return dict(rounds[0], **{k: float(np.median([r[k] for r in rounds])) for k in timed if k in rounds[0]})


def _command():
    """This run's command line, paths under the repository's parent folder written relative to the repository."""
    parent = os.path.dirname(REPO) + os.sep

    def relative(arg):
        flag, equals, value = arg.rpartition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
        return flag + equals + (os.path.relpath(value, REPO) if value.startswith(parent) else value)

    return shlex.join(["python", "-m", "benchmarks.pipeline_throughput", *map(relative, sys.argv[1:])])


def _hours(tokens_per_second):
    return TARGET_TOKENS / tokens_per_second / 3600


def main(argv):
    del argv
    files = sorted(tf.io.gfile.glob(FLAGS.corpus))
    if not files:
        raise ValueError(f"No corpus at {FLAGS.corpus}")
    logging.info("raw tokenizer on %d files", len(files))
    raw_run = raw_tokenizer(files, FLAGS.vocab)
    raw_run()  # warm-up
    # The start-up build reads the first 200 lines of every corpus file: with the same number of
    # files, Beam builds the same graph (it expands `Create` of one element differently) and bundles.
    tiny_dir = tempfile.mkdtemp()
    tiny = [os.path.join(tiny_dir, os.path.basename(path)) for path in files]
    for path, small in zip(files, tiny):
        with gzip.open(path, "rt", encoding="utf-8") as f, gzip.open(small, "wt", encoding="utf-8") as out:
            out.writelines(line for _, line in zip(range(200), f))
    raw_rounds = []

    def corpus_copies(copies):
        """The corpus and its start-up version, each read `copies` times (copies under other names)."""
        if copies == 1:
            return files, tiny
        inputs, small = [], []
        for i in range(copies):
            for names, out in ((files, inputs), (tiny, small)):
                for path in names:
                    copy = os.path.join(tiny_dir, f"copy{i}", os.path.basename(os.path.dirname(path)),
                                        os.path.basename(path))
                    os.makedirs(os.path.dirname(copy), exist_ok=True)
                    if not os.path.exists(copy):
                        os.symlink(os.path.abspath(path), copy)
                    out.append(copy)
        return inputs, small

    def measure(setups, with_raw=False, copies=1):
        """Each setup's full run and its marginal CPU cost: minus the run on the first 200 lines of each file
        (start-up, worker imports). `setups`: name -> (Beam args, CPU-seconds function). Rounds alternate
        (the raw tokenizer,) then each setup's start-up run and full run, so ratios are also taken side by
        side; each setup gets the medians of its `--repeats` rounds."""
        inputs, small = corpus_copies(copies)
        for args, cpu_seconds in setups.values():  # warm-up: numba compiles once per machine, workers import
            builder_rate(small, FLAGS.vocab, FLAGS.max_seq_length, args, cpu_seconds)
        rounds = {name: [] for name in setups}
        for _ in range(FLAGS.repeats):
            if with_raw:
                raw_rounds.append(raw_run())
            for name, (args, cpu_seconds) in setups.items():
                fixed = builder_rate(small, FLAGS.vocab, FLAGS.max_seq_length, args, cpu_seconds)
                full = builder_rate(inputs, FLAGS.vocab, FLAGS.max_seq_length, args, cpu_seconds)
                rounds[name].append(dict(full, fixed_cpu=fixed["cpu"], marginal_cpu=full["cpu"] - fixed["cpu"]))
        return {name: dict(_medians(r), rounds=r) for name, r in rounds.items()}

    logging.info("builder, in_memory (1 process), alternating with the raw tokenizer")
    one = measure({"in_memory": (["--direct_running_mode=in_memory"], _cpu_seconds)}, with_raw=True)["in_memory"]
    raw = _medians(raw_rounds)
    round_ratios = [(raw_r["cpu"] / raw_r["tokens"]) / (r["marginal_cpu"] / r["tokens"])
                    for raw_r, r in zip(raw_rounds, one["rounds"])]
    multi = None
    if FLAGS.workers > 0:
        logging.info("builder, multi_processing (%d workers)", FLAGS.workers)
        args = ["--direct_running_mode=multi_processing", f"--direct_num_workers={FLAGS.workers}"]
        multi = measure({"multi": (args, _cpu_seconds)}, copies=FLAGS.multi_copies)["multi"]
    on_dask = {}
    if FLAGS.dask_workers:
        from distributed import Client, LocalCluster  # pylint: disable=import-outside-toplevel

        counts = [int(n) for n in FLAGS.dask_workers]
        logging.info("builder, DaskRunner, %s worker processes, round by round", counts)
        with contextlib.ExitStack() as stack:
            setups = {}
            for workers in counts:  # one warm cluster per worker count, all up at once
                cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                           dashboard_address=None))
                client = stack.enter_context(Client(cluster))
                setups[workers] = (["--runner=DaskRunner", f"--dask_client_address={cluster.scheduler_address}"],
                                   _dask_cpu_seconds(client))
            on_dask = measure(setups, copies=FLAGS.multi_copies)

    def row(name, r, cores):
        mbs, tps = r["bytes"] / 1e6 / r["seconds"], r["tokens"] / r["seconds"]
        cpu = r.get("marginal_cpu", r["cpu"])
        cpu_tps = r["tokens"] / cpu
        fixed = f"{r['fixed_cpu']:.2f}" if "fixed_cpu" in r else "-"
        return (f"| {name} | {cores} | {r['seconds']:.2f} | {r['cpu']:.2f} | {fixed} | {mbs:.2f} | "
                f"{tps / 1e6:.3f} | {cpu_tps / 1e6:.3f} |"), cpu_tps

    raw_row, raw_per_core = row("raw `WordPieceTokenizer.tokenize`", raw, 1)
    one_row, one_per_core = row("builder, DirectRunner in_memory", one, 1)
    lines = [raw_row, one_row]
    multi_per_core = None
    if multi:
        multi_row, multi_per_core = row(f"builder, DirectRunner multi_processing x{FLAGS.workers} "
                                        f"(corpus read {FLAGS.multi_copies} times)", multi,
                                        FLAGS.workers)
        lines.append(multi_row)
    dask_lines = []
    for workers, r in on_dask.items():
        dask_row, _ = row(f"builder, DaskRunner, {workers} worker process{'es' if workers > 1 else ''} "
                          f"(corpus read {FLAGS.multi_copies} times)", r, workers)
        lines.append(dask_row)
        dask_lines.append(f"| {workers} | {r['seconds']:.2f} | {r['cpu']:.2f} | "
                          + ", ".join(f"{x['seconds']:.1f}" for x in r["rounds"]) + " | "
                          + ", ".join(f"{x['cpu']:.1f}" for x in r["rounds"]) + " |")
    scaling = []
    if len(on_dask) > 1:  # per round, side by side: the fewest workers' run over each other count's
        base, *others = on_dask
        for workers in others:
            speedups = [b["seconds"] / o["seconds"] for b, o in zip(on_dask[base]["rounds"], on_dask[workers]["rounds"])]
            cpus = [o["cpu"] / b["cpu"] for b, o in zip(on_dask[base]["rounds"], on_dask[workers]["rounds"])]
            scaling.append(f"{workers} workers against {base}, round by round: wall time "
                           + ", ".join(f"{x:.2f}x" for x in speedups) + f" faster (median {np.median(speedups):.2f}x); "
                           f"CPU time x{np.median(cpus):.2f} (median).")
    wiki_rate = wikitext_rate()
    report = [
        f"Command (from the repo root): `{_command()}`",
        "",
        "# Pipeline throughput",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPU cores (shared with other jobs), "
        f"Python {platform.python_version()}, TensorFlow {tf.__version__}.",
        f"Corpus: {len(files)} files, {raw['bytes'] / 1e6:.1f} MB of text, {raw['tokens'] / 1e6:.2f}M word pieces "
        f"(BERT uncased vocab), max_seq_length {FLAGS.max_seq_length}, {one['examples']:,} examples.",
        "",
        f"Load average when finished: {os.getloadavg()[0]:.1f} (wall-clock figures suffer from other jobs; "
        "per-core rates use marginal CPU seconds, see the module docstring).",
        "",
        f"Each row: the median of {FLAGS.repeats} rounds.",
        "",
        "| run | processes | wall s | CPU s | fixed CPU s | MB/s (wall) | M tokens/s (wall) "
        "| M tokens per marginal CPU-second |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *lines,
        "",
        *([f"On Dask, round by round (the full build; wall s and CPU s, the CPU of this process, its scheduler "
           "and every worker process):",
           "",
           "| Dask workers | median wall s | median CPU s | wall s, each round | CPU s, each round |",
           "|---:|---:|---:|---|---|",
           *dask_lines,
           "",
           *scaling,
           ""] if dask_lines else []),
        f"Builder / raw tokenizer, per CPU-second: in_memory {one_per_core / raw_per_core:.0%}"
        + (f", multi_processing {multi_per_core / raw_per_core:.0%}" if multi_per_core else "")
        + " (target: at least 70 %).",
        "",
        "Side by side, round by round (raw tokenizer, start-up build, full build; in_memory): "
        + ", ".join(f"{r:.0%}" for r in round_ratios)
        + f"; median {np.median(round_ratios):.0%}.",
        "",
        "## Extrapolation: 3.3B-token Wikipedia + BooksCorpus build",
        "",
        "From the marginal rates above (start-up excluded), plain-text input, linear scaling; a "
        "distributed runner's shuffle of the compact example rows (about 280 bytes per example) is "
        "not included. A Beam worker on Dataflow runs fused stages in-process, so its per-core rate "
        "is taken as the in_memory one.",
        "",
        "| setup | cores | wall time |",
        "|---|---:|---:|",
        f"| this machine, DirectRunner in_memory | 1 | {_hours(one_per_core):.2f} h |",
        *([f"| this machine, DirectRunner multi_processing x{FLAGS.workers} | {FLAGS.workers} | "
           f"{_hours(multi_per_core * FLAGS.workers):.2f} h |"] if multi_per_core else []),
        f"| 1 machine, 16 cores (16 workers at the in_memory rate) | 16 | {_hours(one_per_core * 16) * 60:.1f} min |",
        f"| 32 Beam workers x 1 core | 32 | {_hours(one_per_core * 32) * 60:.1f} min |",
        f"| 32 Beam workers x 4 cores | 128 | {_hours(one_per_core * 128) * 60:.1f} min |",
        "",
        f"The raw tokenizer alone would need {_hours(raw_per_core):.2f} hours on one core.",
        "",
        f"Wikitext cleaning (`wikipedia.wikitext_to_sentences`, mwparserfromhell) runs at "
        f"{wiki_rate / 1e6:.2f} MB of wikitext per CPU-second on the test article (markup-dense). "
        f"Assuming about 20 GB of article wikitext for 2.5B words, that adds "
        f"{20e9 / wiki_rate / 3600:.1f} CPU-hours: {20e9 / wiki_rate / 3600 / 32:.2f} h on 32 one-core workers.",
    ]
    text = "\n".join(report) + "\n"
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
