"""Tiny: minutes on a laptop CPU. Not a paper size; for smoke runs, tests and demos."""

CONFIG = dict(
    vocab_size=8192,  # the demo vocab; replaced by the size of `vocab_file` when given
    embedding_dim=64,
    hidden_dim=128,
    num_layers=2,
    num_heads=2,
    intermediate_dim=512,
    max_sequence_length=128,
    generator_hidden_fraction=0.25,  # 32 wide, 1 head
    batch_size=32,
    learning_rate=5e-4,
    warmup_steps=50,
    train_steps=300,
    save_checkpoints_steps=100,
    log_steps=10,
)
