r"""What the official initialisation and Adam do to the discriminator's use of context (issue 13, part 4).

    python -m experiments.efficiency.context_probe --output_dir /tmp/context_probe \
        --corpus '../shared/data/corpus/*.txt.gz' --steps 300 --seeds 3

Short ELECTRA pre-training runs of the efficiency harness's model (`tiny` +
the full budget's 2-layer, 128-wide overrides, its LR, warmup fraction and
batch) in four variants x `--seeds` seeds:

    previous            truncated-normal `embeddings_project` / output layer, Keras' bias-corrected AdamW
    init                the official glorot_uniform init only
    no_bias_correction  the official Adam (no bias correction) only
    official            both (the defaults)

Each run logs the harness's `ContextProbe` every `--probe_every` updates: the
discriminator's AUC on fixed held-out batches beside the token-identity-only
AUC. Seed s gives every variant the same data order, masking and (outside the
changed layers) the same initial weights. Records, held-out file and probe are
the harness's (`experiments/efficiency/efficiency.py`); its flags `--corpus`, `--vocab`,
`--holdout`, `--probe_every`, `--probe_batches` apply. Writes `results.json`,
`results.md` and `context_probe.png` to `--output_dir`; resumable per run.
"""

import datetime
import os
import shlex
import sys
import time

# Run from the repository root (`python -m experiments.efficiency.context_probe`): no sys.path edit.
from experiments.efficiency import efficiency  # noqa: E402  (defines the harness's flags, reused here)
from experiments.efficiency.efficiency import FLAGS, read_json, write_json  # noqa: E402
from absl import app, flags, logging  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from electra_tf import cli  # noqa: E402
from electra_tf.config import get_config  # noqa: E402
from electra_tf.demo_data import resolve_data  # noqa: E402
from electra_tf.training.pretraining import train  # noqa: E402

VARIANTS = {  # config overrides, explicit (the `tiny` preset keeps bias correction for its short warmup)
    "previous": dict(embeddings_project_initializer="truncated_normal",
                     discriminator_output_initializer="truncated_normal", adam_bias_correction=True),
    "init": dict(embeddings_project_initializer="glorot_uniform",
                 discriminator_output_initializer="glorot_uniform", adam_bias_correction=True),
    "no_bias_correction": dict(embeddings_project_initializer="truncated_normal",
                               discriminator_output_initializer="truncated_normal", adam_bias_correction=False),
    "official": dict(embeddings_project_initializer="glorot_uniform",
                     discriminator_output_initializer="glorot_uniform", adam_bias_correction=False),
}

flags.DEFINE_integer("steps", 300, "Pre-training steps per run.")
flags.DEFINE_integer("schedule_steps", None, "Length of the LR schedule (warmup a tenth of it, decay to 0 at it); "
                     "default --steps. Larger: the first --steps steps of a longer run's schedule.")
flags.DEFINE_integer("batch_size", None, "Override the full budget's batch size.")
flags.DEFINE_list("variants", list(VARIANTS), "Variants to run.")


class StopAfter(keras.callbacks.Callback):
    """Stops `fit` after `steps` updates (before the end of a longer schedule); the probe runs its last window."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.steps:
            self.model.stop_training = True


def run(variant, seed, base, probe_batches, output_dir):
    """One pre-training run with the context probe; returns its probe records and CPU seconds."""
    model_dir = os.path.join(output_dir, "runs", variant, f"seed{seed}")
    done = read_json(os.path.join(model_dir, "done.json"))
    if done:
        logging.info("[skip] %s seed %d", variant, seed)
        return done
    steps, schedule = FLAGS.steps, FLAGS.schedule_steps or FLAGS.steps
    config = base.replace(seed=seed, train_steps=schedule, warmup_steps=max(1, round(0.1 * schedule)),
                          save_checkpoints_steps=steps, keep_checkpoint_max=1, **VARIANTS[variant])
    probe = efficiency.ContextProbe(probe_batches, FLAGS.probe_every, os.path.join(model_dir, efficiency.CONTEXT_FILE))
    keras.utils.set_random_seed(seed)  # the initialisation
    start, cpu = time.time(), time.process_time()
    train(config, model_dir, verbose=0, extra_callbacks=[probe, StopAfter(steps)])
    done = dict(variant=variant, seed=seed, records=probe.records, seconds=time.time() - start,
                cpu_seconds=time.process_time() - cpu, overrides=VARIANTS[variant])
    write_json(os.path.join(model_dir, "done.json"), done)
    last = probe.records[-1]
    logging.info("[done] %s seed %d: disc AUC %.3f, token AUC %.3f at step %d (%.0f s)", variant, seed,
                 last["disc_auc"], last["token_auc"], last["step"], done["seconds"])
    return done


def curves(runs):
    """variant -> step -> {key: (mean, std, values)} over seeds."""
    out = {}
    for variant in dict.fromkeys(r["variant"] for r in runs):
        mine = [r for r in runs if r["variant"] == variant]
        steps = [rec["step"] for rec in mine[0]["records"]]
        out[variant] = {}
        for i, step in enumerate(steps):
            out[variant][step] = {}
            for key in ("disc_auc", "token_auc", "token_auc_half", "token_auc_in_sample", "replaced_fraction"):
                values = [r["records"][i][key] for r in mine]
                out[variant][step][key] = dict(mean=float(np.mean(values)), std=float(np.std(values)), values=values)
            gaps = [r["records"][i]["disc_auc"] - r["records"][i]["token_auc"] for r in mine]
            out[variant][step]["gap"] = dict(mean=float(np.mean(gaps)), std=float(np.std(gaps)), values=gaps)
    return out


def write_markdown(path, report):
    c = report["curves"]
    steps = sorted(next(iter(c.values())))
    lines = [
        "# Does the discriminator use context? Official init and Adam, short runs (issue 13)", "",
        f"Command: `{report['command']}`", "",
        f"Date: {report['date']}. Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
        f"CPU time: {report['cpu_seconds']:.0f} s over {len(report['runs'])} runs "
        f"({report['seconds']:.0f} s wall this invocation).", "",
        f"Model: `tiny` + {report['model']}, objective electra, batch {report['batch_size']}, "
        f"seq 128, lr {report['learning_rate']}, {report['steps']} steps of a {report['schedule_steps']}-step "
        f"schedule (warmup {round(0.1 * report['schedule_steps'])} steps, linear decay to 0 at "
        f"{report['schedule_steps']}), "
        f"seeds {report['seeds']}. Pre-training reads {report['data']['train']}; the probe reads the held-out "
        f"{report['data']['heldout']}: {report['probe']['batches']} batches of {report['batch_size']} "
        f"(the same each window, masking seed {report['probe']['seed']}, dropout off), every "
        f"{report['probe']['every']} updates.", "",
        "disc = the discriminator's AUC; token = AUC of per-token-id log-odds of \"replaced\" (smoothed, "
        "pseudo-count 1), each batch scored by a table fitted on the window's other batches; half = the same "
        "fitted on half the batches (if far below token, the table is data-starved); in-sample = fitted on the "
        "scored samples themselves (leaks labels through rare tokens: an optimistic bound); gap = disc - token "
        "(> 0: the discriminator uses more than the token's identity). Mean ± std over seeds.", "",
        "| variant | init | Adam | step | disc AUC | token AUC | gap | token AUC half | token AUC in-sample |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for variant, by_step in c.items():
        overrides = VARIANTS[variant]
        init = overrides.get("embeddings_project_initializer", "glorot_uniform")
        adam = "bias-corrected" if overrides.get("adam_bias_correction", False) else "official"
        for step in steps:
            s = by_step[step]
            cell = lambda k: f"{s[k]['mean']:.3f} ± {s[k]['std']:.3f}"  # noqa: E731
            lines.append(f"| {variant} | {init} | {adam} | {step} | {cell('disc_auc')} | {cell('token_auc')} | "
                         f"{s['gap']['mean']:+.3f} ± {s['gap']['std']:.3f} | {cell('token_auc_half')} | "
                         f"{cell('token_auc_in_sample')} |")
    lines += ["", "Per-seed final values (disc / token):", ""]
    for variant in c:
        mine = [r for r in report["runs"] if r["variant"] == variant]
        lines.append(f"- {variant}: " + ", ".join(
            f"seed {r['seed']} {r['records'][-1]['disc_auc']:.3f} / {r['records'][-1]['token_auc']:.3f}" for r in mine))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + [""]))


def plot(path, report):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for i, (variant, by_step) in enumerate(report["curves"].items()):
        steps = sorted(by_step)
        for ax, key, style in ((axes[0], "disc_auc", "-"), (axes[0], "token_auc", "--"), (axes[1], "gap", "-")):
            mean = np.array([by_step[s][key]["mean"] for s in steps])
            std = np.array([by_step[s][key]["std"] for s in steps])
            label = variant if style == "-" else None
            ax.plot(steps, mean, style, color=f"C{i}", marker="o" if style == "-" else None, ms=3, label=label)
            ax.fill_between(steps, mean - std, mean + std, color=f"C{i}", alpha=0.12)
    axes[0].set_title("discriminator AUC (solid) vs token-identity AUC (dashed)")
    axes[1].set_title("gap: discriminator - token identity")
    axes[1].axhline(0, color="grey", lw=0.8)
    for ax in axes:
        ax.set_xlabel("pre-training step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("AUC on held-out batches")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.output_dir:
        raise app.UsageError("--output_dir is required.")
    unknown = sorted(set(FLAGS.variants) - set(VARIANTS))
    if unknown:
        raise app.UsageError(f"Unknown variant(s) {unknown}. Choose from {list(VARIANTS)}.")
    budget = dict(efficiency.BUDGETS["full"])
    budget["learning_rate"] = FLAGS.learning_rate or budget["learning_rate"]
    output_dir = os.path.abspath(FLAGS.output_dir)
    seeds = FLAGS.seeds or budget["seeds"]
    batch_size = FLAGS.batch_size or budget["batch_size"]
    corpus = FLAGS.corpus or budget["corpus"]
    start = time.time()
    data, vocab_file = efficiency.prepare_data(corpus, FLAGS.vocab, output_dir, 128, efficiency.Units())
    train_data, heldout = efficiency.split_holdout(data, FLAGS.holdout)
    base = get_config("tiny", data=train_data, vocab_file=vocab_file, batch_size=batch_size,
                      learning_rate=budget["learning_rate"], seq_length=128, log_steps=10, **budget["model"])
    base = resolve_data(base, FLAGS.demo_dir)
    probe_batches = efficiency.fixed_batches(heldout, base, FLAGS.probe_batches)

    runs = [run(variant, seed, base, probe_batches, output_dir) for seed in range(seeds) for variant in FLAGS.variants]
    report = dict(
        command=" ".join(shlex.quote(a) for a in ["python", *sys.argv]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        versions=efficiency.versions(), model=budget["model"], batch_size=batch_size,
        learning_rate=budget["learning_rate"], steps=FLAGS.steps, schedule_steps=FLAGS.schedule_steps or FLAGS.steps,
        seeds=seeds, variants=VARIANTS,
        data=dict(train=os.path.relpath(train_data, output_dir) if "," not in train_data else
                  f"{len(train_data.split(','))} record files", heldout=os.path.basename(heldout)),
        probe=dict(every=FLAGS.probe_every, batches=FLAGS.probe_batches, seed=efficiency.PROBE_SEED),
        runs=runs, curves=curves(runs), cpu_seconds=sum(r["cpu_seconds"] for r in runs),
        seconds=time.time() - start,
    )
    write_json(os.path.join(output_dir, "results.json"), report)
    write_markdown(os.path.join(output_dir, "results.md"), report)
    plot(os.path.join(output_dir, "context_probe.png"), report)
    logging.info("Wrote results.json, results.md and context_probe.png to %s", output_dir)


if __name__ == "__main__":
    cli.run_script(main)
