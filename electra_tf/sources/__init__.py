"""The `--init` registry: every form a command reads a model from, parsed here and nowhere else.

| `--init` | reads (`Source`) |
|---|---|
| `runs/x` | a pre-training run: its checkpoints (the whole pretrainer), else `discriminator.keras` (`runs.PretrainingRun`) |
| `m.keras`, `keras:m.keras`, a folder with `encoder.keras` | an encoder, a pretrainer or a fine-tuned model (`encoders.KerasFile`) |
| `exports/encoder` | an `export --format encoder` SavedModel (`encoders.EncoderExport`) |
| `hf:DIR[,DIR]`, a bare HF folder | transformers `ElectraModel` / `ElectraForPreTraining` (+ `ElectraForMaskedLM`) (`converted.HuggingFace`) |
| `hf_generator:DIR` | the generator (`ElectraForMaskedLM`) itself, asked for by name (`converted.HuggingFaceGenerator`) |
| `official:DIR` | a google-research/electra TF1 checkpoint (`converted.Official`) |
| `bert:DIR`, a bare BERT folder | a Hugging Face BERT (E = H) (`converted.Bert`) |
| `keras_hub:DIR`, a bare preset folder | a keras-hub `ElectraBackbone` preset and its `ElectraTokenizer` (`converted.KerasHub`) |

A fine-tuning output (a `finetune` run's folder or its model's `.keras` file) is the `--init` of
`export --format serving|tflite` and `predict`: `finetuned.FinetunedOutput` tells its task kind
and loads it, built by the task registry with its kinds (`electra_tf.tasks.OUTPUTS`).

Every command takes these: `pretrain --init` (continued pre-training, `init_pretrainer`),
`finetune --init` and `export --init` (`load_init`: the encoder and its vocabulary),
`predict --init` and `export --format rtd` for replaced-token scores (`load_detector`: the
discriminator with its head, and the generator where there is one), and
`convert --from F --input X` reads `F:X` (`load_source`). Whatever the form, the weights
read must be finite (a NaN or infinity names the tensor); a Hugging Face or BERT folder's
`config.json` is checked before anything else; a generator-only Hugging Face folder is
refused as `hf:` (`hf_generator:` asks for it).

Example:
    ```python
    from electra_tf.config import get_config
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.sources import load_init, save_encoder

    config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
    open("vocab.txt", "w").write("".join(f"t{i}\\n" for i in range(100)))
    save_encoder(build_pretrainer(config).discriminator, "encoders/tiny", "vocab.txt")

    encoder, vocab_file = load_init("encoders/tiny")  # the folder form; hf:DIR, bert:DIR, ... alike
    vocab_file  # 'encoders/tiny/vocab.txt'
    ```
"""

import typing

import tensorflow as tf

from electra_tf.models.pretrainer import ElectraPretrainer

from electra_tf.sources.base import Source, check_finite, encoder_of
from electra_tf.sources.converted import Bert, GeneratorFolderError, HuggingFace, HuggingFaceGenerator, KerasHub, Official
from electra_tf.sources.encoders import (EncoderExport, KerasFile, load_encoder, load_keras_model, save_encoder,
                                         untrained_encoder)
from electra_tf.sources.finetuned import Finetuned, FinetunedOutput
from electra_tf.sources.runs import PretrainingRun, load_discriminator, restore_pretrainer

# prefix -> source: the `FORM:PATH` forms.
SOURCES = {source.prefix: source for source in (
    HuggingFace(), HuggingFaceGenerator(), Official(), Bert(), KerasHub(), KerasFile())}
# The bare paths recognised, tried in this order (a BERT folder before the ELECTRA reading of an HF folder).
PATH_FORMS = (PretrainingRun(), EncoderExport(), SOURCES["keras"], SOURCES["bert"], SOURCES["hf"],
              SOURCES["keras_hub"])
FORMS = ", ".join(dict.fromkeys(s.form for s in PATH_FORMS[:3] + tuple(SOURCES.values())))


def _split(spec):
    """`(prefix, source or None, path)`: the one place an `--init` is split at its `FORM:`.

    `prefix` is what stands before a colon (None without one); `source` its form when
    it is a known `FORM`, and then `path` what follows, else the whole `spec`.
    """
    prefix, sep, path = spec.partition(":")
    if not sep:
        return None, None, spec
    source = SOURCES.get(prefix)
    return prefix, source, path if source is not None else spec


def resolve(spec, flag="init"):
    """`(Source, path)` of an `--init`: its `FORM:` prefix, else the first path form that recognises it.

    Raises:
        ValueError: an unknown `FORM:`, or a prefix with no path.
        FileNotFoundError: a path no form recognises (each form is listed).

    Example:
        >>> from electra_tf.sources import resolve
        >>> source, path = resolve("bert:all-MiniLM-L6-v2")  # a prefixed form: nothing is read yet
        >>> type(source).__name__, path
        ('Bert', 'all-MiniLM-L6-v2')
    """
    if not spec:
        raise ValueError(f"`--{flag}` is required: {FORMS}.")
    prefix, source, path = _split(spec)
    if source is not None:
        if not path:
            raise ValueError(f"`--{flag}={spec}` names no folder: {prefix}:DIR.")
        source.check_path(path, f"`--{flag}={spec}`")
        return source, path
    if prefix and "/" not in prefix and len(prefix) > 1 and not tf.io.gfile.exists(spec):
        raise ValueError(f"Unknown `--{flag}={spec}`: the FORM:DIR forms are {[k + ':DIR' for k in SOURCES]}.")
    for form in PATH_FORMS:
        if form.recognises(spec):
            return form, spec
    raise FileNotFoundError(f"Cannot read `--{flag}={spec}`: expected {FORMS}.")


def init_inputs(init):
    """The files or folders an `--init` names, without reading them: an output must not overlap them.

    Example:
        >>> from electra_tf.sources import init_inputs
        >>> init_inputs("hf:electra/discriminator,electra/generator")
        ['electra/discriminator', 'electra/generator']
    """
    _, source, path = _split(init or "")
    return source.inputs(path) if source is not None else [init] if init else []


def load_source(prefix, path, flag="input", **options):
    """`(model, vocab_file or None)` of `path` read as the form `prefix` (`convert --from PREFIX --input PATH`).

    The same reading as `--init PREFIX:PATH`, weights checked finite; `options` go to
    the form (`official`: `num_heads`, `generator_num_heads`).

    Args:
        prefix: str. A key of `SOURCES` (`hf`, `official`, `bert`, `keras`, ...).
        path: str. What follows the prefix.
        flag: str. The flag that named `path`, for messages.
    """
    SOURCES[prefix].check_path(path, f"`--{flag}={path}`")
    return _load(SOURCES[prefix], path, f"`--{flag}={path}`", flag, options)


def load_init_model(init, flag="init"):
    """The model any `--init` form holds, and the vocabulary found with it.

    Args:
        init: str. Any form of `FORMS` (the module docstring lists them).
        flag: str. The flag that named it, for messages.

    Returns:
        `(model, vocab_file or None)`: an `ElectraEncoder`, an `ElectraPretrainer`
        (a run with checkpoints, an `hf:` pair, an official pair) or a fine-tuned model.
    """
    source, path = resolve(init, flag)
    return _load(source, path, f"`--{flag}={init}`", flag, {})


def _load(source, path, what, flag, options):
    model = source.load(path, flag=flag, **options)
    check_finite(model, what)
    vocab_file = source.vocabulary(path)
    return model, vocab_file


class Detector(typing.NamedTuple):
    """What `load_detector` returns: the discriminator with its head, the pretrainer when there is a generator,
    and the vocabulary found beside them."""

    discriminator: typing.Any  # `ElectraDiscriminator`
    pretrainer: typing.Any  # `ElectraPretrainer` (generator and masking settings), or None
    vocab_file: typing.Optional[str]


def load_detector(init, flag="init", generator_for=None, vocab_file=None):
    """The replaced-token detector an `--init` holds: the pre-trained discriminator with its head.

    A pre-training run with checkpoints, an `hf:DISC,GEN` pair, an official checkpoint with
    its heads or a `.keras` pretrainer give the whole pretrainer (the generator too); an
    `hf:` `ElectraForPreTraining` folder gives the discriminator alone. Any other model (an
    encoder, a generator, a fine-tuned model, a pretrainer of an MLM objective) is refused in
    one line naming what it holds.

    Args:
        init: str. Any `--init` form.
        flag: str. The flag that named it, for messages.
        generator_for: str or None. What needs the generator too (e.g. "`--corrupt`"): a source
            without one is refused, naming it (a Hugging Face folder before any weight is read).
        vocab_file: str or None. Overrides the vocabulary found beside `init`.

    Returns:
        `Detector(discriminator, pretrainer or None, vocab_file)`; the vocabulary must exist.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.sources import load_detector

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32, intermediate_dim=64)
        export_hugging_face(build_pretrainer(config), "hf")  # hf/discriminator, hf/generator
        open("vocab.txt", "w").write("".join(f"t{i}\\n" for i in range(100)))
        load_detector("hf:hf/discriminator", vocab_file="vocab.txt").pretrainer  # None: a discriminator alone
        detector = load_detector("hf:hf/discriminator,hf/generator", vocab_file="vocab.txt")
        detector.pretrainer.generator.hidden_dim  # 8
        ```
    """
    from electra_tf.models.discriminator import ElectraDiscriminator

    source, path = resolve(init, flag)
    what = f"`--{flag}={init}`"
    model = source.detector(path, flag=flag, generator_for=generator_for)
    check_finite(model, what)
    pretrainer = None
    if isinstance(model, ElectraPretrainer):
        if model.discriminator_head is None:
            raise ValueError(f"{what} was pre-trained with `objective={model.objective!r}`, which trains no "
                             "replaced-token head (discriminator_predictions): it scores no replaced tokens.")
        pretrainer, model = model, ElectraDiscriminator.from_pretrainer(model)
    if not isinstance(model, ElectraDiscriminator):
        raise ValueError(f"{what} holds {_a(type(model).__name__)}, without the replaced-token head "
                         "(discriminator_predictions): replaced-token scores need a pre-training run with its "
                         "checkpoints, an ElectraForPreTraining folder (hf:DIR, or hf:DISC,GEN) or an official: "
                         "checkpoint with its heads.")
    if generator_for and (pretrainer is None or pretrainer.generator is None):
        raise ValueError(f"{generator_for} needs the generator: {what} holds the discriminator alone. Pass a "
                         f"pre-training run or a generator and discriminator pair, or leave out {generator_for}.")
    vocab = _vocabulary(init, vocab_file or source.vocabulary(path))
    check_vocabulary(vocab, model.encoder.vocab_size, init, given=bool(vocab_file))
    return Detector(model, pretrainer, vocab)


def _a(name):
    return ("an " if name[0] in "AEIOU" else "a ") + name


def load_init(init, vocab_file=None):
    """The encoder to fine-tune or export and its vocabulary, from any `--init` form.

    Args:
        init: str. Any form of `load_init_model`. A generator + discriminator pair
            or a pretrainer gives its discriminator; a fine-tuned model its encoder.
        vocab_file: str or None. Overrides the vocabulary found beside `init`.

    Returns:
        `(ElectraEncoder, vocab_file)`.
    """
    model, found_vocab = load_init_model(init)
    encoder = encoder_of(model, init)
    vocab = _vocabulary(init, vocab_file or found_vocab)
    check_vocabulary(vocab, encoder.vocab_size, init, given=bool(vocab_file))
    return encoder, vocab


def check_vocabulary(vocab_file, table_rows, init=None, given=True, fix=None):
    """Refuses a vocabulary with more entries than the encoder's token table (`table_rows`).

    Its ids past the table have no row: every text holding one of those pieces
    would fail (or, on a device that does not check, read outside the table).
    The error names `--vocab_file` (`given`) or the vocabulary found with
    `--init`, its size and the table's, and ends with `fix` (default: pass the
    right `--vocab_file`).

    Example:
    >>> import os, tempfile
    >>> from electra_tf.sources import check_vocabulary
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(path, "w").write("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nhello\\n")
    >>> check_vocabulary(path, 6)
    >>> check_vocabulary(path, 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `--vocab_file` ...vocab.txt has 6 entries, more than the encoder's token table (5)...
    """
    from electra_tf.data.tokenizer import load_vocab

    try:
        size = len(load_vocab(vocab_file))
    except ValueError:  # no ELECTRA vocabulary (special tokens): refused by the tokenizer that reads it
        return
    if size <= table_rows:
        return
    what = f"`--vocab_file` {vocab_file}" if given else f"The vocabulary {vocab_file}"
    of = f" of `--init={init}`" if init else ""
    fix = fix or ("pass the --vocab_file the model was trained with" if given or not init else
           "pass --vocab_file with the vocabulary the model was trained with")
    raise ValueError(f"{what} has {size} entries, more than the encoder's token table ({table_rows}){of}: the "
                     f"ids from {table_rows} on have no row; {fix}.")


def _vocabulary(init, vocab_file):
    """`vocab_file`, checked to exist; an error naming `--init` and `--vocab_file` otherwise."""
    if not vocab_file or not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"No vocabulary for `--init={init}`: {vocab_file or 'none found'} is missing; "
                                "pass --vocab_file.")
    return vocab_file


def init_pretrainer(init, pretrainer, strict=False):
    """Initialises a new pre-training run's `pretrainer` from any `--init` form (continued pre-training).

    Each form fills what it has by official names: an `hf:` pair or an official
    checkpoint every part, heads included; another electra_tf run (phase 1 of the
    seq-128-then-512 recipe) its pretrainer; an encoder or BERT the embeddings and
    the discriminator. The parts the source lacks keep their initial values and are
    logged (an error when `strict`); a shape that differs is an error before any
    variable changes, and so is a non-finite weight.

    Args:
        init: str. Any `--init` form.
        pretrainer: `ElectraPretrainer` (or `ElectraEncoder`), freshly built.
        strict: bool. Require every part of `pretrainer`.

    Returns:
        The report of `converting.weight_map.assign_weights` (`loaded`, `kept`).

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer
        from electra_tf.sources import init_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)
        export_hugging_face(build_pretrainer(config), "hf")  # hf/discriminator, hf/generator
        pretrainer = build_pretrainer(config)
        init_pretrainer("hf:hf/discriminator,hf/generator", pretrainer)["kept"]  # []
        ```
    """
    source, path = resolve(init)
    report = source.initialise(path, pretrainer, strict=strict)
    check_finite(pretrainer, f"`--init={init}`")
    return report


__all__ = [
    "FORMS", "PATH_FORMS", "SOURCES", "Finetuned", "FinetunedOutput", "GeneratorFolderError", "Source",
    "Detector", "check_finite", "encoder_of", "init_inputs", "init_pretrainer", "load_detector",
    "load_discriminator", "load_encoder", "load_init", "load_init_model", "load_keras_model", "load_source", "resolve", "restore_pretrainer",
    "save_encoder", "untrained_encoder",
]
