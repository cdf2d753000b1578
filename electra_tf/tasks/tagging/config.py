"""The tagging kind's own settings: fine-tuning's (generic CoNLL columns, scheme, windows), predict's (columns)."""

import dataclasses
import typing

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field

TAG_SCHEMES = ("auto", "IOB1", "IOB2", "BIOES", "none")


@dataclasses.dataclass
class Config(BaseConfig):
    """Generic tagging files and the windows over long sentences."""

    token_column: int = field(0, "Generic tagging: column of the word.")
    tag_scheme: str = field(
        "auto", "Generic tagging: span scheme of the labels (scored by entity F1); auto: the files' own (an I-X "
        "starting a span: IOB1, S-/E- tags: BIOES, else IOB2); none: labels as written (POS), scored by token "
        "accuracy.", choices=TAG_SCHEMES)
    stride: typing.Optional[int] = field(
        None, "Tagging: pieces between the starts of windows over a long sentence (default: half a window).",
        range="[1, inf)")

    HPARAMS = ("stride",)  # reported in `results.json`'s hparams


@dataclasses.dataclass
class PredictOptions(BaseConfig):
    """The `predict` flags of CoNLL input."""

    token_column: int = field(0, "CoNLL: column of the word.")
    tag_scheme: str = field("auto", "CoNLL: scheme of the gold span tags (auto: the file's own).",
                            choices=("auto", "IOB1", "IOB2", "BIOES"))
