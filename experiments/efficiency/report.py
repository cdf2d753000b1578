"""The experiment's report: names and row order, the summary tables, results.md and the figures.

`summarize` averages each encoder's fine-tuning runs; `select_rates` chooses, per full-budget encoder,
training-set size and task, the learning rate with the best mean dev score and reads test there;
`write_markdown` writes results.md beside the paper's Table 5; `plot` and `plot_context` draw
efficiency.png (average dev score vs pre-training FLOPs) and context.png (the context probe).
"""

import os
import statistics

import numpy as np

from benchmarks import common
from electra_tf.config import OBJECTIVES

versions = common.versions  # with electra_tf's commit
BASELINE = "random_init"  # the encoder with no pre-training
# Paper Table 5 (GLUE dev, Base-sized); "mlm" is BERT. Section 7 of the ELECTRA reference notes.
PAPER_TABLE5 = {"electra": 85.0, "all_tokens_mlm": 84.3, "replace_mlm": 82.4, "electra_15": 82.4, "mlm": 82.2}


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


def row_rank(objective, pretrain_seed=0):
    """Report rows: the baseline, then `OBJECTIVES` order, then pre-training seed."""
    return ((BASELINE, *OBJECTIVES).index(objective), pretrain_seed)


def in_row_order(by_name):
    """`by_name` (keyed by objective or run name) in `row_rank` order; results.json stores keys sorted."""
    return dict(sorted(by_name.items(), key=lambda item: row_rank(objective_of(item[0]), run_seed(item[0]))))


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
    """results.md: the header, the objective x task table, the rate selection, the curve, the plan, the probe."""
    plan = in_row_order(report["pretraining"])
    lines = header_markdown(report, plan) + table_markdown(report, plan) + selection_markdown(report)
    lines += curve_markdown(report, plan) + context_markdown(report["context"], report["context_probe"])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def header_markdown(report, plan):
    """Command, date, commit, the merged invocations and the settings."""
    b = report["budget"]
    merged = [f"Merged (`--merge`) from `{m['path']}`: encoders {', '.join(m['encoders'])}, run on {m['date']} at "
              f"electra_tf {m['versions']['electra_tf']} ({m['seconds']:.0f} s) by `{m['command']}`. "
              + (f"The seeded no-pre-training baseline, run in both, differs by at most "
                 f"{100 * m['baseline_max_abs_diff']:.2f} points per task and seed." if m["baseline_max_abs_diff"]
                 is not None else "")
              + (f" Encoders run again here ({', '.join(m['rerun'])}): the newer runs are kept; at the recipe they "
                 f"differ from that file's by at most {100 * m['rerun_max_abs_diff']:.2f} points per task and seed."
                 if m.get("rerun_max_abs_diff") is not None else "") + "\n" for m in report.get("merged", [])]
    budget_flops = plan[next(iter(plan))]["budget_flops"] if plan else float("nan")
    lines = [f"# Pre-training efficiency: objectives at equal FLOPs (`--budget {report['budget_name']}`)", "",
             f"Command: `{report['command']}`", "",
             f"Date: {report['date']}. Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()) + ".",
             f"Wall time: {report['seconds']:.0f} s this invocation ({report['units_run']} units run, "
             f"{report['units_skipped']} skipped).", "",
             "Paths: `$SHARED_DATA` is the shared data folder (../shared/data beside the checkout), `$RUNS` the "
             "folder earlier invocations wrote to; results.json records its paths relative to each run's folder.", "",
             *merged,
             f"Encoder: `tiny` preset + {b['model']}, seq 128, batch {b['batch_size']}, lr {b['learning_rate']}; "
             f"budget = {b['electra_steps']} electra steps = {budget_flops:.3g} training FLOPs (matmul-only count, "
             f"`electra_tf.training.flops`). Fine-tuning: {report['finetune']}, {report['seeds']} seed(s). Scores are "
             f"dev {', '.join(sorted({r['metric'] for r in report['runs']}))} x 100, mean over seeds; Spread = std over "
             "seeds of the task average.", ""]
    if report["budget_name"] == "smoke":
        lines += ["**Smoke budget: a few steps on tiny data. The numbers only show that every stage runs; "
                  "they carry no information about the objectives.**", ""]
    return lines


def table_markdown(report, plan):
    """The objective x task table at the full budget, beside the paper's Table 5 and the majority class."""
    summary, tasks = report["summary"], report["tasks"]
    header = ["encoder", "steps", "PT FLOPs", *tasks, "Avg", "Median", "Spread", "Paper Table 5"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for name, s in summary.items():
        if s["fraction"] not in (1.0, 0.0):
            continue
        cells = [name if name != "mlm" else "mlm (BERT)", str(plan[s["objective"]]["steps"] if s["objective"] in plan
                                                              else 0), f"{s['flops']:.3g}"]
        cells += [f"{s['tasks'][t]['mean']:.1f} ± {s['tasks'][t]['std']:.1f}" for t in tasks]
        cells += [f"{s['average']:.1f}", f"{s['median']:.1f}", f"{s['spread']:.1f}",
                  str(PAPER_TABLE5.get(s["objective"], "-"))]
        lines.append("| " + " | ".join(cells) + " |")
    majority = {r["task"]: 100 * r["majority_class_accuracy"] for r in report["runs"]}
    lines.append("| majority class | - | - | " + " | ".join(f"{majority[t]:.1f}" for t in tasks)
                 + f" | {np.mean([majority[t] for t in tasks]):.1f} | - | - | - |")
    return lines + pretrain_seed_lines(summary) + [
        "", "Paper reference (GLUE dev): Table 5, Base-sized: ELECTRA 85.0, All-Tokens MLM 84.3, Replace MLM 82.4, "
        "ELECTRA 15% 82.4, BERT 82.2; Table 1 at equal compute: ELECTRA-Small 79.9 vs BERT-Small 75.1."]


def curve_markdown(report, plan):
    """Score vs pre-training FLOPs, the equal-FLOPs plan, the fine-tuning totals and the guard."""
    lines = ["", "## Score vs pre-training FLOPs (Figure 4 analog, `efficiency.png`)", "",
             "| objective | fraction | step | PT FLOPs | Avg |", "|---|---:|---:|---:|---:|"]
    for s in sorted(report["summary"].values(), key=lambda s: (s["objective"], s["fraction"])):
        if (s["objective"] in report["curve_objectives"] or s["objective"] == BASELINE) \
                and s.get("pretrain_seed", 0) == 0:
            p = plan.get(s["objective"])
            step = round(s["flops"] / p["flops_per_sequence"] / p["batch_size"]) if p else 0
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
    guarded = [e["guard"]["max_abs_diff"] for e in report["encoders"].values() if "guard" in e]
    return lines + ["", f"Fine-tuning: {len(every_run)} runs ({len(report['runs'])} at the recipe), "
                    f"{total('seconds'):.0f} s wall / {total('cpu_seconds'):.0f} CPU s in all "
                    f"({total('train_seconds'):.0f} s of `fit`). Load average at the end: {os.getloadavg()[0]:.1f} on "
                    f"{os.cpu_count()} cores.", "",
                    f"Guard: {len(guarded)} encoders equal the model that produced them before fine-tuning "
                    f"(max |output diff| {max(guarded, default=float('nan')):.2g} <= {report['guard_atol']:g} on a "
                    f"fixed held-out batch, dropout off); the random baseline's seed is {report['baseline_seed']}.",
                    ""]


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


def axes(title, xlabel, ylabel):
    """A matplotlib figure and its axes, the report's size, a grid and `title`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def save(fig, ax, path, fontsize):
    import matplotlib.pyplot as plt

    ax.legend(fontsize=fontsize)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_context(path, context, title="Discriminator vs token identity (held-out, per window)"):
    """Windowed discriminator AUC (solid) and token-identity AUC (dashed) per objective or run."""
    fig, ax = axes(title, "pre-training step", "AUC (replaced vs original)")
    for i, (name, records) in enumerate(in_row_order(context).items()):
        steps = [r["step"] for r in records]
        ax.plot(steps, [r["disc_auc"] for r in records], color=f"C{i}", marker="o", ms=3, label=f"{name}: discriminator")
        ax.plot(steps, [r["token_auc"] for r in records], color=f"C{i}", linestyle="--", label=f"{name}: token id only")
    save(fig, ax, path, 7)


def plot(path, summary, curve_objectives):
    """Average dev score against pre-training FLOPs: the curve objectives' fractions, the others' full budget."""
    fig, ax = axes("Fine-tuned score vs pre-training compute", "pre-training FLOPs (matmul count)",
                   "average dev score (x100)")
    for objective in dict.fromkeys(s["objective"] for s in summary.values()):
        mine = [s for s in summary.values() if s["objective"] == objective]
        points = sorted((s["flops"], s["average"]) for s in mine if s.get("pretrain_seed", 0) == 0)
        others = [(s["flops"], s["average"]) for s in mine if s.get("pretrain_seed", 0) != 0]
        if not points:  # a report of other seeds only
            points, others = sorted(others), []
        if objective == BASELINE:
            ax.axhline(points[0][1], color="grey", linestyle="--", label="no pre-training")
            continue
        style = dict(marker="o") if objective in curve_objectives else dict(marker="s", linestyle="none")
        line, = ax.plot(*zip(*points), label=objective, **style)
        if others:  # other pre-training seeds, full budget only
            ax.plot(*zip(*others), marker="x", linestyle="none", color=line.get_color(),
                    label=f"{objective}, other pre-training seeds")
    ax.set_xscale("log")
    save(fig, ax, path, 8)


def write(output_dir, results):
    """Adds the summary and the rate selection to `results`; writes results.json, results.md and the figures."""
    results["summary"] = summarize(results["runs"], results["tasks"], results["seeds"])
    results["selection"] = select_rates(results["runs"] + results["grid_runs"], results["tasks"], results["seeds"],
                                        results["learning_rates"])
    common.write_json(os.path.join(output_dir, "results.json"), results)
    write_markdown(os.path.join(output_dir, "results.md"), results)
    plot(os.path.join(output_dir, "efficiency.png"), results["summary"], results["curve_objectives"])
    if results["context"]:
        plot_context(os.path.join(output_dir, "context.png"), results["context"])
    with open(os.path.join(output_dir, "results.md"), encoding="utf-8") as f:
        print(f.read())
