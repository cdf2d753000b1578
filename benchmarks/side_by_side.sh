#!/usr/bin/env bash
# electra_tf against both peers of ../shared/bench/peers, alternated in one session, ELECTRA-Small,
# seq 128, fp32 unless named; every process under /usr/bin/time for its peak RSS.
#
#   bash ../shared/bench/peers/setup_venvs.sh all      # once: $HOME/.cache/electra-peers/{hf,tfm}
#   bash benchmarks/side_by_side.sh 2 32 > benchmarks/results/side_by_side.log
#   python -m benchmarks.train_step --side_by_side benchmarks/results/side_by_side.jsonl
#
# Args: ROUNDS BATCH [SETTING...]; settings run in the order given, the list repeated ROUNDS times.
# Each line of $OUT (default benchmarks/results/side_by_side.jsonl) is one run: the benchmark's own
# JSON plus `impl`, `setting`, `round`, `max_rss_mb`, `busy_share` (whole machine, /proc/stat).
set -uo pipefail
ROUNDS=${1:-2}
BATCH=${2:-32}
shift 2 2>/dev/null || shift $#
SETTINGS=${*:-"ours_inter0 ours_xla_inter0 ours_icdf_inter0 ours_bf16_inter0 hf hf_compile tfm_inter0 tfm_xla"}
PEERS=${PEERS:-$(cd "$(dirname "$0")/../../shared/bench/peers" 2>/dev/null && pwd)}
ROOT=${PEERS_ROOT:-$HOME/.cache/electra-peers}
OUT=${OUT:-benchmarks/results/side_by_side.jsonl}
PY=${PYTHON:-python}
STEPS=${STEPS:-10}
REPEATS=${REPEATS:-3}
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
TIMES=$(mktemp); ERRORS=$(mktemp)
trap 'rm -f "$TIMES" "$ERRORS"' EXIT

run() {  # setting -> the command line
  case $1 in
    ours) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --peak 0 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    ours_inter0) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --inter 0 --peak 1 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    ours_unfused_inter0) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --fused_elementwise 0 --inter 0 --peak 0 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    ours_xla_inter0) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --jit_compile 1 --inter 0 --peak 0 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    ours_icdf_inter0) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --sampler inverse_cdf --inter 0 --peak 0 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    ours_bf16_inter0) echo "$PY -m benchmarks.train_step --config small --batch_size $BATCH --precision mixed_bfloat16 --inter 0 --peak 0 --steps $STEPS --repeats $REPEATS --json /dev/stdout" ;;
    hf) echo "$ROOT/hf/bin/python $PEERS/bench_hf_torch.py --batch $BATCH --steps $STEPS --repeats $REPEATS" ;;
    hf_compile) echo "$ROOT/hf/bin/python $PEERS/bench_hf_torch.py --batch $BATCH --compile default --steps $STEPS --repeats $REPEATS" ;;
    tfm) echo "$ROOT/tfm/bin/python $PEERS/bench_tfm.py --batch $BATCH --steps $STEPS --repeats $REPEATS" ;;
    tfm_inter0) echo "$ROOT/tfm/bin/python $PEERS/bench_tfm.py --batch $BATCH --inter 0 --steps $STEPS --repeats $REPEATS" ;;
    tfm_xla) echo "$ROOT/tfm/bin/python $PEERS/bench_tfm.py --batch $BATCH --xla 1 --steps $STEPS --repeats $REPEATS" ;;
    *) echo "unknown setting $1" >&2; return 1 ;;
  esac
}

for round in $(seq 1 "$ROUNDS"); do
  for setting in $SETTINGS; do
    cmd=$(run "$setting") || exit 2
    echo "[$(date -u +%T)] round $round $setting: $cmd"
    b0=$(busy); t0=$(date +%s.%N)
    line=$(/usr/bin/time -f "MAXRSS_KB %M" -o "$TIMES" $cmd 2>"$ERRORS" | grep '^{' | tail -1)
    b1=$(busy); t1=$(date +%s.%N)
    rss=$(awk '/MAXRSS_KB/{print $2/1024}' "$TIMES")
    share=$(echo "($b1-$b0)/100/(($t1-$t0)*$(nproc))" | bc -l)
    if [ -z "$line" ]; then echo "  failed:"; tail -5 "$ERRORS"; continue; fi
    impl=${setting%%_*}
    echo "$line" | $PY -c "import json,sys; r=json.loads(sys.stdin.read()); r.update(impl='$impl', setting='$setting', round=$round, batch_arg=$BATCH, max_rss_mb=round($rss), busy_share=round($share, 3), command='''$cmd'''); print(json.dumps(r))" >> "$OUT"
    tail -1 "$OUT" | cut -c1-240
  done
done
