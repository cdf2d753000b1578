"""A fine-tuned tagger's head as transformers' `ElectraForTokenClassification` (`convert --to hf`)."""

from electra_tf.converting.hf_heads import dense_weights, label_entries

def token_classifier_head(model, label_names=None):
    """`ElectraForTokenClassification`'s head: an `ElectraTokenClassifier`'s dense layer."""
    kernel, bias = dense_weights(model.head)
    return ("ElectraForTokenClassification", {"classifier.weight": kernel.T, "classifier.bias": bias},
            label_entries(int(model.num_labels), label_names))
