"""One config idiom: each field declared once (default, help, range, choices) for pre-training and fine-tuning alike.

The declarations give the flags (type, enum, help), the checks when a config is
built and when flags are parsed, and `replace`; `--help` shows each field's help.
"""

import dataclasses
import json
import re

import pytest
from absl import flags

from electra_tf import config as config_lib
from electra_tf import config_fields
from electra_tf.config import ElectraConfig, get_config
from electra_tf.config_fields import Interval, fields
from electra_tf.finetuning import config as finetune_config_lib
from electra_tf.tasks import FinetuneConfig
from helpers import run_python, write_records

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

CONFIGS = [ElectraConfig, FinetuneConfig]


def flat(text):
    """`text` with its line breaks undone (absl wraps help at spaces and after hyphens)."""
    return re.sub(r"- ", "-", " ".join(text.split()))


@pytest.mark.parametrize("config_class", CONFIGS)
def test_both_configs_come_from_the_one_field_declaration(config_class):
    assert issubclass(config_class, config_fields.Config)
    declared = fields(config_class)  # raises for a field not declared with config_fields.field
    assert list(declared) == [f.name for f in dataclasses.fields(config_class)]
    for spec in declared.values():
        assert spec.help and spec.help.endswith((".", ")")), spec.name
        assert spec.choices is None or spec.default in spec.choices or spec.optional, spec.name
        assert spec.range is None or spec.default is None or spec.range.contains(spec.default), spec.name
    # The one copy of what a field takes: no second table of ranges or flag types beside the declarations.
    for module in (config_lib, finetune_config_lib):
        assert not {"RANGES", "_check_range", "_FLAG_TYPES", "fields"} & set(vars(module)), module.__name__


@pytest.mark.parametrize("config_class, flag, value, message", [
    (ElectraConfig, "dropout", "1.5", "`--dropout` must be in [0, 1). Received: `--dropout=1.5`"),
    (ElectraConfig, "mask_prob", "0", "`--mask_prob` must be in (0, 1). Received: `--mask_prob=0.0`"),
    (FinetuneConfig, "num_cpu_devices", "-2", "`--num_cpu_devices` must be >= 0. Received: `--num_cpu_devices=-2`"),
    (FinetuneConfig, "layerwise_lr_decay", "nan",
     "`--layerwise_lr_decay` must be in (0, 1]. Received: `--layerwise_lr_decay=nan`"),
])
def test_the_declared_range_is_checked_by_the_flag_and_by_the_config(config_class, flag, value, message):
    registered = flags.FlagValues()
    config_fields.define_flags(config_class, registered)
    with pytest.raises(flags.IllegalFlagValueError, match=re.escape(message)):
        registered(["prog", f"--{flag}={value}"])
    with pytest.raises(ValueError, match=re.escape(message)):
        config_class().replace(**{flag: value})


def test_types_are_checked_when_a_config_is_built_and_overrides_are_parsed():
    with pytest.raises(ValueError, match=r"^`hidden_dim` expects an int; received '128' \(str\)\.$"):
        ElectraConfig(hidden_dim="128")
    with pytest.raises(ValueError, match=r"`jit_compile` expects a bool"):
        FinetuneConfig(jit_compile=1)
    assert ElectraConfig().replace(hidden_dim="128").hidden_dim == 128  # a command line's or a preset's string
    assert isinstance(ElectraConfig(disc_weight=40).disc_weight, float)  # a JSON 40 for 40.0
    assert FinetuneConfig().replace(train_limit="none").train_limit is None
    assert json.loads(get_config("tiny").to_json())["hidden_dim"] == 128


def test_an_interval_reads_and_says_what_it_takes():
    assert [str(Interval.parse(t)) for t in ("[1, inf)", "(0, 1]", "(-inf, inf)")] == ["[1, inf)", "(0, 1]",
                                                                                        "(-inf, inf)"]
    assert Interval.parse("(0, 1]").contains(1) and not Interval.parse("(0, 1]").contains(0)
    assert Interval.parse("[2.5, inf)").describe() == ">= 2.5"
    with pytest.raises(ValueError, match="A range is written like"):
        Interval.parse("1..2")


@pytest.mark.parametrize("module, config_class, preset", [
    ("electra_tf.pretrain", ElectraConfig, True),
    ("electra_tf.finetune", FinetuneConfig, False),
])
def test_help_shows_every_field_with_its_help_text(module, config_class, preset):
    result = run_python(["-m", module, "--help"], check=False)  # absl's --help exits 1
    assert "Try --helpfull" in result.stdout, result.stderr[-3000:]
    text = flat(result.stdout)
    for spec in fields(config_class).values():
        shown = spec.help + (f" (default: the preset's, else {spec.default!r})" if preset else "")
        assert f"--{'[no]' if spec.value_type is bool else ''}{spec.name}: " in text, spec.name
        assert flat(shown) in text, spec.name
    assert "Config override" not in text


def test_the_deprecated_spellings_warn_and_reach_the_new_flag(tmp_path):
    finetune = run_python(["-m", "electra_tf.finetune", "--task", "sst-2", "--data_dir", str(tmp_path), "--init",
                           str(tmp_path), "--output_dir", str(tmp_path / "out"), "--max_seq_length", "2"],
                          check=False)
    assert finetune.returncode == 2
    assert finetune.stderr.splitlines()[-2:] == [
        "warning: --max_seq_length is deprecated; use --seq_length (the old spelling goes in the next release)",
        "error: `--seq_length` must be >= 3. Received: `--seq_length=2`"]
    data = write_records(tmp_path / "data", num_files=1, num_examples=8)
    pretrain = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--data", data, "--seq_length", "32",
                           "--max_sequence_length", "32", "--model_dir", str(tmp_path / "run"),
                           "--init_from", str(tmp_path / "no_such_run")], check=False)
    assert pretrain.returncode == 1
    lines = [line for line in pretrain.stderr.splitlines() if line.startswith(("warning: --", "error: "))]
    assert lines[0] == "warning: --init_from is deprecated; use --init (the old spelling goes in the next release)"
    assert lines[-1].startswith(f"error: Cannot read `--init={tmp_path / 'no_such_run'}`")
    assert not (tmp_path / "run").exists() and not (tmp_path / "out").exists()
