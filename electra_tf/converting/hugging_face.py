"""Hugging Face ELECTRA checkpoints (`config.json` + `model.safetensors`) in and out.

Reads and writes `ElectraModel`, `ElectraForPreTraining` (discriminator) and
`ElectraForMaskedLM` (generator) directories with `safetensors` and numpy
only: no torch, no network. Pickled `pytorch_model.bin` files are refused
(loading a pickle runs code); re-save them with
`model.save_pretrained(dir, safe_serialization=True)`.

Hugging Face publishes the generator and the discriminator as two standalone
models, each with its own copy of the embeddings. Imported together, the
discriminator's embeddings are used (the generator reads through them, as in
the official release); when the generator's copy differs, a warning names
each differing table and its largest difference. `export_hugging_face` writes
the shared embeddings into both.
"""

import json
import os

import numpy as np
from absl import logging

from electra_tf import atomic, run_files
from electra_tf.converting import hf_names
from electra_tf.converting.weight_map import assign_weights, build_model, model_variables, read_weights
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer

ARCHITECTURES = {
    "ElectraModel": "model",
    "ElectraForPreTraining": "discriminator",
    "ElectraForMaskedLM": "generator",
}
# Non-persistent buffers older transformers versions saved; never weights.
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
_PICKLES = (
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
}


def read_config(directory):
    """The `config.json` dict of a Hugging Face directory; a clear error when there is none."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Not a Hugging Face model directory: {directory!r}")
    config_path = os.path.join(directory, run_files.HF_CONFIG_FILE)
    if not os.path.exists(config_path):
        raise FileNotFoundError(
            f"No `config.json` in {directory!r} (found: {sorted(os.listdir(directory))})."
        )
    with open(config_path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{config_path} is not valid JSON ({e}): truncated or damaged.") from None


def check_model_type(directory, config, expected):
    """Refuses a `config.json` of another family than `expected` ("electra" or "bert"), before any size is read.

    The message names the file, what it describes (`model_type`, `architectures`) and what is read.

    Example:
        >>> from electra_tf.converting.hugging_face import check_model_type
        >>> check_model_type("gpt2", {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "electra")
        Traceback (most recent call last):
        ...
        ValueError: gpt2/config.json describes a 'gpt2' model (GPT2LMHeadModel), not electra: ...
    """
    found = config.get("model_type")
    if found == expected:
        return
    architectures = ", ".join(map(str, config.get("architectures") or []))
    what = f"a {found!r} model" if found else "no `model_type`"
    raise ValueError(
        f"{os.path.join(directory, run_files.HF_CONFIG_FILE)} describes {what}"
        f"{f' ({architectures})' if architectures else ''}, not {expected}: `hf` reads ELECTRA folders "
        f"({', '.join(ARCHITECTURES)}), `bert` reads BERT folders (BertModel, BertFor*)."
    )


def folder_roles(source):
    """`[(directory, config, role)]` of Hugging Face ELECTRA directories, from their `config.json` alone.

    `role` is "model", "discriminator" or "generator" (`ARCHITECTURES`); every
    folder's `model_type` is checked first, before any weight or size is read.

    Args:
        source: str or list of str. As `expand_directories` takes it.
    """
    roles = []
    for directory in expand_directories(source):
        config = read_config(directory)
        check_model_type(directory, config, "electra")
        architecture = (config.get("architectures") or ["ElectraModel"])[0]
        roles.append((directory, config, ARCHITECTURES.get(architecture, "model")))
    return roles


def read_safetensors_dir(directory, model_type=None):
    """`(config, state_dict)` of a Hugging Face directory: `config.json` and safetensors weights.

    Sharded checkpoints (`model.safetensors.index.json`) are read shard by shard.

    Args:
        directory: str. A `save_pretrained` directory.
        model_type: str or None. The `model_type` the folder must have (checked before
            any weight is read; `check_model_type`).

    Returns:
        (dict, dict str -> numpy array).

    Raises:
        FileNotFoundError: no directory, no `config.json`, or no safetensors
            file (a pickle-only directory says so).

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        export_hugging_face(build_pretrainer(config), "hf")

        from electra_tf.converting.hugging_face import read_safetensors_dir

        config, state = read_safetensors_dir("hf/discriminator")
        config["architectures"], state["electra.embeddings.word_embeddings.weight"].shape
        # (['ElectraForPreTraining'], (100, 16))
        ```
    """
    from safetensors.numpy import load_file

    config = read_config(directory)
    if model_type is not None:
        check_model_type(directory, config, model_type)
    single = os.path.join(directory, run_files.HF_WEIGHTS_FILE)
    index = os.path.join(directory, run_files.HF_WEIGHTS_INDEX_FILE)
    if os.path.exists(single):
        files = [single]
    elif os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            files = [
                os.path.join(directory, s) for s in sorted(set(json.load(f)["weight_map"].values()))
            ]
    else:
        pickles = [p for p in _PICKLES if os.path.exists(os.path.join(directory, p))]
        hint = (
            f" It holds {pickles}, which are not read: pickles can run code. Convert them once "
            "with transformers: `AutoModel.from_pretrained(dir).save_pretrained(dir, "
            "safe_serialization=True)`."
            if pickles
            else ""
        )
        raise FileNotFoundError(
            f"No `model.safetensors` in {directory!r} (found: {sorted(os.listdir(directory))}).{hint}"
        )
    state = {}
    for path in files:
        try:
            state.update(load_file(path))
        except Exception as e:  # safetensors' own error names no file
            raise ValueError(f"{path} cannot be read ({type(e).__name__}: {e}): truncated or damaged.") from None
    return config, state


def read_hugging_face(directory):
    """Reads one Hugging Face ELECTRA directory into official names.

    Args:
        directory: str. An `ElectraModel`, `ElectraForPreTraining` or
            `ElectraForMaskedLM` directory.

    Returns:
        dict with `"config"` (the `config.json` dict), `"role"` (`"model"`,
        `"discriminator"` or `"generator"`) and `"weights"` (official name ->
        float32 array, `[in, out]` kernels).

    Raises:
        ValueError: not ELECTRA, unknown architecture, or weights with no
            official counterpart (listed).

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        export_hugging_face(build_pretrainer(config), "hf")

        from electra_tf.converting.hugging_face import read_hugging_face

        checkpoint = read_hugging_face("hf/discriminator")
        checkpoint["role"]  # 'discriminator'
        ```
    """
    config, state = read_safetensors_dir(directory, model_type="electra")
    architectures = config.get("architectures") or ["ElectraModel"]
    if architectures[0] not in ARCHITECTURES:
        raise ValueError(
            f"Unsupported architecture in {directory!r}. Received: `architectures={architectures}`; "
            f"supported: {list(ARCHITECTURES)}."
        )
    role = ARCHITECTURES[architectures[0]]
    if role == "model" and any(k.startswith("electra.") for k in state):
        role = "discriminator"  # a body saved by a task model
    weights, unused = hf_names.map_to_official(
        (
            (name, name, value)
            for name, value in state.items()
            # the tied output is checked against the word embeddings below
            if not name.endswith(_BUFFERS) and name != "generator_lm_head.weight"
        ),
        role,
    )
    if unused:
        raise ValueError(
            f"{len(unused)} weight(s) in {directory!r} ({architectures[0]}) have no ELECTRA "
            f"counterpart: {sorted(unused)[:12]}"
        )
    tied = state.get("generator_lm_head.weight")
    word = weights.get("electra/embeddings/word_embeddings")
    if tied is not None and (
        word is None or tied.shape != word.shape or not np.array_equal(tied, word)
    ):
        raise ValueError(
            f"`generator_lm_head.weight` in {directory!r} differs from the word embeddings: "
            "untied generator output embeddings are not supported (ELECTRA ties them)."
        )
    return {"config": config, "role": role, "weights": weights}


def encoder_kwargs(config):
    """`ElectraEncoder` arguments from a Hugging Face ELECTRA or BERT `config.json` dict.

    Example:
        >>> from electra_tf.converting.hugging_face import encoder_kwargs
        >>> config = {"vocab_size": 100, "num_hidden_layers": 1, "num_attention_heads": 2,
        ...           "hidden_size": 32, "embedding_size": 16, "intermediate_size": 64}
        >>> kwargs = encoder_kwargs(config)  # ElectraEncoder(**kwargs) builds the model
        >>> kwargs["hidden_dim"], kwargs["embedding_dim"], kwargs["activation"]
        (32, 16, 'gelu')
    """
    activation = config.get("hidden_act", "gelu")
    return dict(
        vocab_size=config["vocab_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"],
        hidden_dim=config["hidden_size"],
        embedding_dim=config.get("embedding_size", config["hidden_size"]),
        intermediate_dim=config["intermediate_size"],
        dropout=config.get("hidden_dropout_prob", 0.1),
        max_sequence_length=config.get("max_position_embeddings", 512),
        num_segments=config.get("type_vocab_size", 2),
        activation=_ACTIVATIONS.get(activation, activation),
        layer_norm_epsilon=config.get("layer_norm_eps", 1e-12),
        initializer_range=config.get("initializer_range", 0.02),
    )


def check_config(config, encoder, source):
    """Raises a ValueError listing every architecture setting where `config` and `encoder` differ."""
    wanted = encoder_kwargs(config)
    ignored = ("dropout", "initializer_range")
    differing = [
        f"{key} {value!r} vs {getattr(encoder, key)!r}"
        for key, value in wanted.items()
        if key not in ignored and getattr(encoder, key) != value
    ]
    if differing:
        raise ValueError(
            f"The {source} does not match the model's {encoder.name!r} encoder. Differing "
            "(checkpoint vs model): " + "; ".join(differing)
        )


def expand_directories(source):
    """A list of model directories from a path, a comma-separated string or a list.

    A directory holding `discriminator/` and/or `generator/` (as written by
    `export_hugging_face` for a pretrainer) expands to those.
    """
    paths = source.split(",") if isinstance(source, str) else list(source)
    expanded = []
    for path in paths:
        path = path.strip()
        subdirs = [os.path.join(path, s) for s in ("discriminator", "generator")]
        subdirs = [s for s in subdirs if os.path.exists(os.path.join(s, run_files.HF_CONFIG_FILE))]
        if not os.path.exists(os.path.join(path, run_files.HF_CONFIG_FILE)) and subdirs:
            expanded.extend(subdirs)
        else:
            expanded.append(path)
    return expanded


def load_hugging_face(source, model, strict=False):
    """Loads Hugging Face ELECTRA directories into `model`, all or nothing.

    Args:
        source: str or list of str. One or more directories (comma-separated
            in a string): a discriminator and/or a generator, an `ElectraModel`,
            or a directory with `discriminator/` and `generator/` inside.
        model: `ElectraPretrainer` (each directory fills its part),
            `ElectraDiscriminator` (one `ElectraForPreTraining` directory: its body and
            replaced-token head, both required) or `ElectraEncoder` (one directory; its body
            only, heads dropped).
        strict: bool. Every part of `model` must be in the directories.

    Returns:
        The report of `assign_weights`.

    Raises:
        ValueError: an architecture setting or a weight that differs (named),
            or two directories of the same role.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        export_hugging_face(build_pretrainer(config), "hf")

        from electra_tf.converting.hugging_face import load_hugging_face

        pretrainer = build_pretrainer(config)
        load_hugging_face("hf/discriminator,hf/generator", pretrainer)
        ```
    """
    directories = expand_directories(source)
    checkpoints = [read_hugging_face(d) for d in directories]
    if isinstance(model, ElectraDiscriminator):
        roles = [checkpoint["role"] for checkpoint in checkpoints]
        if roles != ["discriminator"]:
            raise ValueError(f"An `ElectraDiscriminator` loads one ElectraForPreTraining directory. Received: "
                             f"{directories} ({roles}).")
        source = f"Hugging Face checkpoint {directories[0]!r}"
        check_config(checkpoints[0]["config"], model.encoder, source)
        return assign_weights(model, checkpoints[0]["weights"], source, strict=True)
    if isinstance(model, ElectraEncoder):
        if len(checkpoints) != 1:
            raise ValueError(f"An `ElectraEncoder` loads one directory. Received: {directories}")
        checkpoint = checkpoints[0]
        check_config(checkpoint["config"], model, f"Hugging Face checkpoint {directories[0]!r}")
        scope = "generator/" if checkpoint["role"] == "generator" else "electra/"
        weights = {
            "electra/" + n[len(scope) :] if n.startswith(scope) else n: w
            for n, w in checkpoint["weights"].items()
            if n.startswith(("electra/", scope))
        }
        dropped = sorted(n for n in checkpoint["weights"] if not n.startswith(("electra/", scope)))
        if dropped:
            logging.warning("An encoder has no heads: dropped %s", dropped)
        return assign_weights(
            model, weights, f"Hugging Face checkpoint {directories[0]!r}", strict=strict
        )
    if not isinstance(model, ElectraPretrainer):
        raise TypeError(
            f"Expected an `ElectraPretrainer` or `ElectraEncoder`. Received: {type(model).__name__}"
        )
    by_role = {}
    for directory, checkpoint in zip(directories, checkpoints):
        role = "discriminator" if checkpoint["role"] == "model" else checkpoint["role"]
        if role in by_role:
            raise ValueError(f"Two {role} checkpoints: {by_role[role][0]!r} and {directory!r}.")
        by_role[role] = (directory, checkpoint)
    weights = {}
    if "generator" in by_role:
        directory, checkpoint = by_role["generator"]
        if model.generator is None:
            raise ValueError(f"The model has no generator for {directory!r}.")
        check_config(
            checkpoint["config"], model.generator, f"Hugging Face checkpoint {directory!r}"
        )
        weights.update(checkpoint["weights"])
    if "discriminator" in by_role:
        directory, checkpoint = by_role["discriminator"]
        check_config(
            checkpoint["config"], model.discriminator, f"Hugging Face checkpoint {directory!r}"
        )
        if "generator" in by_role:
            _warn_embeddings_differ(
                checkpoint["weights"], weights, directory, by_role["generator"][0]
            )
        weights.update(checkpoint["weights"])
    return assign_weights(
        model, weights, f"Hugging Face checkpoint {', '.join(directories)}", strict=strict
    )


def _warn_embeddings_differ(discriminator, generator, discriminator_dir, generator_dir):
    differing = []
    for name, value in discriminator.items():
        if name.startswith("electra/embeddings/") and name in generator:
            other = generator[name]
            if other.shape != value.shape:
                differing.append(f"{name} (shape {other.shape} vs {value.shape})")
            elif not np.array_equal(other, value):
                differing.append(f"{name} (max abs diff {np.max(np.abs(other - value)):.3g})")
    if differing:
        logging.warning(
            "The generator %r has its own embeddings, which differ from the discriminator's %r "
            "in: %s. Using the discriminator's (ELECTRA shares them).",
            generator_dir,
            discriminator_dir,
            "; ".join(differing),
        )


def build_from_hugging_face(source):
    """Builds and loads a model from Hugging Face directories.

    A discriminator and a generator make an `ElectraPretrainer`; a single
    directory makes an `ElectraEncoder` of its body.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        export_hugging_face(build_pretrainer(config), "hf")

        from electra_tf.converting.hugging_face import build_from_hugging_face

        pretrainer = build_from_hugging_face(["hf/discriminator", "hf/generator"])
        pretrainer.generator.hidden_dim  # 8
        ```
    """
    roles = folder_roles(source)
    directories = [directory for directory, _, _ in roles]
    configs = {role: config for _, config, role in roles}
    if len(directories) == 2 and set(configs) == {"discriminator", "generator"}:
        sizes = encoder_kwargs(configs["discriminator"])
        generator = encoder_kwargs(configs["generator"])
        generator_sizes = {
            k: generator[k] for k in ("num_layers", "num_heads", "hidden_dim", "intermediate_dim")
        }
        model = build_model(sizes, generator_sizes)
    elif len(directories) == 1:
        model = build_model(encoder_kwargs(next(iter(configs.values()))))
    else:
        raise ValueError(
            "Expected one directory, or a discriminator and a generator. Received: "
            f"{directories} ({sorted(configs)})."
        )
    load_hugging_face(directories, model)
    return model


def build_discriminator_from_hugging_face(directory):
    """An `ElectraDiscriminator` of one `ElectraForPreTraining` directory: its body and its replaced-token head.

    Where `build_from_hugging_face` reads such a folder as an encoder (the head dropped), this
    keeps the head (`discriminator_predictions`), which must be in the folder.

    Example:
        ```python
        from electra_tf.config import get_config
        from electra_tf.converting import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        export_hugging_face(build_pretrainer(config), "hf")

        from electra_tf.converting.hugging_face import build_discriminator_from_hugging_face

        detector = build_discriminator_from_hugging_face("hf/discriminator")
        detector.head.hidden_dim  # 32
        ```
    """
    config = read_config(directory)
    check_model_type(directory, config, "electra")
    model = ElectraDiscriminator(ElectraEncoder(**encoder_kwargs(config), name="discriminator"))
    load_hugging_face([directory], model)
    return model


def hf_config(encoder, architecture):
    """The Hugging Face `config.json` dict of `encoder` saved as `architecture`."""
    activation = {"gelu_approximate": "gelu_new"}.get(encoder.activation, encoder.activation)
    return {
        "architectures": [architecture],
        "model_type": "electra",
        "vocab_size": encoder.vocab_size,
        "embedding_size": encoder.embedding_dim,
        "hidden_size": encoder.hidden_dim,
        "num_hidden_layers": encoder.num_layers,
        "num_attention_heads": encoder.num_heads,
        "intermediate_size": encoder.intermediate_dim,
        "hidden_act": activation,
        "hidden_dropout_prob": encoder.dropout,
        "attention_probs_dropout_prob": encoder.dropout,
        "max_position_embeddings": encoder.max_sequence_length,
        "type_vocab_size": encoder.num_segments,
        "initializer_range": encoder.initializer_range,
        "layer_norm_eps": encoder.layer_norm_epsilon,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
    }


def export_hugging_face(model, directory, part="both"):
    """Writes `model` as Hugging Face safetensors directories.

    Args:
        model: `ElectraPretrainer` -> `directory/discriminator`
            (`ElectraForPreTraining`) and `directory/generator`
            (`ElectraForMaskedLM`, with a copy of the shared embeddings);
            `ElectraEncoder` -> `directory` (`ElectraModel`).
        directory: str. Created if needed.
        part: "both", "discriminator" or "generator": one part of a
            pretrainer goes into `directory` itself.

    Returns:
        list of the directories written.

    Example:
        ```python
        import transformers

        from electra_tf.config import get_config
        from electra_tf.converting.hugging_face import export_hugging_face
        from electra_tf.models.pretrainer import build_pretrainer

        config = get_config("tiny", vocab_size=100, embedding_dim=16, hidden_dim=32,
                            intermediate_dim=64)  # a tiny model
        pretrainer = build_pretrainer(config)
        export_hugging_face(pretrainer, "electra_hf")  # ['electra_hf/discriminator', 'electra_hf/generator']
        transformers.ElectraForPreTraining.from_pretrained("electra_hf/discriminator")
        ```
    """
    weights = read_weights(model)
    if isinstance(model, ElectraEncoder):
        _write(directory, hf_config(model, "ElectraModel"), weights, "model")
        return [directory]
    if not isinstance(model, ElectraPretrainer):
        raise TypeError(
            f"Expected an `ElectraPretrainer` or `ElectraEncoder` (fine-tuned models: `hf_heads`). Received: {type(model).__name__}"
        )
    model_variables(model)  # validates the heads
    written = []
    parts = [("discriminator", model.discriminator, "ElectraForPreTraining")]
    if model.generator is not None:
        parts.append(("generator", model.generator, "ElectraForMaskedLM"))
    if part != "both":
        parts = [p for p in parts if p[0] == part]
        if not parts:
            raise ValueError(f"`part={part!r}`: the model has no {part}.")
    for role, encoder, architecture in parts:
        path = directory if part != "both" else os.path.join(directory, role)
        _write(path, hf_config(encoder, architecture), weights, role)
        written.append(path)
    return written


def _write(directory, config, weights, role):
    state = {}
    for name, value in weights.items():
        mapped = hf_names.official_to_hf(name, role)
        if mapped is not None:
            hf_name, transpose = mapped
            state[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    write_folder(directory, config, state)
    logging.info("Wrote %d tensors to %s (%s).", len(state), directory, config["architectures"][0])


def write_folder(directory, config, state):
    """Writes a Hugging Face folder: `config.json` and `model.safetensors` (tensors named as transformers names them).

    A write that fails (a full disk) is one `OSError` naming the file; safetensors' own
    error names none. `convert --to hf` writes into a hidden folder beside the output and
    renames it once complete, so a failed write leaves nothing behind.

    Args:
        directory: str. Created if needed.
        config: dict. The `config.json`.
        state: dict str -> numpy array.
    """
    from safetensors.numpy import save_file

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, run_files.HF_WEIGHTS_FILE)
    try:
        atomic.write_json(os.path.join(directory, run_files.HF_CONFIG_FILE), config, sort_keys=True)
        save_file(state, path, metadata={"format": "pt"})
    except Exception as e:  # safetensors' SafetensorError ("Error while serializing: IoError(...)") or an OSError
        raise OSError(f"{directory} cannot be written ({type(e).__name__}: {str(e).splitlines()[0][:300]})") from None
