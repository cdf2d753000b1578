"""classification: sentence(-pair) classification and regression over GLUE / TSV / CSV files.

`kind` (`ClassificationKind`), `config` (its flags), `data` (the task files), `model` (`ElectraClassifier`),
`serving` (TF Serving, raw text in), `hf_head` (`convert --to hf`).
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
