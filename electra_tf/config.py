"""The one config system: a flat dataclass of plain values, presets that override it.

A preset (`configs/<name>.py`) is a dict of the fields that differ from the
defaults below; `get_config("small", learning_rate=1e-4)` applies a preset then
overrides. Every field is also an absl flag of `electra_tf.pretrain`. Derived
values (generator size, max predictions) are computed by properties, never
stored twice. Defaults are the paper's ELECTRA-Small values
(`../shared/docs/electra-reference.md`, sections 1-3).
"""

import dataclasses
import importlib
import json
import math
import pkgutil
import typing

from electra_tf.objectives import OBJECTIVES

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
OPTIMIZERS = ("adamw", "lamb")
INITIALIZERS = ("glorot_uniform", "truncated_normal")  # see electra_tf/layers/initializers.py


@dataclasses.dataclass
class ElectraConfig:
    # --- Discriminator encoder (the model kept after pre-training) ---
    vocab_size: int = 30522  # rows of the shared token-embedding table
    embedding_dim: int = 128  # E, width of the shared embeddings
    hidden_dim: int = 256  # H
    num_layers: int = 12
    num_heads: int = 4
    intermediate_dim: int = 1024  # feed-forward width, 4 H
    max_sequence_length: int = 512  # rows of the position-embedding table
    num_segments: int = 2
    dropout: float = 0.1  # hidden and attention dropout
    activation: str = "gelu"  # exact erf GELU as released; "gelu_approximate" = keras-hub's
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02  # truncated-normal std
    # The official code builds two dense layers with `tf.layers.dense` and no initializer, so they
    # start glorot_uniform; "truncated_normal" (initializer_range) was this package's choice before.
    embeddings_project_initializer: str = "glorot_uniform"  # E -> H projection, discriminator and generator
    discriminator_output_initializer: str = "glorot_uniform"  # the discriminator head's dense(1)
    # --- Generator: same depth, hidden = fraction * H, FFN 4x, heads hidden // 64 ---
    generator_hidden_fraction: float = 0.25
    # --- Objective ---
    objective: str = "electra"  # a key of `electra_tf.objectives.OBJECTIVES`; "mlm" is the BERT baseline
    mask_prob: float = 0.15
    max_predictions_per_seq: int = 0  # 0: int((mask_prob + 0.005) * seq_length)
    mask_token_prob: float = 0.85  # chosen positions set to [MASK]; the rest keep their token
    mask_with_replacement: bool = True  # reference: positions drawn with replacement
    gen_weight: float = 1.0
    disc_weight: float = 50.0  # lambda
    temperature: float = 1.0  # generator sampling temperature
    disallow_correct: bool = False  # never sample the original token
    sampler: str = "gumbel"  # "gumbel" (reference) or "inverse_cdf": same distribution, one uniform per draw
    # --- Special token ids (read from `vocab_file` when one is given) ---
    pad_id: int = 0
    cls_id: int = 101
    sep_id: int = 102
    mask_id: int = 103
    # --- Data ---
    data: str = ""  # TFRecord glob(s), comma-separated; "demo" builds the embedded corpus (the tiny preset's default)
    vocab_file: str = ""
    seq_length: int = 128  # length of the records
    batch_size: int = 128  # global batch, summed over replicas
    shuffle_buffer: int = 1000
    eval_data: str = ""  # held-out TFRecord glob(s): evaluated at every checkpoint
    eval_steps: int = 100  # batches per evaluation (the same batches each time)
    # --- Optimisation ---
    optimizer: str = "adamw"  # one of OPTIMIZERS
    learning_rate: float = 5e-4
    warmup_steps: int = 10000
    train_steps: int = 1000000
    weight_decay: float = 0.01  # not on LayerNorm or bias
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6
    adam_bias_correction: bool = False  # official AdamWeightDecayOptimizer: none; True = Keras' AdamW (adamw only)
    clip_norm: float = 1.0  # global-norm clipping; 0 disables
    gradient_accumulation_steps: int = 1
    # --- Performance ---
    precision: str = "float32"  # one of PRECISIONS
    jit_compile: bool = False  # XLA-compile the whole train step
    steps_per_execution: int = 1
    # --- Checkpoints, logs, randomness ---
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    log_steps: int = 100  # TensorBoard scalars every N steps
    seed: int = 0  # initialisation, dropout, masking, sampling and data order
    deterministic: bool = False  # TF op determinism: bit-equal reruns and resumes (README, Reliability)

    def __post_init__(self):
        for name, (low, high, closed) in RANGES.items():
            _check_range(name, getattr(self, name), low, high, closed)
        _check_choice("objective", self.objective, OBJECTIVES)
        _check_choice("precision", self.precision, PRECISIONS)
        _check_choice("optimizer", self.optimizer, OPTIMIZERS)
        _check_choice("embeddings_project_initializer", self.embeddings_project_initializer, INITIALIZERS)
        _check_choice("discriminator_output_initializer", self.discriminator_output_initializer, INITIALIZERS)
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"`hidden_dim={self.hidden_dim}` must be divisible by `num_heads={self.num_heads}`."
            )
        if not 0 < self.mask_prob < 1:
            raise ValueError(f"`mask_prob` must be in (0, 1). Received: `mask_prob={self.mask_prob}`")
        if self.seq_length > self.max_sequence_length:
            raise ValueError(
                f"`seq_length={self.seq_length}` exceeds `max_sequence_length="
                f"{self.max_sequence_length}` (the position-embedding table)."
            )

    # --- Derived values ---
    @property
    def generator_hidden_dim(self):
        return max(1, int(round(self.generator_hidden_fraction * self.hidden_dim)))

    @property
    def generator_num_heads(self):
        return max(1, self.generator_hidden_dim // 64)

    @property
    def generator_intermediate_dim(self):
        return 4 * self.generator_hidden_dim

    @property
    def num_predictions(self):
        """Masked positions per sequence (the reference's max_predictions_per_seq)."""
        return self.max_predictions_per_seq or int((self.mask_prob + 0.005) * self.seq_length)

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    def replace(self, **overrides):
        return apply_overrides(self, overrides)


# field -> (low, high, (low included, high included)); None: unbounded. Checked before anything is written.
RANGES = {
    **{name: (1, None, (True, True)) for name in (
        "vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
        "max_sequence_length", "num_segments", "batch_size", "shuffle_buffer", "eval_steps", "train_steps",
        "gradient_accumulation_steps", "steps_per_execution", "save_checkpoints_steps", "keep_checkpoint_max",
        "log_steps")},
    "seq_length": (2, None, (True, True)),  # [CLS] and [SEP]
    "warmup_steps": (0, None, (True, True)),
    "max_predictions_per_seq": (0, None, (True, True)),
    "learning_rate": (0, None, (False, True)),
    "adam_epsilon": (0, None, (False, True)),
    "layer_norm_epsilon": (0, None, (False, True)),
    "initializer_range": (0, None, (False, True)),
    "temperature": (0, None, (False, True)),
    "generator_hidden_fraction": (0, None, (False, True)),
    "dropout": (0, 1, (True, False)),
    "adam_beta1": (0, 1, (True, False)),
    "adam_beta2": (0, 1, (True, False)),
    "mask_token_prob": (0, 1, (True, True)),
    "weight_decay": (0, None, (True, True)),
    "clip_norm": (0, None, (True, True)),
    "gen_weight": (0, None, (True, True)),
    "disc_weight": (0, None, (True, True)),
    "seed": (0, None, (True, True)),
}


def _check_range(name, value, low, high, closed):
    """Raises the one-line range error naming `--name` for a value outside [low, high] (per `closed`), NaN or infinite.

    NaN compares false with everything, so it is refused first, as are infinities (a float flag is a finite number).
    """
    non_finite = isinstance(value, float) and not math.isfinite(value)
    below = low is not None and (value < low if closed[0] else value <= low)
    above = high is not None and (value > high if closed[1] else value >= high)
    if non_finite or below or above:
        if low is None and high is None:
            wanted = "a finite number"
        elif high is None:
            wanted = f"{'a finite number ' if non_finite else ''}{'>=' if closed[0] else '>'} {low}"
        else:
            wanted = f"in {'[' if closed[0] else '('}{low}, {high}{']' if closed[1] else ')'}"
        raise ValueError(f"`--{name}` must be {wanted}. Received: `--{name}={value}`")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"Unknown `{name}={value!r}`. Choose one of {list(choices)}.")


def fields():
    """dict name -> (type, default) of every config field."""
    hints = typing.get_type_hints(ElectraConfig)
    return {f.name: (hints[f.name], f.default) for f in dataclasses.fields(ElectraConfig)}


def apply_overrides(config, overrides):
    """A copy of `config` with `overrides` applied; unknown keys are an error."""
    known = fields()
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(
            f"Unknown config key(s) {unknown}. Known keys: {sorted(known)}."
        )
    values = dataclasses.asdict(config)
    for key, value in overrides.items():
        values[key] = _coerce(key, value, known[key][0])
    return ElectraConfig(**values)


def _coerce(key, value, kind):
    if isinstance(value, str) and kind is not str:
        try:
            return {bool: _parse_bool, int: int, float: float}[kind](value)
        except ValueError as e:
            raise ValueError(f"Config key `{key}` expects {kind.__name__}; received {value!r}.") from e
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind):
        raise ValueError(f"Config key `{key}` expects {kind.__name__}; received {value!r}.")
    return value


def _parse_bool(text):
    lowered = text.lower()
    if lowered in ("1", "true", "yes"):
        return True
    if lowered in ("0", "false", "no"):
        return False
    raise ValueError(text)


def preset_names():
    """Names of the presets in `configs/` ("small_pp" is also spelled "small++")."""
    from electra_tf import configs

    names = [m.name for m in pkgutil.iter_modules(configs.__path__) if not m.name.startswith("_")]
    return sorted(n.replace("_pp", "++") for n in names)


def get_config(preset="small", **overrides):
    """Builds a config from a preset name and field overrides.

    Example:
        ```python
        from electra_tf.config import get_config

        config = get_config("tiny", train_steps=20, batch_size=8)
        config.hidden_dim, config.train_steps  # (128, 20)
        ```
    """
    module_name = preset.replace("++", "_pp")
    if preset not in preset_names():
        raise ValueError(f"Unknown preset {preset!r}. Available presets: {preset_names()}.")
    values = importlib.import_module(f"electra_tf.configs.{module_name}").CONFIG
    return apply_overrides(apply_overrides(ElectraConfig(), values), overrides)
