"""The run-directory contract: every file a pre-training run, a fine-tuning run and an export
leaves, by name, and the functions that read them back. No other module spells these names.

A pre-training run (`electra_tf.pretrain --model_dir`):

    model_dir/config.json          the resolved `ElectraConfig`
    model_dir/vocab.txt            the vocabulary the records were built with (+ electra_tokenizer.json)
    model_dir/checkpoints/ckpt-N   model, optimizer and input position by name
                                   (`named_checkpoint`), every `save_checkpoints_steps`
    model_dir/logs/                TensorBoard
    model_dir/discriminator.keras  the trained discriminator (`ElectraEncoder`)
    model_dir/run.lock             while a process trains: its host and pid (`training/run_lock.py`)

A fine-tuning run (`electra_tf.finetune --output_dir`):

    output_dir/results.json           per-trial dev metrics and their summary
    output_dir/classifier.keras       the best trial's `ElectraClassifier` (classification)
    output_dir/token_classifier.keras the best trial's `ElectraTokenClassifier` (tagging)
    output_dir/vocab.txt              its vocabulary (+ electra_tokenizer.json)
    output_dir/finetune_config.json   task, kind, label names, pair or single / tag scheme, max_seq_length
    output_dir/question_answerer.keras, predictions.json, null_odds.json   (span_qa)
    output_dir/<TASK>.tsv             GLUE test predictions to submit (`submission_file`), when test is unlabelled
    output_dir/logs/[trial-N/]        TensorBoard: train loss and learning rate per step, dev metrics per epoch
    output_dir/trials/                while unfinished: each trial's checkpoints (`trial_dir`) and results;
                                      removed once results.json is written

An export (`electra_tf.export`): a SavedModel (`saved_model.pb`, `variables/`,
`assets/`: `vocab.txt`, `electra_tokenizer.json`, `encoder_config.json` or
`serving_config.json`, and `labels.txt` for serving), a Keras-Hub preset, or a LiteRT
model folder (`model.tflite`, `tflite_config.json`, `labels.txt`, `vocab.txt`).
A Hugging Face model (`electra_tf.convert --to hf`): `config.json` + `model.safetensors`.
A standalone encoder (`save_encoder`, e.g. an experiment's untrained baseline): `encoder.keras`
+ `vocab.txt`, a `--init` for fine-tuning.

What a folder holds (`artefact_kind`), so a command never writes its files into
another kind of artefact:

    a pre-training run         config.json with checkpoints/ or discriminator.keras
    a fine-tuning output       classifier.keras, finetune_config.json or results.json
    an exported SavedModel     saved_model.pb (export --kind encoder|serving)
    a LiteRT model             model.tflite (export --kind tflite)
    a Hugging Face model       config.json + model.safetensors (convert --to hf)
"""

import dataclasses
import json
import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf.config import ElectraConfig
from electra_tf.convert.hf_names import HF_CONFIG_FILE, HF_WEIGHTS_FILE, HF_WEIGHTS_INDEX_FILE  # noqa: F401  (convert owns the HF format)
from electra_tf.data.tokenizer import SETTINGS_FILE, VOCAB_FILE  # noqa: F401  (the tokenizer owns its file names)
from electra_tf.models import classifier, question_answerer, token_classifier  # noqa: F401  (registered for loading)
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer, build_pretrainer
from electra_tf.training.named_checkpoint import CheckpointMismatchError, NamedCheckpoint

# --- A pre-training run ---
CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"
LOG_DIR = "logs"
DISCRIMINATOR_FILE = "discriminator.keras"
LOCK_FILE = "run.lock"  # while a process trains into the folder: its host and pid (training/run_lock.py)
# --- A fine-tuning run ---
CLASSIFIER_FILE = "classifier.keras"
TOKEN_CLASSIFIER_FILE = "token_classifier.keras"
FINETUNE_CONFIG_FILE = "finetune_config.json"
RESULTS_FILE = "results.json"
QUESTION_ANSWERER_FILE = "question_answerer.keras"  # span_qa fine-tuning
PREDICTIONS_FILE = "predictions.json"  # span_qa: the official id -> answer text
NULL_ODDS_FILE = "null_odds.json"  # span_qa on SQuAD 2.0: id -> null score minus best span score
TRIALS_DIR = "trials"  # while a fine-tuning run is unfinished: trial-N/ckpt-*, trial-N/trial.json, settings.json
TRIAL_DIR = "trial-{}"
TRIAL_RESULT_FILE = "trial.json"  # a finished trial's results (read back when the run resumes)
RUN_SETTINGS_FILE = "settings.json"  # the settings an unfinished run was started with
# GLUE test predictions in the official submission layout (`index\tprediction`), per task and test split.
GLUE_SUBMISSION_FILES = {
    ("cola", "test"): "CoLA.tsv", ("sst-2", "test"): "SST-2.tsv", ("mrpc", "test"): "MRPC.tsv",
    ("sts-b", "test"): "STS-B.tsv", ("qqp", "test"): "QQP.tsv", ("mnli", "test"): "MNLI-m.tsv",
    ("mnli", "test_mismatched"): "MNLI-mm.tsv", ("qnli", "test"): "QNLI.tsv", ("rte", "test"): "RTE.tsv",
    ("wnli", "test"): "WNLI.tsv", ("ax", "test"): "AX.tsv",
}
# --- An export (SavedModel), a Hugging Face model ---
SAVED_MODEL_FILE = "saved_model.pb"
ASSETS_DIR = "assets"
ENCODER_CONFIG_ASSET = "encoder_config.json"  # export --kind encoder
SERVING_CONFIG_ASSET = "serving_config.json"  # export --kind serving
LABELS_ASSET = "labels.txt"  # export --kind serving: label i on line i
VOCAB_ASSET = VOCAB_FILE  # the vocabulary asset keeps its file name
TFLITE_MODEL_FILE = "model.tflite"  # export --kind tflite, beside LABELS_ASSET and VOCAB_FILE
TFLITE_CONFIG_FILE = "tflite_config.json"  # what the .tflite takes and returns (electra_tf.export.tflite)
HF_WEIGHTS_FILES = (HF_WEIGHTS_FILE, HF_WEIGHTS_INDEX_FILE)
# --- A standalone encoder ---
ENCODER_FILE = "encoder.keras"  # with VOCAB_FILE beside it


def read_config(model_dir):
    """The `ElectraConfig` a run in `model_dir` used."""
    path = os.path.join(model_dir, CONFIG_FILE)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No {CONFIG_FILE} in `model_dir={model_dir}`: not a pre-training run.")
    with tf.io.gfile.GFile(path) as f:
        try:
            values = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON ({e}): a truncated or damaged run config.") from None
    known = {f.name for f in dataclasses.fields(ElectraConfig)}
    return ElectraConfig(**{k: v for k, v in values.items() if k in known})


# Fields that decide the variables a run's checkpoints hold: a run resumes only with the same values.
ARCHITECTURE = ("vocab_size", "embedding_dim", "hidden_dim", "num_layers", "num_heads", "intermediate_dim",
                "max_sequence_length", "num_segments", "generator_hidden_fraction", "objective", "optimizer",
                "activation")


def is_run(model_dir):
    """True when `model_dir` holds a pre-training run's results (a checkpoint or `discriminator.keras`)."""
    return bool(kept_checkpoints(model_dir)) or tf.io.gfile.exists(os.path.join(model_dir, DISCRIMINATOR_FILE))


def check_resumable(config, model_dir):
    """Refuses a config whose architecture differs from the run already in `model_dir`, before anything is written."""
    if not (tf.io.gfile.exists(os.path.join(model_dir, CONFIG_FILE)) and is_run(model_dir)):
        return
    saved = read_config(model_dir)
    differ = [f"--{name}={getattr(config, name)} vs {getattr(saved, name)}" for name in ARCHITECTURE
              if getattr(config, name) != getattr(saved, name)]
    if differ:
        raise ValueError(
            f"`--model_dir={model_dir}` holds a run of another model ({os.path.join(model_dir, CONFIG_FILE)}): "
            f"{', '.join(differ)} (given vs saved). Use a new --model_dir, or the run's own --config."
        )


def write_config(config, model_dir):
    tf.io.gfile.makedirs(model_dir)
    path = os.path.join(model_dir, CONFIG_FILE)
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(config.to_json())
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def latest_checkpoint(model_dir):
    return tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR))


def kept_checkpoints(model_dir):
    """The checkpoints the `checkpoint` state file lists, newest first (the latest at the head)."""
    state = tf.train.get_checkpoint_state(os.path.join(model_dir, CHECKPOINT_DIR))
    if state is None:
        return []
    paths = [state.model_checkpoint_path] + list(reversed(state.all_model_checkpoint_paths))
    return list(dict.fromkeys(p for p in paths if p))


# A damaged checkpoint: missing or truncated files ("not an sstable", "Read less bytes than requested").
DAMAGE = (tf.errors.OpError, IndexError)


def restore_latest_good(restore, model_dir):
    """Calls `restore(path)` on the newest readable checkpoint of `model_dir`, falling back over damaged ones.

    A checkpoint that cannot be read (truncated, files missing) is named in a
    warning and the one before it is tried; a checkpoint that reads but does
    not fit the model (`CheckpointMismatchError`) is an error at once.

    Returns:
        The restored path, or None when `model_dir` has no checkpoint.

    Raises:
        ValueError naming every damaged checkpoint when none can be read.
    """
    damaged = []
    for path in kept_checkpoints(model_dir):
        try:
            restore(path)
        except CheckpointMismatchError:
            raise
        except DAMAGE as e:
            reason = (getattr(e, "message", None) or str(e)).splitlines()[0][:200]
            damaged.append(f"{path} ({reason})")
            logging.warning("Checkpoint %s is unreadable (%s); falling back to the one before it.", path, reason)
            continue
        if damaged:
            logging.warning("Restored %s instead of the damaged %s.", path, "; ".join(damaged))
        return path
    if damaged:
        raise ValueError(f"No readable checkpoint in {os.path.join(model_dir, CHECKPOINT_DIR)}: "
                         + "; ".join(damaged))
    return None


def restore_pretrainer(model_dir, checkpoint=None):
    """Rebuilds the `ElectraPretrainer` of a run from its `config.json` and restores every weight.

    The one way a run's checkpoint is read without its optimizer (`--init`,
    fine-tuning, exports, benchmarks). Every variable of the model must be in
    the checkpoint under its name, with its shape, or it raises
    `CheckpointMismatchError` naming them; a 0.1 positional checkpoint is
    mapped through the optimizer's order (see `NamedCheckpoint.restore`).

    Args:
        model_dir: str. A pre-training `model_dir`.
        checkpoint: optional str. A checkpoint prefix; default the latest.

    Returns:
        `(pretrainer, config)`.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.run_files import restore_pretrainer, write_config
        from electra_tf.training.named_checkpoint import NamedCheckpoint

        # A run directory as `electra_tf.pretrain` leaves one: its config and a checkpoint.
        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        write_config(config, "runs/demo")
        ckpt = NamedCheckpoint(build_pretrainer(config)).checkpoint.write("runs/demo/checkpoints/ckpt-1")

        pretrainer, config = restore_pretrainer("runs/demo", checkpoint=ckpt)  # or its latest checkpoint
        encoder = pretrainer.discriminator
        ```
    """
    config = read_config(model_dir)
    pretrainer = build_pretrainer(config)
    if checkpoint:
        NamedCheckpoint(pretrainer).restore(checkpoint)
    elif restore_latest_good(NamedCheckpoint(pretrainer).restore, model_dir) is None:
        raise FileNotFoundError(f"No checkpoint in {os.path.join(model_dir, CHECKPOINT_DIR)}.")
    return pretrainer, config


def load_discriminator(model_dir):
    """The trained discriminator of a run: `discriminator.keras`, else the latest checkpoint.

    Both give the same encoder: the `.keras` file is written from the live
    model at the end of training, the checkpoint restores every weight by name.

    Returns:
        `(ElectraEncoder, ElectraConfig)`.
    """
    config = read_config(model_dir)
    path = os.path.join(model_dir, DISCRIMINATOR_FILE)
    if tf.io.gfile.exists(path):
        try:
            return keras.saving.load_model(path), config
        except Exception as e:  # a truncated zip, a damaged weights file: Keras names none of it
            if not kept_checkpoints(model_dir):
                raise ValueError(f"{path} cannot be read ({type(e).__name__}: {str(e)[:200]}) and "
                                 f"{model_dir} has no checkpoint to fall back to.") from None
            logging.warning("%s cannot be read (%s: %s); using the latest checkpoint instead.",
                            path, type(e).__name__, str(e)[:200])
    pretrainer, config = restore_pretrainer(model_dir)
    return pretrainer.discriminator, config


def load_keras_model(path, flag="init"):
    """`keras.saving.load_model(path)` with every electra_tf model class registered; one-line errors.

    Reads the project's own `.keras` files (`discriminator.keras`, `encoder.keras`, a fine-tuned
    `classifier.keras`, ...) whatever the caller imported before.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"`--{flag}={path}` does not exist.")
    try:
        return keras.saving.load_model(path, compile=False)  # the weights; a fine-tuned model's optimizer is not needed
    except Exception as e:  # Keras reports a damaged zip as "File not found"
        raise ValueError(f"`--{flag}={path}` cannot be read ({type(e).__name__}: {str(e)[:200]}): a truncated "
                         "or damaged .keras file.") from None


# --- What a folder holds ---
PRETRAINING_RUN = "a pre-training run"
FINETUNING_OUTPUT = "a fine-tuning output"
SAVED_MODEL = "an exported SavedModel"
HUGGING_FACE = "a Hugging Face model"
TFLITE_MODEL = "a LiteRT model"
KERAS_HUB_PRESET = "a keras-hub preset"
KERAS_HUB_PRESET_FILES = ("metadata.json", "model.weights.h5")  # keras-hub's own names (save_to_preset)


def artefact_kind(folder):
    """The kind of artefact `folder` holds (one of the constants above), or None (absent, empty, other files)."""
    def has(*names):
        return any(tf.io.gfile.exists(os.path.join(folder, name)) for name in names)

    if not tf.io.gfile.isdir(folder):
        return None
    if has(CHECKPOINT_DIR, DISCRIMINATOR_FILE):
        return PRETRAINING_RUN
    if has(CLASSIFIER_FILE, FINETUNE_CONFIG_FILE, RESULTS_FILE, TRIALS_DIR):
        return FINETUNING_OUTPUT
    if has(SAVED_MODEL_FILE):
        return SAVED_MODEL
    if has(TFLITE_MODEL_FILE):
        return TFLITE_MODEL
    if has(*HF_WEIGHTS_FILES):
        return HUGGING_FACE
    if all(has(name) for name in KERAS_HUB_PRESET_FILES):
        return KERAS_HUB_PRESET
    if has(CONFIG_FILE):  # a run's config without results yet
        return PRETRAINING_RUN
    return None


def refuse_other_artefact(folder, flag, own_kind):
    """Raises `FileExistsError` when `folder` holds an artefact of another kind than `own_kind`, before anything is written."""
    kind = artefact_kind(folder)
    if kind not in (None, own_kind):
        raise FileExistsError(
            f"`--{flag}={folder}` holds {kind}; writing {own_kind} there would replace its files. "
            "Choose another folder."
        )


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def guard_output(path, flag, own_kind, inputs=(), writes=None):
    """Refuses an output before anything is written: the one output guard of every command that writes.

    Refused, with a `FileExistsError` / `ValueError` naming `--flag`:
    an output that is, holds or lies inside one of `inputs` (`--init`,
    `--input`; a file output: the same path); a folder holding another kind of artefact than `own_kind`
    (see `artefact_kind`; for a file output, the folder it goes into); and
    anything that would be overwritten: for a file output (`writes` given as
    paths), each existing path of `writes`; for a folder output (`writes` None),
    a folder that is not empty.

    Args:
        path: str. The output (a folder, a `.keras` file or a checkpoint prefix).
        flag: str. The flag that named it, e.g. "output_dir".
        own_kind: str or None. What the command writes (a kind constant above),
            None for a single file outside any artefact.
        inputs: paths the command reads (comma-separated lists split by the caller).
        writes: None for a folder output; else the file paths the command writes.

    Example:
        ```python
        import os
        from electra_tf.run_files import HUGGING_FACE, guard_output

        guard_output("new_hf_model", "output_dir", HUGGING_FACE, inputs=["electra.keras"])  # nothing there: fine
        os.makedirs("busy", exist_ok=True); open("busy/notes.txt", "w").close()
        try:
            guard_output("busy", "output_dir", HUGGING_FACE)
        except FileExistsError as e:
            print(e)  # `--output_dir=busy` is not empty (notes.txt); ...
        ```
    """
    target = os.path.abspath(os.fspath(path))
    for item in inputs:
        if not item:
            continue
        source = os.path.abspath(os.fspath(item))
        overlaps = (_inside(target, source) or _inside(source, target)) if writes is None else target == source
        if overlaps:
            raise ValueError(f"`--{flag}={path}` is or overlaps the input {item}: writing there would replace "
                             "what is being read. Choose another --" + flag + ".")
    folder = target if writes is None else os.path.dirname(target)
    kind = artefact_kind(folder)
    if kind is not None and kind != own_kind:
        where = f"`--{flag}={path}`" if writes is None else f"The folder of `--{flag}={path}` ({folder})"
        raise FileExistsError(f"{where} holds {kind}; writing {own_kind or 'there'} would mix its files with "
                              f"another artefact's. Choose another --{flag}.")
    if writes is None:
        if tf.io.gfile.isdir(target) and tf.io.gfile.listdir(target):
            names = sorted(name.rstrip("/") for name in tf.io.gfile.listdir(target))
            raise FileExistsError(f"`--{flag}={path}` is not empty ({', '.join(names[:5])}"
                                  f"{', ...' if len(names) > 5 else ''}); nothing is overwritten. Choose a new "
                                  f"or empty --{flag}.")
        if tf.io.gfile.exists(target) and not tf.io.gfile.isdir(target):
            raise FileExistsError(f"`--{flag}={path}` is an existing file, not a folder.")
        return
    existing = [name for name in writes if tf.io.gfile.exists(name)]
    if existing:
        raise FileExistsError(f"`--{flag}={path}` would overwrite {', '.join(existing)}; nothing is overwritten. "
                              f"Choose a new --{flag}.")


# --- An encoder export, read back ---
def load_encoder(export_dir):
    """A trainable `ElectraEncoder` rebuilt from an `export_encoder` SavedModel.

    Returns:
        `(encoder, vocab_file)`; `vocab_file` is the exported asset's path.
    """
    config_file = os.path.join(export_dir, ASSETS_DIR, ENCODER_CONFIG_ASSET)
    if not tf.io.gfile.exists(config_file):
        raise FileNotFoundError(
            f"{export_dir} is not an electra_tf encoder export (no assets/{ENCODER_CONFIG_ASSET})."
        )
    with tf.io.gfile.GFile(config_file) as f:
        config = json.load(f)["encoder"]
    encoder = ElectraEncoder.from_config(config)
    encoder.build()
    loaded = tf.saved_model.load(export_dir)
    if len(loaded.encoder_weights) != len(encoder.weights):
        raise ValueError(
            f"{export_dir} holds {len(loaded.encoder_weights)} encoder weights; an encoder with its "
            f"config has {len(encoder.weights)}."
        )
    for target, source in zip(encoder.weights, loaded.encoder_weights):
        target.assign(source)
    return encoder, os.path.join(export_dir, ASSETS_DIR, VOCAB_ASSET)


# --- A standalone encoder ---
def save_encoder(encoder, directory, vocab_file):
    """Writes `directory/encoder.keras` (atomically) and a copy of `vocab_file` beside it; returns the path.

    The result is a fine-tuning `--init` (`load_init`).
    """
    tf.io.gfile.makedirs(directory)
    path, partial = os.path.join(directory, ENCODER_FILE), os.path.join(directory, "partial." + ENCODER_FILE)
    encoder.save(partial)
    tf.io.gfile.rename(partial, path, overwrite=True)
    tf.io.gfile.copy(vocab_file, os.path.join(directory, VOCAB_FILE), overwrite=True)
    return path


def untrained_encoder(config, seed):
    """The discriminator `build_pretrainer(config)` makes under `keras.utils.set_random_seed(seed)`, built.

    The no-pre-training baseline of an experiment: the same encoder before any update. The draw
    depends on everything `config` builds (e.g. its objective's generator), so callers keep theirs.
    """
    keras.utils.set_random_seed(seed)
    encoder = build_pretrainer(config).discriminator
    encoder.build()
    return encoder


# --- A fine-tuning run's results ---
def write_results(output_dir, results, finetune_config):
    """Writes a fine-tuning run's `results.json` and `finetune_config.json` (what an export reads back).

    Strict JSON: a NaN or infinity is an error (`ValueError`), never a bare `NaN` in the file.
    """
    write_json(os.path.join(output_dir, FINETUNE_CONFIG_FILE), finetune_config)
    write_json(os.path.join(output_dir, RESULTS_FILE), results)  # last: its presence marks a finished run


def write_json(path, value, indent=2):
    """Writes `value` as strict JSON (no NaN) to `path` atomically: a reader never sees half a file."""
    text = json.dumps(value, indent=indent, allow_nan=False)
    tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(text)
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def read_json(path):
    """The JSON value in `path`, or None when there is no such file."""
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def trial_dir(output_dir, trial):
    """Where an unfinished fine-tuning run keeps trial `trial`'s checkpoints and results."""
    return os.path.join(output_dir, TRIALS_DIR, TRIAL_DIR.format(trial))


def trial_log_dir(output_dir, trial, num_trials):
    """TensorBoard folder of a trial: `logs/`, or `logs/trial-N/` when the run has several trials."""
    log_dir = os.path.join(output_dir, LOG_DIR)
    return log_dir if num_trials == 1 else os.path.join(log_dir, TRIAL_DIR.format(trial))


def submission_file(task, split):
    """File name of a test split's predictions: GLUE's official name (`MNLI-m.tsv`), else `<task>.tsv`."""
    return GLUE_SUBMISSION_FILES.get((task.lower(), split), f"{task}{split[len('test'):]}.tsv")


# --- Every command's `--init` ---
INIT_KINDS = ("hf", "official", "bert", "keras_hub")  # `KIND:DIR` forms; the others are paths
INIT_FORMS = ("a pre-training model_dir, a .keras file, an exported encoder (assets/encoder_config.json), "
              "hf:DIR[,DIR], official:DIR, bert:DIR or keras_hub:DIR")


def load_init_model(init):
    """The model any `--init` form holds, and the vocabulary found with it.

    Forms: a pre-training run (its `discriminator.keras` or latest
    checkpoint: the whole pretrainer when it has checkpoints), a `.keras`
    file (encoder, pretrainer or fine-tuned model), a folder holding
    `encoder.keras`, an `export --kind encoder` SavedModel, and `hf:DIR[,DIR]`
    (Hugging Face `ElectraModel` / `ElectraForPreTraining` /
    `ElectraForMaskedLM`; a pair gives a pretrainer), `official:DIR` (a TF1
    checkpoint), `bert:DIR` (a Hugging Face BERT folder), `keras_hub:DIR` (a
    keras-hub `ElectraBackbone` preset). A bare Hugging Face or keras-hub
    folder is recognised too.

    Returns:
        `(model, vocab_file or None)`.
    """
    if not init:
        raise ValueError(f"`--init` is required: {INIT_FORMS}.")
    kind, sep, rest = init.partition(":")
    if sep and kind in INIT_KINDS:
        return _load_converted(kind, rest, init)
    if sep and not tf.io.gfile.exists(init) and "/" not in kind and len(kind) > 1:
        raise ValueError(f"Unknown `--init={init}`: the KIND:DIR forms are {[k + ':DIR' for k in INIT_KINDS]}.")
    found = artefact_kind(init)
    if found == HUGGING_FACE:
        return _load_converted("hf", init, init)
    if found == KERAS_HUB_PRESET:
        return _load_converted("keras_hub", init, init)
    if found == PRETRAINING_RUN and tf.io.gfile.exists(os.path.join(init, CONFIG_FILE)):
        if kept_checkpoints(init):
            pretrainer, _ = restore_pretrainer(init)
            return pretrainer, os.path.join(init, VOCAB_FILE)
        encoder, _ = load_discriminator(init)
        return encoder, os.path.join(init, VOCAB_FILE)
    if tf.io.gfile.exists(os.path.join(init, ASSETS_DIR, ENCODER_CONFIG_ASSET)):
        return load_encoder(init)
    if tf.io.gfile.isdir(init) and tf.io.gfile.exists(os.path.join(init, ENCODER_FILE)):
        init = os.path.join(init, ENCODER_FILE)
    if init.endswith(".keras") and tf.io.gfile.exists(init):
        return load_keras_model(init), os.path.join(os.path.dirname(init), VOCAB_FILE)
    raise FileNotFoundError(f"Cannot read `--init={init}`: expected {INIT_FORMS}.")


def _load_converted(kind, path, init):
    """`(model, vocab_file)` of a `KIND:DIR` `--init` (the converters of `electra_tf.convert`)."""
    from electra_tf import convert

    if not path:
        raise ValueError(f"`--init={init}` names no folder: {kind}:DIR.")
    if kind == "keras_hub":
        from electra_tf.convert.keras_hub import preset_tokenizer_settings, read_keras_hub_preset

        encoder = read_keras_hub_preset(path)
        vocab, settings = preset_tokenizer_settings(path)
        return encoder, (_vocabulary_with_settings(vocab, settings) if vocab else None)
    if kind == "hf":
        from electra_tf.convert.hugging_face import expand_directories

        folders = expand_directories(path)
        model = convert.build_from_hugging_face(folders)
        candidates = [p for p in path.split(",") if p] + folders
    elif kind == "official":
        model = convert.build_from_official(path)
        candidates = [path if tf.io.gfile.isdir(path) else os.path.dirname(path)]
    else:
        model = convert.build_from_bert(path)
        candidates = [path]
    vocabs = [os.path.join(folder, VOCAB_FILE) for folder in candidates]
    return model, next((v for v in vocabs if tf.io.gfile.exists(v)), vocabs[0])


def _vocabulary_with_settings(vocab_file, settings):
    """`vocab_file`, or a copy of it beside `settings` when those are not what `read_settings` gives it."""
    import tempfile

    from electra_tf.data.tokenizer import DEFAULT_SETTINGS, read_settings, write_settings

    if (read_settings(vocab_file) or DEFAULT_SETTINGS) == settings:
        return vocab_file
    folder = tempfile.mkdtemp(prefix="electra_tf_vocab_")
    tf.io.gfile.copy(vocab_file, os.path.join(folder, VOCAB_FILE))
    write_settings(folder, settings)
    return os.path.join(folder, VOCAB_FILE)


def encoder_of(model, init="the model"):
    """The encoder to fine-tune or export from any model `load_init_model` gives.

    A pretrainer (a pair) gives its discriminator; a fine-tuned model its encoder.
    """
    if isinstance(model, ElectraEncoder):
        return model
    if isinstance(model, ElectraPretrainer):
        return model.discriminator
    encoder = getattr(model, "encoder", None)
    if isinstance(encoder, ElectraEncoder):
        return encoder
    raise TypeError(f"`--init={init}` holds a {type(model).__name__}, not an ELECTRA encoder, pretrainer or "
                    "fine-tuned model.")


def load_init(init, vocab_file=None):
    """The encoder to fine-tune or export and its vocabulary, from any `--init` form.

    Args:
        init: str. Any form of `load_init_model`: a pre-training `model_dir`,
            a `.keras` file, an `export --kind encoder` folder, `hf:DIR`,
            `official:DIR`, `bert:DIR`, `keras_hub:DIR`. A generator +
            discriminator pair or a pretrainer gives its discriminator.
        vocab_file: str or None. Overrides the vocabulary found beside `init`.

    Returns:
        `(ElectraEncoder, vocab_file)`.
    """
    model, found_vocab = load_init_model(init)
    encoder = encoder_of(model, init)
    vocab_file = vocab_file or found_vocab
    if not vocab_file or not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"No vocabulary for `--init={init}`: {vocab_file or 'none found'} is missing; "
                                "pass --vocab_file.")
    return encoder, vocab_file


def init_pretrainer(init, pretrainer):
    """Initialises a new pre-training run's `pretrainer` from any `--init` form (continued pre-training).

    `hf:`, `official:` and `bert:` go through `electra_tf.convert.init_from`; every other form
    (another electra_tf run, e.g. phase 1 of the seq-128-then-512 recipe, a `.keras` file, an
    encoder export, `keras_hub:DIR`) is read with `load_init_model` and its weights assigned by
    their official names: all that match, the parts the source lacks (a lone encoder has no
    generator) keep their initial values and are logged; a shape that differs is an error.
    """
    kind, sep, path = init.partition(":")
    if sep and kind in ("hf", "official", "bert"):
        from electra_tf.convert import init_from

        return init_from(init, pretrainer)
    from electra_tf.convert.weight_map import assign_weights, read_weights

    model, _ = load_init_model(init)
    if not isinstance(model, (ElectraEncoder, ElectraPretrainer)):
        model = encoder_of(model, init)
    return assign_weights(pretrainer, read_weights(model), f"`--init={init}`")
