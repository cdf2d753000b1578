"""`convert --to hf` of an embedding model: a sentence-transformers folder (transformers' `ElectraModel` inside).

Beside `config.json`, `model.safetensors` and the tokenizer files (`vocab.txt`,
`tokenizer_config.json`) that every `--to hf` folder holds, it writes what
`SentenceTransformer(folder)` reads to put pooling and normalisation after the encoder,
in the classic layout that sentence-transformers 2 to 6 all load:

    modules.json                       Transformer -> Pooling (-> Normalize)
    sentence_bert_config.json          max_seq_length (the fine-tuning `seq_length`), do_lower_case false
    config_sentence_transformers.json  similarity_fn_name cosine
    1_Pooling/config.json              the vector's dimension and the pooling mode (mean or cls)
    2_Normalize/config.json            (a normalising model only)

`SentenceTransformer(folder).encode(texts)` then gives the model's own vectors (the tokenizer
lower-cases as the run's vocabulary says, through `tokenizer_config.json`).

The other way, a sentence-transformers folder given as `--init` (`bert:DIR`, `hf:DIR` or the bare
folder) is read with its own settings (`read_folder`): the pooling of its Pooling module's
`config.json` (mean or cls; max, weighted-mean, last-token and sqrt-length pooling are refused,
naming the file), the normalisation of a `Normalize` module in `modules.json`, and the length of
its Transformer module's `sentence_bert_config.json` (`max_seq_length`). A module the kind has no
counterpart of (`Dense`, ...) is refused, naming `modules.json`.
"""

import json
import os

MODULES_FILE = "modules.json"
POOLING_FILE = "config.json"  # in the Pooling module's folder
LENGTH_FILE = "sentence_bert_config.json"  # in the Transformer module's folder
# The layouts this kind reproduces: the modules' class names, in order.
LAYOUTS = (("Transformer", "Pooling"), ("Transformer", "Pooling", "Normalize"))
# sentence-transformers' pooling settings before `pooling_mode` (its default when none is set: mean).
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}

MODULES = "sentence_transformers.models."


def hf_head(model, settings):
    """`(architecture, head tensors, config entries, files)`: `ElectraModel`, no head tensor, the folder's
    sentence-transformers files `{relative path: text}`."""
    modules = [("Transformer", ""), ("Pooling", "1_Pooling")] + ([("Normalize", "2_Normalize")]
                                                                  if model.normalize else [])
    files = {
        "modules.json": [{"idx": i, "name": str(i), "path": path, "type": MODULES + name}
                         for i, (name, path) in enumerate(modules)],
        "sentence_bert_config.json": {"max_seq_length": int(settings.get("seq_length", 128)),
                                      "do_lower_case": False},
        "config_sentence_transformers.json": {"similarity_fn_name": "cosine", "prompts": {},
                                              "default_prompt_name": None},
        "1_Pooling/config.json": {
            "word_embedding_dimension": int(model.encoder.hidden_dim),
            "pooling_mode_cls_token": model.pooling == "cls",
            "pooling_mode_mean_tokens": model.pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    }
    if model.normalize:
        files["2_Normalize/config.json"] = {}
    return "ElectraModel", {}, {}, {path: json.dumps(value, indent=2) + "\n" for path, value in files.items()}


def folder_of(init):
    """The sentence-transformers folder an `--init` names (one folder holding `modules.json`), or None."""
    from electra_tf import sources

    paths = sources.init_inputs(init)
    if len(paths) == 1 and os.path.isfile(os.path.join(paths[0], MODULES_FILE)):
        return paths[0]
    return None


def read_folder(folder):
    """A sentence-transformers folder's own settings: `{field: (value, where)}` for the fields `pooling`,
    `normalize_embeddings` and `seq_length` (None: the folder does not say), `where` the file that says it.

    Raises:
        ValueError naming the file: `modules.json` not a list of modules, a module other than
        Transformer -> Pooling (-> Normalize), a pooling mode other than mean or cls, a
        `max_seq_length` that is not a positive whole number, a file that is not JSON.

    Example:
    >>> import json, os, tempfile
    >>> from electra_tf.tasks.embedding.sentence_transformers import read_folder
    >>> folder = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(folder, "1_Pooling"))
    >>> _ = open(os.path.join(folder, "modules.json"), "w").write(json.dumps(
    ...     [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    ...      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    >>> _ = open(os.path.join(folder, "1_Pooling", "config.json"), "w").write('{"pooling_mode": "cls"}')
    >>> _ = open(os.path.join(folder, "sentence_bert_config.json"), "w").write('{"max_seq_length": 256}')
    >>> {name: value for name, (value, _) in read_folder(folder).items()}
    {'pooling': 'cls', 'normalize_embeddings': False, 'seq_length': 256}
    """
    from electra_tf.tasks.embedding.config import POOLINGS

    path = os.path.join(folder, MODULES_FILE)
    modules = _json(path)
    if not isinstance(modules, list) or not all(isinstance(m, dict) and isinstance(m.get("type"), str)
                                                for m in modules):
        raise ValueError(f"{path}: expected a JSON list of modules, each with a \"type\" (sentence-transformers' "
                         "layout); the file is damaged.")
    names = tuple(m["type"].rpartition(".")[2] for m in modules)
    if names not in LAYOUTS:
        other = next((m["type"] for m, name in zip(modules, names) if name not in LAYOUTS[1]), None)
        found = f"the module {other!r}, which" if other else f"the modules {' -> '.join(names) or '(none)'}, which"
        raise ValueError(f"{path} lists {found} the embedding kind cannot reproduce (it is Transformer -> Pooling "
                         "(-> Normalize)): its vectors would not be this folder's. Give a folder of that layout.")
    transformer, pooling = (os.path.join(folder, modules[i].get("path") or "") for i in (0, 1))
    pooling_file = os.path.join(pooling, POOLING_FILE)
    settings = _json(pooling_file) if os.path.isfile(pooling_file) else {}
    if not isinstance(settings, dict):
        raise ValueError(f"{pooling_file} holds no JSON object: the file is damaged.")
    mode = settings.get("pooling_mode")
    if mode is None:
        mode = [m for key, m in LEGACY_POOLING_KEYS.items() if settings.get(key)] or ["mean"]
    modes = [mode] if isinstance(mode, str) else list(mode) if isinstance(mode, (list, tuple)) else [repr(mode)]
    if len(modes) != 1 or modes[0] not in POOLINGS:
        raise ValueError(f"{pooling_file}: pooling {' + '.join(map(str, modes)) or '(none)'} is not a pooling of the "
                         f"embedding kind ({' or '.join(POOLINGS)}): its vectors would not be this folder's.")
    length_file = os.path.join(transformer, LENGTH_FILE)
    length = (_json(length_file) if os.path.isfile(length_file) else {})
    length = length.get("max_seq_length") if isinstance(length, dict) else None
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 3):
        raise ValueError(f"{length_file}: `max_seq_length` must be a whole number >= 3. Received: {length!r}")
    normalize = names[-1] == "Normalize"
    return {
        "pooling": (modes[0], f"{pooling_file} ({modes[0]} pooling)"),
        "normalize_embeddings": (normalize, f"{path} ({'a' if normalize else 'no'} Normalize module)"),
        "seq_length": (length, f"{length_file} (max_seq_length {length})"),
    }


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON ({e}): the file is damaged.") from None
