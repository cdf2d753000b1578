r"""Summarises `benchmarks/side_by_side.sh` runs as a Markdown table.

    python -m benchmarks.side_by_side_summary benchmarks/results/side_by_side.jsonl

Per setting and batch: median (min-max) of the steps/s of every timed window
of every round, sequences/s, GFLOP/s from the shared analytic count
(`electra_tf.training.flops`, 8.98 GFLOP per ELECTRA-Small sequence for
every implementation), MFU against the fp32 2048^3 matmul peak that
`train_step.py --peak 1` measured in the same session, peak RSS (median over
rounds), the machine's busy share during the runs, and the ratio of the best
electra_tf fp32 setting to each peer setting.
"""

import collections
import json
import statistics
import sys

from electra_tf.config import get_config  # noqa: E402
from electra_tf.training import flops  # noqa: E402


def main(path):
    with open(path, encoding="utf-8") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    per_seq = flops.train_flops_per_sequence(get_config("small"))
    peaks = [r["peak_gflops"]["float32"] for r in runs if r.get("peak_gflops")]
    peak = statistics.median(peaks) if peaks else None
    groups = collections.defaultdict(list)
    for r in runs:
        groups[(r["batch_arg"], r["setting"])].append(r)
    lines = [
        f"fp32 matmul peak (2048^3, median of {len(peaks)} measurements in the session): "
        + (f"{peak:.1f} GFLOP/s" if peak else "not measured"),
        "",
        "| batch | implementation / setting | steps/s median (min-max) | windows | seq/s | GFLOP/s | MFU | "
        "peak RSS MB | machine busy | electra_tf fp32 best / it |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for batch in sorted({b for b, _ in groups}):
        rows = {s: rs for (b, s), rs in groups.items() if b == batch}
        medians = {s: statistics.median([x for r in rs for x in r["steps_per_s"]]) for s, rs in rows.items()}
        ours = [m for s, m in medians.items() if s.startswith("ours") and "bf16" not in s]
        best = max(ours) if ours else None
        for setting, rs in sorted(rows.items(), key=lambda kv: -medians[kv[0]]):
            windows = [x for r in rs for x in r["steps_per_s"]]
            med = medians[setting]
            gflops = med * batch * per_seq / 1e9
            name = rs[0].get("peer") or "electra_tf"
            lines.append(
                f"| {batch} | {name} `{setting}` | {med:.4f} ({min(windows):.4f}-{max(windows):.4f}) | "
                f"{len(windows)} | {med * batch:.2f} | {gflops:.1f} | "
                + (f"{gflops / peak:.1%}" if peak else "-")
                + f" | {statistics.median(r['max_rss_mb'] for r in rs):,.0f} | "
                f"{statistics.median(r['busy_share'] for r in rs):.0%} | "
                + (f"{best / med:.2f}x" if best else "-") + " |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
