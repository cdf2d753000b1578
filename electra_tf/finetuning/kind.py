"""`TaskKind`: what `trials.run_trials` asks of a task kind, and the defaults the kinds share."""

from electra_tf.finetuning.batching import compiled_predictor


class TaskKind:
    """A fine-tuning task kind (classification, tagging, span_qa): see `trials` for the interface.

    Subclasses set `name`, `model_file`, `metric` and read their splits in
    `__init__(config)`; this base holds the config, the split lists
    (`eval_splits` scored every epoch, `test_splits` once at the end) and one
    compiled prediction function per model (`predictor`).
    """

    name = None
    model_file = None
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

    def prepare(self, tokenizer):
        """Builds the features of every split (once, before the first trial)."""

    def trial_extras(self, outputs):
        """Extra per-trial results from the kept epoch's evaluation outputs."""
        return {}

    def write_outputs(self, output_dir, model, outputs):
        """Kind-specific files of the best trial (predictions, submissions)."""

    def hparams(self):
        """Kind-specific settings added to `results.json`'s hparams."""
        return {}
