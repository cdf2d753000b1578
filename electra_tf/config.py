"""The one config system: a flat dataclass of plain values, presets that override it.

Each field is declared once, with its default, its help and its range or choices
(`electra_tf.config_fields.field`), as `FinetuneConfig`'s are. A preset
(`configs/<name>.py`) is a dict of the fields that differ from the
defaults below; `get_config("small", learning_rate=1e-4)` applies a preset then
overrides. Every field is also an absl flag of `electra_tf.pretrain` (its help the
field's; unset, the preset's value stays). Derived
values (generator size, max predictions) are computed by properties, never
stored twice. Defaults are the paper's ELECTRA-Small values
(`../shared/docs/electra-reference.md`, sections 1-3).
"""

import dataclasses
import importlib
import pkgutil

from electra_tf.config_fields import Config, field
from electra_tf.objectives import OBJECTIVES

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
OPTIMIZERS = ("adamw", "lamb")
INITIALIZERS = ("glorot_uniform", "truncated_normal")  # see electra_tf/layers/initializers.py


@dataclasses.dataclass
class ElectraConfig(Config):
    """Every setting of a pre-training run: the model, the objective, the data, the optimiser, the run."""

    # --- Discriminator encoder (the model kept after pre-training) ---
    vocab_size: int = field(30522, "Rows of the shared token-embedding table, the vocabulary's size.",
                            range="[1, inf)")
    embedding_dim: int = field(128, "E, width of the shared token embeddings.", range="[1, inf)")
    hidden_dim: int = field(256, "H, width of the discriminator's layers.", range="[1, inf)")
    num_layers: int = field(12, "Transformer layers (the generator has as many).", range="[1, inf)")
    num_heads: int = field(4, "Attention heads; hidden_dim must be a multiple.", range="[1, inf)")
    intermediate_dim: int = field(1024, "Feed-forward width, 4 H.", range="[1, inf)")
    max_sequence_length: int = field(512, "Rows of the position-embedding table.", range="[1, inf)")
    num_segments: int = field(2, "Rows of the segment-embedding table.", range="[1, inf)")
    dropout: float = field(0.1, "Hidden and attention dropout.", range="[0, 1)")
    activation: str = field(
        "gelu", "Feed-forward activation: gelu, the exact erf GELU as released; gelu_approximate, keras-hub's.")
    layer_norm_epsilon: float = field(1e-12, "LayerNorm epsilon.", range="(0, inf)")
    initializer_range: float = field(0.02, "Standard deviation of the truncated-normal initializer.", range="(0, inf)")
    # The official code builds two dense layers with `tf.layers.dense` and no initializer, so they
    # start glorot_uniform; "truncated_normal" (initializer_range) was this package's choice before.
    embeddings_project_initializer: str = field(
        "glorot_uniform", "Initializer of the E -> H projection (discriminator and generator).",
        choices=INITIALIZERS)
    discriminator_output_initializer: str = field(
        "glorot_uniform", "Initializer of the discriminator head's dense(1).", choices=INITIALIZERS)
    # --- Generator: same depth, hidden = fraction * H, FFN 4x, heads hidden // 64 ---
    generator_hidden_fraction: float = field(
        0.25, "Generator width as a fraction of hidden_dim (its FFN is 4x, its heads width // 64).", range="(0, inf)")
    # --- Objective ---
    objective: str = field("electra", "Pre-training objective; mlm is the BERT baseline.", choices=OBJECTIVES)
    mask_prob: float = field(0.15, "Share of the real tokens of a sequence chosen for prediction.", range="(0, 1)")
    max_predictions_per_seq: int = field(
        0, "Prediction slots per sequence, at most seq_length; 0: int((mask_prob + 0.005) * seq_length).",
        range="[0, inf)")
    mask_token_prob: float = field(0.85, "Share of the chosen positions set to [MASK]; the rest keep their token.",
                                   range="[0, 1]")
    mask_with_replacement: bool = field(True, "Draw the positions with replacement (the reference).")
    gen_weight: float = field(1.0, "Weight of the generator's MLM loss.", range="[0, inf)")
    disc_weight: float = field(50.0, "Weight of the discriminator's loss (lambda).", range="[0, inf)")
    temperature: float = field(1.0, "Temperature of the generator's sampling.", range="(0, inf)")
    disallow_correct: bool = field(False, "Never sample the original token.")
    sampler: str = field(
        "gumbel", "Generator sampling: gumbel (the reference) or inverse_cdf (same distribution, one uniform per "
        "draw).")
    # --- Special token ids (read from `vocab_file` when one is given) ---
    pad_id: int = field(0, "Id of [PAD].", range="[0, inf)")
    cls_id: int = field(101, "Id of [CLS].", range="[0, inf)")
    sep_id: int = field(102, "Id of [SEP].", range="[0, inf)")
    mask_id: int = field(103, "Id of [MASK].", range="[0, inf)")
    # --- Data ---
    data: str = field(
        "", "TFRecord glob(s), comma-separated; a folder of their arrays (records_to_arrays); demo: the embedded demo "
        "corpus (built on first use), the tiny preset's default.")
    vocab_file: str = field("", "WordPiece vocab.txt of the records; default: the one beside them.")
    seq_length: int = field(128, "Tokens per record, [CLS]/[SEP] included.", range="[2, inf)")
    batch_size: int = field(128, "Global batch size, summed over replicas.", range="[1, inf)")
    shuffle_buffer: int = field(1000, "Examples in the shuffle buffer.", range="[1, inf)")
    eval_data: str = field("", "Held-out TFRecord glob(s) or folder of arrays, evaluated at every checkpoint.")
    eval_steps: int = field(100, "Batches per evaluation (the same batches each time).", range="[1, inf)")
    # --- Optimisation ---
    optimizer: str = field("adamw", "Update rule.", choices=OPTIMIZERS)
    learning_rate: float = field(5e-4, "Peak learning rate.", range="(0, inf)")
    warmup_steps: int = field(10000, "Steps of linear warmup, then linear decay to 0.", range="[0, inf)")
    train_steps: int = field(1000000, "Optimizer updates in all.", range="[1, inf)")
    weight_decay: float = field(0.01, "Decoupled weight decay (not on LayerNorm or bias).", range="[0, inf)")
    adam_beta1: float = field(0.9, "Adam beta1.", range="[0, 1)")
    adam_beta2: float = field(0.999, "Adam beta2.", range="[0, 1)")
    adam_epsilon: float = field(1e-6, "Adam epsilon.", range="(0, inf)")
    adam_bias_correction: bool = field(
        False, "Adam bias correction: off in the official AdamWeightDecayOptimizer; on is Keras' AdamW (adamw only).")
    clip_norm: float = field(1.0, "Global-norm gradient clipping; 0 disables.", range="[0, inf)")
    gradient_accumulation_steps: int = field(1, "Batches whose gradients are summed per update.", range="[1, inf)")
    # --- Performance ---
    precision: str = field("float32", "Keras dtype policy.", choices=PRECISIONS)
    jit_compile: bool = field(False, "XLA-compile the whole train step (TensorFlow; JAX always compiles it).")
    fused_elementwise: bool = field(
        True, "float32 training: the encoders' GELU, LayerNorm, masked softmax and dropout masks as XLA-fused "
        "kernels between oneDNN's matmuls (the same math); false: Keras' ops one by one.")
    steps_per_execution: int = field(1, "Train steps per call into TensorFlow.", range="[1, inf)")
    # --- Checkpoints, logs, randomness ---
    save_checkpoints_steps: int = field(1000, "Updates between checkpoints.", range="[1, inf)")
    keep_checkpoint_max: int = field(5, "Checkpoints kept (the newest).", range="[1, inf)")
    log_steps: int = field(100, "TensorBoard scalars every N updates.", range="[1, inf)")
    seed: int = field(0, "Seed of initialisation, dropout, masking, sampling and data order.", range="[0, inf)")
    deterministic: bool = field(
        False, "TF op determinism: bit-equal reruns and resumes (slower on GPU; README, Reliability).")

    def __post_init__(self):
        super().__post_init__()  # types, ranges and choices of every field
        if self.hidden_dim % self.num_heads:
            raise ValueError(
                f"`hidden_dim={self.hidden_dim}` must be divisible by `num_heads={self.num_heads}`."
            )
        if self.seq_length > self.max_sequence_length:
            raise ValueError(
                f"`seq_length={self.seq_length}` exceeds `max_sequence_length="
                f"{self.max_sequence_length}` (the position-embedding table)."
            )
        if self.max_predictions_per_seq > self.seq_length:
            raise ValueError(
                f"`--max_predictions_per_seq={self.max_predictions_per_seq}` exceeds `--seq_length="
                f"{self.seq_length}`: a sequence has no more positions to predict (the default, 0, "
                f"predicts int((mask_prob + 0.005) * seq_length) = {int((self.mask_prob + 0.005) * self.seq_length)})."
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


def apply_overrides(config, overrides):
    """A copy of `config` with `overrides` applied (`Config.replace`); unknown keys are an error."""
    return config.replace(**overrides)


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
