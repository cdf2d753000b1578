"""span_qa: extractive question answering over SQuAD-format files.

`kind` (`SpanQAKind`), `config` (its flags), `squad` (the files), `features` (windows), `metrics` (EM / F1),
`model` (`ElectraQuestionAnswerer`), `serving`, `hf_head`.
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
