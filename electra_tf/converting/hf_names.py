"""Hugging Face <-> official ELECTRA / BERT weight names, and the kernel transpose.

Hugging Face stores PyTorch `Linear` weights `[out, in]`; the official
release stores kernels `[in, out]`. Names differ by separators and leaf
names (`weight`/`bias` vs `kernel`/`bias`, `gamma`/`beta`):

    electra.encoder.layer.0.attention.self.query.weight   (HF, transposed)
    electra/encoder/layer_0/attention/self/query/kernel   (official)

A Hugging Face checkpoint holds one model. Its `role` says where its body
goes: `"discriminator"` (`ElectraForPreTraining`, body under `electra.`),
`"generator"` (`ElectraForMaskedLM`: body -> `generator/`, its embeddings
-> the shared `electra/embeddings/`), `"model"` (`ElectraModel` or
`BertModel`: no prefix). BERT bodies use the same names as ELECTRA's.
"""

import re

import numpy as np

ROLES = ("model", "discriminator", "generator")

_HEADS = {  # HF module -> official scope
    "discriminator_predictions.dense_prediction": "discriminator_predictions/dense_1",
    "discriminator_predictions.dense": "discriminator_predictions/dense",
    "generator_predictions.dense": "generator_predictions/dense",
    "generator_predictions.LayerNorm": "generator_predictions/LayerNorm",
}
_EMBEDDING_TABLES = ("word_embeddings", "position_embeddings", "token_type_embeddings")


def hf_to_official(name, role):
    """The official name of Hugging Face weight `name`, or None when it has none.

    Args:
        name: str. A key of the HF state dict.
        role: str. One of `ROLES`.

    Returns:
        (official_name, transpose) or None.

    Example:
        >>> from electra_tf.converting.hf_names import hf_to_official
        >>> hf_to_official("electra.encoder.layer.0.output.dense.weight", "generator")
        ('generator/encoder/layer_0/output/dense/kernel', True)
    """
    _check_role(role)
    if name == "generator_lm_head.bias":
        return "generator_predictions/output_bias", False
    module, _, leaf = name.rpartition(".")
    if module in _HEADS:
        return _leaf(_HEADS[module], leaf, module)
    body_prefix = "" if role == "model" else "electra."
    if not module.startswith(body_prefix):
        return None
    module = module[len(body_prefix) :]
    scope = "generator" if role == "generator" else "electra"
    if module.startswith("embeddings."):
        table = module[len("embeddings.") :]
        if table in _EMBEDDING_TABLES and leaf == "weight":
            return f"electra/embeddings/{table}", False
        if table == "LayerNorm":
            return _leaf("electra/embeddings/LayerNorm", leaf, module)
        return None
    if module == "embeddings_project":
        return _leaf(f"{scope}/embeddings_project", leaf, module)
    match = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)", module)
    if match:
        rest = match.group(2).replace(".", "/")
        return _leaf(f"{scope}/encoder/layer_{match.group(1)}/{rest}", leaf, module)
    return None


def map_to_official(items, role, accept=lambda official: True):
    """Hugging Face tensors under official names, transposed where the layouts differ.

    Args:
        items: iterable of `(reported_name, hf_name, array)`; `reported_name` is
            what an error shows (the name as stored in the file).
        role: str. "model", "discriminator" or "generator".
        accept: callable on the official name; a rejected mapping counts as unused.

    Returns:
        `({official name: float32 array}, [reported names with no counterpart])`.
    """
    weights, unused = {}, []
    for reported, name, value in items:
        mapped = hf_to_official(name, role)
        if mapped is None or not accept(mapped[0]):
            unused.append(reported)
            continue
        official, transpose = mapped
        value = np.asarray(value, np.float32)
        weights[official] = value.T if transpose else value
    return weights, unused


def official_to_hf(name, role):
    """The Hugging Face name of official weight `name` in a `role` checkpoint, or None.

    Returns:
        (hf_name, transpose) or None when the role has no such weight.

    Example:
        >>> from electra_tf.converting.hf_names import official_to_hf
        >>> official_to_hf("discriminator_predictions/dense_1/kernel", "discriminator")
        ('discriminator_predictions.dense_prediction.weight', True)
    """
    _check_role(role)
    body = "" if role == "model" else "electra."
    scope = "generator" if role == "generator" else "electra"
    if name == "generator_predictions/output_bias":
        return ("generator_lm_head.bias", False) if role == "generator" else None
    for hf_module, official in _HEADS.items():
        if name.startswith(official + "/") and name.count("/") == official.count("/") + 1:
            wanted = "generator" if official.startswith("generator") else "discriminator"
            if role != wanted:
                return None
            return _hf_leaf(hf_module, name.rpartition("/")[2])
    if name.startswith("electra/embeddings/"):
        rest = name[len("electra/embeddings/") :]
        if rest in _EMBEDDING_TABLES:
            return f"{body}embeddings.{rest}.weight", False
        return _hf_leaf(f"{body}embeddings.LayerNorm", rest.rpartition("/")[2])
    if not name.startswith(scope + "/"):
        return None
    module, _, leaf = name[len(scope) + 1 :].rpartition("/")
    module = re.sub(r"^encoder/layer_(\d+)/", r"encoder/layer/\1/", module).replace("/", ".")
    return _hf_leaf(body + module, leaf)


def _leaf(official_module, leaf, hf_module):
    if hf_module.endswith("LayerNorm"):
        names = {"weight": "gamma", "bias": "beta"}
        return (f"{official_module}/{names[leaf]}", False) if leaf in names else None
    if leaf == "weight":
        return f"{official_module}/kernel", True
    if leaf == "bias":
        return f"{official_module}/bias", False
    return None


def _hf_leaf(hf_module, official_leaf):
    names = {
        "kernel": ("weight", True),
        "bias": ("bias", False),
        "gamma": ("weight", False),
        "beta": ("bias", False),
    }
    leaf, transpose = names[official_leaf]
    return f"{hf_module}.{leaf}", transpose


def _check_role(role):
    if role not in ROLES:
        raise ValueError(f"Unknown `role={role!r}`. Choose one of {list(ROLES)}.")
