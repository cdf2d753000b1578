"""The pre-trained discriminator as a SavedModel that `tf.saved_model.load` alone can run.

Layout of `export_dir` (a standard SavedModel):

    saved_model.pb, variables/        the graph and the weights
    assets/vocab.txt                  the WordPiece vocabulary
    assets/electra_tokenizer.json      its normalisation (lower_case, strip_accents, normalization)
    assets/encoder_config.json        `ElectraEncoder.get_config()` + `seq_length`

Signatures:

    serving_default   token_ids, segment_ids, padding_mask  int32 (batch, seq_len)
                      -> sequence_output (batch, seq_len, hidden), cls_output (batch, hidden)
    preprocess        text  string (batch,)
                      -> token_ids, segment_ids, padding_mask  int32 (batch, seq_length)
    preprocess_pair   text, text_b  string (batch,) -> the same, `[CLS] a [SEP] b [SEP]`

The same functions are attributes of the loaded object (`loaded.encode`,
`loaded.preprocess`, `loaded.preprocess_pair`), and `loaded.encoder_weights`
lists the encoder's variables in `ElectraEncoder.weights` order, so
`load_encoder(export_dir)` rebuilds a trainable Keras encoder from it.
"""

import os

import tensorflow as tf

from electra_tf import atomic
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.exporting.assets import Untracked, add_assets, check_ids, check_texts
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.run_files import ENCODER_CONFIG_ASSET, SAVED_MODEL_FILE  # noqa: F401  (the run-file names)
from electra_tf.sources import load_encoder  # noqa: F401  (read back there)


def _ids_spec(name):
    return tf.TensorSpec([None, None], tf.int32, name=name)


class EncoderModule(tf.Module):
    """`tf.Module` holding an encoder and its tokenizer, with the exported functions.

    Args:
        encoder: `ElectraEncoder`.
        vocab_file: str. The vocabulary the encoder was trained with.
        seq_length: int. Output length of the preprocessing functions.
    """

    def __init__(self, encoder, vocab_file, seq_length=128, name=None):
        super().__init__(name=name)
        if seq_length > encoder.max_sequence_length:
            raise ValueError(
                f"`seq_length={seq_length}` exceeds the encoder's "
                f"`max_sequence_length={encoder.max_sequence_length}`."
            )
        self._encoder = Untracked(encoder)  # variables tracked below; see serving.ServingModule
        self.encoder_weights = [w.value for w in encoder.weights]
        self.tokenizer = WordPieceTokenizer(vocab_file)
        if self.tokenizer.vocab_size != encoder.vocab_size:
            raise ValueError(
                f"The vocabulary {vocab_file} has {self.tokenizer.vocab_size} tokens, the encoder "
                f"`vocab_size={encoder.vocab_size}`."
            )
        self.seq_length = seq_length
        self._config_dir = add_assets(self, "electra_export_", vocab_file, ENCODER_CONFIG_ASSET,
                                      {"encoder": encoder.get_config(), "seq_length": seq_length})

    @tf.function(input_signature=[_ids_spec("token_ids"), _ids_spec("segment_ids"), _ids_spec("padding_mask")])
    def encode(self, token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        inputs = check_ids(inputs, self._encoder.obj)
        sequence = self._encoder.obj(inputs, training=False)
        return {"sequence_output": sequence, "cls_output": sequence[:, 0, :]}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def preprocess(self, text):
        text, _ = check_texts(text)
        return self.tokenizer.pack(text, seq_length=self.seq_length)

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string, name="text"), tf.TensorSpec([None], tf.string, name="text_b")]
    )
    def preprocess_pair(self, text, text_b):
        text, text_b = check_texts(text, text_b)
        return self.tokenizer.pack(text, text_b, seq_length=self.seq_length)

    def signatures(self):
        return {
            "serving_default": self.encode,
            "preprocess": self.preprocess,
            "preprocess_pair": self.preprocess_pair,
        }


def export_encoder(encoder, vocab_file, export_dir, seq_length=128):
    """Writes `encoder` (+ tokenizer) as a SavedModel; see the module docstring.

    Args:
        encoder: `ElectraEncoder`. E.g. `load_discriminator(model_dir)[0]`.
        vocab_file: str. Its vocabulary.
        export_dir: str. Output folder (created, or empty), written whole (`atomic.staged_folder`).
        seq_length: int. Length produced by the preprocessing signatures.

    Returns:
        str, `export_dir`.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.exporting.encoder_saved_model import export_encoder
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")

        # A trained one in practice: `sources.load_discriminator(run_dir)`.
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        encoder.build()

        export_encoder(encoder, "vocab.txt", "electra_encoder", seq_length=16)
        loaded = tf.saved_model.load("electra_encoder")
        inputs = loaded.preprocess(tf.constant(["hello world"]))
        loaded.encode(**inputs)["cls_output"].shape  # (1, 32): (batch, hidden_dim)
        ```
    """
    if not isinstance(encoder, ElectraEncoder):
        raise TypeError(f"`encoder` must be an ElectraEncoder. Received: {type(encoder).__name__}")
    if tf.io.gfile.exists(os.path.join(export_dir, SAVED_MODEL_FILE)):
        raise FileExistsError(f"{export_dir} already holds a SavedModel; choose a new folder.")
    module = EncoderModule(encoder, vocab_file, seq_length)
    # Written under a temporary name beside it and renamed when complete: a killed export leaves
    # nothing in `export_dir` that looks exported or blocks the next one.
    with atomic.staged_folder(export_dir, "output_dir") as partial:
        tf.saved_model.save(module, partial, signatures=module.signatures())
    return export_dir
