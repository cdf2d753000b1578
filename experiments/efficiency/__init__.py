"""The equal-compute experiment: pre-training objectives at the same FLOPs, scored by fine-tuning.

    python -m experiments.efficiency.efficiency --budget smoke --output_dir /tmp/efficiency_smoke
    python -m experiments.efficiency.context_probe --output_dir /tmp/context_probe

`efficiency.py` is the harness, `context_probe.py` its discriminator-context probe;
`results/` holds the measured runs (`results/probe/` the probe's).
"""
