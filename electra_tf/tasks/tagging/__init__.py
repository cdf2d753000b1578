"""tagging: one task kind, everything of it."""
