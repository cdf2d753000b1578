"""The embedding kind's own settings (flags of `python -m electra_tf.finetune`): pooling, loss scale, normalisation."""

import dataclasses
import typing

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field

POOLINGS = ("mean", "cls")  # the text's vector: the mean of its token outputs, or the [CLS] output


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


@dataclasses.dataclass
class PredictOptions(BaseConfig):
    """`--passages` and `--top_k`: each query's best passages instead of its vector (a `--top_k` alone is an error)."""

    passages: typing.Optional[str] = field(
        None, "Embedding models: rank these passages (one per line, or JSON Lines with \"text\") for each input "
        "text and write its --top_k best instead of its vector.")
    top_k: typing.Optional[int] = field(None, "With --passages: passages written per query (default 10).",
                                        range="[1, inf)")

    def __post_init__(self):
        super().__post_init__()
        if self.top_k is not None and not self.passages:
            raise ValueError("--top_k is the number of --passages written per query: add --passages, or leave out "
                             "--top_k.")
