"""The run-directory contract: every file a pre-training run, a fine-tuning run and an export
leaves, by name, and the guards that keep a command from writing over another's files. No other
module spells these names; the models they hold are read by the `--init` registry
(`electra_tf.sources`).

A pre-training run (`electra_tf.pretrain --model_dir`):

    model_dir/config.json          the resolved `ElectraConfig`
    model_dir/vocab.txt            the vocabulary the records were built with (+ electra_tokenizer.json)
    model_dir/checkpoints/ckpt-N   model, optimizer and input position by name
                                   (`named_checkpoint`), every `save_checkpoints_steps`; under
                                   `--backend jax|torch` Keras' own: `ckpt-N.npz` + `checkpoints.json`
                                   (`training/keras_checkpoints.py`)
    model_dir/logs/                TensorBoard
    model_dir/discriminator.keras  the trained discriminator (`ElectraEncoder`)
    model_dir/run.lock             while a process trains: its host and pid (`training/run_lock.py`)

A fine-tuning run (`electra_tf.finetune --output_dir`):

    output_dir/results.json           per-trial dev metrics and their summary
    output_dir/<model file>           the best trial's model: its task kind names the file
                                      (`TaskKind.model_file`: classifier.keras, token_classifier.keras, ...)
    output_dir/vocab.txt              its vocabulary (+ electra_tokenizer.json)
    output_dir/finetune_config.json   task, kind, label names, pair or single / tag scheme, seq_length
    output_dir/predictions.json, null_odds.json   (span_qa)
    output_dir/<TASK>.tsv             GLUE test predictions to submit (`submission_file`), when test is unlabelled
    output_dir/logs/[trial-N/]        TensorBoard: train loss and learning rate per step, dev metrics per epoch
    output_dir/trials/                while unfinished: each trial's checkpoints (`trial_dir`) and results;
                                      removed once results.json is written

An export (`electra_tf.export`): a SavedModel (`saved_model.pb`, `variables/`,
`assets/`: `vocab.txt`, `electra_tokenizer.json`, `encoder_config.json` or
`serving_config.json`, and `labels.txt` for serving; for serving also
`assets.extra/tf_serving_warmup_requests`), a Keras-Hub preset, or a LiteRT
model folder (`model.tflite`, `tflite_config.json`, `labels.txt`, `vocab.txt`).
A Hugging Face model (`python -m electra_tf.convert --to hf`): `config.json` + `model.safetensors`.
A standalone encoder (`sources.save_encoder`, e.g. an experiment's untrained baseline):
`encoder.keras` + `vocab.txt`, a `--init` for fine-tuning.

What a folder holds (`artefact_in`), so a command never writes its files into
another artefact:

    a pre-training run         config.json with checkpoints/ or discriminator.keras
    a fine-tuning output       finetune_config.json, trials/, or a results.json with trials and metric
    an exported SavedModel     saved_model.pb (export --format encoder|serving)
    a LiteRT model             model.tflite (export --format tflite)
    a Hugging Face model       config.json + model.safetensors (convert --to hf)
"""

import dataclasses
import json
import os

import tensorflow as tf

from electra_tf import atomic
from electra_tf.config import ElectraConfig
from electra_tf.data.tokenizer import SETTINGS_FILE, VOCAB_FILE  # noqa: F401  (the tokenizer owns its file names)

# --- A pre-training run ---
CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"
LOG_DIR = "logs"
DISCRIMINATOR_FILE = "discriminator.keras"
KERAS_CHECKPOINT_INDEX = "checkpoints.json"  # in CHECKPOINT_DIR, under JAX / PyTorch: backend, kept checkpoints
KERAS_CHECKPOINT_FILE = "ckpt-{step}.npz"  # one Keras checkpoint: every variable by name (numpy arrays)
BACKEND_KEY = "backend"  # in config.json: the Keras backend that trained the run
LOCK_FILE = "run.lock"  # while a process trains into the folder: its host and pid (training/run_lock.py)
# --- A fine-tuning run ---
FINETUNE_CONFIG_FILE = "finetune_config.json"
RESULTS_FILE = "results.json"
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
ENCODER_CONFIG_ASSET = "encoder_config.json"  # export --format encoder
SERVING_CONFIG_ASSET = "serving_config.json"  # export --format serving
LABELS_ASSET = "labels.txt"  # export --format serving: label i on line i
VOCAB_ASSET = VOCAB_FILE  # the vocabulary asset keeps its file name
# export --format serving: requests TF Serving replays when it loads the version (electra_tf.exporting.warmup)
SERVING_WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
TFLITE_MODEL_FILE = "model.tflite"  # export --format tflite, beside LABELS_ASSET and VOCAB_FILE
TFLITE_CONFIG_FILE = "tflite_config.json"  # what the .tflite takes and returns (electra_tf.exporting.tflite)
# The files of a Hugging Face model folder (read and written by electra_tf.converting).
HF_CONFIG_FILE = "config.json"
HF_WEIGHTS_FILE = "model.safetensors"
HF_WEIGHTS_INDEX_FILE = "model.safetensors.index.json"  # a sharded checkpoint
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
    if not isinstance(values, dict):
        raise ValueError(f"{path} holds no JSON object of config fields: a damaged run config.")
    known = {f.name for f in dataclasses.fields(ElectraConfig)}
    try:
        return ElectraConfig(**{k: v for k, v in values.items() if k in known})
    except ValueError as e:  # a field of the wrong type or out of range: a hand-edited or damaged file
        raise ValueError(f"{path}: {e}") from None


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


def write_config(config, model_dir, backend=None):
    """Writes `config.json`; `backend` (the Keras backend training the run) is recorded beside the fields."""
    tf.io.gfile.makedirs(model_dir)
    text = config.to_json()
    if backend is not None:
        text = json.dumps({**json.loads(text), BACKEND_KEY: backend}, indent=2)
    atomic.write_text(os.path.join(model_dir, CONFIG_FILE), text)


def latest_checkpoint(model_dir):
    if keras_checkpoint_index(model_dir) is not None:
        kept = kept_checkpoints(model_dir)
        return kept[0] if kept else None
    return tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINT_DIR))


def keras_checkpoint_index(model_dir):
    """The index of a run's Keras checkpoints (JAX / PyTorch), or None when it has none."""
    return read_json(os.path.join(model_dir, CHECKPOINT_DIR, KERAS_CHECKPOINT_INDEX))


def run_backend(model_dir):
    """The Keras backend that trained the run in `model_dir` (None: no run there yet).

    Its checkpoints say (Keras' index names its backend; TensorFlow's are TensorFlow's), else `config.json`'s
    `backend` (a run of an earlier version, without one: TensorFlow).
    """
    index = keras_checkpoint_index(model_dir)
    if index is not None:
        return str(index.get(BACKEND_KEY))
    if tf.train.get_checkpoint_state(os.path.join(model_dir, CHECKPOINT_DIR)) is not None:
        return "tensorflow"
    if not is_run(model_dir):
        return None
    settings = read_json(os.path.join(model_dir, CONFIG_FILE)) or {}
    return str(settings.get(BACKEND_KEY, "tensorflow"))


def kept_checkpoints(model_dir):
    """The checkpoints the `checkpoint` state file (or Keras' `checkpoints.json`) lists, newest first (the latest
    at the head)."""
    index = keras_checkpoint_index(model_dir)
    if index is not None:
        kept = index.get("kept") if isinstance(index.get("kept"), list) else []
        return [os.path.join(model_dir, CHECKPOINT_DIR, str(name)) for name in kept]
    state = tf.train.get_checkpoint_state(os.path.join(model_dir, CHECKPOINT_DIR))
    if state is None:
        return []
    paths = [state.model_checkpoint_path] + list(reversed(state.all_model_checkpoint_paths))
    return list(dict.fromkeys(p for p in paths if p))


# --- What a folder holds ---
PRETRAINING_RUN = "a pre-training run"
FINETUNING_OUTPUT = "a fine-tuning output"
SAVED_MODEL = "an exported SavedModel"
HUGGING_FACE = "a Hugging Face model"
TFLITE_MODEL = "a LiteRT model"
KERAS_HUB_PRESET = "a keras-hub preset"
KERAS_HUB_PRESET_FILES = ("metadata.json", "model.weights.h5")  # keras-hub's own names (save_to_preset)


def artefact_in(folder):
    """The artefact `folder` holds (one of the constants above), or None (absent, empty, other files)."""
    def has(*names):
        return any(tf.io.gfile.exists(os.path.join(folder, name)) for name in names)

    if not tf.io.gfile.isdir(folder):
        return None
    if has(CHECKPOINT_DIR, DISCRIMINATOR_FILE):
        return PRETRAINING_RUN
    if has(FINETUNE_CONFIG_FILE, TRIALS_DIR) or _holds_finetuning_results(folder):
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


def _holds_finetuning_results(folder):
    """Whether `folder`'s `results.json` is a fine-tuning run's (its trials and metric), not another tool's report."""
    try:
        with tf.io.gfile.GFile(os.path.join(folder, RESULTS_FILE), "rb") as f:
            results = json.loads(f.read())
    except (tf.errors.NotFoundError, OSError, ValueError):
        return tf.io.gfile.exists(os.path.join(folder, RESULTS_FILE))  # unreadable: kept as a run's, never overwritten
    return not isinstance(results, dict) or ("trials" in results and "metric" in results)


def enclosing_artefact(path):
    """`(folder, artefact)` of the nearest artefact that is or holds `path` (itself or a parent folder), or None.

    A parent counts only with an artefact's results (a lone `config.json`, or a
    lone `discriminator.keras` a script saved, makes `path` itself a pre-training
    run, not every folder under it). A URL
    (`gs://...`) is checked by itself only.

    Example:
        ```python
        import os
        from electra_tf.run_files import enclosing_artefact

        os.makedirs("runs/ft/logs", exist_ok=True); open("runs/ft/results.json", "w").close()
        enclosing_artefact("runs/ft/logs/notes.jsonl")  # ('.../runs/ft', 'a fine-tuning output')
        enclosing_artefact("elsewhere/predictions.jsonl")  # None
        ```
    """
    path = os.fspath(path)
    if "://" in path:
        artefact = artefact_in(path)
        return None if artefact is None else (path, artefact)
    path = atomic.real_path(path)  # a link or a linked folder: where the file lies
    folder = path
    while True:
        artefact = artefact_in(folder)
        # A parent is a run with its config and results: config.json alone, or a discriminator.keras that a
        # Keras script saved in a working folder, makes no folder under it part of a run.
        weak = artefact == PRETRAINING_RUN and not (tf.io.gfile.exists(os.path.join(folder, CONFIG_FILE)) and is_run(folder))
        if artefact is not None and (folder == path or not weak):
            return folder, artefact
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def refuse_foreign_output(folder, flag, own_artefact, inputs=()):
    """Refuses an output folder that a resumable command (pre-training, fine-tuning) would write into another's.

    Refused, naming `--flag`, before anything is written: a folder that is,
    holds or lies inside one of `inputs` (the paths an `--init` names,
    `sources.init_inputs`; `--data_dir`);
    one holding another artefact than `own_artefact`; and one lying inside
    any artefact (another run's or export's folder). A folder of
    `own_artefact` itself is allowed (it resumes); a file is refused (it is not a folder).
    Links are resolved first: a linked folder is the folder it names.
    """
    if tf.io.gfile.exists(folder) and not tf.io.gfile.isdir(folder):
        raise NotADirectoryError(f"`--{flag}={folder}` is a file, not a folder. Choose a folder.")
    target = atomic.real_path(folder)  # links resolved: a linked folder is the folder it names
    for item in inputs:
        path = os.fspath(item or "")
        if not path or "://" in path:
            continue
        if atomic.inside(target, path) or atomic.inside(path, target):
            raise ValueError(f"`--{flag}={folder}` is or overlaps the input {item}: writing there would mix "
                             f"with (or replace) what is being read. Choose another --{flag}.")
    found = enclosing_artefact(target)
    if found is not None and (found[0] != target or found[1] != own_artefact):
        where = "holds" if found[0] == target else f"lies inside {found[0]}, which holds"
        raise FileExistsError(f"`--{flag}={folder}` {where} {found[1]}; writing {own_artefact} there would mix its "
                              f"files with another artefact's. Choose another --{flag}.")


def refuse_inside_artefact(path, flag):
    """Refuses a new output `path` (file or folder) inside another artefact: a run, a fine-tuning output, an export."""
    around = enclosing_artefact(os.path.dirname(atomic.real_path(path)))
    if around is not None:
        raise FileExistsError(f"`--{flag}={path}` lies inside {around[0]}, which holds {around[1]}; writing there "
                              f"would mix with its files. Choose another --{flag}.")


def guard_output(path, flag, own_artefact, inputs=(), writes=None):
    """Refuses an output before anything is written: the one output guard of every command that writes.

    Refused, with a `FileExistsError` / `ValueError` naming `--flag`:
    an output that is, holds or lies inside one of `inputs` (`--init`,
    `--input`; a file output: the same path); a folder holding another artefact than `own_artefact`
    (see `artefact_in`; for a file output, the folder it goes into); and
    anything that would be overwritten: for a file output (`writes` given as
    paths), each existing path of `writes`; for a folder output (`writes` None),
    a folder that is not empty. Paths are compared as the files they name (`atomic.real_path`,
    `atomic.same_file`): a link, a hard link or a path through a linked folder is the file it leads to.

    Args:
        path: str. The output (a folder, a `.keras` file or a checkpoint prefix).
        flag: str. The flag that named it, e.g. "output_dir".
        own_artefact: str or None. What the command writes (an artefact constant above),
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
    target = atomic.real_path(path)  # links resolved: the file a write lands in
    for item in inputs:
        if not item:
            continue
        source = os.fspath(item)
        overlaps = (atomic.inside(target, source) or atomic.inside(source, target)) if writes is None \
            else atomic.same_file(target, source)
        if overlaps:
            raise ValueError(f"`--{flag}={path}` is or overlaps the input {item}: writing there would replace "
                             "what is being read. Choose another --" + flag + ".")
    folder = target if writes is None else os.path.dirname(target)
    artefact = artefact_in(folder)
    if artefact is not None and artefact != own_artefact:
        where = f"`--{flag}={path}`" if writes is None else f"The folder of `--{flag}={path}` ({folder})"
        raise FileExistsError(f"{where} holds {artefact}; writing {own_artefact or 'there'} would mix its files with "
                              f"another artefact's. Choose another --{flag}.")
    if writes is None:
        if tf.io.gfile.isdir(target) and tf.io.gfile.listdir(target):
            names = sorted(name.rstrip("/") for name in tf.io.gfile.listdir(target))
            raise FileExistsError(f"`--{flag}={path}` is not empty ({', '.join(names[:5])}"
                                  f"{', ...' if len(names) > 5 else ''}); nothing is overwritten. Choose a new "
                                  f"or empty --{flag}.")
        if tf.io.gfile.exists(target) and not tf.io.gfile.isdir(target):
            raise FileExistsError(f"`--{flag}={path}` is a file, not a folder. Choose a folder.")
        return
    existing = [name for name in writes if tf.io.gfile.exists(name) or os.path.lexists(name)]
    if existing:
        raise FileExistsError(f"`--{flag}={path}` would overwrite {', '.join(existing)}; nothing is overwritten. "
                              f"Choose a new --{flag}.")


# --- A fine-tuning run's results ---
def write_results(output_dir, results, finetune_config):
    """Writes a fine-tuning run's `results.json` and `finetune_config.json` (what an export reads back).

    `results.json` keeps a copy of `finetune_config.json` (`finetune_config`), to which
    `finetuning.config.read_finetune_config` compares the file.

    Strict JSON: a NaN or infinity is an error (`ValueError`), never a bare `NaN` in the file.
    """
    atomic.write_json(os.path.join(output_dir, FINETUNE_CONFIG_FILE), finetune_config)
    results = dict(results, finetune_config=finetune_config)  # its copy: an edit of the file is found on reading
    atomic.write_json(os.path.join(output_dir, RESULTS_FILE), results)  # last: its presence marks a finished run



def read_json(path):
    """The JSON object in `path`, or None when there is no such file; a file that is not one (emptied, truncated)
    is an error naming it."""
    if not tf.io.gfile.exists(path):
        return None
    return read_json_object(path)


def read_json_object(path):
    """The JSON object in `path`; a file that is not one is an error naming it (truncated or damaged)."""
    with tf.io.gfile.GFile(path) as f:
        try:
            value = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON ({e}): truncated or damaged.") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds no JSON object: truncated or damaged.")
    return value

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
