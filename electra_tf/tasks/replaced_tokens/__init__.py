"""replaced_tokens: the served-only kind "rtd": a pre-trained discriminator's replaced-token scores per word.

`kind` (`ReplacedTokenKind`), `config` (its `predict` flags), `serving` (TF Serving, `export --format rtd`).
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
