"""`TaskKind`: one task family from its files to training, export, prediction and Hugging Face; the base class.

A task kind is one plug-in: a folder `electra_tf/tasks/<kind>/` (its subclass, settings,
readers, features, metrics, model, serving module, Hugging Face head) and one line of
`electra_tf.tasks.KINDS`. Fine-tuning (`trials.run_trials`), `export --format
serving`, `predict` and `convert --to hf` ask it, and nothing else, what differs
between families. What a kind provides:

Class attributes (known without a run):

    name              the `--task_kind` and the "kind" of `finetune_config.json` / `serving_config.json`
    Config            its own settings: a `config_fields.Config` dataclass whose fields are flags of
                      `python -m electra_tf.finetune` (`FinetuneConfig.with_fields_of` collects them)
    model_file        the fine-tuned model's file in a fine-tuning output dir
    model_class       its Keras class
    saved_classes     other Keras classes its saved model names (a loss), registered by `saved_classes`
    task_names        task names that `--task_kind auto` gives this kind
    predict_formats   the `predict --input_format`s it reads
    format_extensions the file extensions of the formats only it reads (".conll": "conll")
    predict_options   the `predict` flags only some served kinds read (`ReadOptions` fields such as
                      `corrupt`) that it reads: none for a task kind
    shared_flags      the `finetune` flags outside every kind's `Config` that it reads (`label_column`);
                      `flags()`, its `Config`'s fields and these, are the flags that are its own
    scores_predictions whether `predict` can score its inputs against gold labels (`--metrics_file`)
    predict_input_files the `predict_options` naming a file `predict` reads (`passages`): never an output
    description       what the kind is, for its users (`KindDescription`, in the kind folder's
                      `description.py`, read without importing the kind): `finetune --help`,
                      `predict --help` and the guides render or check their per-kind lists from it

Training (`Kind(config)` reads the splits; errors name file and line):

    check_flags(config, given)             refuses a flag of another kind (the one place flags meet kinds);
                                           `without_other_kinds(values)` drops them from `results.json`'s hparams
    configure(config, given)               the config the run uses: what the `--init` itself records
                                           (embedding: a sentence-transformers folder's pooling and length)
                                           where no flag of `given` sets it
    check_training(replicas)               refuses, before anything is written, a split that cannot train
    metric, eval_splits, test_splits, num_train_rows
    prepare(tokenizer)                     features of every split (once, before the first trial)
    train_dataset(seed, epoch, skip)       epoch `epoch`'s batches, `skip` left out
    build_model(encoder)                   (model, compile keyword arguments), under the strategy scope
    evaluate(model, split)                 (metrics dict with the headline `metric`, kind-specific outputs)
    trial_extras(outputs), write_outputs(output_dir, model, outputs), results(), hparams()
    finetune_config(best_trial)            `finetune_config.json`: what export, predict and convert read back

After training (class methods; `settings` is the model's `finetune_config.json` or, for an
export, its `serving_config.json`):

    claims(task)                                                    `--task_kind auto` gives it this task
    missing_settings(model)                                         what an export assumes without settings
    serving_module(model, vocab_file, settings, seq_length=None)   what `export --format serving` saves
    tflite_module(model, vocab_file, settings, seq_length, ids_only)   what `export --format tflite` converts
    sniff_format(text)                                              a predict input format told by content
    read_examples(name, text, input_format, settings, options)      predict's `examples.Example`s
    predict_settings(served, options)                               the settings of a `predict` run
    format_prediction(row, example, settings)                       an `examples.Prediction` (one record)
    score(settings, examples, predictions)                          metrics of labelled inputs, the
                                                                    headline named under "metric"
    hf_head(model, settings)                                        `convert --to hf`: (architecture,
                                                                    head tensors, config entries[, other
                                                                    files of the folder])

A served-only kind (`finetunes = False`: nothing to fine-tune) serves a pre-trained model instead:
`open(init, options)` (what `predict` serves) and `export_pretrained(...)` (`export --format <name>`).
"""

import dataclasses

from electra_tf.config_fields import Config, fields

# `electra_tf.finetuning.batching` (TensorFlow) is imported where a kind predicts: the descriptions and settings
# here are read by `finetune --help` before TensorFlow's start.


@dataclasses.dataclass(frozen=True)
class Signature:
    """One signature of a kind's serving SavedModel (`export --format serving`, or `rtd`).

    Args:
        name: str. The signature's key (`serving_default`, `predict_ids`, ...).
        inputs: tuple of str. Its inputs' names, in order.
        outputs: tuple of str. Its outputs' names.
        optional: tuple of str. Inputs or outputs only some models have (`when` says which).
        when: str. Which models have `optional`, or (`always` False) this signature; "" when every one.
        always: bool. Every model of the kind has this signature.
    """

    name: str
    inputs: tuple
    outputs: tuple
    optional: tuple = ()
    when: str = ""
    always: bool = True


@dataclasses.dataclass(frozen=True)
class KindDescription:
    """What a task kind is, for its users: the one source of the per-kind lists of `--help` and the guides.

    Each kind folder's `description.py` holds its `DESCRIPTION` (read by `electra_tf.tasks.descriptions`
    without importing the kind, so `finetune --help` stays light), which its `TaskKind` carries as
    `description`. `tests/test_kind_descriptions.py` checks the facts against the kind's code.

    Args:
        name: str. The registry name (`TaskKind.name`: the `--task_kind`, the exports' "kind").
        summary: str. One line: what the kind does, over which files.
        finetunes: bool. `TaskKind.finetunes` (False: served only, from a pre-trained model).
        auto_tasks: tuple of str. `--task` names that `--task_kind auto` gives this kind (`squad*`: any
            name starting with squad).
        data: str. The `--data_dir` files fine-tuning reads ("" for a served-only kind).
        predict_input: str. What `predict --input` reads for a model of this kind.
        record: str. One `predict` output record (a JSON Lines line; "..." where values go on).
        files: tuple of str. The files of `finetune --output_dir` only this kind writes, its model
            file (`TaskKind.model_file`) first; every kind also writes results.json, vocab.txt,
            finetune_config.json and logs/.
        export: str. The `export` command that serves it (`--format serving`, or `rtd`).
        signatures: tuple of `Signature`. The served SavedModel's signatures.
        guide: str. Its guide's section (a docs/ page and anchor): how to fine-tune (or use) it.
        serving_guide: str. The section of docs/serving.md on its served model.
    """

    name: str
    summary: str
    finetunes: bool = True
    auto_tasks: tuple = ()
    data: str = ""
    predict_input: str = ""
    record: str = ""
    files: tuple = ()
    export: str = "export --format serving"
    signatures: tuple = ()
    guide: str = ""
    serving_guide: str = ""

    def signature(self, name):
        """The `Signature` named `name`."""
        return next(s for s in self.signatures if s.name == name)


@dataclasses.dataclass
class NoSettings(Config):
    """The settings of a kind that has none of its own (no flag added)."""

    HPARAMS = ()


class TaskKind:
    """A fine-tuning task kind: the interface above, and the defaults the kinds share.

    This base holds the config, the split lists (`eval_splits` scored every
    epoch, `test_splits` once at the end) and one compiled prediction function
    per model (`predictor`).
    """

    name = None
    description = None  # its `KindDescription` (the kind folder's `description.py`)
    Config = NoSettings
    PredictOptions = NoSettings
    model_file = None
    model_class = None
    saved_classes = ()
    finetunes = True  # False: a served-only kind (nothing to fine-tune; no `--task_kind`)
    task_names = ()
    predict_formats = ()
    format_extensions = {}  # file extension -> a format of `predict_formats` only this kind reads
    predict_options = ()
    shared_flags = ()  # `finetune` flags besides its `Config`'s that are its own (several kinds may list one)
    scores_predictions = True  # `predict` scores labelled inputs (`--metrics_file`); False: its inputs carry none
    predict_input_files = ()  # the `predict_options` that name a file `predict` reads (`--output_file` never replaces)
    metric = None

    def __init__(self, config):
        self.config = config
        self.eval_splits, self.test_splits = ["dev"], []
        self._predictor = (None, None)

    @classmethod
    def flags(cls):
        """The `finetune` flags that are this kind's own: its `Config`'s fields, then `shared_flags`."""
        return (*fields(cls.Config), *cls.shared_flags)

    @classmethod
    def check_flags(cls, config, given):
        """Refuses a flag of `given` (the names set on the command line) that belongs to other kinds only.

        A flag some kind lists in `flags()` is that kind's; the others (the recipe's: `--epochs`,
        `--seq_length`, ...) are every kind's. The error names the flag, the kinds it belongs to and
        this one, e.g. `--pooling cls` given to a classification task. A flag given with its default
        value (a command that spells out every flag) changes nothing and passes.
        """
        owners = _owners()
        for name, spec in fields(config).items():
            if name not in given or getattr(config, name) == spec.default:
                continue
            if name in owners and cls.name not in owners[name]:
                kinds = " and ".join(owners[name]) + (" kinds" if len(owners[name]) > 1 else " kind")
                raise ValueError(
                    f"`--{name}={getattr(config, name)}` is a flag of the {kinds}, but the task {config.task!r} is "
                    f"of the {cls.name} kind (`--task_kind={config.task_kind}`), which does not read it. Leave out "
                    f"--{name}, or give the --task_kind it belongs to.")

    @classmethod
    def without_other_kinds(cls, values):
        """`values` (a dict by setting name: `results.json`'s hparams) without the flags of other kinds only."""
        owners = _owners()
        return {name: value for name, value in values.items() if cls.name in owners.get(name, [cls.name])}

    @classmethod
    def configure(cls, config, given):
        """The config the run uses: `config`, with what the `--init` records where `given` sets nothing."""
        del given
        return config

    def check_training(self, replicas):
        """Refuses, before anything is written, training splits that cannot train (`replicas`: the strategy's)."""

    def predictor(self, model, make=None):
        """`make(model)` (default: `model(inputs, training=False)` compiled), made once per model: no retrace per epoch."""
        if self._predictor[0] is not model:
            from electra_tf.finetuning.batching import compiled_predictor

            function = make(model) if make else compiled_predictor(lambda inputs: model(inputs, training=False))
            self._predictor = (model, function)
        return self._predictor[1]

    @property
    def length_multiple(self):
        """What the training batches' cut is rounded up to (`batching.length_multiple`: 16 under XLA, else 1)."""
        from electra_tf.finetuning import batching

        return batching.length_multiple(self.config.jit_compile or _backend() == "jax")  # JAX: XLA always

    def prepare(self, tokenizer):
        """Builds the features of every split (once, before the first trial)."""

    def trial_extras(self, outputs):
        """Extra per-trial results from the kept epoch's evaluation outputs."""
        return {}

    def write_outputs(self, output_dir, model, outputs):
        """Kind-specific files of the best trial (predictions, submissions)."""

    def results(self):
        """Kind-specific keys of `results.json`."""
        return {}

    def hparams(self):
        """Kind-specific settings added to `results.json`'s hparams."""
        return {}

    # --- After training ---

    @classmethod
    def claims(cls, task):
        """Whether `--task_kind auto` gives the task named `task` (lower case) this kind."""
        return task in cls.task_names

    @classmethod
    def missing_settings(cls, model):
        """What an export assumes for `model` when its run left no `finetune_config.json` (a warning)."""
        return "the export assumes 128 tokens per sequence unless --seq_length is given."

    @classmethod
    def predict_settings(cls, served, options):
        """The settings `format_prediction` reads in a `predict` run: the served model's, which the kind's own
        `predict` flags (`options`, its `PredictOptions`) may add to (embedding: `--passages`, their vectors)."""
        return served.settings

    @classmethod
    def sniff_format(cls, text):
        """A predict input format recognised from `text` (e.g. CoNLL columns), or None."""
        return None

    @classmethod
    def hf_head(cls, model, settings):
        """`(transformers architecture, {name: array}, config entries)` of the head; raises when there is none."""
        raise ValueError(f"A {cls.name} model has no Hugging Face counterpart.")

    @classmethod
    def tflite_module(cls, model, vocab_file, settings, seq_length=None, ids_only=False):
        """The serving module whose model `export --format tflite` converts; raises where the kind has none."""
        raise ValueError(f"A {cls.name} model has no LiteRT export: serve it with `--format serving`.")


def _backend():
    import keras

    return keras.backend.backend()


def _owners():
    """Flag name -> the names of the fine-tuning kinds whose `flags()` list it (the recipe's flags: none)."""
    from electra_tf import tasks

    owners = {}
    for kind in tasks.FINETUNED.values():
        for name in kind.flags():
            owners.setdefault(name, []).append(kind.name)
    return owners
