r"""The Hugging Face side of every comparison: transformers + torch, one training loop, one scorer per kind.

    python -m benchmarks.hf_side --job job.json --output_dir out   # the HF side alone, as its own process

`benchmarks.finetune_squad`, `serving_latency` and `finetune_speed` call it in their process;
`finetune_end_to_end` runs it as above (no TensorFlow imported), timed from start to `results.json`.

A job (`benchmarks.common.hf_job`) is what the electra_tf side was given: the task kind, the recipe
(the `FinetuneConfig` fields of the loop, by name), the BERT folder, and the rows electra_tf's readers
gave. The loop is the reference recipe as transformers users write it: `torch.optim.AdamW` (epsilon
1e-6), layer-wise LR decay as one parameter group per layer, `get_linear_schedule_with_warmup`,
`clip_grad_norm_`, a seeded reshuffle each epoch; `keep=best` keeps the best dev epoch's weights.
Batches are padded to their longest row, as transformers' collators do without fp16 and as electra_tf
cuts its own (classification: to `seq_length`, run_glue's default). Scoring:
accuracy; seqeval entity F1 and word accuracy (a word's tag from its first piece); the official SQuAD
EM / F1 over an n-best span search of run_qa's windows (`stride` = `doc_stride`: HF's stride is the
overlap, ours the step). `results.json` holds each split's metrics, training seconds and loss, and
the seconds of each phase.
"""

import argparse
import json
import os
import time

import numpy as np

MULTIPLE = 1  # the padded length's multiple: electra_tf's `batching.LENGTH_MULTIPLE` (no XLA on either side)
HEADS = {"classification": "BertForSequenceClassification", "tagging": "BertForTokenClassification",
         "span_qa": "BertForQuestionAnswering", "multiple_choice": "BertForMultipleChoice"}
METRICS = {"classification": "accuracy", "tagging": "entity_f1", "span_qa": "f1", "multiple_choice": "accuracy"}


class Phases:
    """Seconds of each named phase, from `start` (default: now) to each `mark`."""

    def __init__(self, start=None):
        self.seconds, self.last = {}, start or time.time()

    def mark(self, name):
        now = time.time()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.last, 2)
        self.last = now


def load(kind, weights, tokenizer_from, num_labels=None, device="cpu"):
    """`(tokenizer, model)`: `weights` (a folder, or a `BertConfig` for random weights) with the kind's head.

    `tokenizer_from`: a folder with `vocab.txt` (its tokenizer settings) or a vocabulary file (uncased).
    """
    import transformers

    head = getattr(transformers, HEADS[kind])
    kwargs = {} if kind in ("span_qa", "multiple_choice") else {"num_labels": num_labels}
    if isinstance(weights, transformers.PretrainedConfig):
        model = head(weights)
    else:
        model = head.from_pretrained(weights, **kwargs)
    if os.path.isdir(tokenizer_from):
        tokenizer = transformers.BertTokenizerFast.from_pretrained(tokenizer_from)
    else:
        tokenizer = transformers.BertTokenizerFast(tokenizer_from, do_lower_case=True)
    return tokenizer, model.to(device)


def optimizer(model, recipe, total_steps):
    """`(AdamW, linear warmup-then-decay schedule)`, layer-wise decayed as the reference: depth d gets decay^(L+2-d)."""
    import torch
    import transformers

    layers, groups = model.config.num_hidden_layers, {}
    for name, param in model.named_parameters():
        if ".embeddings." in name:
            depth = 0
        elif ".encoder.layer." in name:
            depth = int(name.split(".encoder.layer.")[1].split(".")[0]) + 1
        else:
            depth = layers + 2  # the task head (and BERT's pooler)
        groups.setdefault(depth, []).append(param)
    rate, decay = recipe["learning_rate"], recipe["layerwise_lr_decay"]
    adam = torch.optim.AdamW([{"params": p, "lr": rate * decay ** (layers + 2 - d)} for d, p in sorted(groups.items())],
                             lr=rate, eps=1e-6, weight_decay=recipe["weight_decay"])
    warmup = int(recipe["warmup_proportion"] * total_steps)
    return adam, transformers.get_linear_schedule_with_warmup(adam, warmup, total_steps)


def train_step(model, adam, schedule, batch, clip_norm):
    """One update on `batch` (inputs and labels); returns the loss."""
    import torch

    loss = model(**batch).loss
    loss.backward()
    if clip_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    adam.step()
    schedule.step()
    adam.zero_grad(set_to_none=True)
    return loss.item()


def collate(features, kind, seq_length, device="cpu"):
    """Tensors of `features` (dicts of lists and labels), padded: to `seq_length`, or to the longest (`MULTIPLE`)."""
    import torch

    if kind == "multiple_choice":
        return collate_choices(features, seq_length, device)
    longest = max(len(f["input_ids"]) for f in features)
    length = seq_length if kind == "classification" else min(-(-longest // MULTIPLE) * MULTIPLE, seq_length)
    out = {}
    for key in features[0]:
        if isinstance(features[0][key], list):
            out[key] = torch.full((len(features), length), -100 if key == "labels" else 0, dtype=torch.long)
            for row, f in enumerate(features):
                out[key][row, :len(f[key])] = torch.tensor(f[key])
        else:
            out[key] = torch.tensor([f[key] for f in features])
    out["attention_mask"] = (torch.arange(length)[None] < torch.tensor([len(f["input_ids"]) for f in features])[:, None])
    out["attention_mask"] = out["attention_mask"].long()
    return {k: v.to(device) for k, v in out.items()}


def collate_choices(features, seq_length, device="cpu"):
    """`(batch, choices, length)` tensors of multiple-choice features: every choice padded to the batch's longest."""
    import torch

    choices = {len(f["input_ids"]) for f in features}
    if len(choices) != 1:
        raise ValueError(f"transformers' multiple-choice heads take one number of choices per batch; found {choices}")
    longest = max(len(ids) for f in features for ids in f["input_ids"])
    length = min(-(-longest // MULTIPLE) * MULTIPLE, seq_length)
    shape = (len(features), choices.pop(), length)
    out = {key: torch.zeros(shape, dtype=torch.long) for key in ("input_ids", "token_type_ids", "attention_mask")}
    for row, f in enumerate(features):
        for column, ids in enumerate(f["input_ids"]):
            out["input_ids"][row, column, :len(ids)] = torch.tensor(ids)
            out["token_type_ids"][row, column, :len(ids)] = torch.tensor(f["token_type_ids"][column])
            out["attention_mask"][row, column, :len(ids)] = 1
    if "labels" in features[0]:
        out["labels"] = torch.tensor([f["labels"] for f in features])
    return {k: v.to(device) for k, v in out.items()}


def encode(kind, tokenizer, rows, recipe, labels=None, training=True):
    """`(features, meta)`: model inputs (and labels when `training`) per example or window, and what scoring needs."""
    length = recipe["seq_length"]
    if kind == "classification":
        pairs = [r[1] for r in rows] if rows and rows[0][1] is not None else None
        enc = tokenizer([r[0] for r in rows], pairs, truncation=True, max_length=length)
        return [dict(input_ids=enc["input_ids"][i], token_type_ids=enc["token_type_ids"][i],
                     **({"labels": r[2]} if training else {})) for i, r in enumerate(rows)], None
    if kind == "tagging":
        index = {label: i for i, label in enumerate(labels)}
        enc = tokenizer([list(words) for words, _ in rows], is_split_into_words=True, truncation=True, max_length=length)
        features, meta = [], []
        for i, (_, tags) in enumerate(rows):
            word_ids, previous, label_ids = enc.word_ids(i), None, []
            for w in word_ids:  # a word's tag on its first piece
                label_ids.append(index[tags[w]] if w is not None and w != previous else -100)
                previous = w
            features.append(dict(input_ids=enc["input_ids"][i], token_type_ids=enc["token_type_ids"][i],
                                 **({"labels": label_ids} if training else {})))
            meta.append(word_ids)
        return features, meta
    if kind == "multiple_choice":  # run_swag: the context, then `question choice`, for each choice
        features = []
        for context, question, choices, label in rows:
            enc = tokenizer([context] * len(choices), [f"{question} {c}".strip() for c in choices], truncation=True,
                            max_length=length)
            features.append(dict(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                                 **({"labels": label} if training else {})))
        return features, None
    return encode_qa(tokenizer, rows, recipe, training)


def encode_qa(tokenizer, rows, recipe, training):
    """run_qa's windows of `[qid, question, context, answers]` rows; meta: (row, context offsets) per window."""
    questions = [tokenizer.convert_tokens_to_string(tokenizer.tokenize(r[1].lstrip())[:recipe["max_query_length"]])
                 for r in rows]
    enc = tokenizer(questions, [r[2] for r in rows], truncation="only_second", max_length=recipe["seq_length"],
                    stride=recipe["doc_stride"], return_overflowing_tokens=True, return_offsets_mapping=True)
    features, meta = [], []
    for i, offsets in enumerate(enc["offset_mapping"]):
        row = enc["overflow_to_sample_mapping"][i]
        context = [o if s == 1 else None for o, s in zip(offsets, enc.sequence_ids(i))]
        feature = dict(input_ids=enc["input_ids"][i], token_type_ids=enc["token_type_ids"][i])
        if training:
            start = end = 0  # an answer outside the window: [CLS]
            if rows[row][3]:
                text, char_start = rows[row][3][0]
                char_end = char_start + len(text)
                inside = [p for p, o in enumerate(context) if o is not None]
                if context[inside[0]][0] <= char_start and context[inside[-1]][1] >= char_end:
                    start = next(p for p in inside if context[p][1] > char_start)
                    end = max(p for p in inside if context[p][0] < char_end)
            feature.update(start_positions=start, end_positions=end)
        features.append(feature)
        meta.append((row, context))
    return features, meta


def predict(model, kind, features, recipe, device="cpu"):
    """The model's outputs on `features`, in eval batches of 4 x batch_size: logits, or (start, end) logits."""
    import torch

    model.eval()
    out, step = [], 4 * recipe["batch_size"]
    with torch.no_grad():
        for first in range(0, len(features), step):
            result = model(**collate(features[first:first + step], kind, recipe["seq_length"], device))
            if kind == "span_qa":
                out += list(zip(result.start_logits.cpu().numpy(), result.end_logits.cpu().numpy()))
            else:
                out += list(result.logits.cpu().numpy())
    return out


def evaluate(model, kind, tokenizer, rows, recipe, labels=None, device="cpu"):
    """Metrics of `rows` (a split of the job), and `examples_per_second` of tokenizing, predicting and scoring."""
    start = time.time()
    features, meta = encode(kind, tokenizer, rows, recipe, labels, training=False)
    outputs = predict(model, kind, features, recipe, device)
    if kind in ("classification", "multiple_choice"):
        found, gold = [int(np.argmax(o)) for o in outputs], [r[-1] for r in rows]
        metrics = {"accuracy": float(np.mean([p == g for p, g in zip(found, gold)]))}
    elif kind == "tagging":
        metrics = score_tags(rows, meta, outputs, labels)
    else:
        metrics = score_spans(rows, meta, outputs, recipe)
    return dict(metrics, examples_per_second=len(rows) / (time.time() - start))


def score_tags(rows, meta, outputs, labels):
    """seqeval entity F1 and word accuracy; a word cut off by truncation is tagged O."""
    from seqeval.metrics import f1_score

    predicted = []
    for (words, _), word_ids, logits in zip(rows, meta, outputs):
        tags, previous, best = ["O"] * len(words), None, logits.argmax(-1)
        for position, w in enumerate(word_ids):
            if w is not None and w != previous:
                tags[w] = labels[best[position]]
            previous = w
        predicted.append(tags)
    true = [list(tags) for _, tags in rows]
    return {"entity_f1": float(f1_score(true, predicted)),
            "token_accuracy": float(np.mean([t == p for ts, ps in zip(true, predicted) for t, p in zip(ts, ps)]))}


def score_spans(rows, meta, outputs, recipe):
    """Official EM / F1 of the best span of each question: start + end logit over the n-best of every window."""
    from electra_tf.tasks.span_qa.metrics import squad_scores

    best, n = {}, recipe["n_best_size"]
    for (row, context), (starts, ends) in zip(meta, outputs):
        for s in np.argsort(starts)[::-1][:n]:
            for e in np.argsort(ends)[::-1][:n]:
                if s >= len(context) or e >= len(context) or context[s] is None or context[e] is None:
                    continue
                if e < s or e - s + 1 > recipe["max_answer_length"]:
                    continue
                if row not in best or starts[s] + ends[e] > best[row][0]:
                    best[row] = (starts[s] + ends[e], context[s][0], context[e][1])
    predictions = {r[0]: r[2][best[i][1]:best[i][2]] if i in best else "" for i, r in enumerate(rows)}
    scores = squad_scores({r[0]: [text for text, _ in r[3]] or [""] for r in rows}, predictions)
    return {"exact": scores["exact"], "f1": scores["f1"]}


def fit(model, kind, features, recipe, score_dev=None, device="cpu"):
    """The training loop; `keep=best` scores dev (`score_dev()`: metrics) each epoch and keeps the best epoch's weights."""
    batch_size, epochs = recipe["batch_size"], recipe["epochs"]
    steps = -(-len(features) // batch_size)
    adam, schedule = optimizer(model, recipe, steps * epochs)
    rng = np.random.RandomState(recipe["seed"])
    history, best, seconds = [], None, 0.0
    for epoch in range(epochs):
        model.train()
        start, losses, order = time.time(), [], rng.permutation(len(features))
        for step in range(steps):
            chunk = [features[i] for i in order[step * batch_size:(step + 1) * batch_size]]
            losses.append(train_step(model, adam, schedule, collate(chunk, kind, recipe["seq_length"], device),
                                     recipe["clip_norm"]))
        seconds += time.time() - start
        if recipe["keep"] == "best" and score_dev is not None and epochs > 1:
            history.append(score_dev())
            if best is None or history[-1][METRICS[kind]] > history[best[0]][METRICS[kind]]:
                best = (epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
    result = dict(train_seconds=round(seconds, 2), train_examples=len(features) * epochs, steps=steps * epochs,
                  examples_per_second=round(len(features) * epochs / seconds, 2), final_loss=float(np.mean(losses)),
                  dev_history=[h[METRICS[kind]] for h in history])
    if best is not None:
        model.load_state_dict(best[1])
        result["dev"] = history[best[0]]
    return result


def run(job, output_dir=None, phases=None, device="cpu"):
    """Fine-tunes and scores the job; with `output_dir`, saves model, tokenizer and `results.json` there.

    Returns:
        dict: `fit`'s figures, each split's metrics (`dev`, and every other split but train), the
        phases' seconds, the device and the library versions.
    """
    phases = phases or Phases()
    import torch
    import transformers

    phases.mark("imports")
    kind, recipe, labels, data = job["kind"], job["recipe"], job.get("labels"), job["data"]
    torch.manual_seed(recipe["seed"])
    torch.set_num_threads(os.cpu_count() or 1)
    tokenizer, model = load(kind, job["model_dir"], job["model_dir"], len(labels or []), device)
    phases.mark("load")
    features, _ = encode(kind, tokenizer, data["train"], recipe, labels)
    phases.mark("tokenize")

    def scores(split):
        return evaluate(model, kind, tokenizer, data[split], recipe, labels, device)

    result = fit(model, kind, features, recipe, lambda: scores("dev"), device)
    phases.seconds["train"] = result["train_seconds"]
    phases.mark("evaluate")  # dev after each epoch (keep=best), less the training seconds
    phases.seconds["evaluate"] = round(phases.seconds["evaluate"] - result["train_seconds"], 2)
    result.update({split: scores(split) for split in data if split != "train" and split not in result})
    phases.mark("evaluate")
    if output_dir:
        model.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)
        phases.mark("save")
    result.update(phases=phases.seconds, device=torch.cuda.get_device_name(device) if device != "cpu" else "cpu",
                  versions={"torch": torch.__version__, "transformers": transformers.__version__})
    if output_dir:
        with open(os.path.join(output_dir, "results.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


def main(argv=None):
    phases = Phases()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job", required=True, help="The job (`common.hf_job`) as a JSON file.")
    parser.add_argument("--output_dir", required=True, help="Model, tokenizer and results.json go here.")
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda).")
    args = parser.parse_args(argv)
    with open(args.job, encoding="utf-8") as f:
        job = json.load(f)
    os.makedirs(args.output_dir, exist_ok=True)
    phases.mark("read")
    run(job, args.output_dir, phases, args.device)


if __name__ == "__main__":
    main()
