"""A fine-tuned classifier's head as transformers' `ElectraForSequenceClassification` (`convert --to hf`).

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

from electra_tf.converting.hf_heads import dense_weights, label_entries

SHIFT = 64.0


def classifier_head(model, label_names=None):
    """`ElectraForSequenceClassification`'s head equal to an `ElectraClassifier`'s (the GELU shift above).

    Returns:
        `(architecture, {hf name: array}, config entries)` for `export_task_model`.
    """
    kernel, bias = dense_weights(model.head)
    hidden = kernel.shape[0]
    tensors = {
        "classifier.dense.weight": np.eye(hidden, dtype=np.float32),
        "classifier.dense.bias": np.full((hidden,), SHIFT, np.float32),
        "classifier.out_proj.weight": kernel.T,
        "classifier.out_proj.bias": (bias - SHIFT * kernel.sum(axis=0)).astype(np.float32),
    }
    config = dict(label_entries(int(model.num_labels), label_names), classifier_dropout=float(model.dropout))
    if model.num_labels == 1:
        config["problem_type"] = "regression"
    return "ElectraForSequenceClassification", tensors, config
