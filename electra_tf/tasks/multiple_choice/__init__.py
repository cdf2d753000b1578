"""multiple_choice: a question and its choices (SWAG CSVs or JSON Lines), one score per choice.

`kind` (`MultipleChoiceKind`), `data` (the files), `model` (`ElectraMultipleChoice`), `serving`.
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
