"""What `predict` can serve, by the "kind" of a served model's `serving_config.json`: the one registry it consults.

The fine-tuning task kinds (`finetuning.kinds.KINDS`) and the replaced-token scores of a
pre-trained discriminator (`replaced_tokens.ReplacedTokenKind`, which has nothing to
fine-tune, so it is no task kind). Each implements the post-training interface of
`finetuning.kind.TaskKind`: `serving_module`, `predict_formats`, `predict_options`,
`sniff_format`, `read_examples`, `format_prediction`, `score`.

Example:
>>> from electra_tf.predicting import served_kinds
>>> "rtd" in served_kinds.SERVED_KINDS and "tagging" in served_kinds.SERVED_KINDS
True
"""

from electra_tf.finetuning import kinds
from electra_tf.predicting.replaced_tokens import ReplacedTokenKind

SERVED_KINDS = {**kinds.KINDS, ReplacedTokenKind.name: ReplacedTokenKind}
REPLACED_TOKENS = ReplacedTokenKind  # what an `--init` that is no fine-tuned model nor an export is read as


def get(name, where):
    """The served kind `name` of the model at `where`; an error listing the known ones otherwise."""
    if name not in SERVED_KINDS:
        raise ValueError(f"{where}: a served model of unknown kind {name!r} (known: {sorted(SERVED_KINDS)}).")
    return SERVED_KINDS[name]
