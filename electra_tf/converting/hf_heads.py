"""Fine-tuned models to Hugging Face: the encoder and a task head, as transformers' own classes.

`export_task_model` writes the encoder and the head tensors a task kind gives
(`TaskKind.hf_head`, in the kind's folder: `electra_tf/tasks/<kind>/hf_head.py`);
`dense_weights` and `label_entries` are what the heads share.
"""

import os

import numpy as np

from electra_tf.converting import hf_names
from electra_tf.converting.weight_map import read_weights

def dense_weights(layer):
    """The kernel `(in, out)` and bias `(out,)` of a dense layer, as float32 arrays."""
    kernel, bias = (np.asarray(w, np.float32) for w in layer.get_weights())
    return kernel, bias


def label_entries(num_labels, label_names):
    """The `config.json` entries of a head's labels (`num_labels`, `id2label`, `label2id`); `LABEL_i` unnamed."""
    names = list(label_names) if label_names else [f"LABEL_{i}" for i in range(num_labels)]
    if len(names) != num_labels:
        raise ValueError(f"{len(names)} label names for a head of {num_labels} outputs: {names}.")
    return {"num_labels": num_labels, "id2label": {str(i): n for i, n in enumerate(names)},
            "label2id": {n: i for i, n in enumerate(names)}}


def export_task_model(model, directory, head):
    """Writes a fine-tuned `model` as a transformers `ElectraFor...` folder (`config.json` + `model.safetensors`).

    Args:
        model: a fine-tuned model with an `encoder` (`ElectraEncoder`).
        directory: str. Created if needed.
        head: `(architecture, {hf name: array}, config entries)` of its head (its task kind's
            `hf_head`: `electra_tf/tasks/<kind>/hf_head.py`), optionally with a fourth item: other
            files of the folder, `{relative path: text}` (e.g. a sentence-transformers layout).

    Returns:
        list with `directory`.

    Example:
        ```python
        import transformers
        from electra_tf.converting.hf_heads import export_task_model
        from electra_tf.tasks.classification.hf_head import classifier_head
        from electra_tf.tasks.classification.model import ElectraClassifier
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

    architecture, tensors, entries, *files = head
    encoder = model.encoder
    state = {}
    for name, value in read_weights(encoder).items():
        mapped = hf_names.official_to_hf(name, "discriminator")
        if mapped is not None:
            hf_name, transpose = mapped
            state[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    state.update({k: np.ascontiguousarray(v) for k, v in tensors.items()})
    write_folder(directory, dict(hf_config(encoder, architecture), **entries), state)
    for path, text in (files[0] if files else {}).items():
        os.makedirs(os.path.dirname(os.path.join(directory, path)), exist_ok=True)
        with open(os.path.join(directory, path), "w", encoding="utf-8") as f:
            f.write(text)
    return [directory]
