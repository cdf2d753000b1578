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
    predict_input_files the files among them that `predict` reads (`passages`): never an output

Training (`Kind(config)` reads the splits; errors name file and line):

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

from electra_tf.config_fields import Config
from electra_tf.finetuning.batching import compiled_predictor, length_multiple


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
    predict_input_files = ()  # the `predict_options` that name a file `predict` reads (`--output_file` never replaces)
    metric = None

    def __init__(self, config):
        self.config = config
        self.eval_splits, self.test_splits = ["dev"], []
        self._predictor = (None, None)

    def predictor(self, model, make=None):
        """`make(model)` (default: `model(inputs, training=False)` compiled), made once per model: no retrace per epoch."""
        if self._predictor[0] is not model:
            function = make(model) if make else compiled_predictor(lambda inputs: model(inputs, training=False))
            self._predictor = (model, function)
        return self._predictor[1]

    @property
    def length_multiple(self):
        """What the training batches' cut is rounded up to (`batching.length_multiple`: 16 under XLA, else 1)."""
        return length_multiple(self.config.jit_compile)

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
