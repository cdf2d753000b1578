"""The embedding task kind: sentence / passage vectors for semantic search (`kind.EmbeddingKind`)."""
