"""Analytic training FLOPs of one pre-training sequence, from an `ElectraConfig`.

Convention (`train_flops_per_sequence`, used for MFU): matrix multiplies only,
2 FLOPs per multiply-add, training = 3 x forward (the backward pass computes
two matmuls per forward one: input and weight gradients). Embedding lookups
are gathers (0 FLOPs); LayerNorm, GELU, softmax, dropout, the losses and the
optimizer are not counted (O(hidden) per token, about 1 % here). Per
sequence of `seq_length` tokens:

- each encoder: `embeddings_project` E -> H when E != H, then per layer
  Q, K, V and output dense (4 x 2 H^2), FFN up and down (2 x 2 H F) and
  attention scores and weighted sum (2 x 2 S H, all heads together);
- generator MLM head at the `num_predictions` slots the model computes:
  dense(Hg -> E) + the tied projection onto the vocabulary (2 E V);
- discriminator head dense(H -> H) + dense(H -> 1) at every position
  (objectives "electra", "electra_15"), or a discriminator-sized MLM head
  dense(H -> E) + tied (E -> V) at the chosen slots ("replace_mlm", "mlm")
  or at every position ("all_tokens_mlm").

`paper_train_flops_per_sequence` re-derives the convention of the ELECTRA
paper's FLOP counts (google-research/electra `flops_computation.py`):
training = 2 x forward, embedding lookups counted as dense one-hot matmuls
(2 E V per token in *each* encoder), element-wise ops counted (GELU 8,
LayerNorm 5, dropout 4, softmax 5 per element), the output softmax at
15.625 % of the positions (20 of 128). For ELECTRA-Small (1M steps x 128 x
128) that gives 1.26e18 and this module's convention 1.15e18; the paper's
Table 1 prints 1.4e18 (and 8.9e16 for 6.25 % of the run, i.e. 1.42e18).
`tests/training/test_flops.py` documents the gap term by term.
"""

from electra_tf.objectives import OBJECTIVES, get_objective

# Counted per element by the paper's script (flops_computation.py).
_PAPER_DROPOUT, _PAPER_LAYER_NORM, _PAPER_ACTIVATION, _PAPER_SOFTMAX = 4, 5, 8, 5
_PAPER_OUTPUT_FRAC = 0.15625  # share of positions with an output softmax (20 / 128)


def _task_head(objective):
    """What the discriminator-sized encoder computes after its layers: "rtd" (the RTD head at every
    position, "electra_15" included: its loss covers the chosen 15 % only), "mlm_all" (an MLM head at
    every position) or "mlm_masked" (at the chosen slots)."""
    task = get_objective(objective).task
    return "rtd" if task.startswith("rtd") else "mlm_all" if task == "mlm_all" else "mlm_masked"


def _encoder_forward(seq_length, embedding_dim, hidden_dim, intermediate_dim, num_layers):
    """(embeddings_project, layers) forward matmul FLOPs of one sequence."""
    s, e, h, f = seq_length, embedding_dim, hidden_dim, intermediate_dim
    project = 2 * s * e * h if e != h else 0
    per_layer = s * (4 * 2 * h * h + 2 * 2 * h * f + 2 * 2 * s * h)
    return project, num_layers * per_layer


def _mlm_head_forward(positions, hidden_dim, embedding_dim, vocab_size):
    """dense(H -> E) + tied (E -> V) at `positions` slots."""
    return positions * (2 * hidden_dim * embedding_dim + 2 * embedding_dim * vocab_size)


def breakdown(config):
    """Forward matmul FLOPs of one sequence by part, plus `forward` and `train` (= 3 x forward).

    Args:
        config: `electra_tf.config.ElectraConfig`.

    Returns:
        dict of floats: `generator_embeddings_project`, `generator_layers`,
        `generator_head` (0 without a generator), `discriminator_embeddings_project`,
        `discriminator_layers`, `discriminator_head` (the RTD head or the
        discriminator-sized MLM head, by objective), `forward`, `train`.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.training.flops import breakdown

        breakdown(get_config("small"))["train"] / 1e9  # 8.98 GFLOP per sequence
        ```
    """
    head = _task_head(config.objective)
    s, e, v, p = config.seq_length, config.embedding_dim, config.vocab_size, config.num_predictions
    parts = {}
    if not get_objective(config.objective).generator:
        parts.update(generator_embeddings_project=0.0, generator_layers=0.0, generator_head=0.0)
    else:
        hg = config.generator_hidden_dim
        project, layers = _encoder_forward(s, e, hg, config.generator_intermediate_dim, config.num_layers)
        parts.update(
            generator_embeddings_project=float(project),
            generator_layers=float(layers),
            generator_head=float(_mlm_head_forward(p, hg, e, v)),
        )
    h = config.hidden_dim
    project, layers = _encoder_forward(s, e, h, config.intermediate_dim, config.num_layers)
    if head == "rtd":
        head_flops = s * (2 * h * h + 2 * h)
    else:
        head_flops = _mlm_head_forward(s if head == "mlm_all" else p, h, e, v)
    parts.update(
        discriminator_embeddings_project=float(project),
        discriminator_layers=float(layers),
        discriminator_head=float(head_flops),
    )
    parts["forward"] = sum(parts.values())
    parts["train"] = 3 * parts["forward"]
    return parts


def train_flops_per_sequence(config):
    """Training matmul FLOPs of one sequence (forward + backward), see `breakdown`."""
    return breakdown(config)["train"]


def paper_train_flops_per_sequence(config, output_frac=_PAPER_OUTPUT_FRAC):
    """Training FLOPs of one sequence counted as the ELECTRA paper counts them.

    Re-derived from the rules of google-research/electra `flops_computation.py`
    (see the module docstring): 2 x forward, dense embedding lookups in both
    encoders, element-wise ops, generator output softmax at `output_frac` of
    the positions. Only `objective="electra"` (and "electra_15") is defined.

    Args:
        config: `electra_tf.config.ElectraConfig`.
        output_frac: float. Share of positions the generator's softmax covers
            (0.15625 in the paper's script; 1.0 = every position).
    """
    if config.objective not in OBJECTIVES or _task_head(config.objective) != "rtd":
        raise ValueError(f"The paper's count is defined for ELECTRA only. Received: `objective={config.objective!r}`")
    s, e, v = config.seq_length, config.embedding_dim, config.vocab_size

    def block(h, f, heads):
        per_token = (
            3 * 2 * h * h + 3 * h  # Q, K, V and biases
            + 2 * h * s + (_PAPER_SOFTMAX + _PAPER_DROPOUT + 1) * s * heads  # scores, softmax, dropout, scale
            + 2 * h * s  # weighted sum of values
            + 2 * h * h + h + _PAPER_DROPOUT * h + h + _PAPER_LAYER_NORM  # attention output (the script's LN term has no h)
            + 2 * h * f + _PAPER_ACTIVATION * f + f  # FFN up, GELU, bias
            + 2 * h * f + h + _PAPER_DROPOUT * h + h + _PAPER_LAYER_NORM * h  # FFN down, dropout, residual, LN
        )
        return s * per_token

    def input_embeddings(h):
        per_token = 2 * e * v + 2 * e * (s + 2) + 2 * e + _PAPER_LAYER_NORM * e + _PAPER_DROPOUT * e
        if e != h:
            per_token += 2 * h * e + h
        return s * per_token

    def output_softmax(h):
        per_token = (
            2 * e * v + 2 * h * e + e + _PAPER_ACTIVATION * e + _PAPER_LAYER_NORM * e
            + _PAPER_SOFTMAX * v + 2 * v
        )
        return output_frac * s * per_token

    h, hg = config.hidden_dim, config.generator_hidden_dim
    rtd_head = s * (2 * h * h + h + _PAPER_ACTIVATION * h + 2 * h)
    disc = config.num_layers * block(h, config.intermediate_dim, max(h // 64, 1)) + input_embeddings(h) + rtd_head
    gen = (
        config.num_layers * block(hg, config.generator_intermediate_dim, max(hg // 64, 1))
        + input_embeddings(hg)
        + output_softmax(hg)
    )
    return 2.0 * (disc + gen)
