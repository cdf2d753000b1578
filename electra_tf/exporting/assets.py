"""What every exported SavedModel shares: its assets, its request checks, and an untracked model holder.

Assets (files under `assets/` of the SavedModel, tracked as attributes of the module; their
names are `electra_tf.run_files`'):

    labels.txt             label i on line i (serving exports)
    vocab.txt              the WordPiece vocabulary
    electra_tokenizer.json  its normalisation (lower_case, strip_accents, normalization)
    <config_name>          what the export is: `serving_config.json` or `encoder_config.json`
"""

import contextlib
import os

import keras
import tensorflow as tf

from electra_tf import atomic
from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE, SETTINGS_FILE, WordPieceTokenizer, copy_vocab
from electra_tf.exporting import inference_graph, warmup
from electra_tf.run_files import ENCODER_CONFIG_ASSET, LABELS_ASSET, SERVING_CONFIG_ASSET, VOCAB_ASSET  # noqa: F401


class Untracked:
    """Holds an object out of `tf.Module` attribute tracking."""

    def __init__(self, obj):
        self.obj = obj


class ServedModel(tf.Module):
    """A fine-tuned Keras model served on raw text: the model, its variables, its tokenizer, its length.

    The Keras model is held outside TF's object tracking (Keras would add its own
    default signature, traced from build shapes); its variables are tracked here.

    Raw-text requests are computed at the length of the call's longest sequence, rounded up to a
    multiple of `pad_multiple` and never past `seq_length` (`tokenizer.padded_length`); setting
    `pad_multiple = seq_length` before the first call gives full-length padding (the outputs are
    the same: the attention mask makes padding irrelevant).
    """

    def __init__(self, model, vocab_file, seq_length, name=None):
        super().__init__(name=name)
        self._model = Untracked(model)
        self._backend = keras.backend.backend()
        if self._backend != "tensorflow":  # `predict` under JAX / PyTorch: the model runs outside the graph
            self.model_variables, self.attention_projections, self._fused = [], None, False
            self.tokenizer = WordPieceTokenizer(vocab_file)
            self.seq_length = seq_length
            self.pad_multiple = SERVING_PAD_MULTIPLE
            return
        self.model_variables = [w.value for w in model.weights]
        self.tokenizer = WordPieceTokenizer(vocab_file)
        self.seq_length = seq_length
        self.pad_multiple = SERVING_PAD_MULTIPLE
        self._fused = True
        # Each layer's query, key and value kernels concatenated once (`inference_graph.attention_projections`);
        # None where the fused form does not apply. A model served through its head (`head_outputs`) never reads
        # the separate kernels, so the export holds them once, concatenated.
        encoder = getattr(model, "encoder", None)
        self.attention_projections = None
        if encoder is not None and inference_graph.supported(encoder):
            self.attention_projections = [
                (tf.Variable(kernel, trainable=False, name=f"attention_projection_kernel_{i}"),
                 tf.Variable(bias, trainable=False, name=f"attention_projection_bias_{i}"))
                for i, (kernel, bias) in enumerate(inference_graph.attention_projections(encoder))]
            if hasattr(model, "head_outputs"):
                replaced = {id(w.value) for w in inference_graph.query_key_value_weights(encoder)}
                self.model_variables = [v for v in self.model_variables if id(v) not in replaced]

    def encode(self, inputs):
        """The encoder's sequence output in a served graph: `inference_graph.encoder_forward`'s fused ops
        where they compute exactly what the encoder does (`inference_graph.supported`, decided once when the
        module is built: `attention_projections` is set), else its Keras layers (and inside `keras_layers()`)."""
        encoder = self._model.obj.encoder
        if self._fused and self.attention_projections is not None:
            return inference_graph.encoder_forward(encoder, inputs, self.attention_projections)
        return encoder(inputs, training=False)

    def model_outputs(self, inputs):
        """The Keras model's outputs on `inputs` in a served graph: its head (`head_outputs`) on `encode`'s
        encoder output; a model without `head_outputs` is called whole."""
        model = self._model.obj
        if self._backend != "tensorflow":
            return backend_outputs(model, inputs, self._backend)
        if not hasattr(model, "head_outputs"):
            return model(inputs, training=False)
        return model.head_outputs(self.encode(model.encoder_inputs(inputs)), inputs, training=False)

    @contextlib.contextmanager
    def keras_layers(self):
        """Functions traced inside compute the encoder by its Keras layers (the form the fused one is compared
        with: `tests/exporting/test_inference_graph.py`). From then on the module tracks every
        variable of the Keras model, the query, key and value kernels those layers read included."""
        if not hasattr(self, "keras_variables"):
            self.keras_variables = [w.value for w in self._model.obj.weights]
        fused, self._fused = self._fused, False
        try:
            yield
        finally:
            self._fused = fused

    def check_ids(self, token_ids, segment_ids, padding_mask):
        """The `predict_ids` inputs, checked (`check_ids`) against the served model's tables."""
        return check_ids({"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask},
                         self._model.obj.encoder)


def backend_outputs(model, inputs, backend):
    """`model(inputs, training=False)` of a JAX or PyTorch Keras model inside a TensorFlow function: run eagerly
    on the inputs' values (`tf.py_function`, no gradient kept), its outputs back as tensors of the same nest.

    What lets `predict` serve a model under `--backend jax|torch` through the kind's serving module: the
    tokenisation and the post-processing stay its TensorFlow ops, the model is the backend's. A module
    made so serves in this process only; `export` (TensorFlow) saves the graph.
    """
    import numpy as np

    no_grad = contextlib.nullcontext
    if backend == "torch":
        import torch

        no_grad = torch.no_grad
    names = sorted(inputs)

    def call(*values):
        with no_grad():
            out = model({n: np.asarray(v) for n, v in zip(names, values)}, training=False)
            return [keras.ops.convert_to_numpy(t) for t in keras.tree.flatten(out)]

    probe = {n: np.full([1] * (len(inputs[n].shape) - 1) + [8], int(n == "padding_mask"), np.int32)
             for n in names}  # one row of 8 pieces: the outputs' nest, dtypes and ranks
    with no_grad():
        spec = model(probe, training=False)
    flat = keras.tree.flatten(spec)
    outputs = tf.py_function(call, [inputs[n] for n in names], [tf.as_dtype(keras.backend.standardize_dtype(t.dtype))
                                                                for t in flat])
    for tensor, example in zip(outputs, flat):
        tensor.set_shape([None] * len(example.shape))
    return keras.tree.pack_sequence_as(spec, outputs)


def add_assets(module, what, vocab_file, config_name, config, label_names=None):
    """Writes the asset files into a fresh temporary folder and tracks them on `module`.

    Sets `module.labels_asset` (when `label_names` is given), then
    `tokenizer_settings_asset`, `vocab_asset` and `config_asset`.

    Args:
        module: `tf.Module`. The module to export.
        what: str. Names the scratch folder the assets are written to (`atomic.scratch_folder`).
        vocab_file: str. The vocabulary; copied with its `electra_tokenizer.json`.
        config_name: str. File name of the config asset.
        config: dict. Its JSON content.
        label_names: list of str or None.

    Returns:
        str, the temporary folder.
    """
    folder = atomic.scratch_folder(what.strip("_"))
    if label_names is not None:
        labels_file = os.path.join(folder, LABELS_ASSET)
        with open(labels_file, "w") as f:
            f.write("".join(f"{label}\n" for label in label_names))
    config_file = os.path.join(folder, config_name)
    atomic.write_json(config_file, config)
    if label_names is not None:
        module.labels_asset = tf.saved_model.Asset(labels_file)
    vocab_copy = os.path.join(folder, VOCAB_ASSET)
    copy_vocab(vocab_file, vocab_copy)  # and its electra_tokenizer.json, an asset too
    module.tokenizer_settings_asset = tf.saved_model.Asset(os.path.join(folder, SETTINGS_FILE))
    module.vocab_asset = tf.saved_model.Asset(vocab_copy)
    module.config_asset = tf.saved_model.Asset(config_file)
    return folder


def check_model_name(model_name):
    """Raises a `ValueError` naming `--model_name` unless it is one folder name (TF Serving's model folder)."""
    if not model_name or model_name in (".", "..") or "/" in model_name or os.sep in model_name:
        raise ValueError(f"`--model_name` must be one folder name, not empty and without '/': the version goes in "
                         f"<output_dir>/<model_name>/<version>. Received: `--model_name={model_name!r}`")


def version_dir(base_dir, model_name, version):
    """`base_dir/model_name/version`: a new TF Serving model version, checked not to exist yet."""
    check_model_name(model_name)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"`version` must be a positive int (TF Serving folder name). Received: `version={version!r}`")
    path = os.path.join(base_dir, model_name, str(version))
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"{path} exists; TF Serving versions are immutable, choose a new `version`.")
    return path


def save_version(module, path):
    """Saves `module` (with its `signatures()`) as the version folder `path`, all or nothing.

    With it, `assets.extra/tf_serving_warmup_requests` (`electra_tf.exporting.warmup`): a batch-1 request
    of each length a call can be padded to, which TF Serving replays when it loads the version.

    It is written under a sibling name that TF Serving does not load (versions are
    numbers; `atomic.staged_folder`) and renamed when complete: a server polling the
    model folder never sees half a version, and an interrupted export leaves no version behind.
    """
    with atomic.staged_folder(path, "output_dir") as partial:
        signatures = module.signatures()
        tf.saved_model.save(module, partial, signatures=signatures)
        if getattr(module, "seq_length", None):  # the requests TF Serving replays at load
            warmup.write_warmup_file(partial, signatures[warmup.SIGNATURE].input_signature, module.seq_length,
                                     module.pad_multiple)
    return path


def check_texts(text, text_b=None):
    """Runtime checks of request texts: rank 1, and equal batch sizes for pairs.

    The signature's `(None,)` shape is not enforced by TF at call time (nor by
    TF Serving), so a `(batch, 1)` request would otherwise be tokenised as
    something else; `EnsureShape` turns it into an `InvalidArgumentError`.
    """
    text = tf.ensure_shape(text, [None], name="text_must_be_a_vector")
    if text_b is not None:
        text_b = tf.ensure_shape(text_b, [None], name="text_b_must_be_a_vector")
        with tf.control_dependencies([tf.debugging.assert_equal(
                tf.size(text), tf.size(text_b), message="`text` and `text_b` must have the same batch size")]):
            text_b = tf.identity(text_b)
    return text, text_b


def check_ids(inputs, encoder=None):
    """Runtime checks of id inputs: rank 2, all three of one shape; with `encoder`, values and length too.

    With `encoder` (the served model's `ElectraEncoder`): every token id in
    `[0, vocab_size)`, segment id in `[0, num_segments)`, mask value 0 or 1, and
    rows no longer than its position table (`max_sequence_length`), each an
    `InvalidArgumentError` naming the input and the bound, where the model's
    own gathers would fail with `indices[0,1] = 10000000 is not in [0, 8192)`.
    """
    inputs = {k: tf.ensure_shape(v, [None, None], name=f"{k}_must_be_batch_by_seq_len") for k, v in inputs.items()}
    shape = tf.shape(inputs["token_ids"])
    checks = [tf.debugging.assert_equal(tf.shape(inputs[k]), shape,
                                        message=f"`{k}` must have the shape of `token_ids`")
              for k in ("segment_ids", "padding_mask")]
    if encoder is not None:
        with tf.control_dependencies(checks):  # the bounds below read rows of one shape
            checks.append(tf.debugging.assert_less_equal(
                shape[1], encoder.max_sequence_length, message=f"rows of `token_ids` must be at most "
                f"{encoder.max_sequence_length} ids long, the position table of the model (max_sequence_length)"))
        for name, high in (("token_ids", encoder.vocab_size), ("segment_ids", encoder.num_segments),
                           ("padding_mask", 2)):
            checks.append(tf.debugging.assert_non_negative(inputs[name], message=f"`{name}` must be in "
                                                           f"[0, {high})"))
            checks.append(tf.debugging.assert_less(inputs[name], high, message=f"`{name}` must be in [0, {high})"
                                                   + (" (vocab_size of the model)" if name == "token_ids" else "")))
    with tf.control_dependencies(checks):
        return {k: tf.identity(v) for k, v in inputs.items()}
