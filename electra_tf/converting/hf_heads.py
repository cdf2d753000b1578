"""Fine-tuned models to Hugging Face: the encoder and a task head, as transformers' own classes.

`export_task_model` writes the encoder and the head tensors a task kind gives
(`TaskKind.hf_head`); the heads of the kinds that ship with electra_tf are here:

    classifier_head          ElectraClassifier -> ElectraForSequenceClassification (config.json with id2label)
    token_classifier_head    ElectraTokenClassifier -> ElectraForTokenClassification
    question_answerer_head   ElectraQuestionAnswerer("simple") -> ElectraForQuestionAnswering (start, end)

The logits equal the Keras model's (its QA logits before the -1000 mask outside
the context, which transformers leaves to post-processing). Two heads cannot be
expressed and are refused with the reason: the official QA head (end logits
conditioned on the start, a beam; transformers' head is start and end
independent) and the SQuAD 2.0 answerability classifier.

The classifier: electra_tf's head is the reference's, dropout and one dense layer
on [CLS]; transformers' `ElectraClassificationHead` is dense(H, H) -> GELU ->
dense(H, labels), with the GELU hard-coded. It is written as the identity
shifted into GELU's linear range: `dense = I, bias = SHIFT`, so GELU(h + SHIFT) =
h + SHIFT exactly in float32 while every [CLS] component h > 5.3 - SHIFT, and
`out_proj` takes the shift back out (`bias = b - SHIFT * sum(W)`). With SHIFT = 64
that holds for h > -58 (the final LayerNorm keeps [CLS] components within a few
units), and the rounding of h + 64 costs under 4e-6 per component.
"""

import numpy as np

from electra_tf.converting import hf_names
from electra_tf.converting.weight_map import read_weights

SHIFT = 64.0


def _kernel(layer):
    kernel, bias = (np.asarray(w, np.float32) for w in layer.get_weights())
    return kernel, bias  # (in, out), (out,)


def _labels(num_labels, label_names):
    names = list(label_names) if label_names else [f"LABEL_{i}" for i in range(num_labels)]
    if len(names) != num_labels:
        raise ValueError(f"{len(names)} label names for a head of {num_labels} outputs: {names}.")
    return {"num_labels": num_labels, "id2label": {str(i): n for i, n in enumerate(names)},
            "label2id": {n: i for i, n in enumerate(names)}}


def classifier_head(model, label_names=None):
    """`ElectraForSequenceClassification`'s head equal to an `ElectraClassifier`'s (the GELU shift above).

    Returns:
        `(architecture, {hf name: array}, config entries)` for `export_task_model`.
    """
    kernel, bias = _kernel(model.head)
    hidden = kernel.shape[0]
    tensors = {
        "classifier.dense.weight": np.eye(hidden, dtype=np.float32),
        "classifier.dense.bias": np.full((hidden,), SHIFT, np.float32),
        "classifier.out_proj.weight": kernel.T,
        "classifier.out_proj.bias": (bias - SHIFT * kernel.sum(axis=0)).astype(np.float32),
    }
    config = dict(_labels(int(model.num_labels), label_names), classifier_dropout=float(model.dropout))
    if model.num_labels == 1:
        config["problem_type"] = "regression"
    return "ElectraForSequenceClassification", tensors, config


def token_classifier_head(model, label_names=None):
    """`ElectraForTokenClassification`'s head: an `ElectraTokenClassifier`'s dense layer."""
    kernel, bias = _kernel(model.head)
    return ("ElectraForTokenClassification", {"classifier.weight": kernel.T, "classifier.bias": bias},
            _labels(int(model.num_labels), label_names))


def question_answerer_head(model):
    """`ElectraForQuestionAnswering`'s head from a simple-head `ElectraQuestionAnswerer`; the others are refused."""
    if model.head != "simple":
        raise ValueError("The official QA head cannot be written as ElectraForQuestionAnswering: its end logits "
                         "are conditioned on the start (a dense layer over [h_start; h_end] and a beam), while "
                         "transformers' head scores start and end independently. Fine-tune with "
                         "--qa_head simple to export to Hugging Face.")
    if model.answerable:
        raise ValueError("The SQuAD 2.0 answerability classifier has no place in ElectraForQuestionAnswering "
                         "(transformers scores no-answer at [CLS]); fine-tune without it to export to Hugging Face.")
    kernel, bias = _kernel(model.span_dense)
    return ("ElectraForQuestionAnswering", {"qa_outputs.weight": kernel.T, "qa_outputs.bias": bias},
            {"num_labels": 2})


def export_task_model(model, directory, head):
    """Writes a fine-tuned `model` as a transformers `ElectraFor...` folder (`config.json` + `model.safetensors`).

    Args:
        model: a fine-tuned model with an `encoder` (`ElectraEncoder`).
        directory: str. Created if needed.
        head: `(architecture, {hf name: array}, config entries)` of its head (its task kind's
            `hf_head`: `classifier_head`, `token_classifier_head`, ...).

    Returns:
        list with `directory`.

    Example:
        ```python
        import transformers
        from electra_tf.converting.hf_heads import classifier_head, export_task_model
        from electra_tf.models.classifier import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)
        classifier.build()
        export_task_model(classifier, "sst2_hf", classifier_head(classifier, ["negative", "positive"]))
        transformers.ElectraForSequenceClassification.from_pretrained("sst2_hf").config.id2label
        # {0: 'negative', 1: 'positive'}
        ```
    """
    from electra_tf.converting.hugging_face import hf_config, write_folder

    architecture, tensors, entries = head
    encoder = model.encoder
    state = {}
    for name, value in read_weights(encoder).items():
        mapped = hf_names.official_to_hf(name, "discriminator")
        if mapped is not None:
            hf_name, transpose = mapped
            state[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    state.update({k: np.ascontiguousarray(v) for k, v in tensors.items()})
    write_folder(directory, dict(hf_config(encoder, architecture), **entries), state)
    return [directory]
