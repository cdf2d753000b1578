"""embedding: one task kind, everything of it."""
