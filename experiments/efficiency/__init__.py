"""The equal-compute experiment: pre-training objectives at the same FLOPs, scored by fine-tuning.

    python -m experiments.efficiency.efficiency --budget smoke --output_dir runs/efficiency_smoke

`efficiency.py` is the harness (plan, resume, run), `guard.py` the encoder guard, `probes.py` the
discriminator's context probe, `merge.py` the merging of invocations and `report.py` results.md and
the figures; `results/` holds the measured runs.
"""
