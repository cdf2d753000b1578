"""FinetuneConfig: every setting of a fine-tuning run, and the one place its defaults live.

Each field is a flag of `python -m electra_tf.finetune` (same name, its help
from the field's metadata, an enum when the field has `choices`), and a
setting of `electra_tf.finetuning.trials.run_trials`. Defaults are the reference recipe
for ELECTRA-Small (`../shared/docs/electra-reference.md`, section 5).
"""

import dataclasses
import typing

from electra_tf.config import PRECISIONS, _check_range
from electra_tf.training.distribute import STRATEGIES

TASK_KINDS = ("auto", "classification", "tagging", "span_qa")
QA_HEADS = ("official", "simple")
TAG_SCHEMES = ("auto", "IOB1", "IOB2", "BIOES", "none")


def _field(default, help, choices=None):  # noqa: A002  (the absl word)
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices})


# flag -> (low, high, (low included, high included)); None: unbounded (as `electra_tf.config.RANGES`).
RANGES = {
    "epochs": (1, None, (True, True)),
    "batch_size": (1, None, (True, True)),
    "num_trials": (1, None, (True, True)),
    "max_seq_length": (3, None, (True, True)),  # [CLS] x [SEP]
    "learning_rate": (0, None, (False, True)),
    "layerwise_lr_decay": (0, 1, (False, True)),
    "warmup_proportion": (0, 1, (True, True)),
    "weight_decay": (0, None, (True, True)),
    "clip_norm": (0, None, (True, True)),
    "dropout": (0, 1, (True, False)),
    "train_limit": (1, None, (True, True)),
    "dev_limit": (1, None, (True, True)),
    "null_threshold": (None, None, (True, True)),  # any finite value
    "doc_stride": (1, None, (True, True)),
    "max_query_length": (1, None, (True, True)),
    "max_answer_length": (1, None, (True, True)),
    "n_best_size": (1, None, (True, True)),
    "start_n_top": (1, None, (True, True)),
    "end_n_top": (1, None, (True, True)),
    "early_stopping_patience": (1, None, (True, True)),
    "save_checkpoints_steps": (1, None, (True, True)),
    "log_steps": (1, None, (True, True)),
}


@dataclasses.dataclass
class FinetuneConfig:
    # --- Task and files ---
    task: typing.Optional[str] = _field(
        None, "GLUE name, CoNLL name (conll2003, conll2003_chunk, conll2003_pos), or any name for a "
        "generic TSV/CSV (classification) or CoNLL-column (tagging) task.")
    task_kind: str = _field(
        "auto", "auto: tagging for the CoNLL task names, span_qa for names starting with squad, classification "
        "otherwise.", TASK_KINDS)
    data_dir: typing.Optional[str] = _field(
        None, "Folder with train/dev(/test).tsv (+ labels.txt); tagging: train.txt/dev.txt or eng.train/eng.testa.")
    init: typing.Optional[str] = _field(
        None, "The model to start from: a run dir, a .keras file, an exported encoder, hf:DIR, official:DIR, "
        "bert:DIR or keras_hub:DIR (the discriminator of a pair is taken).")
    vocab_file: typing.Optional[str] = _field(None, "Vocabulary; default: the one beside --init.")
    output_dir: typing.Optional[str] = _field(None, "Results, the best model, its vocab and config.")
    # --- Recipe (reference section 5) ---
    epochs: int = _field(3, "Training epochs (reference: 3; 10 for RTE and STS-B).")
    batch_size: int = _field(32, "Global batch size, summed over replicas.")
    learning_rate: float = _field(3e-4, "Peak LR of the task head (3e-4 small, 1e-4 base, 5e-5 large).")
    layerwise_lr_decay: float = _field(0.8, "Layer-wise LR decay (0.8 small/base, 0.9 large; 1 = off).")
    warmup_proportion: float = _field(0.1, "Fraction of steps of linear warmup.")
    weight_decay: float = _field(0.0, "Decoupled weight decay (reference: 0).")
    clip_norm: float = _field(1.0, "Global-norm gradient clipping; 0 disables.")
    dropout: float = _field(0.1, "Dropout before the task head ([CLS] vector, or every token).")
    max_seq_length: int = _field(128, "Tokens per example (tagging: per window), [CLS]/[SEP] included.")
    num_trials: int = _field(1, "Fine-tuning runs from the same checkpoint (reference: 10).")
    seed: int = _field(0, "Seed of trial 0; trial i uses seed + i.")
    train_limit: typing.Optional[int] = _field(None, "Use only the first N training examples / sentences.")
    dev_limit: typing.Optional[int] = _field(None, "Use only the first N dev examples / sentences.")
    verbose: int = _field(2, "Keras progress: 0 silent, 1 bar, 2 a line per epoch.")
    # --- Epochs, checkpoints, logs ---
    keep: str = _field("best", "Weights kept from each trial: the best dev epoch's, or the last epoch's.",
                       ("best", "last"))
    early_stopping_patience: typing.Optional[int] = _field(
        None, "Stop a trial after this many epochs without a better dev score; default: off.")
    save_checkpoints_steps: int = _field(
        500, "Updates between checkpoints (also after every epoch and on SIGTERM): a killed run re-run with "
        "the same command resumes from the latest.")
    log_steps: int = _field(50, "TensorBoard train loss and learning rate every N updates (output_dir/logs).")
    deterministic: bool = _field(
        False, "TF op determinism: a resumed run ends bit-equal to an uninterrupted one (slower on GPU).")
    # --- Generic classification files ---
    text_a_column: str = _field("sentence", "Generic tasks: first text column (name or index).")
    text_b_column: typing.Optional[str] = _field(None, "Generic tasks: second text column, for pairs.")
    label_column: typing.Optional[str] = _field(
        None, "Generic tasks: label column; default 'label' (classification) or -1, the last (tagging).")
    regression: bool = _field(False, "Generic tasks: float labels (Pearson/Spearman).")
    file_format: str = _field("tsv", "Generic tasks: file format.", ("tsv", "csv"))
    both_orders: typing.Optional[bool] = _field(None, "Also train on (b, a) pairs; default on for MRPC and STS-B.")
    # --- Tagging ---
    token_column: int = _field(0, "Generic tagging: column of the word.")
    tag_scheme: str = _field(
        "auto", "Generic tagging: span scheme of the labels (scored by entity F1); auto: the files' own (an I-X "
        "starting a span: IOB1, S-/E- tags: BIOES, else IOB2); none: labels as written (POS), scored by token "
        "accuracy.", TAG_SCHEMES)
    stride: typing.Optional[int] = _field(
        None, "Tagging: pieces between the starts of windows over a long sentence (default: half a window).")
    # --- Extractive question answering (span_qa: train.json / dev.json in SQuAD format) ---
    doc_stride: int = _field(128, "span_qa: context pieces between window starts (reference: 128).")
    max_query_length: int = _field(64, "span_qa: question pieces kept; longer questions are truncated.")
    max_answer_length: int = _field(30, "span_qa: pieces per predicted answer at most.")
    n_best_size: int = _field(20, "span_qa: spans ranked per question (n-best across windows).")
    start_n_top: int = _field(20, "span_qa, official head: starts in the prediction beam.")
    end_n_top: int = _field(20, "span_qa, official head: ends per start in the prediction beam.")
    qa_head: str = _field(
        "official", "span_qa: official (ELECTRA/XLNet end-conditioned-on-start head) or simple "
        "(independent start/end, BERT's).", QA_HEADS)
    null_threshold: typing.Optional[float] = _field(
        None, "span_qa, SQuAD 2.0: answer '' when null score - best span score exceeds this; default: tuned on dev.")
    swap_contexts: bool = _field(
        False, "span_qa: add every question again paired with another article's context, as unanswerable "
        "(trains and scores the SQuAD 2.0 path on 1.1 data).")
    # --- Devices and precision ---
    strategy: typing.Optional[str] = _field(
        "auto", "tf.distribute strategy; auto: tpu with --tpu, mirrored over several GPUs, the one GPU, else the "
        "CPU (logged at start).", STRATEGIES)
    tpu: typing.Optional[str] = _field(None, "TPU name or address for --strategy=tpu.")
    num_cpu_devices: int = _field(0, "Logical CPU devices for --strategy=mirrored without GPUs.")
    precision: str = _field("float32", "Keras dtype policy.", PRECISIONS)
    jit_compile: bool = _field(False, "XLA-compile the train step.")

    def __post_init__(self):
        for f in dataclasses.fields(self):
            choices = f.metadata.get("choices")
            if choices and getattr(self, f.name) not in choices + (f.default,):
                raise ValueError(f"Unknown `{f.name}={getattr(self, f.name)!r}`. Choose one of {list(choices)}.")
        for name, (low, high, closed) in RANGES.items():
            if getattr(self, name) is not None:
                _check_range(name, getattr(self, name), low, high, closed)

    def replace(self, **overrides):
        unknown = sorted(set(overrides) - set(fields()))
        if unknown:
            raise ValueError(f"Unknown fine-tuning setting(s) {unknown}. Known: {sorted(fields())}.")
        return dataclasses.replace(self, **overrides)

    def hparams(self):
        """The recipe part, as written to `results.json`."""
        names = ("epochs", "batch_size", "learning_rate", "layerwise_lr_decay", "warmup_proportion",
                 "weight_decay", "clip_norm", "dropout", "max_seq_length", "num_trials", "seed",
                 "both_orders", "train_limit", "dev_limit", "stride", "strategy", "precision", "jit_compile",
                 "keep", "early_stopping_patience", "deterministic")
        return {name: getattr(self, name) for name in names}


def fields():
    """dict name -> (type, default, help, choices) of every field; `Optional[X]` gives X."""
    hints = typing.get_type_hints(FinetuneConfig)
    out = {}
    for f in dataclasses.fields(FinetuneConfig):
        kind = hints[f.name]
        if typing.get_origin(kind) is typing.Union:
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        out[f.name] = (kind, f.default, f.metadata["help"], f.metadata["choices"])
    return out
