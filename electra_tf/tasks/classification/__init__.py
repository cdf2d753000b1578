"""classification: one task kind, everything of it."""
