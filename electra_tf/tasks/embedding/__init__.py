"""embedding: one vector per text for semantic search, trained on (query, positive[, negative]) rows.

`kind` (`EmbeddingKind`), `config` (its flags: pooling, loss scale, normalisation; `--passages`,
`--top_k`), `data` (the files), `model` (`ElectraEmbedder`), `loss` (multiple-negatives ranking),
`metrics` (recall@k, mrr@10), `serving`, `search` (`predict --passages`), `sentence_transformers`
(`convert --to hf`, and a sentence-transformers `--init` folder's own pooling, normalisation and length).
`description`: what the kind is, for its users (`finetune --help`, `predict --help`, the guides).
"""
