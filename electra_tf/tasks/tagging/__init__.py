"""tagging: token classification (NER, chunking, POS) over CoNLL-column files.

`kind` (`TaggingKind`), `config` (its flags), `conll` (the files), `features` (windows), `metrics` (entity F1),
`model` (`ElectraTokenClassifier` and its loss), `serving`, `hf_head`.
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
