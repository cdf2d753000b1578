"""The embedding kind's own settings (flags of `python -m electra_tf.finetune`): pooling, loss scale, normalisation."""

import dataclasses

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field
from electra_tf.tasks.embedding.model import POOLINGS


@dataclasses.dataclass
class Config(BaseConfig):
    """Sentence / passage embeddings (embedding: query, positive[, negative] rows)."""

    pooling: str = field("mean", "embedding: the text's vector: the mean of its token outputs (padding left out), "
                         "or the [CLS] output.", choices=POOLINGS)
    similarity_scale: float = field(
        20.0, "embedding: the multiple-negatives ranking loss multiplies cosine similarities by this "
        "(sentence-transformers' scale).", range="(0, inf)")
    normalize_embeddings: bool = field(True, "embedding: L2-normalise the vectors (a dot product is the cosine).")

    HPARAMS = ("pooling", "similarity_scale", "normalize_embeddings")
