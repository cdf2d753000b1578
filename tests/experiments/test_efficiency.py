"""The equal-compute experiment: its FLOPs plan and checkpoint steps, the encoder guard, the context probe's AUCs
against independent references, merging invocations, the rate selection, and the smoke budget end to end with resume."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from helpers import digests
from electra_tf.config import OBJECTIVES, get_config
from electra_tf import run_files, sources
from electra_tf.training import flops
from experiments.efficiency import guard, merge, probes
from experiments.efficiency import report as reporting

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

REPO = pathlib.Path(__file__).resolve().parents[2]
TASK = REPO.parent / "shared" / "data" / "tasks" / "trec6"


def load_efficiency():
    from experiments.efficiency import efficiency  # defines the harness's flags, once per process

    return efficiency


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


def run_smoke(output_dir, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run(
        [sys.executable, "-m", "experiments.efficiency.efficiency", "--budget", "smoke", "--output_dir", str(output_dir),
         "--tasks", str(TASK), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    return result


@pytest.mark.release  # about 7 minutes on 2 cores: every objective pre-trained and fine-tuned, twice merged
def test_smoke_budget_end_to_end_then_resumes(tmp_path):
    if not TASK.exists():
        pytest.skip(f"{TASK} not available")
    first = run_smoke(tmp_path)

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
        config = run_files.read_config(str(tmp_path / "pretrain" / objective))
        per_step = flops.train_flops_per_sequence(config) * config.batch_size
        assert config.objective == objective and config.train_steps == p["steps"]
        assert p["flops_per_sequence"] == flops.train_flops_per_sequence(config)
        assert abs(p["steps"] * per_step - budget) <= per_step, objective
        assert run_files.latest_checkpoint(str(tmp_path / "pretrain" / objective)).endswith(f"ckpt-{p['steps']}")

    # Figure 4 analog: electra and mlm at every fraction; every encoder fine-tuned on the task.
    fractions = report["fractions"]
    for objective in ("electra", "mlm"):
        assert sorted(s["fraction"] for s in report["summary"].values() if s["objective"] == objective) == fractions
    assert len(report["runs"]) == len(report["summary"]) * report["seeds"]
    assert all(0 <= r["score"] <= 1 for r in report["runs"])
    units = first.stderr.count("[done]")
    assert units == report["units_run"] > len(report["runs"])

    # Re-running finds every unit done and only rewrites the report: every unit's files are as they were.
    units_before = {name: digests(tmp_path / name) for name in ("pretrain", "encoders", "finetune")}
    second = run_smoke(tmp_path)
    assert "[done]" not in second.stderr
    assert second.stderr.count("[skip]") == units
    assert json.loads((tmp_path / "results.json").read_text())["units_run"] == 0
    assert {name: digests(tmp_path / name) for name in units_before} == units_before

    # --merge through the command line: a copy of this report adds nothing; the shared baseline agrees.
    shutil.copyfile(tmp_path / "results.json", tmp_path / "earlier.json")
    run_smoke(tmp_path, "--merge", str(tmp_path / "earlier.json"))
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged["summary"] == report["summary"] and merged["merged"][0]["encoders"] == []
    assert "differs by at most 0.00 points" in (tmp_path / "results.md").read_text()
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    refused = subprocess.run(  # other settings: refused before any work
        [sys.executable, "-m", "experiments.efficiency.efficiency", "--budget", "smoke", "--output_dir",
         str(tmp_path / "other"), "--tasks", str(TASK), "--epochs", "2", "--merge", str(tmp_path / "earlier.json")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "field 'finetune'" in refused.stderr
    assert not (tmp_path / "other").exists()

    # Another pre-training seed in another folder, merged: a different model, and its mean over seeds.
    # With a rate grid at two sizes: the new encoders get the whole grid; the merged ones only the recipe.
    run_smoke(tmp_path / "seeds", "--objectives", "electra", "--pretrain_seeds", "1",
              "--merge", str(tmp_path / "earlier.json"), "--learning_rates", "2e-3,1e-3", "--train_limits", "32,16")
    seeds = json.loads((tmp_path / "seeds" / "results.json").read_text())
    assert seeds["learning_rates"] == [1e-3, 2e-3] and seeds["train_limits"] == [32, 16]
    assert {(r["train_limit"], r["learning_rate"]) for r in seeds["grid_runs"]} == {(32, 1e-3), (16, 1e-3), (16, 2e-3)}
    assert all(r["test_score"] is not None and r["encoder"] in ("random_init", "electra-s1") for r in seeds["grid_runs"])
    chosen = recompute_selection(seeds)
    assert set(chosen) == {(n, e) for n in (32, 16) for e in ("random_init", "electra-s1")}
    assert {(int(n), e) for n, encoders in seeds["selection"].items() for e in encoders} == set(chosen)
    for (n, name), c in chosen.items():
        assert seeds["selection"][str(n)][name]["test"] == pytest.approx(c["test"])
    seeds_md = (tmp_path / "seeds" / "results.md").read_text()
    assert "grid {0.001, 0.002}" in seeds_md and "Not in this table" in seeds_md
    assert set(seeds["summary"]) == set(report["summary"]) | {"electra-s1"}
    assert seeds["summary"]["electra-s1"]["pretrain_seed"] == 1 and seeds["summary"]["electra-s1"]["fraction"] == 1
    first_config = run_files.read_config(str(tmp_path / "pretrain" / "electra"))
    assert run_files.read_config(str(tmp_path / "seeds" / "pretrain" / "electra-s1")).seed == first_config.seed + 1
    import numpy as np
    batch0, out0, _ = guard.read_reference(str(tmp_path / "encoders" / "electra" / guard.GUARD_FILE))
    batch1, out1, _ = guard.read_reference(
        str(tmp_path / "seeds" / "encoders" / "electra-s1" / guard.GUARD_FILE))
    assert np.array_equal(batch0["token_ids"], batch1["token_ids"])  # the same batch, another model
    assert np.abs(out0 - out1).max() > 1e-3
    averages = [np.mean([100 * r["score"] for r in seeds["runs"] if r["encoder"] == name]) for name in
                ("electra", "electra-s1")]
    assert f"Avg {np.mean(averages):.1f} ± {np.std(averages):.1f}" in (tmp_path / "seeds" / "results.md").read_text()


# --- Guard: an encoder is fine-tuned only if it equals the model pre-training produced ---

def small_pretrainer(**overrides):
    from electra_tf.models.pretrainer import build_pretrainer

    config = get_config("tiny", vocab_size=300, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                        intermediate_dim=64, seq_length=32, max_sequence_length=64, **overrides)
    return build_pretrainer(config), config


def id_batch(seed=0, size=8, seq=32):
    import numpy as np

    ids = np.random.RandomState(seed).randint(150, 300, (size, seq)).astype("int32")
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    mask[:, 24:] = 0  # padding too
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


def export(encoder, directory, batch, reference):
    directory.mkdir(parents=True)
    (directory / "vocab.src").write_text("[PAD]\n")
    sources.save_encoder(encoder, str(directory), str(directory / "vocab.src"))
    guard.write_reference(str(directory / guard.GUARD_FILE), batch, reference, step=7, source="live")
    return dict(path=str(directory / run_files.ENCODER_FILE))


def test_guard_accepts_an_equal_encoder_and_refuses_one_changed_block_weight(tmp_path):
    pretrainer, _ = small_pretrainer()  # dropout 0.1: the guard must run with dropout off to accept
    batch = id_batch()
    reference = guard.encoder_outputs(pretrainer.discriminator, batch)

    info = export(pretrainer.discriminator, tmp_path / "same", batch, reference)
    guard.guard_encoder("electra", info)  # saved, reloaded as fine-tuning loads it: equal
    assert info["guard"]["max_abs_diff"] <= 1e-5 and info["guard"]["step"] == 7

    kernel = pretrainer.discriminator.transformer_layers[1]._feedforward_output_dense.kernel
    kernel.assign(kernel.numpy() + 1e-3 * (kernel.numpy() > 0))  # one weight matrix of the last block
    info = export(pretrainer.discriminator, tmp_path / "changed", batch, reference)
    with pytest.raises(guard.EncoderMismatch, match="not the model pre-training produced"):
        guard.guard_encoder("electra", info)

    fresh, _ = small_pretrainer()  # a restore that kept nothing: random blocks
    with pytest.raises(guard.EncoderMismatch):
        guard.check_encoder(fresh.discriminator, batch, reference, "fresh")


def test_export_refuses_a_restore_that_differs_from_the_live_model(tmp_path, write_records, monkeypatch):
    """`pretrain` end to end on a tiny run: the real restore passes the guard; one with random blocks is refused."""
    efficiency = load_efficiency()
    data = write_records(tmp_path / "records", num_files=2, num_examples=32, seq_length=32, vocab_size=300)
    (tmp_path / "vocab.txt").write_text("[PAD]\n")  # copied beside the encoders only
    config = get_config("tiny", vocab_size=300, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                        intermediate_dim=64, seq_length=32, max_sequence_length=64, batch_size=8, data=data,
                        train_steps=4, warmup_steps=1, vocab_file=str(tmp_path / "vocab.txt"))
    train_files, heldout = efficiency.split_holdout(data, holdout=True)
    assert heldout not in train_files.split(",") and len(train_files.split(",")) == 1
    guard_batch = efficiency.fixed_batches(heldout, config, 1, batch_size=4)[0]
    probe = efficiency.fixed_batches(heldout, config, 2)
    units = efficiency.Units()
    config = config.replace(data=train_files)
    encoders = efficiency.pretrain("electra", config, str(tmp_path / "run"), [0.5, 1.0], units, guard_batch,
                                   probe, probe_every=2)
    assert sorted(e["step"] for e in encoders.values()) == [2, 4]
    assert all(e["restore_max_diff"] <= 1e-5 for e in encoders.values())
    records = json.loads((tmp_path / "run" / "pretrain" / "electra" / probes.CONTEXT_FILE).read_text())
    assert [r["step"] for r in records] == [0, 2, 4]
    assert all(0 <= r["disc_auc"] <= 1 and 0 <= r["token_auc"] <= 1 for r in records)

    from electra_tf.models.pretrainer import build_pretrainer

    restore = sources.restore_pretrainer

    def broken_restore(model_dir, checkpoint=None):  # a restore that leaves the blocks as initialised
        restored, cfg = restore(model_dir, checkpoint)
        fresh = build_pretrainer(cfg)
        for layer, new in zip(restored.discriminator.transformer_layers, fresh.discriminator.transformer_layers):
            for variable, value in zip(layer.weights, new.weights):
                variable.assign(value)
        return restored, cfg

    for name in ("electra_f0.5", "electra"):
        shutil.rmtree(tmp_path / "run" / "encoders" / name)
    monkeypatch.setattr(sources, "restore_pretrainer", broken_restore)
    with pytest.raises(guard.EncoderMismatch, match="electra@0.5 restored from"):
        efficiency.pretrain("electra", config, str(tmp_path / "run"), [0.5, 1.0], units, guard_batch)


# --- Context probe: AUC and the token-identity baseline against independent references ---

def brute_force_auc(scores, labels):
    positives = [s for s, y in zip(scores, labels) if y]
    negatives = [s for s, y in zip(scores, labels) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def test_auc_equals_the_pairwise_count_with_ties():
    import numpy as np

    rng = np.random.RandomState(0)
    for _ in range(5):
        scores = rng.randint(0, 6, 200).astype(float)  # many ties
        labels = rng.rand(200) < 0.3
        assert probes.auc(scores, labels) == pytest.approx(brute_force_auc(scores, labels), abs=1e-12)
    assert probes.auc([0.1, 0.9], [0, 1]) == 1.0 and probes.auc([0.9, 0.1], [0, 1]) == 0.0
    assert np.isnan(probes.auc([0.1, 0.2], [1, 1]))


def test_token_identity_auc_is_one_when_the_token_decides_and_half_when_it_does_not():
    import numpy as np

    rng = np.random.RandomState(1)
    ids = rng.randint(0, 50, 20000)
    folds = np.arange(len(ids)) % 2
    assert probes.token_identity_auc(ids, ids % 3 == 0, folds) == pytest.approx(1.0, abs=1e-3)
    random_labels = rng.rand(len(ids)) < 0.15
    assert probes.token_identity_auc(ids, random_labels, folds) == pytest.approx(0.5, abs=0.02)


def test_token_identity_auc_matches_the_analytic_auc_of_per_token_rates():
    """Labels drawn with P(replaced | id) = q_id: the best token-only AUC is that of q itself, computed exactly."""
    import numpy as np

    rng = np.random.RandomState(2)
    vocab = 40
    frequency = rng.dirichlet(np.ones(vocab))
    q = rng.uniform(0.02, 0.6, vocab)
    # Exact AUC of the score q_id: sum over id pairs of P(pos has id a) P(neg has id b) [q_a > q_b] (+1/2 ties).
    pos, neg = frequency * q / (frequency * q).sum(), frequency * (1 - q) / (frequency * (1 - q)).sum()
    exact = sum(pos[a] * neg[b] * ((q[a] > q[b]) + 0.5 * (a == b)) for a in range(vocab) for b in range(vocab))
    ids = rng.choice(vocab, 200000, p=frequency)
    labels = rng.rand(len(ids)) < q[ids]
    found = probes.token_identity_auc(ids, labels, np.arange(len(ids)) % 2)
    assert found == pytest.approx(exact, abs=0.01)
    assert 0.6 < exact < 0.9  # a case where the token says something, not everything


# --- --merge: invocations with other --objectives share one table ---

COMMITTED = REPO / "experiments" / "efficiency" / "results" / "results.json"


def part_of(report, names):
    """The report an invocation that ran only the encoders `names` (and the baseline) would have written."""
    import copy

    part = copy.deepcopy(report)
    keep = set(names) | {"random_init"}
    objectives = {report["encoders"][n]["objective"] for n in keep}
    part["encoders"] = {n: e for n, e in part["encoders"].items() if n in keep}
    part["runs"] = [r for r in part["runs"] if r["encoder"] in keep]
    part["pretraining"] = {o: p for o, p in part["pretraining"].items() if o in objectives}
    run_names = {n.split("@")[0] for n in keep}  # context and per-seed runs are keyed by run name
    part["context"] = {n: c for n, c in part["context"].items() if n in run_names}
    for plan in part["pretraining"].values():
        if "runs" in plan:
            plan["runs"] = {n: r for n, r in plan["runs"].items() if n in run_names}
    part["objectives"] = [o for o in report["objectives"] if o in objectives]
    part["curve_objectives"] = [o for o in report["curve_objectives"] if o in objectives]
    for key in ("summary", "merged"):
        part.pop(key, None)
    return part


def test_merging_the_parts_of_a_real_report_gives_back_its_table(tmp_path):
    """The committed report split by encoder, then merged: the same runs, summary and markdown table."""
    if not COMMITTED.exists():
        pytest.skip(f"{COMMITTED} not committed")
    report = json.loads(COMMITTED.read_text())
    report.pop("merged", None)
    first = [n for n in report["encoders"] if n.split("@")[0] == "electra"]
    rest = [n for n in report["encoders"] if n not in first and n != "random_init"]
    assert first and rest
    other = part_of(report, rest)
    for plan in other["pretraining"].values():  # another invocation may list the FLOP parts in another order
        plan["breakdown"] = dict(reversed(plan["breakdown"].items()))
    for run in other["runs"]:  # the baseline of the other invocation: slightly different scores
        if run["objective"] == "random_init":
            run["score"] += 0.001 * (run["seed"] + 1)
    merged = merge.merge_reports(part_of(report, first), [("other/results.json", other)])
    merged["summary"] = reporting.summarize(merged["runs"], report["tasks"], report["seeds"])

    original = reporting.summarize(report["runs"], report["tasks"], report["seeds"])
    assert merged["summary"] == original and list(merged["summary"])[0] == "random_init"
    assert set(merged["encoders"]) == set(report["encoders"])
    assert list(merged["pretraining"]) == [o for o in OBJECTIVES if o in report["pretraining"]]
    assert merged["merged"][0]["encoders"] == rest
    assert merged["context"] == report["context"] and merged["pretraining"] == report["pretraining"]
    assert merged["merged"][0]["baseline_max_abs_diff"] == pytest.approx(0.001 * report["seeds"])

    report["summary"] = original
    reporting.write_markdown(tmp_path / "original.md", report)
    reporting.write_markdown(tmp_path / "merged.md", merged)
    table = lambda text: [line for line in text.splitlines() if line.startswith("| ")]  # noqa: E731
    assert table((tmp_path / "merged.md").read_text()) == table((tmp_path / "original.md").read_text())
    assert f"Merged (`--merge`) from `other/results.json`: encoders {', '.join(rest)}" in \
        (tmp_path / "merged.md").read_text()
    assert "differs by at most 0.30 points" in (tmp_path / "merged.md").read_text()


def test_run_names_carry_objective_and_pretraining_seed():
    for objective in OBJECTIVES:
        for seed in (0, 1, 12):
            name = reporting.run_name(objective, seed)
            assert (name == objective) == (seed == 0)
            for encoder in (name, name + "@0.25"):
                assert reporting.objective_of(encoder) == objective and reporting.run_seed(encoder) == seed


def test_merge_refuses_a_report_with_other_settings_naming_file_and_field():
    if not COMMITTED.exists():
        pytest.skip(f"{COMMITTED} not committed")
    report = json.loads(COMMITTED.read_text())
    other = json.loads(COMMITTED.read_text())
    other["finetune"]["learning_rate"] *= 2
    with pytest.raises(merge.MergeMismatch, match=r"--merge b/results.json: field 'finetune'"):
        merge.merge_reports(report, [("b/results.json", other)])
    other = json.loads(COMMITTED.read_text())
    other["budget"]["corpus"] = other["budget"]["corpus"].replace("/corpus/", "/x/../corpus/")  # the same glob
    merge.check_mergeable("b/results.json", other, report)


# --- Fine-tuning rate chosen on dev per encoder, test reported ---

def grid_run(encoder, task, seed, lr, n, dev, test, objective=None, pretrain_seed=0):
    return dict(encoder=encoder, objective=objective or encoder.split("-")[0], fraction=1.0,
                pretrain_seed=pretrain_seed, flops=1.0, task=task, seed=seed, metric="accuracy", learning_rate=lr,
                train_limit=n, score=dev, dev={"accuracy": dev}, test_score=test, test={"accuracy": test},
                train_seconds=1.0, seconds=2.0, cpu_seconds=2.0, majority_class_accuracy=0.5)


def synthetic_grid():
    """Two tasks, rates {1e-3, 2e-3}, 2 seeds; the dev-best rate is not the test-best one on task a."""
    scores = {  # (encoder, task, lr) -> [(dev, test) per seed]
        ("electra", "a", 1e-3): [(0.60, 0.50), (0.70, 0.52)],  # dev mean 0.65: chosen; test 0.51
        ("electra", "a", 2e-3): [(0.62, 0.90), (0.64, 0.92)],  # dev mean 0.63; the better test is never read
        ("electra", "b", 1e-3): [(0.80, 0.70), (0.80, 0.72)],  # a dev tie: the smaller rate
        ("electra", "b", 2e-3): [(0.70, 0.74), (0.90, 0.76)],
        ("electra-s1", "a", 1e-3): [(0.50, 0.40), (0.50, 0.40)],
        ("electra-s1", "a", 2e-3): [(0.60, 0.60), (0.60, 0.62)],
        ("electra-s1", "b", 1e-3): [(0.90, 0.80), (0.90, 0.80)],
        ("electra-s1", "b", 2e-3): [(0.10, 0.10), (0.10, 0.10)],
    }
    runs = [grid_run(e, t, seed, lr, 100, dev, test, objective="electra", pretrain_seed=int(e.endswith("s1")))
            for (e, t, lr), pairs in scores.items() for seed, (dev, test) in enumerate(pairs)]
    # mlm lacks one seed of one cell: left out of the selection, never half-scored.
    runs += [grid_run("mlm", t, seed, lr, 100, 0.5, 0.5) for t in "ab" for lr in (1e-3, 2e-3) for seed in (0, 1)
             if (t, lr, seed) != ("b", 2e-3, 1)]
    return runs


def test_rate_is_chosen_on_dev_and_test_read_at_it():
    selection = reporting.select_rates(synthetic_grid(), ["a", "b"], 2, [1e-3, 2e-3])
    assert list(selection) == [100] and set(selection[100]) == {"electra", "electra-s1"}  # mlm incomplete
    e = selection[100]["electra"]
    assert e["tasks"]["a"]["rate"] == 1e-3 and e["tasks"]["a"]["test"] == pytest.approx(51.0)
    assert e["tasks"]["b"]["rate"] == 1e-3 and e["tasks"]["b"]["dev"] == pytest.approx(80.0)  # tie: smaller
    assert e["test"] == pytest.approx((51.0 + 71.0) / 2) and e["dev"] == pytest.approx((65.0 + 80.0) / 2)
    s1 = selection[100]["electra-s1"]
    assert [s1["tasks"][t]["rate"] for t in "ab"] == [2e-3, 1e-3] and s1["test"] == pytest.approx((61.0 + 80.0) / 2)

    rows = reporting.objective_rows(selection, recipe_rate=2e-3)[100]
    assert list(rows) == ["electra"] and rows["electra"]["rates"] == {"a": [1e-3, 2e-3], "b": [1e-3, 1e-3]}
    import numpy as np
    tests = [(51.0 + 71.0) / 2, (61.0 + 80.0) / 2]
    assert rows["electra"]["test"] == {"mean": pytest.approx(np.mean(tests)), "std": pytest.approx(np.std(tests))}
    recipe_tests = [(91.0 + 75.0) / 2, (61.0 + 10.0) / 2]  # everything at 2e-3
    assert rows["electra"]["recipe"]["test"]["mean"] == pytest.approx(np.mean(recipe_tests))
    assert reporting.objective_rows(selection, recipe_rate=5e-3)[100]["electra"]["recipe"] is None


def test_grid_points_leave_out_the_recipe_point():
    efficiency = load_efficiency()
    recipe = dict(learning_rate=2e-3, train_limit=2000)
    points = efficiency.grid_points(["1e-4", "2e-3"], ["2000", "200"], recipe)
    assert points == [(2000, 1e-4), (200, 1e-4), (200, 2e-3)]
    assert efficiency.grid_points([], [], recipe) == []


def recompute_selection(report):
    """An independent recomputation of the committed selection: plain loops over every fine-tuning run."""
    import collections
    import numpy as np

    cells = collections.defaultdict(list)
    for r in report["runs"] + report.get("grid_runs", []):
        if r["fraction"] in (0.0, 1.0) and r.get("test_score") is not None:
            cells[r["train_limit"], r["encoder"], r["task"], r["learning_rate"]].append((r["score"], r["test_score"]))
    rows = {}
    for (n, name, task, lr), pairs in cells.items():
        rows.setdefault((n, name), {}).setdefault(task, []).append(
            (np.mean([d for d, _ in pairs]), -lr, lr, np.mean([t for _, t in pairs]), len(pairs)))
    chosen = {}
    for (n, name), tasks in rows.items():
        complete = set(tasks) == set(report["tasks"]) and all(
            len(options) == len(report["learning_rates"]) and all(o[4] == report["seeds"] for o in options)
            for options in tasks.values())
        if complete:
            best = {task: max(options) for task, options in tasks.items()}
            chosen[n, name] = dict(rates={t: best[t][2] for t in best},
                                   dev=100 * np.mean([best[t][0] for t in best]),
                                   test=100 * np.mean([best[t][3] for t in best]))
    return chosen


def test_committed_selection_table_is_recomputed_from_its_runs():
    if not COMMITTED.exists():
        pytest.skip(f"{COMMITTED} not committed")
    report = json.loads(COMMITTED.read_text())
    if not report.get("selection"):
        pytest.skip("the committed report has no rate grid yet")
    import numpy as np

    chosen = recompute_selection(report)
    assert {(int(n), name) for n, encoders in report["selection"].items() for name in encoders} == set(chosen)
    markdown = (COMMITTED.parent / "results.md").read_text()
    by_objective = {}
    for (n, name), c in chosen.items():
        by_objective.setdefault((n, report["encoders"][name]["objective"]), []).append(
            (report["encoders"][name].get("pretrain_seed", 0), c))
    for (n, objective), found in by_objective.items():
        found = [c for _, c in sorted(found, key=lambda x: x[0])]
        rates = " | ".join(", ".join(f"{c['rates'][t]:g}" for c in found) for t in report["tasks"])
        dev, test = [c["dev"] for c in found], [c["test"] for c in found]
        row = (f"| {objective} | {n} | {len(found)} | {rates} | {np.mean(dev):.1f} ± {np.std(dev):.1f} | "
               f"{np.mean(test):.1f} ± {np.std(test):.1f} |")
        assert row in markdown, row


def test_a_preempted_finetuning_run_exits_143_and_leaves_its_unit_to_do(tmp_path, monkeypatch):
    """SIGTERM makes `run_finetuning` save its checkpoint and return None: the harness stops, records nothing."""
    efficiency = load_efficiency()
    monkeypatch.setattr(efficiency, "run_finetuning", lambda *args, **kwargs: None)
    info = dict(path=str(tmp_path / "encoder.keras"), objective="electra", fraction=1.0, flops=1.0)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as stopped:
        efficiency.finetune_run("electra", info, None, str(tmp_path / "task"), 0,
                                dict(train_limit=200, learning_rate=1e-3), str(run_dir), efficiency.Units())
    assert stopped.value.code == 143
    assert not (run_dir / "results.json").exists() and not (run_dir / "timing.json").exists()
