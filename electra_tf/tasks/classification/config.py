"""The classification kind's own settings (flags of `python -m electra_tf.finetune`): the columns of generic files."""

import dataclasses
import typing

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field


@dataclasses.dataclass
class Config(BaseConfig):
    """Generic TSV/CSV classification files, and pair training in both orders."""

    text_a_column: str = field("sentence", "Generic tasks: first text column (name or index).")
    text_b_column: typing.Optional[str] = field(None, "Generic tasks: second text column, for pairs.")
    regression: bool = field(False, "Generic tasks: float labels (Pearson/Spearman).")
    file_format: str = field("tsv", "Generic tasks: file format.", choices=("tsv", "csv"))
    both_orders: typing.Optional[bool] = field(None, "Also train on (b, a) pairs; default on for MRPC and STS-B.")

    HPARAMS = ("both_orders",)  # reported in `results.json`'s hparams
