"""FinetuneConfig: every setting of a fine-tuning run, and the one place its defaults live.

Each field is declared once (`electra_tf.config_fields.field`: default, help,
range, choices) and is a flag of `python -m electra_tf.finetune` (same name,
that help, an enum when the field has choices) and a setting of
`electra_tf.finetuning.trials.run_trials`. Defaults are the reference recipe
for ELECTRA-Small (`../shared/docs/electra-reference.md`, section 5).
"""

import dataclasses
import typing

from electra_tf.config import PRECISIONS
from electra_tf import config_fields
from electra_tf.config_fields import Config, field, renamed
from electra_tf.training.strategies import STRATEGIES



@dataclasses.dataclass
class FinetuneConfig(Config):
    """Every setting of a fine-tuning run: the task and its files, the recipe, checkpoints, devices."""

    # --- Task and files ---
    task: typing.Optional[str] = field(
        None, "GLUE name, CoNLL name (conll2003, conll2003_chunk, conll2003_pos), squad, or a name another "
        "task kind claims, or any name with --task_kind for files of that kind's layout.")
    task_kind: str = field(
        "auto", "The task's kind: auto (the kind that claims the task's name) or a kind of electra_tf.tasks.KINDS "
        "that fine-tunes (`electra_tf.tasks.FinetuneConfig` lists them here, from their descriptions).")
    data_dir: typing.Optional[str] = field(
        None, "Folder with the task's train / dev (/ test) files, in its kind's layout (--help lists each kind's).")
    init: typing.Optional[str] = field(
        None, "The model to start from: a run dir, a .keras file, an exported encoder, hf:DIR, official:DIR, "
        "bert:DIR or keras_hub:DIR (the discriminator of a pair is taken).")
    vocab_file: typing.Optional[str] = field(None, "Vocabulary; default: the one beside --init.")
    output_dir: typing.Optional[str] = field(None, "Results, the best model, its vocab and config.")
    # --- Recipe (reference section 5) ---
    epochs: int = field(3, "Training epochs (reference: 3; 10 for RTE and STS-B); 0 scores and writes the --init "
                        "model as it is (zero-shot; a task head untrained).", range="[0, inf)")
    batch_size: int = field(32, "Global batch size, summed over replicas.", range="[1, inf)")
    learning_rate: float = field(3e-4, "Peak LR of the task head (3e-4 small, 1e-4 base, 5e-5 large).",
                                 range="(0, inf)")
    layerwise_lr_decay: float = field(0.8, "Layer-wise LR decay (0.8 small/base, 0.9 large; 1 = off).",
                                      range="(0, 1]")
    warmup_proportion: float = field(0.1, "Fraction of steps of linear warmup.", range="[0, 1]")
    weight_decay: float = field(0.0, "Decoupled weight decay (reference: 0).", range="[0, inf)")
    clip_norm: float = field(1.0, "Global-norm gradient clipping; 0 disables.", range="[0, inf)")
    dropout: float = field(0.1, "Dropout before the task head ([CLS] vector, or every token).", range="[0, 1)")
    seq_length: int = field(128, "Tokens per example (tagging: per window), [CLS]/[SEP] included.",
                            range="[3, inf)")  # [CLS] x [SEP]
    num_trials: int = field(1, "Fine-tuning runs from the same checkpoint (reference: 10).", range="[1, inf)")
    seed: int = field(0, "Seed of trial 0; trial i uses seed + i.")
    train_limit: typing.Optional[int] = field(None, "Use only the first N training examples / sentences.",
                                              range="[1, inf)")
    dev_limit: typing.Optional[int] = field(None, "Use only the first N dev examples / sentences.", range="[1, inf)")
    verbose: int = field(2, "Progress: 0 silent, 1 Keras' bar, 2 a line per epoch and at each tenth of one.",
                         range="[0, 2]")
    # --- Epochs, checkpoints, logs ---
    keep: str = field("best", "Weights kept from each trial: the best dev epoch's, or the last epoch's.",
                      choices=("best", "last"))
    early_stopping_patience: typing.Optional[int] = field(
        None, "Stop a trial after this many epochs without a better dev score; default: off.", range="[1, inf)")
    save_checkpoints_steps: int = field(
        500, "Updates between checkpoints (also after every epoch and on SIGTERM): a killed run re-run with "
        "the same command resumes from the latest.", range="[1, inf)")
    log_steps: int = field(50, "TensorBoard train loss and learning rate every N updates (output_dir/logs).",
                           range="[1, inf)")
    deterministic: bool = field(
        False, "TF op determinism: a resumed run ends bit-equal to an uninterrupted one (slower on GPU).")
    # --- Generic task files (the kinds that read columns) ---
    label_column: typing.Optional[str] = field(
        None, "Generic tasks: label column; default 'label' (classification) or -1, the last (tagging).")
    # --- Devices and precision ---
    strategy: typing.Optional[str] = field(
        "auto", "tf.distribute strategy; auto: tpu with --tpu, mirrored over several GPUs, the one GPU, else the "
        "CPU (logged at start).", choices=STRATEGIES)
    tpu: typing.Optional[str] = field(None, "TPU name or address for --strategy=tpu.")
    num_cpu_devices: int = field(0, "Logical CPU devices for --strategy=mirrored without GPUs.", range="[0, inf)")
    precision: str = field("float32", "Keras dtype policy.", choices=PRECISIONS)
    jit_compile: bool = field(False, "XLA-compile the train step.")

    # The recipe fields written to `results.json`'s hparams; a kind's `Config` adds its own (`HPARAMS`).
    HPARAMS = ("epochs", "batch_size", "learning_rate", "layerwise_lr_decay", "warmup_proportion", "weight_decay",
               "clip_norm", "dropout", "seq_length", "num_trials", "seed", "train_limit", "dev_limit", "strategy",
               "precision", "jit_compile", "keep", "early_stopping_patience", "deterministic")

    def hparams(self):
        """The recipe part, as written to `results.json`."""
        return {name: getattr(self, name) for name in self.HPARAMS}


def set_fields(config):
    """The names of the fields of `config` whose value is not the field's default: what a caller without
    command-line flags is taken to have set.

    Example:
    >>> from electra_tf.finetuning.config import FinetuneConfig, set_fields
    >>> sorted(set_fields(FinetuneConfig(task="faq", epochs=3, batch_size=8)))
    ['batch_size', 'task']
    """
    return {name for name, spec in config_fields.fields(config).items() if getattr(config, name) != spec.default}


# Keys that files of earlier versions spell otherwise (finetune_config.json, results.json, settings.json): old -> new.
OLD_KEYS = {"max_seq_length": "seq_length"}


def with_current_keys(values):
    """A copy of `values` (a dict from a file an earlier version wrote) with its keys as `FinetuneConfig` spells them.

    Example:
    >>> from electra_tf.finetuning.config import with_current_keys
    >>> with_current_keys({"max_seq_length": 64, "epochs": 2})
    {'epochs': 2, 'seq_length': 64}
    """
    return renamed(values, OLD_KEYS)


# `finetune_config.json` keys that are no `FinetuneConfig` field: the JSON types they hold.
_STR, _BOOL, _NONE = (str, "a str"), (bool, "a bool (true or false)"), type(None)
SETTINGS_TYPES = {"kind": _STR, "label_names": ((list, _NONE), "a list of str or null"), "pair": _BOOL,
                  "regression": _BOOL, "metric": ((str, _NONE), "a str or null"),
                  "scheme": ((str, _NONE), "a str or null"), "answerable": _BOOL}
# The copy of `finetune_config.json` a run writes into its `results.json` (`run_files.write_results`).
RESULTS_KEY = "finetune_config"


def read_finetune_config(folder, config_class=FinetuneConfig):
    """The `finetune_config.json` of the fine-tuning output `folder`, with current keys and checked; None without one.

    Refused with one line naming the file (and the field): not JSON or no object; a field of the
    wrong type (`"seq_length": "128"`: `FinetuneConfig`'s own checks, as a run's `config.json`
    has them); a field that differs from the copy the run wrote into its `results.json`: the file
    was edited after fine-tuning, and the model's outputs follow what it was trained with
    (relabelled `label_names` would name every prediction wrongly). `config_class`: the
    `FinetuneConfig` whose fields are checked (`electra_tf.tasks.FinetuneConfig` has every kind's).
    """
    import os

    import tensorflow as tf

    from electra_tf import run_files

    path = os.path.join(folder, run_files.FINETUNE_CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        return None
    values = run_files.read_json_object(path)
    values = with_current_keys(values)  # an earlier version wrote max_seq_length
    declared = config_fields.fields(config_class)
    try:
        config_class(**{name: value for name, value in values.items() if name in declared})
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    for name, (kinds, words) in SETTINGS_TYPES.items():
        value = values.get(name)
        if name in values and (not isinstance(value, kinds) or (isinstance(value, list) and not all(
                isinstance(label, str) for label in value))):
            raise ValueError(f"{path}: `{name}` expects {words}; received {value!r}.")
    results_path = os.path.join(folder, run_files.RESULTS_FILE)
    saved = run_files.read_json_object(results_path).get(RESULTS_KEY) if tf.io.gfile.exists(results_path) else None
    if isinstance(saved, dict):
        saved = with_current_keys(saved)
        edited = [name for name in sorted(set(saved) | set(values)) if saved.get(name) != values.get(name)]
        if edited:
            name = edited[0]
            raise ValueError(
                f"{path}: `{name}` is {values.get(name, '(absent)')!r}, but the run wrote {saved.get(name, '(absent)')!r} "
                f"(its copy in {results_path}): the file was edited after fine-tuning, and the model answers as it was "
                f"trained. Restore `{name}`, or fine-tune again.")
    return values

