"""The task kinds by name: the one registry fine-tuning, export, predict and convert consult.

A task kind is one folder, `electra_tf/tasks/<kind>/` (its `TaskKind` subclass in `kind.py`, see
`base.py`; its settings, readers, features, metrics, Keras model, serving module and Hugging Face
head), and one line of `DECLARED` below, which names its class; its registry name is that class's
`name`, the "kind" of a run's `finetune_config.json` and of an export's `serving_config.json`.
Everything else finds it here: `get` (a kind by name), `for_config` (which kind a fine-tuning run
is), `finetune` (a fine-tuning run of that kind), `FinetuneConfig` (the recipe's fields and every
kind's own), `OUTPUTS` (which kind a fine-tuning output holds, and its model: a `sources` form),
`served.open_model` (what `predict` serves), `descriptions` (what each kind is, for its users: the per-kind
lists of `finetune --help` and `predict --help`, rendered by `usage`, and of the guides).

Example:
>>> from electra_tf import tasks
>>> tasks.get("tagging").model_file
'token_classifier.keras'
>>> tasks.for_config(tasks.FinetuneConfig(task="conll2003")).name
'tagging'
>>> tasks.for_config(tasks.FinetuneConfig(task="sst-2")).name, tasks.FinetuneConfig().doc_stride
('classification', 128)
"""

import importlib.util

# The recipe's settings and readers (`electra_tf.finetuning`) are imported where used: a kind's Keras model
# (`electra_tf.tasks.<kind>.model`) imports with Keras alone, on any backend, TensorFlow absent.

# One line per kind: its `TaskKind` class (module, class name). The first is the default kind (`DEFAULT`).
DECLARED = (
    ("electra_tf.tasks.classification.kind", "ClassificationKind"),
    ("electra_tf.tasks.tagging.kind", "TaggingKind"),
    ("electra_tf.tasks.span_qa.kind", "SpanQAKind"),
    ("electra_tf.tasks.multiple_choice.kind", "MultipleChoiceKind"),
    ("electra_tf.tasks.embedding.kind", "EmbeddingKind"),
    ("electra_tf.tasks.replaced_tokens.kind", "ReplacedTokenKind"),  # served only: a pre-trained model's scores
)

# Read on first use (`__getattr__`), so that what needs only the settings (`finetune --help`) imports no kind:
#   KINDS / DEFAULT  name -> `TaskKind` subclass (`DECLARED`) / the first: `--task_kind auto`'s fallback
#   FINETUNED        the kinds that fine-tune (the `--task_kind`s); PRETRAINED: the served-only kind `predict`
#                    reads an `--init` as that is no fine-tuned model nor an export
#   OUTPUTS          the fine-tuning outputs (`sources.FinetunedOutput`): which kind a folder or `.keras` file
#                    holds (`kind_of`), its model (`load`)
#   FinetuneConfig   the recipe's fields and each kind's `Config` (its `config.py`), one flag each
#   ReadOptions      `predict`'s reading flags: the shared columns and each kind's `PredictOptions`
_LAZY = ("KINDS", "DEFAULT", "FINETUNED", "PRETRAINED", "OUTPUTS", "FinetuneConfig", "ReadOptions")


def _folders():
    """The folder of each declared kind under `electra_tf/tasks/`, in `DECLARED` order."""
    return [module.split(".")[2] for module, _ in DECLARED]


def _settings_of(folder, name):
    """The `name` class (`Config`, `PredictOptions`) of the kind folder's `config.py`, or None."""
    module = f"{__name__}.{folder}.config"
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), name, None)


def _kinds():
    return __getattr__("KINDS")


def _finetuned():
    return __getattr__("FINETUNED")


def __getattr__(attribute):
    if attribute not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")
    if attribute == "FinetuneConfig":
        from electra_tf.finetuning import config as finetuning_config

        configs = [_settings_of(folder, "Config") for folder in _folders()]
        value = finetuning_config.FinetuneConfig.with_fields_of(*(c for c in configs if c is not None))
        from electra_tf.tasks import usage

        value = value.with_help(task_kind=usage.task_kind_help(descriptions()))  # the kinds, from their descriptions
    elif attribute == "ReadOptions":
        from electra_tf.finetuning import examples

        options = [_settings_of(folder, "PredictOptions") for folder in _folders()]
        value = examples.ReadOptions.with_fields_of(*(o for o in options if o is not None))
    elif attribute == "KINDS":
        value = {k.name: k for k in (getattr(importlib.import_module(m), n) for m, n in DECLARED)}
    elif attribute == "DEFAULT":
        value = next(iter(_kinds()))
    elif attribute == "FINETUNED":
        value = {name: kind for name, kind in _kinds().items() if kind.finetunes}
    elif attribute == "OUTPUTS":
        from electra_tf.sources.finetuned import FinetunedOutput

        value = FinetunedOutput(_finetuned(), read_finetune_config)
    else:
        value = next(name for name, kind in _kinds().items() if not kind.finetunes)
    globals()[attribute] = value
    return value


def descriptions():
    """name -> `base.KindDescription` of every declared kind, in `DECLARED` order: each kind folder's
    `description.py`, read without importing the kind (`finetune --help` imports none)."""
    found = (importlib.import_module(module.rsplit(".", 1)[0] + ".description").DESCRIPTION for module, _ in DECLARED)
    return {description.name: description for description in found}


def read_finetune_config(folder):
    """`finetuning.config.read_finetune_config` of `folder`, every kind's fields checked."""
    from electra_tf.finetuning import config as finetuning_config

    return finetuning_config.read_finetune_config(folder, __getattr__('FinetuneConfig'))


def input_formats():
    """Every `predict --input_format`: the generic ones, then each kind's own."""
    from electra_tf.predicting.inputs import FORMATS

    kinds_own = [f for kind in _kinds().values() for f in kind.predict_formats if f not in FORMATS]
    return [*FORMATS, *dict.fromkeys(kinds_own)]


def predict_input_files():
    """The `predict` flags of every kind that name a file it reads (`TaskKind.predict_input_files`: `passages`)."""
    return list(dict.fromkeys(name for kind in _kinds().values() for name in kind.predict_input_files))


def format_extensions():
    """File extension -> format, of every kind's own formats (`predict --input_format auto`)."""
    return {extension: name for kind in _kinds().values() for extension, name in kind.format_extensions.items()}


def get(name):
    """The kind registered as `name`; an error listing the kinds otherwise."""
    if name not in _kinds():
        raise ValueError(f"Unknown task kind {name!r}. Known kinds: {sorted(_kinds())}.")
    return _kinds()[name]


def for_config(config):
    """The kind of a fine-tuning `config`: `--task_kind`, or (auto) the kind that claims the task's name."""
    if config.task_kind not in (None, "auto"):
        if config.task_kind not in _finetuned():
            raise ValueError(f"Unknown `--task_kind={config.task_kind}`. Choose auto or one of {sorted(_finetuned())}.")
        return _finetuned()[config.task_kind]
    name = (config.task or "").lower()
    return next((kind for kind in _finetuned().values() if kind.claims(name)), _kinds()[__getattr__("DEFAULT")])


def finetune(config, strategy=None):
    """`trials.run_trials` with the kind of `config`: what `python -m electra_tf.finetune` runs.

    Returns the results dict (`results.json`), or None when a SIGTERM stopped the run.
    """
    from electra_tf.finetuning import trials

    return trials.run_trials(config, for_config(config), strategy)
