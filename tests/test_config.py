"""The config system: presets as data, overrides, derived values against the paper."""

import json

import pytest

from electra_tf.config import ElectraConfig, get_config, preset_names


def test_presets_have_the_papers_sizes():
    # (L, H, heads, FFN, E, generator H) from the reference, section 2.
    expected = {
        "small": (12, 256, 4, 1024, 128, 64),
        "base": (12, 768, 12, 3072, 768, 256),
        "large": (24, 1024, 16, 4096, 1024, 256),
        "small++": (12, 256, 4, 1024, 128, 256),
    }
    for name, sizes in expected.items():
        c = get_config(name)
        assert (c.num_layers, c.hidden_dim, c.num_heads, c.intermediate_dim, c.embedding_dim,
                c.generator_hidden_dim) == sizes, name
    assert get_config("small").num_predictions == 19
    assert get_config("base").num_predictions == 79  # int(0.155 * 512)
    assert get_config("large").num_predictions == 130  # mask prob 0.25 at 512
    assert get_config("small").generator_num_heads == 1 and get_config("base").generator_num_heads == 4
    assert set(preset_names()) >= {"tiny", "small", "base", "large", "small++", "base++", "large++"}


def test_overrides_coerce_strings_and_reject_unknown_keys():
    c = get_config("small", learning_rate="1e-4", jit_compile="true", train_steps="10")
    assert (c.learning_rate, c.jit_compile, c.train_steps) == (1e-4, True, 10)
    with pytest.raises(ValueError, match="`train_steps` expects an int; received 'ten'"):
        get_config("small", train_steps="ten")
    with pytest.raises(ValueError, match=r"Unknown config key\(s\) \['learning_rat'\]"):
        get_config("small", learning_rat=1.0)
    with pytest.raises(ValueError, match="Unknown preset 'huge'"):
        get_config("huge")
    with pytest.raises(ValueError, match="Unknown `objective='bert'`"):
        get_config("small", objective="bert")
    with pytest.raises(ValueError, match="divisible"):
        get_config("small", num_heads=3)


def test_config_round_trips_through_json():
    c = get_config("base++", seed=3)
    assert ElectraConfig(**json.loads(c.to_json())) == c


@pytest.mark.parametrize("name, value, wanted", [
    ("learning_rate", float("nan"), "a finite number > 0"),
    ("learning_rate", float("inf"), "a finite number > 0"),
    ("dropout", float("nan"), r"in \[0, 1\)"),
    ("clip_norm", float("inf"), "a finite number >= 0"),
    ("adam_beta1", float("-inf"), r"in \[0, 1\)"),
])
def test_nan_and_infinite_values_fail_the_range_check_naming_the_flag(name, value, wanted):
    """NaN compares false with both bounds: it passed every range check (and trained on)."""
    with pytest.raises(ValueError, match=rf"^`--{name}` must be {wanted}. Received: `--{name}={value}`$"):
        get_config("tiny", **{name: value})


@pytest.mark.parametrize("name, value", [("learning_rate", "nan"), ("warmup_proportion", "nan"),
                                         ("dropout", "inf"), ("layerwise_lr_decay", "nan"), ("clip_norm", "inf")])
def test_fine_tuning_refuses_nan_and_infinite_flags(name, value):
    from electra_tf.tasks import FinetuneConfig

    with pytest.raises(ValueError, match=rf"^`--{name}` must be .*Received: `--{name}={value}`$"):
        FinetuneConfig(**{name: float(value)})
