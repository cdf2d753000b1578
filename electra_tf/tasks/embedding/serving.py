"""A fine-tuned embedding model as a TensorFlow Serving model: raw text in, one unit vector per text out.

Layout as every serving export (`export_formats.export_serving`: `<base_dir>/<model_name>/<version>/`,
assets `vocab.txt`, `electra_tokenizer.json`, `serving_config.json` with kind, task, seq_length, pooling,
normalize, the vector's dimension and the headline metric).

Signatures (batch dimension dynamic):

    serving_default  text  string (batch,)  -> embedding float32 (batch, hidden_dim)
    predict_ids      token_ids, segment_ids, padding_mask  int32 (batch, seq_len) -> embedding
    preprocess       text -> token_ids, segment_ids, padding_mask

Texts are tokenised in the graph by the training tokenizer (`[CLS] text [SEP]`, truncated to
`seq_length`); a call is computed at its longest text's length rounded up to a multiple of 8,
at most `seq_length` (`tokenizer.padded_length`): pooling reads only the `padding_mask`'s tokens,
so the vectors are those of full-length padding. `export --format tflite` converts the same
outputs (raw text, or `--ids`).

Example:
    ```python
    import pathlib

    import numpy as np
    import tensorflow as tf

    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.tasks.embedding.model import ElectraEmbedder
    from electra_tf.tasks.embedding.serving import EmbeddingServingModule

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cats", "purr", "dogs", "bark"]
    pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
    embedder = ElectraEmbedder(ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                              embedding_dim=16, intermediate_dim=64))
    embedder.build()  # fine-tuned, in practice
    module = EmbeddingServingModule(embedder, "vocab.txt", seq_length=16)
    vectors = module.signatures()["serving_default"](text=tf.constant(["cats purr", "dogs bark"]))["embedding"]
    vectors.shape  # (2, 32), each of norm 1
    ```
"""

import tensorflow as tf

from electra_tf.exporting.assets import SERVING_CONFIG_ASSET, ServedModel, add_assets, check_texts


class EmbeddingServingModule(ServedModel):
    """`tf.Module` with an `ElectraEmbedder`, its tokenizer and the serving functions.

    Args:
        model: `ElectraEmbedder`.
        vocab_file: str.
        seq_length: int. Tokens per text, [CLS] and [SEP] included.
        task: str. Recorded in `serving_config.json`.
        metric: str or None. The headline metric, recorded there too.
    """

    def __init__(self, model, vocab_file, seq_length=128, task="", metric=None, name=None):
        if seq_length > model.encoder.max_sequence_length:
            raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                             f"`max_sequence_length={model.encoder.max_sequence_length}`.")
        super().__init__(model, vocab_file, seq_length, name=name)
        self._tmp = add_assets(
            self, "electra_embedding_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "kind": "embedding", "seq_length": seq_length, "pooling": model.pooling,
             "normalize": model.normalize, "dim": int(model.encoder.hidden_dim), "metric": metric})
        self.label_names = tf.constant([], tf.string)  # no labels (what a LiteRT export records)
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)
        texts = [tf.TensorSpec([None], tf.string, name="text")]
        self.serve_text = tf.function(self._serve_text, input_signature=texts)
        self.preprocess = tf.function(self._preprocess, input_signature=texts)

    def _outputs(self, inputs):
        return {"embedding": tf.cast(self.model_outputs(inputs), tf.float32)}

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self.check_ids(token_ids, segment_ids, padding_mask))

    def _serve_text(self, text):
        return self._outputs(self._preprocess(text))

    def _preprocess(self, text):
        text, _ = check_texts(text)
        return self.tokenizer.pack(text, None, seq_length=self.seq_length, pad_multiple=self.pad_multiple)

    def signatures(self):
        return {"serving_default": self.serve_text, "predict_ids": self.predict_ids, "preprocess": self.preprocess}
