"""multiple_choice: one task kind, everything of it."""
