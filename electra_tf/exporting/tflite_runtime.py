"""Runs an exported LiteRT (TFLite) model in a process without TensorFlow's Python package.

An `export --format tflite` model of raw text holds two tensorflow-text custom ops,
`FastBertNormalize` and `FastWordpieceTokenizeWithOffsets`; the `--ids` model holds
none. `load_interpreter` builds the LiteRT interpreter (`ai_edge_litert`) and
registers tensorflow-text's TFLite kernels for the ops the model holds.

tensorflow-text ships those kernels in `tensorflow_text/core/pybinds/tflite_registrar.so`.
`import tensorflow_text` would import all of TensorFlow, so this module loads that
file alone. The library links against TensorFlow's C++ framework library
(`libtensorflow_framework.so.2`, found beside the installed `tensorflow` package),
which is loaded first; TensorFlow's Python package is not imported. In a
process that has already imported tensorflow_text, its own registrar is used; one that
imports tensorflow_text later gets the one loaded here.

The interpreter `load_interpreter` returns checks an `--ids` model's requests before LiteRT
runs them (`check_ids`): LiteRT's gather reads outside the embedding table for a negative
id and answers; here every id out of `[0, vocab_size)`, a segment id out of `[0, num_segments)`,
a mask value other than 0 or 1, rows longer than the export's `seq_length` and inputs of
different shapes are a `ValueError` naming the input and the bound, as the SavedModel's
`predict_ids` refuses them. The bounds are read from `tflite_config.json` beside the model.

This module imports neither TensorFlow nor the rest of electra_tf's export code,
so a device-side script imports only what it needs.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

# The tensorflow-text ops of a raw-text model -> the registrar function that adds each one's kernel.
TEXT_OP_REGISTRARS = {
    "FastBertNormalize": "AddFastBertNormalize",
    "FastWordpieceTokenizeWithOffsets": "AddFastWordpieceTokenize",
}
_FRAMEWORK_LIBRARIES = ("libtensorflow_framework.so.2", "libtensorflow_framework.2.dylib")
_REGISTRAR = "tensorflow_text.core.pybinds.tflite_registrar"


def custom_ops(model):
    """The custom op names a LiteRT model holds (tensorflow-text's, or any other the runtime lacks).

    Args:
        model: str (a `.tflite` path) or bytes (its content).

    Returns:
        sorted list of str: `TEXT_OP_REGISTRARS`' keys for a raw-text export, none for `--ids`
        (`load_interpreter`'s example).
    """
    from ai_edge_litert import schema_py_generated as schema

    if isinstance(model, (str, os.PathLike)):
        with open(model, "rb") as f:
            model = f.read()
    parsed = schema.Model.GetRootAsModel(model, 0)
    codes = (parsed.OperatorCodes(i) for i in range(parsed.OperatorCodesLength()))
    return sorted({code.CustomCode().decode() for code in codes if code.CustomCode()})


def text_op_registerers(ops=tuple(TEXT_OP_REGISTRARS)):
    """tensorflow-text's TFLite registrar functions for `ops` (`InterpreterWithCustomOps(custom_op_registerers=)`).

    Args:
        ops: op names, keys of `TEXT_OP_REGISTRARS`.

    Raises:
        ValueError naming an op tensorflow-text has no TFLite kernel for here;
        ImportError when tensorflow-text (or the TensorFlow library it links) is not installed.
    """
    unknown = sorted(set(ops) - set(TEXT_OP_REGISTRARS))
    if unknown:
        raise ValueError(f"No TFLite kernel registered here for the custom op(s) {unknown}; this runtime "
                         f"registers {sorted(TEXT_OP_REGISTRARS)} (tensorflow-text).")
    registrar = _load_registrar()
    return [getattr(registrar, TEXT_OP_REGISTRARS[op]) for op in ops]


def load_interpreter(model_path, num_threads=None):
    """The LiteRT interpreter of an exported model, tensorflow-text's kernels registered when it needs them.

    Args:
        model_path: str. A `.tflite` file (`export --format tflite`).
        num_threads: int or None. CPU threads (None: LiteRT's default).

    Returns:
        `ai_edge_litert.interpreter.Interpreter`; call `get_signature_runner()(text=...)`.

    Example:
        ```python
        import pathlib

        import numpy as np

        from electra_tf.export_formats import export_tflite
        from electra_tf.exporting.tflite_runtime import custom_ops, load_interpreter
        from electra_tf.tasks.classification.model import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        pathlib.Path("vocab.txt").write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nis\\nit\\nspam\\n?\\n")
        classifier = ElectraClassifier(ElectraEncoder(vocab_size=9, num_layers=1, num_heads=1, hidden_dim=8,
                                                      embedding_dim=8, intermediate_dim=16), num_labels=2)
        classifier.build()  # fine-tuned, in practice
        path = export_tflite(classifier, "vocab.txt", "spam_tflite", {"label_names": ["ham", "spam"], "seq_length": 8})
        custom_ops(path)  # ['FastBertNormalize', 'FastWordpieceTokenizeWithOffsets']

        # On the device side (no TensorFlow import needed):
        out = load_interpreter(path).get_signature_runner()(text=np.array(["Is it spam?"]))
        out["label"], out["probabilities"].shape  # array([b'ham'] or [b'spam']), (1, 2)
        ```
    """
    from ai_edge_litert import interpreter

    ops = custom_ops(model_path)
    bounds = id_bounds(model_path)
    if not ops:
        loaded = interpreter.Interpreter(model_path=model_path, num_threads=num_threads)
    else:
        loaded = interpreter.InterpreterWithCustomOps(model_path=model_path, num_threads=num_threads,
                                                      custom_op_registerers=text_op_registerers(ops))
    if bounds:  # an `--ids` model: its signature runners check the ids first
        runner = loaded.get_signature_runner

        def checked_runner(signature_key=None):
            return CheckedSignatureRunner(runner(signature_key), bounds)

        loaded.get_signature_runner = checked_runner
    return loaded


ID_INPUTS = ("token_ids", "segment_ids", "padding_mask")
CONFIG_FILE = "tflite_config.json"  # electra_tf.run_files.TFLITE_CONFIG_FILE (not imported: no TensorFlow here)


def id_bounds(model_path):
    """The bounds of an `--ids` model's inputs, from the `tflite_config.json` beside it (None: not an `--ids` model).

    Returns:
        None or dict `{"seq_length", "token_ids", "segment_ids", "padding_mask"}`: the longest row
        and each input's exclusive upper bound (`vocab_size`, `num_segments`, 2). An export
        that did not record `vocab_size` takes the length of its `vocab.txt`.
    """
    folder = os.path.dirname(os.path.abspath(model_path))
    try:
        with open(os.path.join(folder, CONFIG_FILE), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or config.get("input") != "ids":
        return None
    vocab_size = config.get("vocab_size")
    if vocab_size is None:
        try:
            with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
                vocab_size = sum(1 for line in f if line.rstrip("\n"))
        except OSError:
            return None
    return {"seq_length": int(config["seq_length"]), "token_ids": int(vocab_size),
            "segment_ids": int(config.get("num_segments", 2)), "padding_mask": 2}


def check_ids(inputs, bounds):
    """Raises a `ValueError` naming the input and the bound unless `inputs` are ids the model can read.

    Args:
        inputs: dict of array-likes, `ID_INPUTS`, each `(batch, length)`.
        bounds: `id_bounds`' dict.

    Returns:
        dict of int32 numpy arrays, the inputs.
    """
    import numpy as np

    missing = sorted(set(ID_INPUTS) - set(inputs))
    unknown = sorted(set(inputs) - set(ID_INPUTS))
    if missing or unknown:
        raise ValueError(f"The model takes {list(ID_INPUTS)}; missing {missing}, unknown {unknown}.")
    arrays = {}
    for name in ID_INPUTS:
        value = np.asarray(inputs[name])
        if value.ndim != 2 or not (np.issubdtype(value.dtype, np.integer) or value.size == 0):
            raise ValueError(f"`{name}` must be an int32 matrix (batch, length). Received: shape {value.shape}, "
                             f"dtype {value.dtype}")
        arrays[name] = value
    shape = arrays["token_ids"].shape
    for name in ID_INPUTS[1:]:
        if arrays[name].shape != shape:
            raise ValueError(f"`{name}` must have the shape of `token_ids` {shape}. Received: {arrays[name].shape}")
    if 0 in shape:  # LiteRT's UNPACK of an empty batch or row fails naming only its kernel
        raise ValueError(f"`token_ids` must hold at least one row of at least one id ([CLS] ...). Received: shape "
                         f"{shape}")
    if shape[1] > bounds["seq_length"]:
        raise ValueError(f"rows of `token_ids` must be at most {bounds['seq_length']} ids long (the export's "
                         f"seq_length). Received: {shape[1]}")
    for name in ID_INPUTS:
        value, high = arrays[name], bounds[name]
        bad = np.argwhere((value < 0) | (value >= high))
        if len(bad):
            where = tuple(int(i) for i in bad[0])
            extra = " (vocab_size of the model)" if name == "token_ids" else ""
            raise ValueError(f"`{name}` must be in [0, {high}){extra}. Received: {int(value[where])} at {list(where)}")
        arrays[name] = value.astype(np.int32, copy=False)
    return arrays


class CheckedSignatureRunner:
    """A LiteRT signature runner of an `--ids` model that checks its inputs first (`check_ids`)."""

    def __init__(self, runner, bounds):
        self._runner = runner
        self.bounds = bounds

    def __call__(self, **inputs):
        return self._runner(**check_ids(inputs, self.bounds))

    def __getattr__(self, name):
        return getattr(self._runner, name)


def _load_registrar():
    """tensorflow-text's `tflite_registrar` module, without importing TensorFlow's Python package.

    It is entered in `sys.modules` under its own name, so a later `import tensorflow_text` takes
    it from there: initialising the extension a second time aborts the process at exit.
    """
    if _REGISTRAR in sys.modules:  # tensorflow_text imported, or loaded here before
        return sys.modules[_REGISTRAR]
    text_spec, tf_spec = importlib.util.find_spec("tensorflow_text"), importlib.util.find_spec("tensorflow")
    if text_spec is None or tf_spec is None:
        raise ImportError("A raw-text LiteRT model needs tensorflow-text's TFLite kernels: "
                          "pip install tensorflow-text (it brings the TensorFlow library they link).")
    import ctypes

    tf_dir = tf_spec.submodule_search_locations[0]
    framework = next((os.path.join(tf_dir, name) for name in _FRAMEWORK_LIBRARIES
                      if os.path.exists(os.path.join(tf_dir, name))), None)
    if framework is None:
        raise ImportError(f"No TensorFlow framework library ({' or '.join(_FRAMEWORK_LIBRARIES)}) in {tf_dir}.")
    # What tflite_registrar links against. RTLD_LOCAL (ctypes' default): its symbols (BoringSSL's among
    # them) stay out of libraries loaded later; `import hashlib` after RTLD_GLOBAL crashes.
    ctypes.CDLL(framework)
    folder = os.path.join(text_spec.submodule_search_locations[0], "core", "pybinds")
    path = next((os.path.join(folder, "tflite_registrar" + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                 if os.path.exists(os.path.join(folder, "tflite_registrar" + suffix))), None)
    if path is None:
        raise ImportError(f"No tflite_registrar in {folder}: this tensorflow-text has no TFLite kernels.")
    spec = importlib.util.spec_from_file_location(_REGISTRAR, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[_REGISTRAR] = module
    return module
