#!/usr/bin/env bash
# Run from the repository root: bash benchmarks/side_by_side_hf.sh (its paths are the machine it ran on).
# Side-by-side: HF peer and ours, alternated, same batch 32, fp32, threads 2/1.
HF=$HOME/.cache/electra-peers/hf/bin/python
P=/work/shared/bench/peers
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
for r in 1 2; do
  for s in hf hf_compile ours; do
    b0=$(busy); t0=$(date +%s.%N)
    echo "[$(date -u +%T)] round $r $s"
    case $s in
      hf) $HF $P/bench_hf_torch.py --batch 32 2>/tmp/side_${s}_$r.err | grep '^{' >> /tmp/side_peers.jsonl ;;
      hf_compile) $HF $P/bench_hf_torch.py --batch 32 --compile default 2>/tmp/side_${s}_$r.err | grep '^{' >> /tmp/side_peers.jsonl ;;
      ours) /work/venv/bin/python -m benchmarks.train_step --config small --peak 0 --pipeline 0 --json /tmp/side_ours.jsonl --tag side 2>/dev/null | grep -E "^\| small|per window" ;;
    esac
    b1=$(busy); t1=$(date +%s.%N)
    echo "  machine busy share over the run: $(echo "($b1-$b0)/100/(($t1-$t0)*2)" | bc -l | cut -c1-5)"
    tail -1 /tmp/side_peers.jsonl | cut -c1-300
  done
done
