"""FinetuneConfig is the one copy of the fine-tuning defaults: the CLI's flags come from it."""

import dataclasses

import pytest
from absl import flags

from electra_tf.config_fields import fields
from electra_tf.tasks import FinetuneConfig

# The flags and defaults of `electra_tf.finetune` before FinetuneConfig existed (label_column's
# "label" is now resolved at use: None means "label" for classification, the last column for tagging).
OLD_FLAGS = dict(task=None, data_dir=None, init=None, vocab_file=None, output_dir=None, epochs=3, batch_size=32,
                 learning_rate=3e-4, layerwise_lr_decay=0.8, warmup_proportion=0.1, weight_decay=0.0,
                 clip_norm=1.0, dropout=0.1, seq_length=128, num_trials=1, seed=0, text_a_column="sentence",
                 text_b_column=None, regression=False, file_format="tsv", both_orders=None, train_limit=None,
                 dev_limit=None, verbose=2)


def test_every_field_is_a_flag_with_its_default():
    from electra_tf import finetune

    registered = flags.FlagValues()
    finetune.define_flags(registered)
    for name, spec in fields(FinetuneConfig).items():
        flag = registered[name]
        assert flag.default == spec.default, name
        assert flag.help.endswith(spec.help), name
        if spec.choices:
            assert list(flag.parser.enum_values) == list(spec.choices), name
    assert "max_seq_length" not in registered  # the deprecated spelling of --seq_length (finetune.ALIASES)
    for name, default in OLD_FLAGS.items():
        assert getattr(FinetuneConfig(), name) == default, name
    assert {"label_column", "task_kind", "token_column", "tag_scheme", "stride", "strategy", "num_cpu_devices",
            "precision", "jit_compile"} <= set(fields(FinetuneConfig))


def test_choices_and_ranges_are_checked():
    with pytest.raises(ValueError, match="precision"):
        FinetuneConfig(precision="float8")
    with pytest.raises(ValueError, match="strategy"):
        FinetuneConfig(strategy="gpus")
    with pytest.raises(ValueError, match="batch_size"):
        FinetuneConfig(batch_size=0)
    with pytest.raises(ValueError, match=r"Unknown config key\(s\) \['learning_rat'\] of FinetuneConfig"):
        FinetuneConfig().replace(learning_rat=1e-3)
    assert FinetuneConfig().replace(epochs=5).epochs == 5
    assert dataclasses.asdict(FinetuneConfig())["strategy"] == "auto"  # the device default of every command
