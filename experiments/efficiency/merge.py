"""`--merge`: invocations with other `--objectives` (or seeds, or grid points) share one table.

Two reports merge only when every setting in `MERGE_FIELDS` agrees (`MergeMismatch` names the file
and the field, before any work). The seeded no-pre-training baseline, run by both, shows how far
the invocations agree; an encoder run again in both keeps its newer runs and records how far it moved.
"""

import json
import os

from benchmarks.common import read_json
from electra_tf.finetuning.config import with_current_keys
from experiments.efficiency.report import BASELINE, in_row_order, row_rank

# Fields two invocations must share for their runs to sit in one table (`--merge`).
MERGE_FIELDS = ("budget_name", "budget", "finetune", "finetune_keep", "seeds", "tasks", "baseline_seed", "guard_atol",
                "context_probe")


class MergeMismatch(ValueError):
    """A `--merge` report was produced with other settings than this invocation."""


def comparable(report, field):
    value = json.loads(json.dumps(report.get(field)))
    if field == "budget":  # the corpus glob may be spelled through another checkout's (or a link's) ../shared
        value["corpus"] = os.path.realpath(value["corpus"])
    if field == "finetune" and value:  # a report of an earlier version says max_seq_length
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
        if field not in other or comparable(other, field) != comparable(expected, field):
            raise MergeMismatch(f"--merge {path}: field '{field}' is {comparable(other, field)!r} there but "
                                f"{expected[field]!r} here; only runs with the same settings share a table.")


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

    for path, other in merges:
        check_mergeable(path, other, report)
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
        report["grid_runs"] += [r for r in other["grid_runs"] if run_key(r) not in have]
        for objective, p in other["pretraining"].items():
            mine = report["pretraining"].setdefault(objective, p)
            for name, run in p.get("runs", {}).items():
                mine.setdefault("runs", {}).setdefault(name, run)
        for name, records in other["context"].items():
            report["context"].setdefault(name, records)
        for field in ("learning_rates", "train_limits"):  # the grid: every rate and size of any invocation
            report[field] = sorted(set(report[field]) | set(other[field]), reverse=field == "train_limits")
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

