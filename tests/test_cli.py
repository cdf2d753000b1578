"""One CLI vocabulary: shared flag names, deprecated spellings with one warning, console scripts, a quiet start."""

import importlib
import pathlib
import io
import os
import re
import subprocess
import sys

import pytest
from absl import flags

from electra_tf import cli
from electra_tf.cli import quiet, tensorflow_start
from helpers import REPO, run_python

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

CLIS = ["electra_tf.pretrain", "electra_tf.finetune", "electra_tf.export", "electra_tf.convert",
        "electra_tf.predict", "electra_tf.pipelines.build_pretraining_data", "electra_tf.pipelines.build_vocab",
        "electra_tf.pipelines.inspect_records", "electra_tf.pipelines.records_to_arrays"]
CONSOLE_SCRIPTS = {"electra-pretrain", "electra-finetune", "electra-export", "electra-convert", "electra-predict",
                   "electra-build-data", "electra-build-vocab"}


def console_scripts():
    """name -> "module:function" of setup.py's console scripts."""
    text = (REPO / "setup.py").read_text()
    return dict(re.findall(r'"([\w-]+)=([\w.]+:\w+)"', text))


def test_importing_every_cli_in_one_process_defines_no_flag_and_loads_no_tensorflow():
    """No DuplicateFlagError; and TensorFlow loads only once a CLI runs (after `cli.prepare_tensorflow`)."""
    code = ("import sys\n"
            "import electra_tf.pretrain, electra_tf.finetune, electra_tf.export, electra_tf.exporting, "
            "electra_tf.convert, electra_tf.predict\n"
            "from absl import flags\n"
            "print(sorted(n for n in flags.FLAGS if n in ('model_dir', 'init', 'output_dir', 'seq_length')))\n"
            "print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["[]", "False"]


@pytest.mark.parametrize("module", CLIS[:5])
def test_each_cli_speaks_the_shared_vocabulary(module):
    program = importlib.import_module(module)
    registered = flags.FlagValues()
    program.define_flags(registered)
    assert not set(cli.DEPRECATED_FLAGS) & set(registered), f"{module} defines a deprecated spelling"
    assert ("model_dir" in registered) == (module == "electra_tf.pretrain")
    for name, new in program.ALIASES.items():
        assert new in registered and name not in registered, (module, name)


@pytest.mark.parametrize("module", CLIS[5:])
def test_the_pipelines_accept_their_old_spellings(module):
    program = importlib.import_module(module)
    assert set(program.ALIASES.values()) <= {"vocab_file", "seq_length"}
    assert "def define_flags" in pathlib.Path(program.__file__).read_text()


@pytest.mark.parametrize("module,args,name,value", [
    ("electra_tf.pretrain", ["--init_from=hf:some_dir"], "init", "hf:some_dir"),
    ("electra_tf.finetune", ["--max_seq_length", "64"], "seq_length", 64),
    ("electra_tf.export", ["--output", "out"], "output_dir", "out"),
    ("electra_tf.export", ["--kind", "tflite"], "format", "tflite"),  # the flag's name before --format
    ("electra_tf.convert", ["-output=model.keras"], "output_dir", "model.keras"),
])
def test_a_deprecated_spelling_is_the_new_flag_with_one_warning(module, args, name, value):
    program = importlib.import_module(module)
    registered = flags.FlagValues()
    program.define_flags(registered)
    stderr = io.StringIO()
    registered(cli.rewrite_deprecated(["prog", *args], program.ALIASES, stderr))
    assert registered[name].value == value
    old = re.match(r"-+(\w+)", args[0]).group(1)
    assert stderr.getvalue() == (f"warning: --{old} is deprecated; use --{name} "
                                 "(the old spelling goes in the next release)\n")


def test_rewrite_deprecated_spellings():
    table = cli.aliases("vocab", "max_seq_length", output="vocab_file")
    stderr = io.StringIO()
    argv = ["prog", "--vocab", "v.txt", "--max_seq_length=32", "-vocab=w.txt",
            "--vocab_size=8", "--novocab", "--num_shards", "2", "--", "--vocab", "x"]
    assert cli.rewrite_deprecated(argv, table, stderr) == [
        "prog", "--vocab_file", "v.txt", "--seq_length=32", "-vocab_file=w.txt",
        "--vocab_size=8", "--novocab_file", "--num_shards", "2", "--", "--vocab", "x"]
    # Two old spellings of one flag with other values contradict each other (tests/test_contradictions.py).
    assert cli.rewrite_deprecated(["prog", "--output", "o.txt"], table, stderr) == ["prog", "--vocab_file", "o.txt"]
    lines = stderr.getvalue().splitlines()
    assert [line.split(";")[0] for line in lines] == [
        "warning: --vocab is deprecated", "warning: --max_seq_length is deprecated", "warning: --output is deprecated"]
    assert cli.rewrite_deprecated(["prog", "--vocab_file=v"], table, stderr) == ["prog", "--vocab_file=v"]
    assert cli.aliases("init_from") == {"init_from": "init"}


def test_every_cli_is_a_console_script_with_a_callable_target():
    scripts = console_scripts()
    assert set(scripts) == CONSOLE_SCRIPTS
    for name, target in scripts.items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_quiet_console_leaves_a_users_log_level_alone(monkeypatch):
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    monkeypatch.setattr(quiet, "_quieted", False)
    tensorflow_start.log_level()
    quiet.quiet_console()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"  # kept; the start-up lines are still filtered
    assert isinstance(tensorflow_start.gpu_device_present(), bool)


@pytest.mark.parametrize("users_setting,expected", [(None, "True"), ("0", "False")])
def test_a_cli_start_turns_on_onednn_unless_the_user_chose(users_setting, expected):
    """TensorFlow's own flag (not ours) reads back the oneDNN choice in a fresh process (no GPU here)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if users_setting is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = users_setting
    code = ("from electra_tf import cli; cli.prepare_tensorflow(); "
            "from tensorflow.python.util import _pywrap_util_port as port; print(port.IsMklEnabled())")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=dict(env, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr
    if cli.gpu_device_present() and users_setting is None:
        expected = result.stdout.split()[0]  # a GPU machine keeps TensorFlow's own choice
    assert result.stdout.split() == [expected]


def test_a_cli_started_without_a_log_level_prints_only_its_own_lines():
    """No TensorFlow start-up lines (oneDNN, CUDA drivers, cuInit, CPU instructions), no absl pre-init line."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "electra_tf.export", "--format", "encoder", "--output", "x"],
                            cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=dict(env, PYTHONPATH=str(REPO)))
    assert result.returncode == 2
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        "warning: --output is deprecated; use --output_dir (the old spelling goes in the next release)",
        "error: --init is required. (see --help)"]


@pytest.mark.parametrize("module,flag", [("electra_tf.convert", "--output_dir"), ("electra_tf.pipelines.build_vocab", "--vocab_file")])
def test_help_lists_the_programs_flags(module, flag):
    """Flags defined through electra_tf.cli are the program's own in `--help` (not only in --helpfull)."""
    result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True, text=True,
                            timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2"))
    assert f"\n  {flag}: " in result.stdout + result.stderr


def test_invoke_leaves_the_global_flags_as_they_were():
    from electra_tf import convert as convert_cli

    before = set(flags.FLAGS)
    with pytest.raises(SystemExit):
        cli.invoke(convert_cli, ["--from", "onnx"])
    assert set(flags.FLAGS) == before  # a module defining --output_dir later (the efficiency harness) can


def test_beam_worker_lines_keep_the_pipelines_own_and_drop_start_up_and_tracebacks():
    """Lines as a multi-processing Beam worker writes them (recorded from a real build and a failing one)."""
    worker = [
        "WARNING:root:apitools not found, and bigquery client libraries are not available despite the import",
        "INFO:__main__:Logging handler created.",
        "WARNING:__main__:No semi_persistent_directory found:  User registered objects (e.g. schema, ...)",
        "WARNING:apache_beam.options.pipeline_options:Discarding unparseable args: ['--pipeline_type_check']",
        "INFO:apache_beam.runners.worker.sdk_worker:Control channel established.",
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "I0000 00:00:1795557415.636446    7428 port.cc:153] oneDNN custom operations are on. You may see",
        "INFO:absl:Reading /data/cut.txt.gz",
        "ERROR:apache_beam.runners.common:Truncated or corrupt input '/data/cut.txt.gz' at byte 20,000",
        "Traceback (most recent call last):",
        '  File "/opt/app/pipelines/text_files.py", line 88, in read_text_batches',
        "    chunk = reader.file.read(read_size)",
        "EOFError: Compressed file ended before the end-of-stream marker was reached",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "apache_beam/runners/common.py", line 1512, in apache_beam.runners.common.DoFnRunner.process',
        "electra_tf.pipelines.text_io.CorruptInputError: Truncated or corrupt input '/data/cut.txt.gz'",
        "INFO:absl:Wrote /out/pretrain_data.tfrecord-00000-of-00002 (3 examples)",
        "error: a line of the builder's own error boundary",
    ]
    kept = lambda keep: [line for line in worker if keep((line + "\n").encode())]  # noqa: E731
    assert kept(quiet._WorkerLines()) == ["INFO:absl:Reading /data/cut.txt.gz",
                                        "INFO:absl:Wrote /out/pretrain_data.tfrecord-00000-of-00002 (3 examples)",
                                        "error: a line of the builder's own error boundary"]
    debug = kept(quiet._WorkerLines(debug=True))  # tracebacks kept, start-up noise still dropped
    assert debug == [line for line in worker[7:]]


def test_quiet_beam_workers_filters_a_child_process_and_restores_stderr(capfd):
    script = ("import sys; print('INFO:apache_beam.runners.worker.sdk_worker:Control channel established.', "
              "file=sys.stderr); print('INFO:absl:Wrote shard 0', file=sys.stderr)")
    with cli.quiet_beam_workers():
        subprocess.run([sys.executable, "-c", script], check=True)
        os.write(2, b"oneDNN custom operations are on. (this process)\nthis process's own line\n")
    os.write(2, b"after the block\n")
    assert capfd.readouterr().err.splitlines() == ["INFO:absl:Wrote shard 0", "this process's own line",
                                                   "after the block"]


def test_a_missing_package_is_one_line_naming_what_to_install(tmp_path):
    """An ImportError anywhere (here safetensors, for `--to hf`) ends with one line naming the package."""
    from helpers import without_package

    from electra_tf.models.encoder import ElectraEncoder

    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)
    encoder.build()
    encoder.save(str(tmp_path / "e.keras"))
    result = run_python(["-m", "electra_tf.convert", "--from", "keras", "--input", str(tmp_path / "e.keras"),
                         "--to", "hf", "--output_dir", str(tmp_path / "hf")], check=False,
                        env=without_package(tmp_path, "safetensors"))
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: No module named 'safetensors': install it with `pip install safetensors` (or `pip install -e .`).")
    assert "Traceback" not in result.stderr


def test_safetensors_is_a_core_requirement():
    from helpers import REPO

    setup = (REPO / "setup.py").read_text()
    core = setup[setup.index("install_requires"):setup.index("extras_require")]
    assert '"safetensors' in core


# Loaded first by every Python process started with it on PYTHONPATH: marks the two ends of an exit in files,
# an `atexit` handler (run by Python's exit and by `process_exit.leave`) and a module object's `__del__` (run
# only by the interpreter's teardown, which `leave` skips).
SITECUSTOMIZE = """
import atexit, os
MARKS = os.environ["EXIT_MARKS"]
atexit.register(lambda: open(os.path.join(MARKS, "atexit"), "w").close())
class Teardown:
    def __del__(self, open=open, path=os.path.join(MARKS, "teardown")):  # the names bound now: teardown clears them
        open(path, "w").close()
teardown = Teardown()
"""

# What pip writes as a console script (`electra-convert`), the command's `run` imported from its module.
CONSOLE_STUB = """# -*- coding: utf-8 -*-
import re
import sys
from electra_tf.convert import run
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(run())
"""

# A script that runs a command in its own process and goes on after it.
WRAPPER = """
import runpy, sys
sys.argv = ["electra_tf.convert", *sys.argv[1:]]
try:
    runpy.run_module("electra_tf.convert", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    print(f"the command ended with {stop.code}; the script goes on")
"""

BAD_INPUT = ["--from", "bert", "--input", "no_such_folder", "--to", "keras", "--output_dir", "out.keras"]


def _exit_marks(tmp_path, args, env=None):
    """Runs `python args` with SITECUSTOMIZE loaded; (result, the marks left: a subset of {"atexit", "teardown"})."""
    marks, site = tmp_path / "marks", tmp_path / "site"
    marks.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    result = run_python(args, check=False, timeout=300, env={"PYTHONPATH": f"{site}{os.pathsep}{REPO}",
                                                             "EXIT_MARKS": str(marks), **(env or {})})
    return result, {path.name for path in marks.iterdir()}


@pytest.mark.parametrize("launch", ["module", "console_script"])
def test_a_command_run_as_the_program_ends_after_its_atexit_handlers_without_the_teardown(tmp_path, launch):
    """Bad input: the one error line and exit 1; `atexit` ran, the interpreter's teardown did not."""
    stub = tmp_path / "electra-convert"
    stub.write_text(CONSOLE_STUB)
    program = ["-m", "electra_tf.convert"] if launch == "module" else [str(stub)]
    result, marks = _exit_marks(tmp_path, [*program, *BAD_INPUT])
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith("error: ") and "no_such_folder" in result.stderr
    assert marks == {"atexit"}


def test_a_command_ending_without_the_teardown_flushes_what_it_printed(tmp_path):
    """`--help` (absl exits 1 after it) writes its text to a pipe, block-buffered: all of it arrives."""
    result, marks = _exit_marks(tmp_path, ["-m", "electra_tf.convert", "--help"])
    assert result.returncode == 1 and marks == {"atexit"}
    assert "--output_dir" in result.stdout and result.stdout.rstrip().endswith("Try --helpfull to get a list of "
                                                                                 "all flags.")


@pytest.mark.parametrize("env", [{"ELECTRA_TF_FULL_EXIT": "1"},
                                 {"TF_CONFIG": '{"cluster": {"worker": ["localhost:1"]}, '
                                               '"task": {"type": "worker", "index": 0}}'}],
                         ids=["asked", "multi_worker"])
def test_python_exits_as_ever_when_asked_or_on_a_multi_worker_run(tmp_path, env):
    result, marks = _exit_marks(tmp_path, ["-m", "electra_tf.convert", *BAD_INPUT], env=env)
    assert result.returncode == 1 and "error: " in result.stderr
    assert marks == {"atexit", "teardown"}


def test_a_script_that_runs_a_command_in_its_process_goes_on_after_it(tmp_path):
    result, marks = _exit_marks(tmp_path, ["-c", WRAPPER, *BAD_INPUT])
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "the command ended with 1; the script goes on"
    assert marks == {"atexit", "teardown"}
