"""Every command as users run it: the documented successful invocations exit 0; refused outputs (exit 1) and
non-finite flags (a bad flag: exit 2) are one `error:` line, nothing pre-existing changed."""

import os

import pytest

from helpers import digests, error_line, make_run_dir, run_python, write_vocab

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    return make_run_dir(root / "run", write_vocab(root / "vocab.txt"))


@pytest.mark.large
def test_the_readme_quick_start_trains_on_the_demo_corpus_and_exits_0(tmp_path, demo_data):
    """`python -m electra_tf.pretrain --config tiny --model_dir runs/demo` (here 2 steps): no --data needed."""
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "demo"),
                         "--demo_dir", demo_data["demo_dir"], "--train_steps", "2",
                         "--batch_size", "4", "--verbose", "0"])
    assert result.returncode == 0
    assert (tmp_path / "demo" / "discriminator.keras").exists()
    assert "Strategy auto -> " in result.stderr  # the device default, logged with its devices


@pytest.mark.parametrize("kind", ["encoder", "preset"])
def test_export_exits_0_and_never_writes_into_an_existing_output_or_its_init(run_dir, tmp_path, kind):
    out = tmp_path / kind
    result = run_python(["-m", "electra_tf.export", "--format", kind, "--init", run_dir, "--output_dir", str(out),
                         "--seq_length", "64"][: 8 if kind == "preset" else 10])
    assert result.returncode == 0
    before, run_before = digests(out), digests(run_dir)
    again = run_python(["-m", "electra_tf.export", "--format", kind, "--init", run_dir, "--output_dir", str(out)],
                       check=False)
    assert f"`--output_dir={out}` is not empty" in error_line(again)
    into_init = run_python(["-m", "electra_tf.export", "--format", kind, "--init", run_dir, "--output_dir",
                            os.path.join(run_dir, "export")], check=False)
    assert "overlaps the input" in error_line(into_init)
    assert digests(out) == before and digests(run_dir) == run_before


@pytest.mark.parametrize("command", [
    ["-m", "electra_tf.pretrain", "--config", "tiny", "--learning_rate", "nan"],
    ["-m", "electra_tf.pretrain", "--config", "tiny", "--dropout", "inf"],
    ["-m", "electra_tf.finetune", "--task", "sst2", "--data_dir", "d", "--init", "i", "--learning_rate", "nan"],
    ["-m", "electra_tf.finetune", "--task", "sst2", "--data_dir", "d", "--init", "i", "--warmup_proportion", "nan"],
])
def test_non_finite_float_flags_are_one_range_error_line(tmp_path, command):
    flag, value = command[-2], command[-1]
    result = run_python([*command, "--model_dir" if "pretrain" in command[1] else "--output_dir",
                         str(tmp_path / "out")], check=False)
    line = error_line(result, exit_code=2)
    assert line.startswith(f"error: `{flag}` must be ") and line.endswith(f"Received: `{flag}={value}`")
    assert not (tmp_path / "out").exists()
