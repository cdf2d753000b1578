#!/usr/bin/env bash
# Runs `python -m benchmarks.train_step` settings in alternation (A B C ..., A B C ...), one process per run,
# so that background load on a shared machine hits every setting alike, then writes the report.
# Usage (repo root): bash benchmarks/run_train_step.sh ROUNDS OUT.jsonl REPORT.md "SETTING" ["SETTING" ...]
#   SETTING: extra flags for one run, e.g. "--config small --precision mixed_bfloat16"
# Example:
#   bash benchmarks/run_train_step.sh 2 runs/train_step.jsonl benchmarks/results/train_step.md \
#       "--config small" "--config small --jit_compile 1" "--config small --precision mixed_bfloat16"
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
ROUNDS=$1; JSONL=$2; REPORT=$3; shift 3
for r in $(seq 1 "$ROUNDS"); do
  for s in "$@"; do
    echo "[$(date -u +%T)] round $r: $s"
    # shellcheck disable=SC2086
    $PY -m benchmarks.train_step $s --json "$JSONL" 2>/dev/null | grep -E '^\| [a-z]|per window' | grep -v '^| setting' \
      || echo "  FAILED: $s"
  done
done
$PY -m benchmarks.train_step --summarize "$JSONL" --output "$REPORT" > /dev/null && echo "wrote $REPORT"
