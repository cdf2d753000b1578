"""The replaced-token kind's `predict` flags: score a corrupted text."""

import dataclasses
import typing

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field


@dataclasses.dataclass
class PredictOptions(BaseConfig):
    """`--corrupt` and its `--seed` (a seed without `--corrupt` is an error naming both)."""

    corrupt: bool = field(False, "Replaced-token scores: corrupt each text with the model's own generator first (as "
                                 "pre-training does), score the corrupted text and the discriminator's AUC.")
    seed: typing.Optional[int] = field(
        None, "With --corrupt: the seed of the masking and the generator's samples (default 0).", range="[0, inf)")

    def __post_init__(self):
        super().__post_init__()
        if self.seed is not None and not self.corrupt:
            raise ValueError("--seed seeds --corrupt's masking and sampling: add --corrupt, or leave out --seed.")
