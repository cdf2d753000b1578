"""benchmarks/efficiency.py: equal-FLOPs plan, checkpoint steps, and the smoke budget end to end with resume."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from electra_tf.config import OBJECTIVES, get_config
from electra_tf.training import checkpoints, flops

REPO = pathlib.Path(__file__).resolve().parents[2]
TASK = REPO.parent / "shared" / "data" / "tasks" / "trec6"


def load_efficiency():
    spec = importlib.util.spec_from_file_location("efficiency_benchmark", REPO / "benchmarks" / "efficiency.py")
    module = sys.modules.get(spec.name)
    if module is None:  # its absl flags may be defined once per process
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module
    return module


def test_plan_spends_the_same_flops_on_every_objective():
    efficiency = load_efficiency()
    base = get_config("tiny", batch_size=32, vocab_size=30522)
    plan = efficiency.plan_pretraining(base, OBJECTIVES, electra_steps=600)
    budget = 600 * flops.train_flops_per_sequence(base) * 32
    assert plan["electra"]["steps"] == 600
    for objective, p in plan.items():
        per_step = flops.train_flops_per_sequence(base.replace(objective=objective)) * 32
        assert abs(p["steps"] * per_step - budget) <= per_step / 2, objective
    assert plan["mlm"]["steps"] > 600 > plan["all_tokens_mlm"]["steps"]  # no generator / MLM head everywhere


def test_checkpoint_steps_land_on_the_fractions():
    efficiency = load_efficiency()
    assert efficiency.checkpoint_steps(1000, [0.25, 0.5, 1.0]) == (250, {0.25: 250, 0.5: 500, 1.0: 1000})
    every, at = efficiency.checkpoint_steps(1453, [0.25, 0.5, 1.0])
    assert every == 363 and at == {0.25: 363, 0.5: 726, 1.0: 1453}
    every, at = efficiency.checkpoint_steps(7, [0.1, 0.3, 1.0])
    assert every == 1 and at == {0.1: 1, 0.3: 3, 1.0: 7}
    assert efficiency.parse_fractions("0.5") == [0.5, 1.0]


def run_smoke(output_dir):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    start = time.time()
    result = subprocess.run(
        [sys.executable, "benchmarks/efficiency.py", "--budget", "smoke", "--output_dir", str(output_dir),
         "--tasks", str(TASK)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return result, time.time() - start


@pytest.mark.large
def test_smoke_budget_end_to_end_then_resumes(tmp_path):
    if not TASK.exists():
        pytest.skip(f"{TASK} not available")
    first, _ = run_smoke(tmp_path)

    report = json.loads((tmp_path / "results.json").read_text())
    markdown = (tmp_path / "results.md").read_text()
    assert (tmp_path / "efficiency.png").read_bytes()[:4] == b"\x89PNG"
    assert {s["objective"] for s in report["summary"].values()} == set(OBJECTIVES) | {"random_init"}
    for label in ("random_init", "electra", "mlm (BERT)", "electra_15", "replace_mlm", "all_tokens_mlm"):
        assert f"| {label} |" in markdown, label
    assert "| 85.0 |" in markdown and "| 82.2 |" in markdown  # the paper's Table 5 beside ours
    assert "Command: `" in markdown and "tensorflow 2." in markdown

    # Equal FLOPs: steps x FLOPs/sequence x batch equals the electra budget within one step.
    budget = report["pretraining"]["electra"]["budget_flops"]
    for objective, p in report["pretraining"].items():
        config = checkpoints.read_config(str(tmp_path / "pretrain" / objective))
        per_step = flops.train_flops_per_sequence(config) * config.batch_size
        assert config.objective == objective and config.train_steps == p["steps"]
        assert p["flops_per_sequence"] == flops.train_flops_per_sequence(config)
        assert abs(p["steps"] * per_step - budget) <= per_step, objective
        assert checkpoints.latest_checkpoint(str(tmp_path / "pretrain" / objective)).endswith(f"ckpt-{p['steps']}")

    # Figure 4 analog: electra and mlm at every fraction; every encoder fine-tuned on the task.
    fractions = report["fractions"]
    for objective in ("electra", "mlm"):
        assert sorted(s["fraction"] for s in report["summary"].values() if s["objective"] == objective) == fractions
    assert len(report["runs"]) == len(report["summary"]) * report["seeds"]
    assert all(0 <= r["score"] <= 1 for r in report["runs"])
    units = first.stderr.count("[done]")
    assert units == report["units_run"] > len(report["runs"])

    # Re-running finds every unit done and only rewrites the report.
    second, seconds = run_smoke(tmp_path)
    assert "[done]" not in second.stderr
    assert second.stderr.count("[skip]") == units
    assert json.loads((tmp_path / "results.json").read_text())["units_run"] == 0
    assert seconds < 120, seconds  # TensorFlow's import is most of it
