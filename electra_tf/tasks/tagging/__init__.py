"""tagging: token classification (NER, chunking, POS) over CoNLL-column files.

`kind` (`TaggingKind`), `config` (its flags), `conll` (the files), `features` (windows), `metrics` (entity F1),
`model` (`ElectraTokenClassifier` and its loss), `serving`, `hf_head`.
"""
