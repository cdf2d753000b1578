"""The span_qa kind's own settings (flags of `python -m electra_tf.finetune`): windows, head, answers."""

import dataclasses
import typing

from electra_tf.config_fields import Config as BaseConfig
from electra_tf.config_fields import field

QA_HEADS = ("official", "simple")


@dataclasses.dataclass
class Config(BaseConfig):
    """Extractive question answering (span_qa: train.json / dev.json in SQuAD format)."""

    doc_stride: int = field(128, "span_qa: context pieces between window starts (reference: 128).", range="[1, inf)")
    max_query_length: int = field(64, "span_qa: question pieces kept; longer questions are truncated.",
                                  range="[1, inf)")
    max_answer_length: int = field(30, "span_qa: pieces per predicted answer at most.", range="[1, inf)")
    n_best_size: int = field(20, "span_qa: spans ranked per question (n-best across windows).", range="[1, inf)")
    start_n_top: int = field(20, "span_qa, official head: starts in the prediction beam.", range="[1, inf)")
    end_n_top: int = field(20, "span_qa, official head: ends per start in the prediction beam.", range="[1, inf)")
    qa_head: str = field(
        "official", "span_qa: official (ELECTRA/XLNet end-conditioned-on-start head) or simple "
        "(independent start/end, BERT's).", choices=QA_HEADS)
    null_threshold: typing.Optional[float] = field(
        None, "span_qa, SQuAD 2.0: answer '' when null score - best span score exceeds this; default: tuned on dev.")
    swap_contexts: bool = field(
        False, "span_qa: add every question again paired with another article's context, as unanswerable "
        "(trains and scores the SQuAD 2.0 path on 1.1 data).")
