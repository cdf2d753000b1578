"""Speed and throughput scripts; run each from the repository root as `python -m benchmarks.<name>`."""
