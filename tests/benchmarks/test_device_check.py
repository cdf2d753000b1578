"""`benchmarks/device_check.py` as the GPU machine runs it, at smoke size on this CPU: the JAX worker (electra_tf's
pre-trainer trained by Keras' `fit` under bf16, `import tensorflow` failing) and the torch worker (HF ELECTRA, the
step traced by `torch.compile`), each a process of its own, give the JSON lines, the table and exit 0."""

import ast
import json
import math
import re

import pytest

from helpers import REPO, run_python

pytestmark = pytest.mark.ci  # its large tests run in CI's slow step


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("device_check")
    result = run_python(["-m", "benchmarks.device_check", "--smoke", "--out", str(out)], timeout=1200)
    rows = [json.loads(line) for line in (out / "device_check.jsonl").read_text(encoding="utf-8").splitlines()]
    return result, rows, (out / "device_check.md").read_text(encoding="utf-8")


@pytest.mark.large  # slow tier: JAX compiles the step and torch traces it, minutes on 2 cores
def test_the_smoke_run_measures_both_sides_on_the_same_work(smoke):
    from electra_tf.config import get_config
    from electra_tf.training import flops

    result, rows, _ = smoke
    assert [(r["impl"], r["config"]) for r in rows] == [("electra_tf jax", "tiny"), ("hf transformers + torch", "tiny")]
    per_seq = flops.train_flops_per_sequence(get_config("tiny", seq_length=32))
    for r in rows:
        assert (r["batch"], r["seq"], r["precision"], r["memory_kind"]) == (2, 32, "mixed_bfloat16", "host RSS")
        assert len(r["steps_per_s"]) == 1 and r["steps_per_s"][0] == r["steps_per_s_median"] > 0
        assert math.isclose(r["tflops"], r["steps_per_s_median"] * 2 * per_seq / 1e12, rel_tol=1e-9)
        assert math.isclose(r["mfu"], r["tflops"] / 990, rel_tol=1e-9)
        assert 0.1 < r["peak_memory_gib"] < 64 and r["warmup_s"] > 0
        assert math.isfinite(r["loss"]) and r["loss"] > 1  # MLM + 50 x RTD of an untrained model
    assert set(rows[0]["versions"]) >= {"jax", "keras", "keras-hub"} and set(rows[1]["versions"]) >= {"torch"}
    assert "electra_tf jax" in result.stdout and "MFU" in result.stdout


@pytest.mark.large  # slow tier: the same run
def test_the_smoke_run_writes_its_table(smoke):
    _, rows, table = smoke
    assert table.startswith("# ELECTRA pre-training step on one GPU") and "python -m benchmarks.device_check " in table
    for r in rows:
        assert f"| tiny | 2 x 32 | {r['impl']} | {r['steps_per_s_median']:.3f} " in table
    assert "Not measured" not in table and "torch.compile backend aot_eager" in table


def test_an_unknown_preset_is_one_error_line_and_nothing_written(tmp_path):
    result = run_python(["-m", "benchmarks.device_check", "--configs", "small,bogus", "--out", str(tmp_path / "out")],
                        check=False)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --configs: unknown preset(s) ['bogus']; choose from ") and "small, " in line
    assert line.endswith("(see --help)") and not (tmp_path / "out").exists()


def test_the_jax_optimizer_skips_the_decay_where_create_optimizer_does():
    """Read from the module's text: importing it imports TensorFlow."""
    from benchmarks import common

    source = (REPO / "electra_tf" / "training" / "optimization.py").read_text(encoding="utf-8")
    (value,) = re.findall(r"^NO_DECAY = (.+)$", source, re.MULTILINE)
    assert common.NO_DECAY == ast.literal_eval(value)
