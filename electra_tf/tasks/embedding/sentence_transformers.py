"""`convert --to hf` of an embedding model: a sentence-transformers folder (transformers' `ElectraModel` inside).

Beside `config.json`, `model.safetensors` and the tokenizer files (`vocab.txt`,
`tokenizer_config.json`) that every `--to hf` folder holds, it writes what
`SentenceTransformer(folder)` reads to put pooling and normalisation after the encoder,
in the classic layout that sentence-transformers 2 to 6 all load:

    modules.json                       Transformer -> Pooling (-> Normalize)
    sentence_bert_config.json          max_seq_length (the fine-tuning `seq_length`), do_lower_case false
    config_sentence_transformers.json  similarity_fn_name cosine
    1_Pooling/config.json              the vector's dimension and the pooling mode (mean or cls)
    2_Normalize/config.json            (a normalising model only)

`SentenceTransformer(folder).encode(texts)` then gives the model's own vectors (the tokenizer
lower-cases as the run's vocabulary says, through `tokenizer_config.json`).
"""

import json

MODULES = "sentence_transformers.models."


def hf_head(model, settings):
    """`(architecture, head tensors, config entries, files)`: `ElectraModel`, no head tensor, the folder's
    sentence-transformers files `{relative path: text}`."""
    modules = [("Transformer", ""), ("Pooling", "1_Pooling")] + ([("Normalize", "2_Normalize")]
                                                                  if model.normalize else [])
    files = {
        "modules.json": [{"idx": i, "name": str(i), "path": path, "type": MODULES + name}
                         for i, (name, path) in enumerate(modules)],
        "sentence_bert_config.json": {"max_seq_length": int(settings.get("seq_length", 128)),
                                      "do_lower_case": False},
        "config_sentence_transformers.json": {"similarity_fn_name": "cosine", "prompts": {},
                                              "default_prompt_name": None},
        "1_Pooling/config.json": {
            "word_embedding_dimension": int(model.encoder.hidden_dim),
            "pooling_mode_cls_token": model.pooling == "cls",
            "pooling_mode_mean_tokens": model.pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    }
    if model.normalize:
        files["2_Normalize/config.json"] = {}
    return "ElectraModel", {}, {}, {path: json.dumps(value, indent=2) + "\n" for path, value in files.items()}
