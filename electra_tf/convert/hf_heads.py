"""Fine-tuned models to Hugging Face: classifier, tagger and simple-head QA as transformers' own classes.

    ElectraClassifier                  -> ElectraForSequenceClassification (config.json with id2label)
    ElectraTokenClassifier             -> ElectraForTokenClassification
    ElectraQuestionAnswerer("simple")  -> ElectraForQuestionAnswering (start, end = qa_outputs)

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

from electra_tf.convert import hf_names
from electra_tf.convert.weight_map import read_weights

SHIFT = 64.0
ARCHITECTURES = {
    "ElectraClassifier": "ElectraForSequenceClassification",
    "ElectraTokenClassifier": "ElectraForTokenClassification",
    "ElectraQuestionAnswerer": "ElectraForQuestionAnswering",
}


def is_task_model(model):
    """Whether `model` is a fine-tuned model this module writes (or refuses with a reason)."""
    return type(model).__name__ in ARCHITECTURES


def _kernel(layer):
    kernel, bias = (np.asarray(w, np.float32) for w in layer.get_weights())
    return kernel, bias  # (in, out), (out,)


def head_tensors(model):
    """`(architecture, {hf name: array})` of the task head of `model` (torch layout: Linear weight is (out, in))."""
    name = type(model).__name__
    if name == "ElectraQuestionAnswerer":
        if model.head != "simple":
            raise ValueError("The official QA head cannot be written as ElectraForQuestionAnswering: its end logits "
                             "are conditioned on the start (a dense layer over [h_start; h_end] and a beam), while "
                             "transformers' head scores start and end independently. Fine-tune with "
                             "--qa_head simple to export to Hugging Face.")
        if model.answerable:
            raise ValueError("The SQuAD 2.0 answerability classifier has no place in ElectraForQuestionAnswering "
                             "(transformers scores no-answer at [CLS]); fine-tune without it to export to Hugging Face.")
        kernel, bias = _kernel(model.span_dense)
        return ARCHITECTURES[name], {"qa_outputs.weight": kernel.T, "qa_outputs.bias": bias}
    kernel, bias = _kernel(model.head)
    if name == "ElectraTokenClassifier":
        return ARCHITECTURES[name], {"classifier.weight": kernel.T, "classifier.bias": bias}
    hidden = kernel.shape[0]
    return ARCHITECTURES[name], {
        "classifier.dense.weight": np.eye(hidden, dtype=np.float32),
        "classifier.dense.bias": np.full((hidden,), SHIFT, np.float32),
        "classifier.out_proj.weight": kernel.T,
        "classifier.out_proj.bias": (bias - SHIFT * kernel.sum(axis=0)).astype(np.float32),
    }


def export_task_model(model, directory, label_names=None):
    """Writes a fine-tuned `model` as a transformers `ElectraFor...` folder (`config.json` + `model.safetensors`).

    Args:
        model: `ElectraClassifier`, `ElectraTokenClassifier` or a simple-head
            `ElectraQuestionAnswerer`.
        directory: str. Created if needed.
        label_names: optional list of str, label i's name (`id2label`); default `LABEL_i`.

    Returns:
        list with `directory`.

    Example:
        ```python
        import transformers
        from electra_tf.convert.hf_heads import export_task_model
        from electra_tf.models.classifier import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)
        classifier.build()
        export_task_model(classifier, "sst2_hf", label_names=["negative", "positive"])
        transformers.ElectraForSequenceClassification.from_pretrained("sst2_hf").config.id2label
        # {0: 'negative', 1: 'positive'}
        ```
    """
    from electra_tf.convert.hugging_face import hf_config, write_folder

    architecture, head = head_tensors(model)
    encoder = model.encoder
    state = {}
    for name, value in read_weights(encoder).items():
        mapped = hf_names.official_to_hf(name, "discriminator")
        if mapped is not None:
            hf_name, transpose = mapped
            state[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    state.update({k: np.ascontiguousarray(v) for k, v in head.items()})
    num_labels = 2 if architecture == "ElectraForQuestionAnswering" else int(model.num_labels)
    config = hf_config(encoder, architecture)
    config["num_labels"] = num_labels
    if architecture != "ElectraForQuestionAnswering":
        names = list(label_names) if label_names else [f"LABEL_{i}" for i in range(num_labels)]
        if len(names) != num_labels:
            raise ValueError(f"{len(names)} label names for a head of {num_labels} outputs: {names}.")
        config["id2label"] = {str(i): n for i, n in enumerate(names)}
        config["label2id"] = {n: i for i, n in enumerate(names)}
        if architecture == "ElectraForSequenceClassification":
            config["classifier_dropout"] = float(model.dropout)
            if num_labels == 1:
                config["problem_type"] = "regression"
    write_folder(directory, config, state)
    return [directory]
