"""span_qa: one task kind, everything of it."""
