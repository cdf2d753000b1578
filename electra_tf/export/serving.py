"""A fine-tuned classifier as a TensorFlow Serving model, raw text in.

Layout: `<base_dir>/<model_name>/<version>/` (a SavedModel; TF Serving's
`--model_base_path=<base_dir>/<model_name>` picks up the highest version):

    saved_model.pb, variables/
    assets/labels.txt          label i on line i
    assets/vocab.txt           the WordPiece vocabulary
    assets/tokenizer_config.json  its normalisation (lower_case, strip_accents)
    assets/serving_config.json task, seq_length, label names, pair or single

Signatures (batch dimension dynamic everywhere):

    serving_default  text  string (batch,)   [+ text_b string (batch,) for pair tasks]
                     -> probabilities float32 (batch, num_labels),
                        label_id int32 (batch,), label string (batch,)
                     (regression tasks: -> score float32 (batch,))
    predict_ids      token_ids, segment_ids, padding_mask  int32 (batch, seq_len)
                     -> the same outputs
    preprocess       text [+ text_b] -> token_ids, segment_ids, padding_mask
                     (what `serving_default` feeds the model; for debugging clients)

Texts are tokenised in the graph by the same `WordPieceTokenizer` as in
training, truncated to `seq_length` (pairs longest-first); an empty string is
a valid input (`[CLS] [SEP]`).
"""

import json
import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf.export.assets import (  # noqa: F401  (Untracked: its old home)
    SERVING_CONFIG_ASSET, ServedModel, Untracked, add_assets, check_texts, save_version, version_dir)
from electra_tf.finetuning.config import with_current_keys
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf import run_files


class ServingModule(ServedModel):
    """`tf.Module` with a classifier, its tokenizer and the two serving functions.

    Args:
        classifier: `ElectraClassifier`.
        vocab_file: str.
        label_names: list of str. One per output unit (ignored for regression).
        seq_length: int. Tokens per request text (pair), special tokens included.
        pair: bool. Whether `serving_default` takes `text_b` too.
        regression: bool. Output `score` instead of probabilities.
        task: str. Recorded in `serving_config.json`.
    """

    def __init__(self, classifier, vocab_file, label_names, seq_length=128, pair=False, regression=False,
                 task="", name=None):
        super().__init__(classifier, vocab_file, seq_length, name=name)
        self.pair = pair
        self.regression = regression
        self._tmp = add_assets(
            self, "electra_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "seq_length": seq_length, "pair": pair, "regression": regression,
             "label_names": list(label_names)},
            label_names=label_names)
        self.label_names = tf.constant(list(label_names) or [""], tf.string)

        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)
        texts = [tf.TensorSpec([None], tf.string, name="text")]
        if pair:
            texts.append(tf.TensorSpec([None], tf.string, name="text_b"))
        self.serve_text = tf.function(self._serve_text, input_signature=texts)
        self.preprocess = tf.function(self._preprocess, input_signature=texts)

    def _outputs(self, inputs):
        logits = self._model.obj(inputs, training=False)
        if self.regression:
            return {"score": logits[:, 0]}
        probabilities = tf.nn.softmax(logits, axis=-1)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self.check_ids(token_ids, segment_ids, padding_mask))

    def _serve_text(self, text, text_b=None):
        text, text_b = check_texts(text, text_b)
        return self._outputs(self.tokenizer.pack(text, text_b, seq_length=self.seq_length))

    def _preprocess(self, text, text_b=None):
        text, text_b = check_texts(text, text_b)
        return self.tokenizer.pack(text, text_b, seq_length=self.seq_length)

    def signatures(self):
        return {"serving_default": self.serve_text, "predict_ids": self.predict_ids, "preprocess": self.preprocess}


def export_serving(classifier, vocab_file, base_dir, model_name="electra", version=1, label_names=None,
                   seq_length=128, pair=False, task="", stride=None, qa_settings=None):
    """Writes `classifier` as `<base_dir>/<model_name>/<version>/` for TF Serving.

    Args:
        classifier: `ElectraClassifier` (fine-tuned), or an `ElectraTokenClassifier`
            (exported by `tagging_serving.export_tagging_serving`: text -> words,
            tags and entities with character offsets).
        vocab_file: str. Its vocabulary.
        base_dir: str. TF Serving model base folder's parent.
        model_name: str. Model name in TF Serving.
        version: int. Version folder; must not exist yet.
        label_names: list of str or None. Default `["0", "1", ...]`.
        seq_length: int. Truncation length for requests.
        pair: bool. Sentence-pair task (`serving_default` takes `text_b`).
        task: str. Recorded in the assets.
        stride: int or None. Tagging only: pieces between the windows of long
            texts (the fine-tuning `stride`).
        qa_settings: dict or None. An `ElectraQuestionAnswerer`'s `doc_stride`,
            `max_query_length`, `max_answer_length`, `null_threshold`
            (`qa_serving.export_qa_serving`: question + context -> answer).

    Returns:
        str, the version folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.export.serving import export_serving
        from electra_tf.models.classifier import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")

        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)

        classifier = ElectraClassifier(encoder, num_labels=2)  # fine-tuned, in practice
        classifier.build()
        path = export_serving(classifier, "vocab.txt", "serving", "movie", 1, seq_length=16,
                              label_names=["negative", "positive"])  # 'serving/movie/1'
        loaded = tf.saved_model.load(path)
        loaded.signatures["serving_default"](text=tf.constant(["a fine film"]))["probabilities"].shape
        # (1, 2)
        ```
    """
    module = _serving_module(classifier, vocab_file, label_names, seq_length, pair, task, stride, qa_settings)
    return save_version(module, version_dir(base_dir, model_name, version))


def serving_settings(config, seq_length=None):
    """`export_serving`'s keyword arguments for a model whose `finetune_config.json` holds `config`.

    Args:
        config: dict. What `load_finetuned` returns beside the model.
        seq_length: int or None. Default: the fine-tuning `seq_length` (else 128).
    """
    config = with_current_keys(config)  # a finetune_config.json of an earlier version says max_seq_length
    return dict(
        label_names=config.get("label_names") or None, seq_length=seq_length or config.get("seq_length", 128),
        pair=config.get("pair", False), task=config.get("task", ""), stride=config.get("stride"),
        qa_settings={k: config.get(k) for k in ("doc_stride", "max_query_length", "max_answer_length",
                                                "null_threshold")})


def serving_module(model, vocab_file, config, seq_length=None):
    """The `tf.Module` that `export_serving` saves for a fine-tuned model, built in this process.

    Its `signatures()` are the exported SavedModel's signatures, as `tf.function`s:
    calling them runs what TF Serving runs (`electra_tf.predict` does, on a
    fine-tuning output dir).

    Args:
        model: `ElectraClassifier`, `ElectraTokenClassifier` or `ElectraQuestionAnswerer`.
        vocab_file: str. Its vocabulary.
        config: dict. Its `finetune_config.json` (`load_finetuned`).
        seq_length: int or None. Default: the fine-tuning `seq_length`.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.export.serving import serving_module
        from electra_tf.models.classifier import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)  # fine-tuned, in practice
        classifier.build()
        module = serving_module(classifier, "vocab.txt", {"label_names": ["neg", "pos"], "seq_length": 16})
        module.signatures()["serving_default"](text=tf.constant(["a fine film"]))["label"].shape  # (1,)
        ```
    """
    return _serving_module(model, vocab_file, **serving_settings(config, seq_length))


def _serving_module(classifier, vocab_file, label_names=None, seq_length=128, pair=False, task="", stride=None,
                    qa_settings=None):
    """The serving `tf.Module` of a classifier, tagger or question answerer (`export_serving`'s arguments)."""
    from electra_tf.models.question_answerer import ElectraQuestionAnswerer
    from electra_tf.models.token_classifier import ElectraTokenClassifier

    if isinstance(classifier, ElectraQuestionAnswerer):
        from electra_tf.export.qa_serving import qa_serving_module

        qa = {k: v for k, v in (qa_settings or {}).items() if v is not None}
        return qa_serving_module(classifier, vocab_file, seq_length=seq_length, task=task, **qa)
    if isinstance(classifier, ElectraTokenClassifier):
        from electra_tf.export.tagging_serving import tagging_serving_module

        return tagging_serving_module(classifier, vocab_file, label_names=label_names, seq_length=seq_length,
                                      task=task, stride=stride)
    if not isinstance(classifier, ElectraClassifier):
        raise TypeError(
            "A serving export needs a fine-tuned `ElectraClassifier` (encoder + task head). "
            f"Received: {type(classifier).__name__}. Fine-tune first with `python -m electra_tf.finetune`, "
            "or export the bare encoder with `--kind encoder`."
        )
    regression = classifier.num_labels == 1 and (label_names is None or len(label_names) <= 1)
    if label_names is None:
        label_names = [] if regression else [str(i) for i in range(classifier.num_labels)]
    if not regression and len(label_names) != classifier.num_labels:
        raise ValueError(
            f"{len(label_names)} label names for a classifier with `num_labels={classifier.num_labels}`. "
            f"Received: `label_names={label_names}`"
        )
    if seq_length > classifier.encoder.max_sequence_length:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                         f"`max_sequence_length={classifier.encoder.max_sequence_length}`.")
    return ServingModule(classifier, vocab_file, label_names, seq_length, pair, regression, task)


def load_finetuned(model_dir):
    """The classifier (or token classifier), vocab file and task config a `finetune` run left in `model_dir`.

    Raises a clear error when `model_dir` holds no classifier head (e.g. a
    pre-training run or a bare encoder).
    """
    from electra_tf.models.question_answerer import ElectraQuestionAnswerer  # registered before loading
    from electra_tf.models.token_classifier import ElectraTokenClassifier

    CLASSIFIER_FILE, TOKEN_CLASSIFIER_FILE = run_files.CLASSIFIER_FILE, run_files.TOKEN_CLASSIFIER_FILE
    FINETUNE_CONFIG_FILE = run_files.FINETUNE_CONFIG_FILE
    if model_dir.endswith(".keras"):
        classifier_file, model_dir = model_dir, os.path.dirname(model_dir)
    else:
        classifier_file = os.path.join(model_dir, CLASSIFIER_FILE)
        tagger_file = os.path.join(model_dir, TOKEN_CLASSIFIER_FILE)
        if not tf.io.gfile.exists(classifier_file) and tf.io.gfile.exists(tagger_file):
            classifier_file = tagger_file
        qa_file = os.path.join(model_dir, run_files.QUESTION_ANSWERER_FILE)
        if not tf.io.gfile.exists(classifier_file) and tf.io.gfile.exists(qa_file):
            classifier_file = qa_file
    if not tf.io.gfile.exists(classifier_file):
        hint = ""
        if tf.io.gfile.exists(os.path.join(model_dir, run_files.CONFIG_FILE)):
            hint = " It looks like a pre-training run (config.json, no classifier head):"
        raise FileNotFoundError(
            f"No fine-tuned classifier in {model_dir} (expected {CLASSIFIER_FILE}).{hint} "
            "fine-tune it first with `python -m electra_tf.finetune`, or export the bare "
            "encoder with `python -m electra_tf.export --kind encoder`."
        )
    classifier = keras.saving.load_model(classifier_file, compile=False)
    if not isinstance(classifier, (ElectraClassifier, ElectraTokenClassifier, ElectraQuestionAnswerer)):
        raise TypeError(f"{classifier_file} holds a {type(classifier).__name__}, not an ElectraClassifier "
                        "(no classifier head): fine-tune it first with `python -m electra_tf.finetune`.")
    config = {}
    config_file = os.path.join(model_dir, FINETUNE_CONFIG_FILE)
    if tf.io.gfile.exists(config_file):
        with tf.io.gfile.GFile(config_file) as f:
            try:
                config = with_current_keys(json.load(f))
            except json.JSONDecodeError as e:
                raise ValueError(f"{config_file} is not valid JSON ({e}): truncated or damaged.") from None
    else:
        logging.warning(
            "WARNING: no %s beside %s: the export assumes numbered labels (0..%d), one text per request (no "
            "text_b) and 128 tokens unless --seq_length is given. Export the folder `python -m electra_tf.finetune` "
            "wrote to serve the task's own label names and pairs.",
            FINETUNE_CONFIG_FILE, classifier_file, classifier.num_labels - 1,
        )
    return classifier, os.path.join(model_dir, run_files.VOCAB_FILE), config
