r"""Pre-training objectives at equal compute, scored by fine-tuning (paper Table 5 / Figure 4 analog): the harness.

    python -m experiments.efficiency.efficiency --budget smoke --output_dir runs/efficiency_smoke
    python -m experiments.efficiency.efficiency --budget full --output_dir runs/efficiency --seeds 3 \
        --corpus '$SHARED_DATA/corpus/*.txt.gz' --fractions 0.25,0.5,1.0

Top to bottom (`main`): records (the embedded demo corpus, or TFRecords built once from `--corpus`
into output_dir/data); an equal-FLOPs plan (`plan_pretraining`: the budget is `electra_steps` steps of
"electra", each objective gets the steps that cost the same analytic training FLOPs,
`electra_tf.training.flops`); one pre-training run per objective and `--pretrain_seeds` seed (seed
k > 0 named `<objective>-s<k>`), checkpointed at the budget `--fractions` for `--curve_objectives`
(one run with its full schedule); a no-pre-training baseline (`--baseline_seed`); every encoder
checked against the live model that produced it (`guard`) and, for objectives with a discriminator,
probed for its use of context (`probes`); every encoder x task x seed fine-tuned at the budget's
recipe (`run_finetuning`, the last epoch kept), and with `--learning_rates` / `--train_limits` the
full-budget encoders and the baseline at every grid point too (dev chooses the rate, test is read
there); then `report`: results.json, results.md, efficiency.png and context.png.

Resumable: each finished unit (records, pre-training run, exported encoder, fine-tuning run) leaves a
file that a re-run finds and skips; an interrupted pre-training run resumes from its checkpoint;
SIGTERM stops with the checkpoint saved (exit 143). In pieces: `--merge` adds the encoders of earlier
invocations with the same settings (`merge`). `--budget smoke` only proves the plumbing.
"""

import datetime
import fractions
import json
import math
import os
import sys
import time

from electra_tf import cli

# As every command: oneDNN's CPU kernels on a machine without a GPU, TensorFlow's start-up lines left out.
cli.prepare_tensorflow()

from absl import app, flags, logging  # noqa: E402  (after prepare_tensorflow)
import keras  # noqa: E402

from benchmarks import common  # noqa: E402
from electra_tf import run_files, sources  # noqa: E402
from electra_tf.config import OBJECTIVES, get_config  # noqa: E402
from electra_tf.data.pretraining_dataset import list_files, pretraining_dataset  # noqa: E402
from electra_tf.demo_data import resolve_data  # noqa: E402
from electra_tf.finetuning.config import with_current_keys  # noqa: E402
from electra_tf.tasks.classification.data import load_task  # noqa: E402
from electra_tf.tasks.classification.kind import ClassificationKind, run_finetuning  # noqa: E402
from electra_tf.training import flops  # noqa: E402
from electra_tf.training.pretraining import train  # noqa: E402
from experiments.efficiency import guard, merge, probes, report  # noqa: E402
from experiments.efficiency.report import BASELINE  # noqa: E402

# --- Budgets: plain values. `model` overrides the `tiny` preset; steps are "electra" steps. ---
TINY = dict(hidden_dim=128, num_layers=2, num_heads=2, intermediate_dim=512)
BUDGETS = {
    "smoke": dict(  # plumbing only: a few steps, one seed, 32 examples per task
        corpus="demo", model=TINY, electra_steps=4, batch_size=8, learning_rate=5e-4,
        adam_bias_correction=False,  # the official AdamWeightDecayOptimizer (the `tiny` preset turns it on)
        warmup_fraction=0.1, fractions="0.5,1.0", seeds=1,
        finetune=dict(epochs=1, batch_size=16, learning_rate=2e-3, seq_length=64, train_limit=32, dev_limit=32),
    ),
    # About 2 h on an idle 2-core machine (vocab 30522, batch 32): pre-training ~2.0 CPU s per electra-step of
    # budget over the five objectives, fine-tuning ~24 CPU s per run x 90 runs; ~8.4k CPU s in all.
    "full": dict(
        corpus="$SHARED_DATA/corpus/*.txt.gz",  # 57,645 sequences of 128 (7.9M word pieces)
        model=TINY, electra_steps=3000, batch_size=32,  # 96k sequences, ~1.7 passes over the corpus
        # Peak LR of every objective. 1e-3 collapses the discriminator with the official Adam (no bias
        # correction) once warmup ends (a context probe, commit bc76fc7); the committed runs use 5e-4.
        learning_rate=1e-3, adam_bias_correction=False, warmup_fraction=0.1, fractions="0.25,0.5,1.0", seeds=3,
        # Tiny encoders need a larger fine-tuning LR than ELECTRA-Small's 3e-4: on trec6 (2000 examples,
        # 3 epochs) 2e-3 beat 1e-3 for both a random and a barely pre-trained encoder.
        finetune=dict(epochs=3, batch_size=32, learning_rate=2e-3, seq_length=64, train_limit=2000,
                      dev_limit=None),
    ),
}
KEEP = "last"  # fixed epochs: dev chooses the learning rate only, never the epoch (`FinetuneConfig.keep`)

FLAGS = flags.FLAGS
flags.DEFINE_enum("budget", "smoke", list(BUDGETS), "Size of the experiment.")
flags.DEFINE_string("output_dir", None, "Everything goes here; re-running with the same dir resumes.")
flags.DEFINE_string("corpus", None, "'demo' or a text glob (default: the budget's; $SHARED_DATA is ../shared/data).")
flags.DEFINE_string("vocab", "$SHARED_DATA/vocab/bert_uncased_vocab.txt",
                    "WordPiece vocabulary for --corpus (ignored for 'demo', which has its own).")
flags.DEFINE_list("tasks", [f"$SHARED_DATA/tasks/{t}" for t in ("movie_polarity", "trec6", "sms_spam")],
                  "Task folders (train/dev.tsv + labels.txt), comma-separated.")
flags.DEFINE_integer("seeds", None, "Fine-tuning seeds per encoder and task (default: the budget's).")
flags.DEFINE_string("fractions", None, "Budget fractions checkpointed for --curve_objectives (default: the budget's).")
flags.DEFINE_list("objectives", list(OBJECTIVES), "Pre-training objectives to compare.")
flags.DEFINE_list("curve_objectives", ["electra", "mlm"], "Objectives scored at every budget fraction.")
flags.DEFINE_list("pretrain_seeds", ["0"], "Pre-training seeds of every objective: seed k trains from config.seed + k; "
                  "k > 0 is named <objective>-s<k> and scored at the full budget only.")
flags.DEFINE_integer("electra_steps", None, "Override the budget: this many electra steps of compute.")
flags.DEFINE_integer("train_limit", None, "Override the budget: fine-tuning examples per task.")
flags.DEFINE_list("learning_rates", [], "Fine-tuning rates dev chooses from per full-budget encoder and task; test "
                  "is read at the chosen one. Default: the recipe's only.")
flags.DEFINE_list("train_limits", [], "Training-set sizes of that grid (e.g. 2000,200). Default: the recipe's.")
flags.DEFINE_integer("dev_limit", None, "Override the budget: dev examples per task.")
flags.DEFINE_integer("epochs", None, "Override the budget: fine-tuning epochs.")
flags.DEFINE_float("learning_rate", None, "Override the budget: peak pre-training learning rate.")
flags.DEFINE_string("demo_dir", os.path.join("~", ".cache", "electra_tf", "demo"),
                    "Where the embedded demo corpus is built (--corpus demo).")
flags.DEFINE_integer("baseline_seed", 0, "Initialisation seed of the no-pre-training baseline.")
flags.DEFINE_bool("holdout", True, "Keep the last record file out of pre-training, for the guard and the probe.")
flags.DEFINE_integer("probe_every", 100, "Updates per context-probe window (0: no probe).")
flags.DEFINE_integer("probe_batches", 32, "Held-out batches the context probe scores per window.")
flags.DEFINE_list("merge", [], "results.json files of earlier invocations with the same settings: their encoders "
                  "join this report (encoders run here win).")


def local(path):
    """A recorded path (`$SHARED_DATA/...`) on this machine."""
    return path.replace("$SHARED_DATA", common.shared_data()) if path else path


def parse_fractions(text):
    """The budget fractions of `--fractions`, sorted, 1 included."""
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


def prepare_data(corpus, vocab, output_dir, seq_length, units):
    """`(data glob, vocab file)`: the demo corpus, or TFRecords built once into output_dir/data."""
    if corpus == "demo":
        config = resolve_data(get_config("tiny", seq_length=seq_length), FLAGS.demo_dir)
        return config.data, config.vocab_file
    from electra_tf.pipelines.build_pretraining_data import build_pretraining_data

    data_dir = os.path.join(output_dir, "data")
    marker = os.path.join(data_dir, "done.json")
    if common.read_json(marker):
        units.skip("records")
    else:
        start = time.time()
        stats = build_pretraining_data(corpus, vocab, data_dir, max_seq_length=seq_length, num_shards=8, seed=0,
                                       pipeline_args=["--direct_running_mode=in_memory"])
        common.write_json(marker, dict(corpus=corpus, vocab=vocab, examples=stats["examples"],
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
    """One log line per objective: its steps and training GFLOP per sequence at the shared budget."""
    for objective, p in plan.items():
        logging.info("Equal-FLOPs plan: %-15s %6d steps, %.3f train GFLOP/seq (budget %.3g FLOPs)", objective,
                     p["steps"], p["flops_per_sequence"] / 1e9, p["budget_flops"])
    if not plan:  # `--objectives=`: the no-pre-training baseline only
        logging.info("No pre-training run (--objectives is empty): the no-pre-training baseline only.")


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
    objective, pretrain_seed = config.objective, report.run_seed(name)
    model_dir = os.path.join(output_dir, "pretrain", name)
    guard_dir = os.path.join(model_dir, guard.GUARD_DIR)
    marker = os.path.join(model_dir, "done.json")
    record = common.read_json(marker)
    live = None  # the model `train` returns, when it ran in this invocation
    if record:
        units.skip(f"pretrain {name}")
    else:
        logging.info("Pre-training %s for %d steps (checkpoints every %d, seed %d) in %s", name, steps, every,
                     config.seed, model_dir)
        start, cpu = time.time(), time.process_time()
        extra = [guard.RecordLiveOutputs(at.values(), guard_batch, guard_dir)]
        if probe_every and probe_batches and OBJECTIVES[objective].detects_replacements:
            extra.append(probes.ContextProbe(probe_batches, probe_every, os.path.join(model_dir, probes.CONTEXT_FILE)))
        keras.utils.set_random_seed(config.seed)  # the initialisation; masking and data use `config.seed` too
        live = train(config, model_dir, verbose=2, extra_callbacks=extra)
        reached = int(live.optimizer.iterations.numpy())
        if reached < steps:  # preempted (SIGTERM): `train` saved and returned; never mark the run done
            logging.warning("Pre-training %s stopped at step %d of %d; re-run the same command to resume.",
                            name, reached, steps)
            sys.exit(cli.PREEMPTED_EXIT)
        record = dict(objective=objective, pretrain_seed=pretrain_seed, config_seed=config.seed, steps=steps,
                      seconds=time.time() - start, cpu_seconds=time.process_time() - cpu)
        common.write_json(marker, record)
        units.done(f"pretrain {name} ({steps} steps)", record["seconds"])

    per_step = flops.train_flops_per_sequence(config) * config.batch_size
    encoders = {}
    for fraction, step in sorted(at.items()):
        encoder = name if fraction == 1.0 else f"{name}@{fraction:g}"
        directory = os.path.join(output_dir, "encoders", encoder.replace("@", "_f"))
        info = dict(objective=objective, pretrain_seed=pretrain_seed, fraction=fraction, step=step,
                    flops=step * per_step, path=os.path.relpath(os.path.join(directory, run_files.ENCODER_FILE),
                                                                output_dir))
        info = guard.export_encoder(encoder, info, model_dir, live, steps, directory, units)
        encoders[encoder] = info
    return encoders


def random_encoder(config, output_dir, units, guard_batch, seed):
    """The no-pre-training baseline: the discriminator as initialised with `keras.utils.set_random_seed(seed)`."""
    directory = os.path.join(output_dir, "encoders", BASELINE)
    info = dict(objective=BASELINE, fraction=0.0, step=0, flops=0.0,
                path=os.path.relpath(os.path.join(directory, run_files.ENCODER_FILE), output_dir), seed=seed)
    found = common.read_json(os.path.join(directory, "encoder.json"))
    if found:
        units.skip(f"export {BASELINE}")
        return found
    encoder = sources.untrained_encoder(config.replace(objective="mlm"), seed)
    outputs = guard.encoder_outputs(encoder, guard_batch)
    sources.save_encoder(encoder, directory, config.vocab_file)
    guard.write_reference(os.path.join(directory, guard.GUARD_FILE), guard_batch, outputs, step=0,
                    source=f"the random initialisation (seed {seed})")
    common.write_json(os.path.join(directory, "encoder.json"), info)
    units.done(f"export {BASELINE}", 0.0)
    return info


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
        guard.guard_encoder(name, info, output_dir)
        local_info = dict(info, path=os.path.join(output_dir, info["path"]))  # recorded relative to the run
        final = info["fraction"] in (0.0, 1.0)
        for task_dir in task_dirs:
            task = os.path.basename(os.path.normpath(task_dir))
            spec = load_task(task, task_dir)
            for seed in range(seeds):
                run_dir = os.path.join(output_dir, "finetune", name.replace("@", "_f"), task, f"seed{seed}")
                runs.append(finetune_run(name, local_info, spec, task_dir, seed, hparams, run_dir, units))
                for train_limit, learning_rate in points if final else ():
                    run_dir = os.path.join(output_dir, "finetune_grid", f"n{train_limit}_lr{learning_rate:g}",
                                           name.replace("@", "_f"), task, f"seed{seed}")
                    grid_runs.append(finetune_run(name, local_info, spec, task_dir, seed,
                                                  dict(hparams, train_limit=train_limit, learning_rate=learning_rate),
                                                  run_dir, units))
    return runs, grid_runs


def finetune_run(name, info, spec, task_dir, seed, hparams, run_dir, units):
    """One fine-tuning run (or its finished result in `run_dir`): its record, dev and test scores."""
    task = os.path.basename(os.path.normpath(task_dir))
    unit = f"finetune {name}/{task}/seed{seed} (n {hparams['train_limit']}, lr {hparams['learning_rate']:g})"
    result = common.read_json(os.path.join(run_dir, "results.json"))
    if result:
        units.skip(unit)
    else:
        start, cpu = time.time(), time.process_time()
        result = run_finetuning(spec, task_dir, info["path"], run_dir, num_trials=1, seed=seed, verbose=0,
                                keep=KEEP, **hparams)
        if result is None:  # preempted (SIGTERM): its checkpoint is saved; no result, so the unit stays to do
            logging.warning("Fine-tuning %s stopped; re-run the same command to resume.", unit)
            sys.exit(cli.PREEMPTED_EXIT)
        common.write_json(os.path.join(run_dir, "timing.json"),
                   dict(seconds=time.time() - start, cpu_seconds=time.process_time() - cpu))
        # The classifier is not needed here and is the bulk of the disk use.
        for leftover in (ClassificationKind.model_file, run_files.VOCAB_FILE):
            if os.path.exists(os.path.join(run_dir, leftover)):
                os.remove(os.path.join(run_dir, leftover))
        trial = result["trials"][0]
        units.done(f"{unit}: dev {spec.metric} {trial['dev'][spec.metric]:.4f}, test "
                   + (f"{trial['test'][spec.metric]:.4f}" if "test" in trial else "-"), trial["train_seconds"])
    trial = result["trials"][0]
    timing = common.read_json(os.path.join(run_dir, "timing.json")) or {}
    metric = result["metric"]
    return dict(encoder=name, objective=info["objective"], fraction=info["fraction"],
                pretrain_seed=info.get("pretrain_seed", 0), flops=info["flops"], task=task, seed=seed, metric=metric,
                learning_rate=hparams["learning_rate"], train_limit=hparams["train_limit"],
                score=trial["dev"][metric], dev=trial["dev"],
                test_score=trial["test"][metric] if "test" in trial else None, test=trial.get("test"),
                train_seconds=trial["train_seconds"], seconds=timing.get("seconds"),
                cpu_seconds=timing.get("cpu_seconds"), majority_class_accuracy=result["majority_class_accuracy"])


def settings_from_flags():
    """The budget and fine-tuning recipe with the flags' overrides, and the grid; usage errors before any work."""
    budget = dict(BUDGETS[FLAGS.budget])
    budget.update(electra_steps=FLAGS.electra_steps or budget["electra_steps"],
                  learning_rate=FLAGS.learning_rate or budget["learning_rate"], corpus=FLAGS.corpus or budget["corpus"])
    hparams = dict(budget["finetune"], **{k: FLAGS[k].value for k in ("train_limit", "dev_limit", "epochs")
                                          if FLAGS[k].value is not None})
    try:
        pretrain_seeds = list(dict.fromkeys(int(k) for k in FLAGS.pretrain_seeds))
        learning_rates = sorted({float(lr) for lr in FLAGS.learning_rates or [hparams["learning_rate"]]})
        train_limits = sorted({int(n) for n in FLAGS.train_limits or [hparams["train_limit"]]}, reverse=True)
    except ValueError:
        pretrain_seeds = learning_rates = train_limits = None
    if (not pretrain_seeds or min(pretrain_seeds) < 0 or min(learning_rates) <= 0 or min(train_limits) < 1
            or not all(map(math.isfinite, learning_rates))):
        raise app.UsageError(f"--pretrain_seeds takes integers >= 0, --learning_rates finite numbers > 0 and "
                             f"--train_limits integers >= 1; got {FLAGS.pretrain_seeds}, {FLAGS.learning_rates} and "
                             f"{FLAGS.train_limits}.")
    unknown = sorted(set(FLAGS.objectives + FLAGS.curve_objectives) - set(OBJECTIVES))
    if unknown:
        raise app.UsageError(f"Unknown objective(s) {unknown}. Choose from {list(OBJECTIVES)}.")
    return budget, hparams, pretrain_seeds, learning_rates, train_limits


def check_settings(output_dir, settings):
    """Records the settings that decide the results at the first invocation; refuses other ones later."""
    os.makedirs(output_dir, exist_ok=True)
    previous = common.read_json(os.path.join(output_dir, "settings.json"))
    if previous and "finetune" in previous:  # a run of an earlier version says max_seq_length
        previous["finetune"] = with_current_keys(previous["finetune"])
    if previous and previous != json.loads(json.dumps(settings)):
        raise app.UsageError(f"{output_dir} holds a run with other settings {previous}; use a new --output_dir.")
    common.write_json(os.path.join(output_dir, "settings.json"), settings)


def pretrain_all(plan, base, budget, pretrain_seeds, curve_fractions, output_dir, units, guard_batch, probe_batches):
    """Every objective's pre-training runs, seed by seed (every objective's seed 1 before any seed 2).

    Returns:
        `(encoders, names)`: encoder name -> info, and the pre-training runs' names.
    """
    encoders, names = {}, []
    for pretrain_seed in pretrain_seeds:
        for objective, p in plan.items():
            steps, name = p["steps"], report.run_name(objective, pretrain_seed)
            config = base.replace(objective=objective, train_steps=steps, seed=base.seed + pretrain_seed,
                                  warmup_steps=max(1, round(budget["warmup_fraction"] * steps)))
            curve = objective in FLAGS.curve_objectives and pretrain_seed == 0
            encoders.update(pretrain(name, config, output_dir, curve_fractions if curve else None, units,
                                     guard_batch, probe_batches, FLAGS.probe_every))
            record = common.read_json(os.path.join(output_dir, "pretrain", name, "done.json"))
            p.setdefault("runs", {})[name] = dict(seed=config.seed, seconds=record["seconds"],
                                                  cpu_seconds=record.get("cpu_seconds"))
            if "seconds" not in p:  # the plan table's wall time: the first run of the objective
                p.update(seconds=record["seconds"], cpu_seconds=record.get("cpu_seconds"))
            names.append(name)
    return encoders, names


def relative(paths, output_dir):
    """Comma-separated `paths` relative to the run's folder, as results.json records them."""
    return ",".join(os.path.relpath(p, output_dir) for p in paths.split(","))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    budget, hparams, pretrain_seeds, learning_rates, train_limits = settings_from_flags()
    seeds, curve_fractions = FLAGS.seeds or budget["seeds"], parse_fractions(FLAGS.fractions or budget["fractions"])
    output_dir, units = os.path.abspath(FLAGS.output_dir), Units()
    context_probe = dict(every=FLAGS.probe_every, batches=FLAGS.probe_batches, batch_size=budget["batch_size"],
                         seed=probes.PROBE_SEED, token_auc="cross-fitted, leaving one of the window's batches out")
    # Checked now, not after hours of compute; read now: a merged file may be the one this run replaces.
    task_names = [os.path.basename(os.path.normpath(t)) for t in FLAGS.tasks]
    try:
        merges = merge.read_merges(FLAGS.merge, dict(budget_name=FLAGS.budget, budget=budget, finetune=hparams,
                                                     finetune_keep=KEEP, seeds=seeds, tasks=task_names,
                                                     baseline_seed=FLAGS.baseline_seed, guard_atol=guard.GUARD_ATOL,
                                                     context_probe=context_probe))
    except merge.MergeMismatch as e:
        raise app.UsageError(str(e)) from None
    check_settings(output_dir, dict(
        budget=FLAGS.budget, corpus=budget["corpus"], electra_steps=budget["electra_steps"], seeds=seeds,
        fractions=curve_fractions, finetune=hparams, holdout=FLAGS.holdout, baseline_seed=FLAGS.baseline_seed,
        probe_every=FLAGS.probe_every, probe_batches=FLAGS.probe_batches, learning_rate=budget["learning_rate"],
        adam_bias_correction=budget["adam_bias_correction"]))

    data, vocab_file = prepare_data(local(budget["corpus"]), local(FLAGS.vocab), output_dir, 128, units)
    train_data, heldout = split_holdout(data, FLAGS.holdout)
    base = resolve_data(get_config("tiny", data=train_data, vocab_file=vocab_file, batch_size=budget["batch_size"],
                                   learning_rate=budget["learning_rate"], seq_length=128, log_steps=10,
                                   adam_bias_correction=budget["adam_bias_correction"], **budget["model"]),
                        FLAGS.demo_dir)
    guard_batch = fixed_batches(heldout, base, 1, batch_size=guard.GUARD_SEQUENCES)[0]
    probe_batches = fixed_batches(heldout, base, FLAGS.probe_batches) if FLAGS.probe_every else []
    plan = plan_pretraining(base, FLAGS.objectives, budget["electra_steps"])
    log_plan(plan)
    encoders = {BASELINE: random_encoder(base, output_dir, units, guard_batch, FLAGS.baseline_seed)}
    pretrained, names = pretrain_all(plan, base, budget, pretrain_seeds, curve_fractions, output_dir, units,
                                     guard_batch, probe_batches)
    encoders.update(pretrained)
    runs, grid_runs = finetune(encoders, [local(t) for t in FLAGS.tasks], seeds, hparams, output_dir, units,
                               grid_points(learning_rates, train_limits, hparams))
    context = {n: common.read_json(os.path.join(output_dir, "pretrain", n, probes.CONTEXT_FILE)) for n in names}
    results = dict(
        command=common.command_line("experiments.efficiency.efficiency"),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=report.versions(), budget_name=FLAGS.budget, budget=budget, finetune=hparams, seeds=seeds,
        tasks=task_names, objectives=FLAGS.objectives, curve_objectives=FLAGS.curve_objectives,
        fractions=curve_fractions, paper_table5=report.PAPER_TABLE5, pretraining=plan, encoders=encoders,
        finetune_keep=KEEP, learning_rates=learning_rates, train_limits=train_limits, runs=runs, grid_runs=grid_runs,
        seconds=time.time() - units.start, units_run=units.ran, units_skipped=units.skipped,
        data=dict(train=relative(train_data, output_dir), heldout=relative(heldout, output_dir), holdout=FLAGS.holdout),
        guard_atol=guard.GUARD_ATOL, baseline_seed=FLAGS.baseline_seed, context_probe=context_probe,
        context={n: records for n, records in context.items() if records})
    report.write(output_dir, merge.merge_reports(results, merges))
    logging.info("Wrote results.json, results.md and the figures to %s (%d units run, %d skipped, %.0f s).",
                 output_dir, units.ran, units.skipped, time.time() - units.start)


if __name__ == "__main__":
    cli.run_script(main)
