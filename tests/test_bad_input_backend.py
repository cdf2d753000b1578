"""`--backend`: an unknown one, one not installed, and a TensorFlow-only flag beside JAX or PyTorch (pre-training's and
fine-tuning's): one `error:` line each, through the command, nothing written.

Each case runs `python -m electra_tf.pretrain` (or `finetune`) in a folder that already holds a file, its
`--model_dir` inside it: the folder keeps its checksums and gains nothing.
"""

import pytest

from helpers import checksums, error_line, run_python, without_package

pytestmark = pytest.mark.ci  # its large tests run in CI's slow step

PRETRAIN = ["-m", "electra_tf.pretrain", "--config", "tiny", "--train_steps", "3"]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "work" / "notes.txt").parent.mkdir()
    (tmp_path / "work" / "notes.txt").write_text("kept\n")
    return tmp_path / "work"


def refused(args, folder, exit_code=1, env=None):
    """Runs `python args`; asserts one `error:` line, no traceback, `exit_code`, and `folder` unchanged; returns the
    line."""
    before = checksums(folder)
    line = error_line(run_python(args, check=False, env=env), exit_code)
    assert checksums(folder) == before and not (folder / "run").exists()
    return line


def test_an_unknown_backend_is_a_bad_flag(folder):
    line = refused([*PRETRAIN, "--model_dir", str(folder / "run"), "--backend", "numpy"], folder, exit_code=2)
    assert "--backend=numpy" in line and "tensorflow|jax|torch" in line


def test_a_backend_that_is_not_installed_names_the_flag_and_the_package(folder, tmp_path):
    line = refused([*PRETRAIN, "--model_dir", str(folder / "run"), "--backend=jax"], folder,
                   env=without_package(tmp_path, "jax"))
    assert "`--backend=jax`" in line and "the jax package" in line and "pip install jax" in line


@pytest.mark.parametrize("backend,flags,named", [
    ("torch", ["--strategy", "mirrored"], "`--strategy=mirrored`"),
    ("jax", ["--fused_elementwise"], "`--fused_elementwise`"),
    pytest.param("jax", ["--strategy=tpu", "--tpu", "local"], "`--strategy=tpu`", marks=pytest.mark.large),
    pytest.param("torch", ["--strategy", "multi_worker"], "`--strategy=multi_worker`", marks=pytest.mark.large),
])
def test_a_tensorflow_only_flag_with_another_backend_names_both(folder, backend, flags, named):
    line = refused([*PRETRAIN, "--model_dir", str(folder / "run"), "--backend", backend, *flags], folder)
    assert named in line and f"`--backend={backend}`" in line and "TensorFlow backend only" in line


@pytest.mark.large
def test_keras_backend_in_the_environment_chooses_the_backend_when_the_flag_is_absent(folder):
    line = refused([*PRETRAIN, "--model_dir", str(folder / "run"), "--fused_elementwise"], folder,
                   env={"KERAS_BACKEND": "torch"})
    assert "`--backend=torch`" in line and "TensorFlow backend only" in line
    line = refused([*PRETRAIN, "--model_dir", str(folder / "run")], folder, env={"KERAS_BACKEND": "numpy"})
    assert "`KERAS_BACKEND=numpy`" in line and "--backend tensorflow, jax, torch" in line


@pytest.mark.large
@pytest.mark.parametrize("backend,flags,named", [("jax", ["--strategy", "mirrored"], "`--strategy=mirrored`"),
                                                 ("torch", ["--strategy=multi_worker"], "`--strategy=multi_worker`")])
def test_finetuning_with_a_tensorflow_only_strategy_under_another_backend_names_both(folder, backend, flags, named):
    line = refused(["-m", "electra_tf.finetune", "--task", "sst-2", "--data_dir", str(folder), "--init",
                    str(folder), "--output_dir", str(folder / "run"), "--backend", backend, *flags], folder)
    assert named in line and f"`--backend={backend}`" in line and "TensorFlow backend only" in line
