"""replaced_tokens: one task kind, everything of it."""
