r"""Pre-training objectives at equal compute, scored by fine-tuning (paper Table 5 / Figure 4 analog).

    python -m experiments.efficiency.efficiency --budget smoke --output_dir /tmp/efficiency_smoke
    python -m experiments.efficiency.efficiency --budget full --output_dir runs/efficiency \
        --corpus '../shared/data/corpus/*.txt.gz' --vocab ../shared/data/vocab/bert_uncased_vocab.txt \
        --tasks ../shared/data/tasks/movie_polarity,../shared/data/tasks/trec6,../shared/data/tasks/sms_spam \
        --seeds 3 --fractions 0.25,0.5,1.0

What it does, top to bottom (`main`):

1. Records: the embedded demo corpus (`--corpus demo`) or packed TFRecords
   built once from `--corpus` with `--vocab` into `output_dir/data`.
2. Pre-training: one discriminator-sized encoder (the `tiny` preset with the
   budget's `model` overrides) per objective, all for the same analytic
   training FLOPs (`electra_tf.training.flops`): the budget is
   `electra_steps` steps of "electra", and
   `steps(objective) = round(budget / (train_flops_per_sequence(objective) x batch))`.
   Warmup is `warmup_fraction` of each run's own steps. `--pretrain_seeds`
   repeats each objective's run from `config.seed + k` (initialisation,
   masking, data order); seed k > 0 is named `<objective>-s<k>`.
3. Budget fractions (Figure 4 analog) for `--curve_objectives`: ONE run per
   objective with its full LR schedule, checkpointed at the fraction steps;
   the discriminator of each checkpoint is exported afterwards. (Stopping and
   resuming with a larger `train_steps` would not do: the warmup/decay
   schedule follows `train_steps`, so each stage would decay to 0.)
4. A no-pre-training baseline: the same encoder, randomly initialised
   (seed `--baseline_seed`, recorded).
5. Guard: every encoder is checked against the live model that produced it
   before it is fine-tuned (sequence outputs on a fixed batch, dropout off,
   max |diff| <= `GUARD_ATOL`); a mismatch stops the run (`EncoderMismatch`).
6. Context probe (objectives with a discriminator head): every
   `--probe_every` updates, the discriminator's AUC on fixed held-out batches
   beside a token-identity-only baseline's (`token_identity_auc`). With
   `--holdout` (default) the last record file is kept out of pre-training for
   the guard batch and the probe.
7. Fine-tuning: every encoder x every task x every seed
   (`electra_tf.finetuning.trials.run_finetuning`, one trial per seed) at the
   budget's recipe; the last epoch is kept (`KEEP`: dev never picks an epoch).
   With `--learning_rates` / `--train_limits`, the full-budget encoders and the
   baseline are also fine-tuned at every (size, rate) of that grid, dev and the
   task's labelled `test.tsv` scored each time; per encoder, size and task the
   rate with the best mean dev score is chosen and test is read there
   (`select_rates`; test never chooses anything).
8. Report: `results.json` (every run), `results.md` (objective x task table
   beside the paper's Table 5, curve table, context probe, command, date,
   versions), `efficiency.png` (average dev score vs pre-training FLOPs) and
   `context.png` (windowed discriminator AUC vs the token-identity AUC).

In pieces: `--objectives electra,mlm` in one `--output_dir`, then `--objectives
electra_15,replace_mlm,all_tokens_mlm --merge FIRST_DIR/results.json` in another
writes one report of both; the settings must match (`MERGE_FIELDS`, checked
before any work), and the seeded no-pre-training baseline, run by both, shows
how far the two invocations agree (an encoder run again in both: how far it
moved). Grid runs merge run by run, so the rate grid can be run in parts too:
`--objectives= --learning_rates 1e-4,3e-4,1e-3,2e-3 --train_limits 2000,200`
(the baseline only), then `--objectives electra,mlm --pretrain_seeds 0` with
the same grid flags and `--merge` of the first, and so on. More pre-training seeds the same way:
`--objectives electra,mlm --pretrain_seeds 1,2 --merge FIRST_DIR/results.json`.

Resumable: each finished unit (records, pre-training run, exported encoder,
fine-tuning run) leaves a file that a re-run finds and skips; an interrupted
pre-training run resumes from its latest checkpoint. Numbers from `--budget
smoke` only prove the plumbing; they say nothing about the objectives.
"""

import datetime
import fractions
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

# Run from the repository root (`python -m experiments.efficiency.efficiency`): no sys.path edit.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from electra_tf import cli  # pylint: disable=wrong-import-position

# As every command: oneDNN's CPU kernels on a machine without a GPU (TensorFlow turns them on by
# itself only on AVX-512 CPUs), and TensorFlow's start-up and checkpoint-save lines left out.
cli.prepare_tensorflow()

from absl import app, flags, logging  # pylint: disable=wrong-import-position
import keras  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
import tensorflow as tf  # pylint: disable=wrong-import-position

from electra_tf.config import OBJECTIVES, get_config  # pylint: disable=wrong-import-position
from electra_tf.demo_data import resolve_data  # pylint: disable=wrong-import-position
from electra_tf.training.pretraining import train  # pylint: disable=wrong-import-position
from electra_tf.finetuning.config import with_current_keys  # pylint: disable=wrong-import-position
from electra_tf.finetuning.tasks import load_task  # pylint: disable=wrong-import-position
from electra_tf import run_files  # pylint: disable=wrong-import-position
from electra_tf.training import flops  # pylint: disable=wrong-import-position
from electra_tf.finetuning.trials import run_finetuning  # pylint: disable=wrong-import-position
from electra_tf import sources  # pylint: disable=wrong-import-position
from electra_tf.data.pretraining_dataset import list_files, pretraining_dataset  # pylint: disable=wrong-import-position

SHARED = os.path.join(REPO, "..", "shared", "data")

# --- Budgets: plain values. `model` overrides the `tiny` preset; steps are "electra" steps. ---
BUDGETS = {
    "smoke": dict(  # plumbing only: a few steps, one seed, 32 examples per task
        corpus="demo",
        model=dict(hidden_dim=128, num_layers=2, num_heads=2, intermediate_dim=512),
        electra_steps=4,  # the budget = 4 electra steps
        batch_size=8,
        learning_rate=5e-4,
        adam_bias_correction=False,  # the official AdamWeightDecayOptimizer (the `tiny` preset turns it on)
        warmup_fraction=0.1,
        fractions="0.5,1.0",
        seeds=1,
        finetune=dict(epochs=1, batch_size=16, learning_rate=2e-3, seq_length=64,
                      train_limit=32, dev_limit=32),
    ),
    # About 2 h on an idle 2-core machine, from CPU seconds measured on this code (vocab 30522, batch 32):
    # pre-training ~2.0 CPU s per electra-step of budget over the five objectives (electra 0.44 s/step,
    # mlm 0.31, electra_15 0.43, replace_mlm 0.54, all_tokens_mlm 1.26, times their equal-FLOPs
    # step ratios 1, 1.08, 1, 0.75, 0.30) -> ~5.9k CPU s; fine-tuning ~24 CPU s per run x 90 runs
    # (10 encoders x 3 tasks x 3 seeds) -> ~2.2k CPU s; set-up ~0.3k. ~8.4k CPU s at 1.2-1.6 busy cores.
    "full": dict(
        corpus=os.path.join(SHARED, "corpus", "*.txt.gz"),  # 57,645 sequences of 128 (7.9M word pieces)
        model=dict(hidden_dim=128, num_layers=2, num_heads=2, intermediate_dim=512),
        electra_steps=3000,  # x 32 = 96k sequences, ~1.7 passes over the corpus
        batch_size=32,
        # Peak LR of every objective. 1e-3 (the first runs) collapses the discriminator with the official
        # Adam (no bias correction) once warmup ends; experiments/efficiency/results/probe/ has the probe.
        learning_rate=1e-3,
        adam_bias_correction=False,  # the official AdamWeightDecayOptimizer (the `tiny` preset turns it on)
        warmup_fraction=0.1,
        fractions="0.25,0.5,1.0",
        seeds=3,
        # Tiny encoders need a larger fine-tuning LR than ELECTRA-Small's 3e-4: on trec6 (2000 examples,
        # 3 epochs) 2e-3 beat 1e-3 for both a random and a barely pre-trained encoder.
        finetune=dict(epochs=3, batch_size=32, learning_rate=2e-3, seq_length=64,
                      train_limit=2000, dev_limit=None),
    ),
}
# Paper Table 5 (GLUE dev, Base-sized); "mlm" is BERT. Section 7 of docs/electra-reference.md.
PAPER_TABLE5 = {"electra": 85.0, "all_tokens_mlm": 84.3, "replace_mlm": 82.4, "electra_15": 82.4, "mlm": 82.2}
BASELINE = "random_init"  # the encoder with no pre-training
GUARD_FILE = "guard.npz"  # beside each exported encoder: the guard batch and its live outputs
CONTEXT_FILE = "context_probe.json"  # in a pre-training model_dir: one record per probe window

FLAGS = flags.FLAGS
flags.DEFINE_enum("budget", "smoke", list(BUDGETS), "Size of the experiment.")
flags.DEFINE_string("output_dir", None, "Everything goes here; re-running with the same dir resumes.")
flags.DEFINE_string("corpus", None, "'demo' or a text glob (default: the budget's).")
flags.DEFINE_string("vocab", os.path.join(SHARED, "vocab", "bert_uncased_vocab.txt"),
                    "WordPiece vocabulary for --corpus (ignored for 'demo', which has its own).")
flags.DEFINE_list("tasks", [os.path.join(SHARED, "tasks", t) for t in ("movie_polarity", "trec6", "sms_spam")],
                  "Task folders (train/dev.tsv + labels.txt), comma-separated.")
flags.DEFINE_integer("seeds", None, "Fine-tuning seeds per encoder and task (default: the budget's).")
flags.DEFINE_string("fractions", None, "Budget fractions checkpointed for --curve_objectives (default: the budget's).")
flags.DEFINE_list("objectives", list(OBJECTIVES), "Pre-training objectives to compare.")
flags.DEFINE_list("curve_objectives", ["electra", "mlm"], "Objectives scored at every budget fraction.")
flags.DEFINE_list("pretrain_seeds", ["0"], "Pre-training seeds of every objective. Seed k trains from "
                  "config.seed + k (initialisation, masking, data order); k > 0 is reported as <objective>-s<k> "
                  "and scored at the full budget only.")
flags.DEFINE_integer("electra_steps", None, "Override the budget: this many electra steps of compute.")
flags.DEFINE_integer("train_limit", None, "Override the budget: fine-tuning examples per task.")
flags.DEFINE_list("learning_rates", [], "Fine-tuning rates to choose from on dev, per full-budget encoder and task "
                  "(e.g. 1e-4,3e-4,1e-3,2e-3); test is reported at the chosen rate. Default: the recipe's only.")
flags.DEFINE_list("train_limits", [], "Training-set sizes of that selection (e.g. 2000,200). Default: the recipe's.")
flags.DEFINE_integer("dev_limit", None, "Override the budget: dev examples per task.")
flags.DEFINE_integer("epochs", None, "Override the budget: fine-tuning epochs.")
flags.DEFINE_float("learning_rate", None, "Override the budget: peak pre-training learning rate.")
flags.DEFINE_string("demo_dir", os.path.join("~", ".cache", "electra_tf", "demo"),
                    "Where the embedded demo corpus is built (--corpus demo).")
flags.DEFINE_integer("baseline_seed", 0, "Initialisation seed of the no-pre-training baseline.")
flags.DEFINE_bool("holdout", True, "Keep the last record file out of pre-training, for the guard and the probe.")
flags.DEFINE_integer("probe_every", 100, "Updates per context-probe window (0: no probe).")
flags.DEFINE_integer("probe_batches", 32, "Held-out batches the context probe scores per window.")
flags.DEFINE_list("merge", [], "results.json files of earlier invocations with the same settings (e.g. other "
                  "--objectives in another --output_dir): their encoders join this report; encoders run here win.")


# === Small helpers ===

def read_json(path):
    """The JSON in `path`, or None when it is missing or truncated (an unfinished unit)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)


def parse_fractions(text):
    values = sorted({float(f) for f in text.split(",") if f.strip()} | {1.0})
    if values[0] <= 0 or values[-1] > 1:
        raise ValueError(f"Fractions must be in (0, 1]. Received: `--fractions={text}`")
    return values


def checkpoint_steps(steps, fractions_):
    """Save interval and the step of each fraction: multiples of the fractions' common divisor."""
    exact = [fractions.Fraction(f).limit_denominator(1000) for f in fractions_]
    unit = exact[0]
    for f in exact[1:]:
        unit = fractions.Fraction(math.gcd(unit.numerator * f.denominator, f.numerator * unit.denominator),
                                  unit.denominator * f.denominator)
    every = max(1, round(steps * unit))
    at = {}
    for f, e in zip(fractions_, exact):
        at[f] = steps if f == 1.0 else min(steps, round(e / unit) * every)
    return every, at


class Units:
    """Counts units run and skipped, and logs one progress line per unit."""

    def __init__(self):
        self.ran, self.skipped, self.start = 0, 0, time.time()

    def skip(self, name):
        self.skipped += 1
        logging.info("[skip] %s: already done", name)

    def done(self, name, seconds):
        self.ran += 1
        logging.info("[done] %s in %.1f s (%.0f s elapsed)", name, seconds, time.time() - self.start)


# === 1. Records ===

def prepare_data(corpus, vocab, output_dir, seq_length, units):
    """`(data glob, vocab file)`: the demo corpus, or TFRecords built once into output_dir/data."""
    if corpus == "demo":
        config = resolve_data(get_config("tiny", seq_length=seq_length), FLAGS.demo_dir)
        return config.data, config.vocab_file
    from electra_tf.pipelines.build_pretraining_data import build_pretraining_data

    data_dir = os.path.join(output_dir, "data")
    marker = os.path.join(data_dir, "done.json")
    if read_json(marker):
        units.skip("records")
    else:
        start = time.time()
        stats = build_pretraining_data(corpus, vocab, data_dir, max_seq_length=seq_length, num_shards=8, seed=0,
                                       pipeline_args=["--direct_running_mode=in_memory"])
        write_json(marker, dict(corpus=corpus, vocab=vocab, examples=stats["examples"],
                                seconds=time.time() - start))
        units.done(f"records ({stats['examples']} examples)", time.time() - start)
    return os.path.join(data_dir, "pretrain_data.tfrecord-*"), vocab


def split_holdout(data, holdout):
    """`(training files, held-out files)` as comma-separated globs: the last file held out when `holdout`.

    The held-out file gives the guard batch and the context probe's batches, so
    the probe scores text the discriminator did not train on. Without
    `holdout` (or with one file) both read the training records.
    """
    files = list_files(data)
    if not holdout or len(files) < 2:
        return data, data
    return ",".join(files[:-1]), files[-1]


def fixed_batches(patterns, config, count, batch_size=None):
    """The first `count` batches of `patterns` in file order (no shuffle): numpy dicts, the same every call."""
    dataset = pretraining_dataset(patterns, batch_size or config.batch_size, config.seq_length, config.vocab_size,
                                  shuffle_buffer=1, seed=0, repeat=False)
    found = [{k: v.numpy() for k, v in b.items()} for b in dataset.take(count)]
    if len(found) < count:
        raise ValueError(f"{patterns} holds fewer than {count} batches of {batch_size or config.batch_size}.")
    return found


# === Guard: every fine-tuned encoder equals the live model that produced it ===

GUARD_ATOL = 1e-5  # max |diff| of float32 sequence outputs; a restore that misses any variable is >> 1e-3
GUARD_DIR = "guard"  # in a pre-training model_dir: step-N.npz, the live discriminator's outputs at step N
GUARD_SEQUENCES = 8


class EncoderMismatch(RuntimeError):
    """An encoder about to be fine-tuned is not the model that pre-training produced."""


def encoder_outputs(encoder, batch):
    """Sequence output of `encoder` on `batch`, dropout off."""
    return np.asarray(encoder(batch, training=False), dtype=np.float32)


def write_reference(path, batch, outputs, **meta):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        np.savez(f, outputs=outputs, meta=json.dumps(meta), **batch)
    os.replace(path + ".tmp", path)


def read_reference(path):
    """`(batch, outputs, meta)` written by `write_reference`; FileNotFoundError when absent."""
    with np.load(path) as z:
        batch = {k: z[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        return batch, z["outputs"], json.loads(str(z["meta"]))


def check_encoder(encoder, batch, reference, name, atol=GUARD_ATOL):
    """Raises `EncoderMismatch` unless `encoder`'s outputs on `batch` are within `atol` of `reference`.

    Returns:
        float, the max |diff|.
    """
    found = encoder_outputs(encoder, batch)
    if found.shape != reference.shape:
        raise EncoderMismatch(f"{name}: outputs of shape {found.shape}, the pre-trained model's {reference.shape}.")
    diff = float(np.max(np.abs(found - reference)))
    if not diff <= atol:  # also catches NaN
        raise EncoderMismatch(
            f"{name} is not the model pre-training produced: max |output diff| {diff:.3g} > {atol:g} on the "
            f"guard batch (dropout off). The restore or export lost weights; refusing to fine-tune it."
        )
    return diff


class RecordLiveOutputs(keras.callbacks.Callback):
    """Writes the live discriminator's outputs on the guard batch at each of `steps` (`step-N.npz`).

    Why a callback: a budget-fraction checkpoint is written mid-run, so the only
    live model that ever had its weights is the training model at that step.
    `CheckpointEvery` saves in `on_train_batch_end` of the same update, so the
    outputs recorded here come from the very weights that checkpoint holds
    (no update runs between the two callbacks). They are written to files, so
    a resumed pre-training still has the references of the steps before it.
    """

    def __init__(self, steps, batch, directory):
        super().__init__()
        self.steps, self.batch, self.directory = set(steps), batch, directory

    def path(self, step):
        return os.path.join(self.directory, f"step-{step}.npz")

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step in self.steps and not os.path.exists(self.path(step)):
            write_reference(self.path(step), self.batch, encoder_outputs(self.model.discriminator, self.batch),
                            step=step, source="live pre-training model")


# === Context probe: does the discriminator beat a token-identity-only score? ===

PROBE_SEED = 13  # masking/sampling stream of the probe batches: the same positions every window


def auc(scores, labels):
    """Area under the ROC curve (Mann-Whitney, ties count one half); NaN without both classes."""
    scores = np.asarray(scores, np.float64).ravel()
    labels = np.asarray(labels).ravel() > 0.5
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts + 1  # 1-based rank of each distinct score's first occurrence
    ranks = (first + (counts - 1) / 2.0)[inverse]  # tied scores share their average rank
    return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def token_identity_scores(train_ids, train_labels, eval_ids, smoothing=1.0):
    """Log-odds of "replaced" per token id, fitted on `(train_ids, train_labels)`, for `eval_ids`.

    `log((r + s p) / (n - r + s (1 - p)))` for a token seen `n` times, `r` of
    them replaced; `p` is the overall replaced rate and `s` the smoothing
    (pseudo-counts). An unseen token scores the prior `log(p / (1 - p))`.
    """
    train_ids, train_labels = np.asarray(train_ids).ravel(), np.asarray(train_labels, np.float64).ravel()
    p = float(np.clip(train_labels.mean(), 1e-6, 1 - 1e-6))
    ids, inverse = np.unique(train_ids, return_inverse=True)
    seen = np.bincount(inverse).astype(np.float64)
    replaced = np.bincount(inverse, weights=train_labels)
    log_odds = np.log((replaced + smoothing * p) / (seen - replaced + smoothing * (1 - p)))
    eval_ids = np.asarray(eval_ids).ravel()
    at = np.clip(np.searchsorted(ids, eval_ids), 0, len(ids) - 1)
    return np.where(ids[at] == eval_ids, log_odds[at], np.log(p / (1 - p)))


def token_identity_auc(ids, labels, folds, smoothing=1.0):
    """AUC of the token-identity score, cross-fitted: each fold scored by a table fitted on the others.

    Out-of-fold, because fitting and scoring the same samples leaks labels
    through rare tokens (a token seen once scores its own label) and flatters
    the baseline; the folds are the same window's batches, so the table sees
    the generator as it is at that step (fitting on the previous window would
    score a generator that has since moved on). With one fold per batch the
    table is fitted on all but one batch: as much data as the window has.
    """
    ids, labels, folds = (np.asarray(a).ravel() for a in (ids, labels, folds))
    scores = np.empty(len(ids))
    for fold in np.unique(folds):
        held = folds == fold
        scores[held] = token_identity_scores(ids[~held], labels[~held], ids[held], smoothing)
    return auc(scores, labels)


def probe_window(pretrainer, batches, step, compute=None):
    """Discriminator AUC and token-identity AUCs on `batches` (dropout off, fixed masking seed)."""
    compute = compute or (lambda b, s: pretrainer.compute_losses(b, s, training=False))
    parts = {k: [] for k in ("disc_ids", "disc_labels", "disc_logits", "disc_weights", "fold")}
    for i, batch in enumerate(batches):
        out = compute(batch, tf.constant([PROBE_SEED, i], tf.int64))
        keep = np.asarray(out.disc_weights).ravel() > 0
        for key in ("disc_ids", "disc_labels", "disc_logits"):
            parts[key].append(np.asarray(getattr(out, key)).ravel()[keep])
        parts["fold"].append(np.full(int(keep.sum()), i))
    ids, labels, logits, folds = (np.concatenate(parts[k]) for k in ("disc_ids", "disc_labels", "disc_logits",
                                                                      "fold"))
    # token_auc: leave one batch out. token_auc_half: fitted on half the batches; if it is much below
    # token_auc, the table is still data-starved and token_auc understates a token-only score.
    # token_auc_in_sample: fitted on the scored samples themselves, an optimistic bound.
    return dict(step=step, disc_auc=auc(logits, labels), token_auc=token_identity_auc(ids, labels, folds),
                token_auc_half=token_identity_auc(ids, labels, folds % 2),
                token_auc_in_sample=auc(token_identity_scores(ids, labels, ids), labels),
                replaced_fraction=float(labels.mean()), tokens=int(len(labels)))


class ContextProbe(keras.callbacks.Callback):
    """Every `every` updates (and at the end): `probe_window` on fixed held-out batches, appended to `path`.

    A window is a point in training, scored on the same held-out batches each
    time (not Keras' cumulative per-epoch metric). Records already in `path`
    are kept, so a resumed run continues the curve.
    """

    def __init__(self, batches, every, path):
        super().__init__()
        self.batches, self.every, self.path = batches, every, path
        self.records = read_json(path) or []
        self._compute = None

    def probe(self, step):
        if any(r["step"] == step for r in self.records):
            return
        if self._compute is None:
            self._compute = tf.function(  # plain Python branching only: no AutoGraph needed
                lambda b, s: self.model.compute_losses(b, s, training=False), autograph=False)
        self.records.append(probe_window(self.model, self.batches, step, self._compute))
        write_json(self.path, self.records)

    def on_train_begin(self, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step == 0:
            self.probe(0)

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            self.probe(step)

    def on_train_end(self, logs=None):
        self.probe(int(self.model.optimizer.iterations.numpy()))


# === 2. Equal-FLOPs pre-training ===

def plan_pretraining(base_config, objectives, electra_steps):
    """Steps, FLOPs per sequence and breakdown of each objective for the budget of `electra_steps`."""
    batch = base_config.batch_size
    budget = electra_steps * flops.train_flops_per_sequence(base_config.replace(objective="electra")) * batch
    plan = {}
    for objective in objectives:
        config = base_config.replace(objective=objective)
        per_sequence = flops.train_flops_per_sequence(config)
        steps = max(1, round(budget / (per_sequence * batch)))
        plan[objective] = dict(steps=steps, flops_per_sequence=per_sequence, batch_size=batch,
                               flops=steps * per_sequence * batch, budget_flops=budget,
                               breakdown=flops.breakdown(config))
    return plan


def log_plan(plan):
    if not plan:  # `--objectives=`: the no-pre-training baseline only
        logging.info("No pre-training run (--objectives is empty): the no-pre-training baseline only.")
        return
    parts = [k for k in next(iter(plan.values()))["breakdown"] if k not in ("forward", "train")]
    logging.info("Equal-FLOPs plan (budget %.3g training FLOPs; forward GFLOP per sequence by part):",
                 next(iter(plan.values()))["budget_flops"])
    logging.info("%-15s %6s %10s  %s", "objective", "steps", "train GF/seq",
                 "  ".join(p.replace("embeddings_project", "proj") for p in parts))
    for objective, p in plan.items():
        logging.info("%-15s %6d %10.3f  %s", objective, p["steps"], p["flops_per_sequence"] / 1e9,
                     "  ".join(f"{p['breakdown'][k] / 1e9:.3f}" for k in parts))


def run_name(objective, pretrain_seed):
    """`electra` for pre-training seed 0 (the reports before `--pretrain_seeds` hold only it), else `electra-s1`."""
    return objective if pretrain_seed == 0 else f"{objective}-s{pretrain_seed}"


def run_seed(name):
    """The pre-training seed of a `run_name` (or of an encoder name such as `electra-s1@0.5`)."""
    tail = name.split("@")[0].rpartition("-s")[2] if "-s" in name else "0"
    return int(tail)


def objective_of(name):
    """The objective of a `run_name` or encoder name: `electra-s1@0.5` -> `electra`."""
    return name.split("@")[0].split("-s")[0]


def pretrain(name, config, output_dir, curve_fractions, units, guard_batch, probe_batches=(), probe_every=0):
    """Runs (or resumes, or skips) one pre-training run (`run_name`); exports its encoders, each guarded.

    Args:
        guard_batch: dict of numpy arrays: the batch `RecordLiveOutputs` and the guard compare on.
        probe_batches: list of such batches for `ContextProbe` (discriminator-head objectives only).
        probe_every: int. Updates per probe window; 0 disables the probe.

    Returns:
        dict encoder name -> {objective, fraction, step, flops, path, guard}.
    """
    steps = config.train_steps
    if curve_fractions:
        every, at = checkpoint_steps(steps, curve_fractions)
    else:
        every, at = max(1, steps // 4), {1.0: steps}  # checkpoints only for resuming
    keep = math.ceil(steps / every) + 2 if curve_fractions else 2  # the fraction checkpoints must all survive
    config = config.replace(save_checkpoints_steps=every, keep_checkpoint_max=keep)
    objective, pretrain_seed = config.objective, run_seed(name)
    model_dir = os.path.join(output_dir, "pretrain", name)
    guard_dir = os.path.join(model_dir, GUARD_DIR)
    marker = os.path.join(model_dir, "done.json")
    record = read_json(marker)
    live = None  # the model `train` returns, when it ran in this invocation
    if record:
        units.skip(f"pretrain {name}")
    else:
        logging.info("Pre-training %s for %d steps (checkpoints every %d, seed %d) in %s", name, steps, every,
                     config.seed, model_dir)
        start, cpu = time.time(), time.process_time()
        extra = [RecordLiveOutputs(at.values(), guard_batch, guard_dir)]
        if probe_every and probe_batches and OBJECTIVES[objective].detects_replacements:
            extra.append(ContextProbe(probe_batches, probe_every, os.path.join(model_dir, CONTEXT_FILE)))
        keras.utils.set_random_seed(config.seed)  # the initialisation; masking and data use `config.seed` too
        live = train(config, model_dir, verbose=2, extra_callbacks=extra)
        reached = int(live.optimizer.iterations.numpy())
        if reached < steps:  # preempted (SIGTERM): `train` saved and returned; never mark the run done
            logging.warning("Pre-training %s stopped at step %d of %d; re-run the same command to resume.",
                            name, reached, steps)
            sys.exit(cli.PREEMPTED_EXIT)
        record = dict(objective=objective, pretrain_seed=pretrain_seed, config_seed=config.seed, steps=steps,
                      seconds=time.time() - start, cpu_seconds=time.process_time() - cpu)
        write_json(marker, record)
        units.done(f"pretrain {name} ({steps} steps)", record["seconds"])

    per_step = flops.train_flops_per_sequence(config) * config.batch_size
    encoders = {}
    for fraction, step in sorted(at.items()):
        encoder = name if fraction == 1.0 else f"{name}@{fraction:g}"
        directory = os.path.join(output_dir, "encoders", encoder.replace("@", "_f"))
        info = dict(objective=objective, pretrain_seed=pretrain_seed, fraction=fraction, step=step,
                    flops=step * per_step, path=os.path.join(directory, run_files.ENCODER_FILE))
        found = read_json(os.path.join(directory, "encoder.json"))
        if found:
            units.skip(f"export {encoder}")
            info = found
        else:
            start = time.time()
            prefix = os.path.join(model_dir, run_files.CHECKPOINT_DIR, f"ckpt-{step}")
            if not tf.io.gfile.exists(prefix + ".index"):
                raise FileNotFoundError(f"No checkpoint at step {step} for {encoder}: {prefix}")
            batch, reference, source = live_reference(live, step, steps, guard_dir, encoder)
            pretrainer, _ = sources.restore_pretrainer(model_dir, prefix)
            diff = check_encoder(pretrainer.discriminator, batch, reference, f"{encoder} restored from {prefix}")
            sources.save_encoder(pretrainer.discriminator, directory, os.path.join(model_dir, run_files.VOCAB_FILE))
            write_reference(os.path.join(directory, GUARD_FILE), batch, reference, step=step, source=source)
            info["restore_max_diff"] = diff
            write_json(os.path.join(directory, "encoder.json"), info)
            units.done(f"export {encoder} (step {step}; restored = {source}, max |diff| {diff:.2g})",
                       time.time() - start)
        encoders[encoder] = info
    return encoders


def live_reference(live, step, steps, guard_dir, name):
    """`(batch, outputs, source)`: what the encoder exported at `step` must reproduce.

    The final step: the model `train` returned, when it ran in this invocation.
    Otherwise the outputs `RecordLiveOutputs` recorded from the training model
    at that step.
    """
    path = os.path.join(guard_dir, f"step-{step}.npz")
    try:
        batch, outputs, meta = read_reference(path)
    except FileNotFoundError:
        raise EncoderMismatch(
            f"No live reference for {name} at step {step} ({path}): this pre-training ran without the guard "
            "(or stopped between checkpoint and record). Use a new --output_dir."
        ) from None
    if live is not None and step == steps:
        outputs = encoder_outputs(live.discriminator, batch)
        return batch, outputs, "the model train() returned"
    return batch, outputs, meta["source"] + f" at step {meta['step']}"


def random_encoder(config, output_dir, units, guard_batch, seed):
    """The no-pre-training baseline: the discriminator as initialised with `keras.utils.set_random_seed(seed)`."""
    directory = os.path.join(output_dir, "encoders", BASELINE)
    info = dict(objective=BASELINE, fraction=0.0, step=0, flops=0.0,
                path=os.path.join(directory, run_files.ENCODER_FILE), seed=seed)
    found = read_json(os.path.join(directory, "encoder.json"))
    if found:
        units.skip(f"export {BASELINE}")
        return found
    encoder = sources.untrained_encoder(config.replace(objective="mlm"), seed)
    outputs = encoder_outputs(encoder, guard_batch)
    sources.save_encoder(encoder, directory, config.vocab_file)
    write_reference(os.path.join(directory, GUARD_FILE), guard_batch, outputs, step=0,
                    source=f"the random initialisation (seed {seed})")
    write_json(os.path.join(directory, "encoder.json"), info)
    units.done(f"export {BASELINE}", 0.0)
    return info


# === 3. Fine-tuning ===

KEEP = "last"  # fixed epochs: dev chooses the learning rate only, never the epoch (`FinetuneConfig.keep`)


def grid_points(learning_rates, train_limits, hparams):
    """`[(train_limit, learning_rate)]` of the selection grid, without the recipe's own point (`hparams`)."""
    base = (hparams["train_limit"], hparams["learning_rate"])
    points = [(int(n), float(lr)) for n in (train_limits or [base[0]]) for lr in (learning_rates or [base[1]])]
    return [p for p in dict.fromkeys(points) if p != base]


def finetune(encoders, task_dirs, seeds, hparams, output_dir, units, points=()):
    """Every encoder x task x seed at the recipe (`hparams`); full-budget encoders also at every grid point.

    Returns `(runs, grid_runs)`: lists of run records, the recipe's and the
    other grid points' (`points`, pairs of training examples and learning rate).
    """
    runs, grid_runs = [], []
    for name, info in encoders.items():
        guard_encoder(name, info)
        final = info["fraction"] in (0.0, 1.0)
        for task_dir in task_dirs:
            task = os.path.basename(os.path.normpath(task_dir))
            spec = load_task(task, task_dir)
            for seed in range(seeds):
                run_dir = os.path.join(output_dir, "finetune", name.replace("@", "_f"), task, f"seed{seed}")
                runs.append(finetune_run(name, info, spec, task_dir, seed, hparams, run_dir, units))
                for train_limit, learning_rate in points if final else ():
                    run_dir = os.path.join(output_dir, "finetune_grid", f"n{train_limit}_lr{learning_rate:g}",
                                           name.replace("@", "_f"), task, f"seed{seed}")
                    grid_runs.append(finetune_run(name, info, spec, task_dir, seed,
                                                  dict(hparams, train_limit=train_limit, learning_rate=learning_rate),
                                                  run_dir, units))
    return runs, grid_runs


def finetune_run(name, info, spec, task_dir, seed, hparams, run_dir, units):
    """One fine-tuning run (or its finished result in `run_dir`): its record, dev and test scores."""
    task = os.path.basename(os.path.normpath(task_dir))
    unit = f"finetune {name}/{task}/seed{seed} (n {hparams['train_limit']}, lr {hparams['learning_rate']:g})"
    result = read_json(os.path.join(run_dir, "results.json"))
    if result:
        units.skip(unit)
    else:
        start, cpu = time.time(), time.process_time()
        result = run_finetuning(spec, task_dir, info["path"], run_dir, num_trials=1, seed=seed, verbose=0,
                                keep=KEEP, **hparams)
        if result is None:  # preempted (SIGTERM): its checkpoint is saved; no result, so the unit stays to do
            logging.warning("Fine-tuning %s stopped; re-run the same command to resume.", unit)
            sys.exit(cli.PREEMPTED_EXIT)
        write_json(os.path.join(run_dir, "timing.json"),
                   dict(seconds=time.time() - start, cpu_seconds=time.process_time() - cpu))
        # The classifier is not needed here and is the bulk of the disk use.
        for leftover in (run_files.CLASSIFIER_FILE, run_files.VOCAB_FILE):
            if os.path.exists(os.path.join(run_dir, leftover)):
                os.remove(os.path.join(run_dir, leftover))
        trial = result["trials"][0]
        units.done(f"{unit}: dev {spec.metric} {trial['dev'][spec.metric]:.4f}, test "
                   + (f"{trial['test'][spec.metric]:.4f}" if "test" in trial else "-"), trial["train_seconds"])
    trial = result["trials"][0]
    timing = read_json(os.path.join(run_dir, "timing.json")) or {}
    metric = result["metric"]
    return dict(encoder=name, objective=info["objective"], fraction=info["fraction"],
                pretrain_seed=info.get("pretrain_seed", 0), flops=info["flops"], task=task, seed=seed, metric=metric,
                learning_rate=hparams["learning_rate"], train_limit=hparams["train_limit"],
                score=trial["dev"][metric], dev=trial["dev"],
                test_score=trial["test"][metric] if "test" in trial else None, test=trial.get("test"),
                train_seconds=trial["train_seconds"], seconds=timing.get("seconds"),
                cpu_seconds=timing.get("cpu_seconds"), majority_class_accuracy=result["majority_class_accuracy"])


def guard_encoder(name, info):
    """Loads `info["path"]` as fine-tuning does and checks it against its live reference; records the result."""
    directory = os.path.dirname(info["path"])
    try:
        batch, reference, meta = read_reference(os.path.join(directory, GUARD_FILE))
    except FileNotFoundError:
        raise EncoderMismatch(f"No guard reference beside {info['path']}: exported without the guard. "
                              "Use a new --output_dir.") from None
    encoder, _ = sources.load_init(info["path"])
    diff = check_encoder(encoder, batch, reference, f"encoder {name} ({info['path']})")
    info["guard"] = dict(max_abs_diff=diff, atol=GUARD_ATOL, reference=meta["source"], step=meta["step"])
    logging.info("[guard] %s equals %s: max |diff| %.2g", name, meta["source"], diff)


def summarize(runs, tasks, seeds):
    """Per encoder: task means over seeds, their average, and median/spread of per-seed averages (x100)."""
    summary = {}
    for name in dict.fromkeys(r["encoder"] for r in runs):
        mine = [r for r in runs if r["encoder"] == name]
        score = {(r["task"], r["seed"]): 100 * r["score"] for r in mine}
        per_task = {t: dict(mean=float(np.mean([score[t, s] for s in range(seeds)])),
                            std=float(np.std([score[t, s] for s in range(seeds)])))
                    for t in tasks}
        per_seed = [float(np.mean([score[t, s] for t in tasks])) for s in range(seeds)]
        summary[name] = dict(objective=mine[0]["objective"], fraction=mine[0]["fraction"], flops=mine[0]["flops"],
                             pretrain_seed=mine[0].get("pretrain_seed", 0),
                             tasks=per_task, average=float(np.mean(per_seed)),
                             median=float(statistics.median(per_seed)), spread=float(np.std(per_seed)),
                             min=min(per_seed), max=max(per_seed), per_seed_average=per_seed)
    return summary


def select_rates(runs, tasks, seeds, learning_rates):
    """The learning rate chosen on dev per full-budget encoder, data size and task, and dev/test there.

    For each encoder (fraction 1 or the baseline) and training-set size whose
    runs cover every task x rate in `learning_rates` x fine-tuning seed, the
    rate with the best mean dev score over seeds is chosen per task (ties: the
    smaller rate); the test mean over the same seeds is read at that rate.
    Returns `{train_limit: {encoder: {objective, pretrain_seed, tasks: {task:
    {rate, dev, test, grid: {rate: {dev, test}}}}, dev, test}}}` (x100; `dev`
    and `test` averaged over tasks); incomplete encoders are left out.
    """
    score = {}
    for r in runs:
        if r["fraction"] in (0.0, 1.0):
            key = (r["train_limit"], r["encoder"], r["task"], float(r["learning_rate"]))
            score.setdefault(key, {})[r["seed"]] = r
    selection = {}
    for train_limit in sorted({k[0] for k in score}, reverse=True):
        for name in dict.fromkeys(k[1] for k in score if k[0] == train_limit):
            cells = {(t, lr): score.get((train_limit, name, t, float(lr)), {}) for t in tasks for lr in learning_rates}
            if any(sorted(c) != list(range(seeds)) or any(r.get("test_score") is None for r in c.values())
                   for c in cells.values()):
                continue
            per_task = {}
            for t in tasks:
                grid = {float(lr): dict(dev=100 * float(np.mean([r["score"] for r in cells[t, lr].values()])),
                                        test=100 * float(np.mean([r["test_score"] for r in cells[t, lr].values()])))
                        for lr in sorted(learning_rates, key=float)}
                rate = max(grid, key=lambda lr: (grid[lr]["dev"], -lr))
                per_task[t] = dict(rate=rate, dev=grid[rate]["dev"], test=grid[rate]["test"], grid=grid)
            some = next(iter(cells[tasks[0], learning_rates[0]].values()))
            selection.setdefault(train_limit, {})[name] = dict(
                objective=some["objective"], pretrain_seed=some.get("pretrain_seed", 0), tasks=per_task,
                dev=float(np.mean([per_task[t]["dev"] for t in tasks])),
                test=float(np.mean([per_task[t]["test"] for t in tasks])))
    return selection


def objective_rows(selection, recipe_rate):
    """Per data size and objective: chosen rates, dev/test averages at them and at `recipe_rate`.

    Averages are over tasks per encoder, then mean ± std over the objective's
    pre-training seeds (`recipe` is None when `recipe_rate` is not in the grid).
    """
    def spread(values):
        return dict(mean=float(np.mean(values)), std=float(np.std(values)))

    rows = {}
    for train_limit, encoders in selection.items():
        by_objective = {}
        for name, e in encoders.items():
            by_objective.setdefault(e["objective"], []).append((e["pretrain_seed"], name, e))
        for objective in sorted(by_objective, key=row_rank):
            found = [e for _, _, e in sorted(by_objective[objective], key=lambda x: x[:2])]
            tasks = list(found[0]["tasks"])
            recipe = None
            if all(float(recipe_rate) in e["tasks"][t]["grid"] for e in found for t in tasks):
                recipe = {split: spread([np.mean([e["tasks"][t]["grid"][float(recipe_rate)][split] for t in tasks])
                                         for e in found]) for split in ("dev", "test")}
            rows.setdefault(train_limit, {})[objective] = dict(
                encoders=[name for _, name, _ in sorted(by_objective[objective], key=lambda x: x[:2])],
                rates={t: [e["tasks"][t]["rate"] for e in found] for t in tasks},
                dev=spread([e["dev"] for e in found]), test=spread([e["test"] for e in found]), recipe=recipe)
    return rows


# Fields two invocations must share for their runs to sit in one table (`--merge`).
MERGE_FIELDS = ("budget_name", "budget", "finetune", "finetune_keep", "seeds", "tasks", "baseline_seed", "guard_atol",
                "context_probe")
# A field older reports lack, and the value they ran with (fine-tuning kept the last epoch before `--keep`).
MERGE_DEFAULTS = {"finetune_keep": "last"}


class MergeMismatch(ValueError):
    """A `--merge` report was produced with other settings than this invocation."""


def comparable(report, field):
    value = json.loads(json.dumps(report.get(field, MERGE_DEFAULTS.get(field))))
    if field == "budget":  # the corpus glob may be spelled through another checkout's (or a link's) ../shared
        value["corpus"] = os.path.realpath(value["corpus"])
    if field == "finetune":  # a report of an earlier version says max_seq_length
        value = with_current_keys(value)
    return value


def read_merges(paths, expected):
    """`[(path, report)]` for `--merge`, each checked against `expected` (this invocation's `MERGE_FIELDS`)."""
    merges = []
    for path in paths:
        other = read_json(path)
        if other is None:
            raise MergeMismatch(f"--merge {path}: no readable results.json there.")
        check_mergeable(path, other, expected)
        merges.append((path, other))
    return merges


def check_mergeable(path, other, expected):
    for field in MERGE_FIELDS:
        if (field not in other and field not in MERGE_DEFAULTS) or comparable(other, field) != comparable(expected, field):
            raise MergeMismatch(f"--merge {path}: field '{field}' is {comparable(other, field)!r} there but "
                                f"{expected[field]!r} here; only runs with the same settings share a table.")


def upgrade_report(report):
    """Fills in place the fields a report written before the rate grid lacks, with the values it ran with."""
    recipe = report["finetune"]
    for r in report["runs"]:  # the recipe's point; no test score was kept
        r.setdefault("train_limit", recipe["train_limit"])
        r.setdefault("learning_rate", recipe["learning_rate"])
        r.setdefault("test_score", None)
    report.setdefault("grid_runs", [])
    report.setdefault("learning_rates", [recipe["learning_rate"]])
    report.setdefault("train_limits", [recipe["train_limit"]])
    report.setdefault("finetune_keep", MERGE_DEFAULTS["finetune_keep"])
    return report


def merge_reports(report, merges):
    """Adds to `report` (in place) the encoders of each `(path, other)` in `merges` that `report` lacks.

    Raises `MergeMismatch` naming the file and field when a setting in `MERGE_FIELDS` differs. The
    no-pre-training baseline (same seed, so the same encoder) is in every report: the largest difference
    of its scores here and there is kept as `merged[i]["baseline_max_abs_diff"]`, a check that the
    invocations agree.
    """
    report.setdefault("merged", [])
    def baseline(runs):
        return {(r["task"], r["seed"]): r["score"] for r in runs if r["objective"] == BASELINE}

    def scores(runs, names):
        return {(r["encoder"], r["task"], r["seed"]): r["score"] for r in runs if r["encoder"] in names}

    upgrade_report(report)
    for path, other in merges:
        check_mergeable(path, other, report)
        upgrade_report(other)
        new = [name for name in other["encoders"] if name not in report["encoders"]]
        both = [name for name in other["encoders"] if name in report["encoders"] and name != BASELINE]
        here, there = baseline(report["runs"]), baseline(other["runs"])
        again, before = scores(report["runs"], both), scores(other["runs"], both)
        report["merged"].append(dict(
            path=path, command=other["command"], date=other["date"], versions=other["versions"],
            seconds=other["seconds"], encoders=new,
            baseline_max_abs_diff=max((abs(here[k] - there[k]) for k in here.keys() & there.keys()), default=None),
            rerun=both, rerun_max_abs_diff=max((abs(again[k] - before[k]) for k in again.keys() & before.keys()),
                                               default=None)))
        report["merged"] += other.get("merged", [])
        for name in new:
            report["encoders"][name] = other["encoders"][name]
        report["runs"] += [r for r in other["runs"] if r["encoder"] in new]
        have = {run_key(r) for r in report["grid_runs"]}
        report["grid_runs"] += [r for r in other.get("grid_runs", []) if run_key(r) not in have]
        for objective, p in other["pretraining"].items():
            mine = report["pretraining"].setdefault(objective, p)
            for name, run in p.get("runs", {}).items():
                mine.setdefault("runs", {}).setdefault(name, run)
        for name, records in other["context"].items():
            report["context"].setdefault(name, records)
        for field in ("learning_rates", "train_limits"):  # the grid: every rate and size of any invocation
            report[field] = sorted(set(report[field]) | set(other.get(field, [])), reverse=field == "train_limits")
        report["objectives"] = list(dict.fromkeys(report["objectives"] + other["objectives"]))
        report["curve_objectives"] = list(dict.fromkeys(report["curve_objectives"] + other["curve_objectives"]))
    report["runs"].sort(key=lambda r: row_rank(r["objective"], r.get("pretrain_seed", 0)))  # stable
    report["grid_runs"].sort(key=lambda r: row_rank(r["objective"], r.get("pretrain_seed", 0)))
    report["pretraining"] = in_row_order(report["pretraining"])
    report["context"] = in_row_order(report["context"])
    return report


def run_key(r):
    """A fine-tuning run's identity across invocations: encoder, task, seed, training examples, rate."""
    return r["encoder"], r["task"], r["seed"], r["train_limit"], float(r["learning_rate"])


def row_rank(objective, pretrain_seed=0):
    """Report rows: the baseline, then `OBJECTIVES` order, then pre-training seed."""
    return ((BASELINE, *OBJECTIVES).index(objective), pretrain_seed)


def in_row_order(by_name):
    """`by_name` (keyed by objective or run name) in `row_rank` order; results.json stores keys sorted."""
    return dict(sorted(by_name.items(), key=lambda item: row_rank(objective_of(item[0]), run_seed(item[0]))))


# === 4. Report ===

def versions():
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        commit += " (uncommitted changes)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return dict(python=platform.python_version(), tensorflow=tf.__version__, keras=keras.__version__,
                numpy=np.__version__, platform=platform.platform(), cpus=os.cpu_count(), electra_tf=commit)


def pretrain_seed_lines(summary):
    """Per objective with several pre-training seeds: their full-budget averages, mean and std over them."""
    finals = {}
    for name, s in summary.items():
        if s["fraction"] == 1.0:
            finals.setdefault(s["objective"], []).append((s.get("pretrain_seed", 0), s["average"]))
    lines = []
    for objective, scores in finals.items():
        if len(scores) > 1:
            averages = [a for _, a in sorted(scores)]
            lines.append(f"- {objective}, {len(averages)} pre-training seeds ("
                         + ", ".join(f"{k}: {a:.1f}" for k, a in sorted(scores)) + f"): Avg {np.mean(averages):.1f}"
                         f" ± {np.std(averages):.1f} (std over pre-training seeds of the fine-tuning averages)")
    return ["", "Over pre-training seeds (`--pretrain_seeds`, full budget):", "", *lines] if lines else []


def selection_markdown(report):
    """The rate-selection section of results.md (empty without a complete grid for any encoder)."""
    selection, tasks = report.get("selection"), report["tasks"]
    if not selection or len(report["learning_rates"]) < 2:  # one rate: nothing was chosen
        return []
    recipe_rate = report["finetune"]["learning_rate"]
    rows = objective_rows(selection, recipe_rate)
    rates = ", ".join(f"{lr:g}" for lr in report["learning_rates"])
    lines = ["", f"## Fine-tuning rate chosen on dev per encoder, test reported (grid {{{rates}}})", "",
             f"Per full-budget encoder, training-set size and task, the rate with the best dev accuracy (mean over "
             f"{report['seeds']} fine-tuning seeds; {report['finetune']['epochs']} epochs, the "
             f"{report.get('finetune_keep', 'last')} epoch kept) is chosen; test accuracy (the task's `test.tsv`, "
             "never used for a choice) is read at that rate. Avg: over the tasks; ± : std over pre-training seeds. "
             f"Recipe: every encoder at {recipe_rate:g}, as in the table above.", "",
             "| encoder | examples | pre-training seeds | " + " | ".join(f"rate {t}" for t in tasks)
             + f" | dev Avg | test Avg | dev Avg at {recipe_rate:g} | test Avg at {recipe_rate:g} |",
             "|---|---:|---:|" + "---:|" * (len(tasks) + 4)]
    def cell(value):
        return f"{value['mean']:.1f} ± {value['std']:.1f}" if value else "-"
    for train_limit, by_objective in rows.items():
        for objective, row in by_objective.items():
            lines.append(f"| {objective} | {train_limit} | {len(row['encoders'])} | "
                         + " | ".join(", ".join(f"{lr:g}" for lr in row["rates"][t]) for t in tasks)
                         + f" | {cell(row['dev'])} | {cell(row['test'])} | {cell((row['recipe'] or {}).get('dev'))}"
                         f" | {cell((row['recipe'] or {}).get('test'))} |")
    lines.append("")
    for train_limit, by_objective in rows.items():
        def order(split, key=None):
            ranked = sorted(by_objective.items(), key=lambda item: -(item[1][key][split] if key else item[1][split])["mean"])
            return " > ".join(f"{o} {(row[key][split] if key else row[split])['mean']:.1f}" for o, row in ranked)
        line = f"- {train_limit} examples, by test Avg at the chosen rates: {order('test')}"
        if all(row["recipe"] for row in by_objective.values()):
            line += f"; at {recipe_rate:g} for all: {order('test', 'recipe')}"
        lines.append(line + ".")
    finals = [n for n, e in report["encoders"].items() if e["fraction"] in (0.0, 1.0)]
    missing = sorted((n for n in finals if not any(n in encoders for encoders in selection.values())),
                     key=lambda n: row_rank(objective_of(n), run_seed(n)))
    if missing:
        lines.append(f"- Not in this table (their grid is not complete in this report): {', '.join(missing)}.")
    lines += ["", "The whole grid (dev / test, mean over fine-tuning seeds; the chosen rate in bold):", "",
              "| encoder | examples | task | " + " | ".join(f"{lr:g}" for lr in report["learning_rates"]) + " |",
              "|---|---:|---|" + "---:|" * len(report["learning_rates"])]
    for train_limit, encoders in selection.items():
        for name in sorted(encoders, key=lambda n: row_rank(encoders[n]["objective"], encoders[n]["pretrain_seed"])):
            for t in tasks:
                chosen = encoders[name]["tasks"][t]
                cells = [f"{g['dev']:.1f} / {g['test']:.1f}" for g in chosen["grid"].values()]
                cells = [f"**{c}**" if lr == chosen["rate"] else c for lr, c in zip(chosen["grid"], cells)]
                lines.append(f"| {name} | {train_limit} | {t} | " + " | ".join(cells) + " |")
    return lines


def write_markdown(path, report):
    summary, plan, tasks = report["summary"], in_row_order(report["pretraining"]), report["tasks"]
    b = report["budget"]
    lines = [
        f"# Pre-training efficiency: objectives at equal FLOPs (`--budget {report['budget_name']}`)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Date: {report['date']}. Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        f"Wall time: {report['seconds']:.0f} s this invocation ({report['units_run']} units run, "
        f"{report['units_skipped']} skipped).",
        "",
        *[f"Merged (`--merge`) from `{m['path']}`: encoders {', '.join(m['encoders'])}, run on {m['date']} at "
          f"electra_tf {m['versions']['electra_tf']} ({m['seconds']:.0f} s) by `{m['command']}`. "
          + (f"The seeded no-pre-training baseline, run in both, differs by at most "
             f"{100 * m['baseline_max_abs_diff']:.2f} points per task and seed." if m["baseline_max_abs_diff"]
             is not None else "")
          + (f" Encoders run again here ({', '.join(m['rerun'])}): the newer runs are kept; at the recipe they differ "
             f"from that file's by at most {100 * m['rerun_max_abs_diff']:.2f} points per task and seed."
             if m.get("rerun_max_abs_diff") is not None else "") + "\n" for m in report.get("merged", [])],
        f"Encoder: `tiny` preset + {b['model']}, seq 128, batch {b['batch_size']}, lr {b['learning_rate']}; "
        f"budget = {b['electra_steps']} electra steps = {plan[next(iter(plan))]['budget_flops'] if plan else float('nan'):.3g} "
        f"training FLOPs (matmul-only count, `electra_tf.training.flops`). Fine-tuning: {report['finetune']}, "
        f"{report['seeds']} seed(s). Scores are dev {', '.join(sorted({r['metric'] for r in report['runs']}))} "
        "x 100, mean over seeds; Spread = std over seeds of the task average.",
        "",
    ]
    if report["budget_name"] == "smoke":
        lines += ["**Smoke budget: a few steps on tiny data. The numbers only show that every stage runs; "
                  "they carry no information about the objectives.**", ""]
    header = ["encoder", "steps", "PT FLOPs", *tasks, "Avg", "Median", "Spread", "Paper Table 5"]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    finals = [n for n, s in summary.items() if s["fraction"] in (1.0, 0.0)]
    for name in finals:
        s = summary[name]
        steps = plan[s["objective"]]["steps"] if s["objective"] in plan else 0
        cells = [name if name != "mlm" else "mlm (BERT)", str(steps), f"{s['flops']:.3g}"]
        cells += [f"{s['tasks'][t]['mean']:.1f} ± {s['tasks'][t]['std']:.1f}" for t in tasks]
        cells += [f"{s['average']:.1f}", f"{s['median']:.1f}", f"{s['spread']:.1f}",
                  str(PAPER_TABLE5.get(s["objective"], "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    majority = {r["task"]: 100 * r["majority_class_accuracy"] for r in report["runs"]}
    lines.append("| majority class | - | - | " + " | ".join(f"{majority[t]:.1f}" for t in tasks)
                 + f" | {np.mean([majority[t] for t in tasks]):.1f} | - | - | - |")
    lines += pretrain_seed_lines(summary)
    lines += ["", "Paper reference (GLUE dev): Table 5, Base-sized: ELECTRA 85.0, All-Tokens MLM 84.3, "
              "Replace MLM 82.4, ELECTRA 15% 82.4, BERT 82.2; Table 1 at equal compute: ELECTRA-Small 79.9 vs "
              "BERT-Small 75.1."]
    lines += selection_markdown(report)
    lines += ["", "## Score vs pre-training FLOPs (Figure 4 analog, `efficiency.png`)", "",
              "| objective | fraction | step | PT FLOPs | Avg |", "|---|---:|---:|---:|---:|"]
    curve = sorted(summary.values(), key=lambda s: (s["objective"], s["fraction"]))
    for s in curve:
        if (s["objective"] in report["curve_objectives"] or s["objective"] == BASELINE) \
                and s.get("pretrain_seed", 0) == 0:
            step = round(s["flops"] / plan[s["objective"]]["flops_per_sequence"] / plan[s["objective"]]["batch_size"]) \
                if s["objective"] in plan else 0
            lines.append(f"| {s['objective']} | {s['fraction']:g} | {step} | {s['flops']:.3g} | {s['average']:.1f} |")
    # Columns by name: a merged report's breakdowns may list the parts in another order.
    columns = [k for k in plan[next(iter(plan))]["breakdown"] if k not in ("forward", "train")] if plan else []
    lines += ["", "## Equal-FLOPs plan (forward GFLOP per sequence by part; training = 3 x forward)", "",
              "| objective | steps | train GFLOP/seq | " + " | ".join(columns) + " | wall s | CPU s |",
              "|---|---:|---:|" + "---:|" * (len(columns) + 2)]
    for objective, p in plan.items():
        parts = [f"{p['breakdown'].get(k, 0.0) / 1e9:.3f}" for k in columns]
        lines.append(f"| {objective} | {p['steps']} | {p['flops_per_sequence'] / 1e9:.3f} | " + " | ".join(parts)
                     + f" | {p['seconds']:.0f} | {p['cpu_seconds'] or float('nan'):.0f} |")
    every_run = report["runs"] + report.get("grid_runs", [])
    total = lambda key: sum(r.get(key) or 0.0 for r in every_run)  # noqa: E731
    lines += ["", f"Fine-tuning: {len(every_run)} runs ({len(report['runs'])} at the recipe), "
              f"{total('seconds'):.0f} s wall / "
              f"{total('cpu_seconds'):.0f} CPU s in all ({total('train_seconds'):.0f} s of `fit`). "
              f"Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.", ""]
    guarded = [e["guard"]["max_abs_diff"] for e in report["encoders"].values() if "guard" in e]
    lines += [f"Guard: {len(guarded)} encoders equal the model that produced them before fine-tuning "
              f"(max |output diff| {max(guarded, default=float('nan')):.2g} <= {report['guard_atol']:g} on a "
              f"fixed held-out batch, dropout off); the random baseline's seed is {report['baseline_seed']}.", ""]
    lines += context_markdown(report["context"], report["context_probe"])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def context_markdown(context, probe):
    """The context-probe table: one row per window and objective."""
    if not context:
        return []
    lines = ["## Does the discriminator use context? (`context.png`)", "",
             f"Every {probe['every']} updates, on the same {probe['batches']} held-out batches of "
             f"{probe['batch_size']} (masking seed {probe['seed']}, dropout off): the discriminator's AUC, and the "
             "AUC of a score that sees only the token id (per-id log-odds of \"replaced\", smoothed; each batch "
             "scored by a table fitted on the window's other batches; half: fitted on half of them; in-sample: "
             "fitted and scored on all of them, an optimistic bound). A discriminator that uses context beats "
             "the token score.", "",
             "| run | step | disc AUC | token AUC | token AUC half | token AUC in-sample | replaced |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for objective, records in in_row_order(context).items():
        for r in records:
            lines.append(f"| {objective} | {r['step']} | {r['disc_auc']:.3f} | {r['token_auc']:.3f} | "
                         f"{r['token_auc_half']:.3f} | {r['token_auc_in_sample']:.3f} | {r['replaced_fraction']:.3f} |")
    return lines + [""]


def plot_context(path, context, title="Discriminator vs token identity (held-out, per window)"):
    """Windowed discriminator AUC (solid) and token-identity AUC (dashed) per objective or run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, (name, records) in enumerate(in_row_order(context).items()):
        color = f"C{i}"
        steps = [r["step"] for r in records]
        ax.plot(steps, [r["disc_auc"] for r in records], color=color, marker="o", ms=3, label=f"{name}: discriminator")
        ax.plot(steps, [r["token_auc"] for r in records], color=color, linestyle="--", label=f"{name}: token id only")
    ax.set_xlabel("pre-training step")
    ax.set_ylabel("AUC (replaced vs original)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot(path, summary, curve_objectives):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for objective in dict.fromkeys(s["objective"] for s in summary.values()):
        mine = [s for s in summary.values() if s["objective"] == objective]
        points = sorted((s["flops"], s["average"]) for s in mine if s.get("pretrain_seed", 0) == 0)
        others = [(s["flops"], s["average"]) for s in mine if s.get("pretrain_seed", 0) != 0]
        if not points:  # a report of other seeds only
            points, others = sorted(others), []
        if objective == BASELINE:
            ax.axhline(points[0][1], color="grey", linestyle="--", label="no pre-training")
            continue
        if objective in curve_objectives:
            line, = ax.plot(*zip(*points), marker="o", label=objective)
        else:
            line, = ax.plot(*zip(*points), marker="s", linestyle="none", label=objective)
        if others:  # other pre-training seeds, full budget only
            ax.plot(*zip(*others), marker="x", linestyle="none", color=line.get_color(),
                    label=f"{objective}, other pre-training seeds")
    ax.set_xscale("log")
    ax.set_xlabel("pre-training FLOPs (matmul count)")
    ax.set_ylabel("average dev score (x100)")
    ax.set_title("Fine-tuned score vs pre-training compute")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# === main ===

def invocation():
    """This run's arguments as the user typed them: `-m module` under `python -m`, else the script path."""
    script = ["-m", __spec__.name] if __spec__ is not None else [os.path.relpath(sys.argv[0])]
    return [*script, *sys.argv[1:]]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    budget = dict(BUDGETS[FLAGS.budget])
    finetune_hparams = dict(budget["finetune"])
    for key in ("train_limit", "dev_limit", "epochs"):
        if FLAGS[key].value is not None:
            finetune_hparams[key] = FLAGS[key].value
    budget["electra_steps"] = FLAGS.electra_steps or budget["electra_steps"]
    budget["learning_rate"] = FLAGS.learning_rate or budget["learning_rate"]
    seeds = FLAGS.seeds or budget["seeds"]
    try:
        pretrain_seeds = list(dict.fromkeys(int(k) for k in FLAGS.pretrain_seeds))
    except ValueError:
        raise app.UsageError(f"--pretrain_seeds takes integers >= 0, got {FLAGS.pretrain_seeds}.") from None
    if not pretrain_seeds or min(pretrain_seeds) < 0:
        raise app.UsageError(f"--pretrain_seeds takes integers >= 0, got {FLAGS.pretrain_seeds}.")
    try:
        learning_rates = sorted({float(lr) for lr in FLAGS.learning_rates or [finetune_hparams["learning_rate"]]})
        train_limits = sorted({int(n) for n in FLAGS.train_limits or [finetune_hparams["train_limit"]]}, reverse=True)
    except ValueError:
        raise app.UsageError(f"--learning_rates takes numbers and --train_limits integers, got "
                             f"{FLAGS.learning_rates} and {FLAGS.train_limits}.") from None
    if min(learning_rates) <= 0 or min(train_limits) < 1 or not all(map(math.isfinite, learning_rates)):
        raise app.UsageError(f"--learning_rates must be finite and > 0 and --train_limits >= 1, got "
                             f"{FLAGS.learning_rates} and {FLAGS.train_limits}.")
    curve_fractions = parse_fractions(FLAGS.fractions or budget["fractions"])
    corpus = FLAGS.corpus or budget["corpus"]
    unknown = sorted(set(FLAGS.objectives + FLAGS.curve_objectives) - set(OBJECTIVES))
    if unknown:
        raise app.UsageError(f"Unknown objective(s) {unknown}. Choose from {list(OBJECTIVES)}.")
    output_dir = os.path.abspath(FLAGS.output_dir)
    units = Units()

    # Settings that decide the results are fixed at the first invocation.
    settings = dict(budget=FLAGS.budget, corpus=corpus, electra_steps=budget["electra_steps"], seeds=seeds,
                    fractions=curve_fractions, finetune=finetune_hparams, holdout=FLAGS.holdout,
                    baseline_seed=FLAGS.baseline_seed, probe_every=FLAGS.probe_every,
                    probe_batches=FLAGS.probe_batches, learning_rate=budget["learning_rate"],
                    adam_bias_correction=budget["adam_bias_correction"])
    context_probe = dict(every=FLAGS.probe_every, batches=FLAGS.probe_batches, batch_size=budget["batch_size"],
                         seed=PROBE_SEED, token_auc="cross-fitted, leaving one of the window's batches out")
    # Checked now, not after hours of compute; read now: a merged file may be the one this run replaces.
    task_names = [os.path.basename(os.path.normpath(t)) for t in FLAGS.tasks]
    try:
        merges = read_merges(FLAGS.merge, dict(budget_name=FLAGS.budget, budget=budget, finetune=finetune_hparams,
                                               finetune_keep=KEEP, seeds=seeds, tasks=task_names,
                                               baseline_seed=FLAGS.baseline_seed,
                                               guard_atol=GUARD_ATOL, context_probe=context_probe))
    except MergeMismatch as e:
        raise app.UsageError(str(e)) from None

    os.makedirs(output_dir, exist_ok=True)
    previous = read_json(os.path.join(output_dir, "settings.json"))
    if previous and "finetune" in previous:  # a run of an earlier version says max_seq_length
        previous["finetune"] = with_current_keys(previous["finetune"])
    if previous and previous != json.loads(json.dumps(settings)):
        raise app.UsageError(f"{output_dir} holds a run with other settings {previous}; use a new --output_dir.")
    write_json(os.path.join(output_dir, "settings.json"), settings)

    data, vocab_file = prepare_data(corpus, FLAGS.vocab, output_dir, 128, units)
    train_data, heldout = split_holdout(data, FLAGS.holdout)
    base = get_config("tiny", data=train_data, vocab_file=vocab_file, batch_size=budget["batch_size"],
                      learning_rate=budget["learning_rate"], adam_bias_correction=budget["adam_bias_correction"],
                      seq_length=128, log_steps=10, **budget["model"])
    base = resolve_data(base, FLAGS.demo_dir)
    guard_batch = fixed_batches(heldout, base, 1, batch_size=GUARD_SEQUENCES)[0]
    probe_batches = fixed_batches(heldout, base, FLAGS.probe_batches) if FLAGS.probe_every else []

    plan = plan_pretraining(base, FLAGS.objectives, budget["electra_steps"])
    log_plan(plan)
    encoders = {BASELINE: random_encoder(base, output_dir, units, guard_batch, FLAGS.baseline_seed)}
    names = []  # pre-training runs, seed by seed: every objective's seed 1 before any seed 2
    for pretrain_seed in pretrain_seeds:
        for objective, p in plan.items():
            steps, name = p["steps"], run_name(objective, pretrain_seed)
            config = base.replace(objective=objective, train_steps=steps, seed=base.seed + pretrain_seed,
                                  warmup_steps=max(1, round(budget["warmup_fraction"] * steps)))
            curve = objective in FLAGS.curve_objectives and pretrain_seed == 0
            encoders.update(pretrain(name, config, output_dir, curve_fractions if curve else None, units,
                                     guard_batch, probe_batches, FLAGS.probe_every))
            record = read_json(os.path.join(output_dir, "pretrain", name, "done.json"))
            p.setdefault("runs", {})[name] = dict(seed=config.seed, seconds=record["seconds"],
                                                  cpu_seconds=record.get("cpu_seconds"))
            if "seconds" not in p:  # the plan table's wall time: the first run of the objective
                p.update(seconds=record["seconds"], cpu_seconds=record.get("cpu_seconds"))
            names.append(name)

    runs, grid_runs = finetune(encoders, FLAGS.tasks, seeds, finetune_hparams, output_dir, units,
                               grid_points(learning_rates, train_limits, finetune_hparams))
    context = {n: read_json(os.path.join(output_dir, "pretrain", n, CONTEXT_FILE)) for n in names}
    context = {n: records for n, records in context.items() if records}

    report = dict(
        command=" ".join(shlex.quote(a) for a in [os.path.relpath(sys.executable, REPO)
                                                   if sys.executable.startswith(REPO) else "python", *invocation()]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=versions(), budget_name=FLAGS.budget, budget=budget, finetune=finetune_hparams, seeds=seeds,
        tasks=task_names, objectives=FLAGS.objectives, curve_objectives=FLAGS.curve_objectives,
        fractions=curve_fractions, paper_table5=PAPER_TABLE5, pretraining=plan, encoders=encoders,
        finetune_keep=KEEP, learning_rates=learning_rates, train_limits=train_limits,
        runs=runs, grid_runs=grid_runs, seconds=time.time() - units.start, units_run=units.ran,
        units_skipped=units.skipped, data=dict(train=train_data, heldout=heldout, holdout=FLAGS.holdout),
        guard_atol=GUARD_ATOL, baseline_seed=FLAGS.baseline_seed, context=context,
        context_probe=context_probe,
    )
    merge_reports(report, merges)
    report["summary"] = summary = summarize(report["runs"], task_names, seeds)
    report["selection"] = select_rates(report["runs"] + report["grid_runs"], task_names, seeds,
                                       report["learning_rates"])
    write_json(os.path.join(output_dir, "results.json"), report)
    write_markdown(os.path.join(output_dir, "results.md"), report)
    plot(os.path.join(output_dir, "efficiency.png"), summary, report["curve_objectives"])
    if report["context"]:
        plot_context(os.path.join(output_dir, "context.png"), report["context"])
    logging.info("Wrote results.json, results.md and the figures to %s (%d units run, %d skipped, %.0f s).",
                 output_dir, units.ran, units.skipped, time.time() - units.start)
    with open(os.path.join(output_dir, "results.md"), encoding="utf-8") as f:
        print(f.read())


if __name__ == "__main__":
    cli.run_script(main)
