"""Research experiments (not speed benchmarks); run from the repository root as `python -m experiments.<folder>.<name>`."""
