"""One form of `--init`: how its files are recognised, read and initialise a pretrainer, where its vocabulary is.

Every form is one `Source` object in the registry (`electra_tf.sources.SOURCES` for the
`FORM:` prefixed forms, `electra_tf.sources.PATH_FORMS` for the bare paths it recognises).
"""

import keras
import numpy as np

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer


class Source:
    """A form of model files `--init` reads.

    Subclasses set `prefix` (the `FORM` of `FORM:PATH`, or None for a path form only),
    `form` (how a user writes it, for messages and the docs) and implement `load`;
    `recognises` makes a bare path of theirs work without the prefix.

    Example:
        ```python
        from electra_tf.sources import SOURCES

        SOURCES["bert"].form  # 'bert:DIR'
        ```
    """

    prefix = None
    form = ""

    def recognises(self, path):
        """Whether the bare path `path` (no `FORM:`) is of this form."""
        del path
        return False

    def check_path(self, path, given):
        """Refuses a path part that cannot name this form's files (`given`: the flag and value, for the message)."""
        del path, given

    def inputs(self, path):
        """The files or folders `path` names: an output must not overlap them."""
        return [path]

    def load(self, path, flag="init", **options):
        """The model `path` holds: an `ElectraEncoder`, an `ElectraPretrainer` or a fine-tuned model.

        Args:
            path: str. The path part of the `--init` (after `FORM:`).
            flag: str. The flag that named it, for messages.
            **options: what the form takes besides (`official`: `num_heads`).
        """
        raise NotImplementedError

    def detector(self, path, flag="init", generator_for=None):
        """The model `path` holds, read for its replaced-token head (`sources.load_detector` checks it has one).

        The default is `load`; a form that reads a head only when asked (a Hugging Face
        `ElectraForPreTraining` folder) or can tell without reading weights that it has
        none overrides it.

        Args:
            path: str. The path part of the `--init`.
            flag: str. The flag that named it, for messages.
            generator_for: str or None. What needs the generator too (e.g. "`--corrupt`"): a form
                that can tell it has none before reading weights refuses here, naming it.
        """
        del generator_for
        return self.load(path, flag=flag)

    def vocabulary(self, path):
        """The `vocab.txt` that goes with `path` (it may not exist), or None."""
        del path
        return None

    def initialise(self, path, pretrainer, strict=False, flag="init"):
        """Fills a new `pretrainer` from `path` by official names (continued pre-training).

        The default reads the model (`load`) and assigns every weight that has a
        counterpart; the parts the source lacks (a lone encoder has no generator) keep
        their initial values and are logged (an error when `strict`); a shape that
        differs is an error before any variable changes.
        """
        from electra_tf.converting.weight_map import assign_weights, read_weights

        model = self.load(path, flag=flag)
        if not isinstance(model, (ElectraEncoder, ElectraPretrainer)):
            model = encoder_of(model, path, flag)
        return assign_weights(pretrainer, read_weights(model), f"`--{flag}={path}`", strict=strict)


def encoder_of(model, init="the model", flag="init"):
    """The encoder to fine-tune or export from any model an `--init` holds.

    A pretrainer (a pair) gives its discriminator; a fine-tuned model its encoder.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.sources import encoder_of

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
        pretrainer = build_pretrainer(config)
        encoder_of(pretrainer) is pretrainer.discriminator  # True
        ```
    """
    if isinstance(model, ElectraEncoder):
        return model
    if isinstance(model, ElectraPretrainer):
        return model.discriminator
    encoder = getattr(model, "encoder", None)
    if isinstance(encoder, ElectraEncoder):
        return encoder
    raise TypeError(f"`--{flag}={init}` holds a {type(model).__name__}, not an ELECTRA encoder, pretrainer or "
                    "fine-tuned model.")


def check_finite(model, what):
    """Raises `ValueError` naming the first weight of `model` that holds a NaN or an infinity.

    Args:
        model: a Keras model (encoder, pretrainer, fine-tuned model).
        what: str. Names the source in the message (`--init=hf:DIR`).

    Example:
        ```python
        import numpy as np
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.sources import check_finite

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=1, hidden_dim=32, embedding_dim=16,
                                 intermediate_dim=64)
        encoder.build()
        encoder.embeddings.token_embedding.embeddings.assign(np.full((100, 16), np.nan, "float32"))
        try:
            check_finite(encoder, "`--init=m.keras`")
        except ValueError as e:
            print(e)  # `--init=m.keras`: electra/embeddings/word_embeddings holds 1600 non-finite value(s) ...
        ```
    """
    names = _official_names(model)
    for variable in model.weights:
        value = keras.ops.convert_to_numpy(variable)
        finite = np.isfinite(value)
        if not finite.all():
            bad, nan = value.size - int(finite.sum()), int(np.isnan(value).sum())
            name = names.get(variable.path, variable.path)
            raise ValueError(f"{what}: {name} holds {bad} non-finite value(s) ({nan} NaN, {bad - nan} infinite) "
                             f"of {value.size}: the weights are damaged; nothing was used. Read them again from "
                             "their source.")


def _official_names(model):
    """Keras variable path -> official name (`electra/embeddings/word_embeddings`) where the model has them."""
    from electra_tf.converting.weight_map import model_variables

    for candidate in (model, getattr(model, "encoder", None)):
        try:
            return {variable.path: name for name, variable in model_variables(candidate).items()}
        except (TypeError, ValueError):
            continue
    return {}
