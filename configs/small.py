"""ELECTRA-Small (paper Table 6): 14M parameters, 1M steps at batch 128, seq 128."""

CONFIG = dict(
    embedding_dim=128,
    hidden_dim=256,
    num_layers=12,
    num_heads=4,
    intermediate_dim=1024,
    generator_hidden_fraction=0.25,
    mask_prob=0.15,
    learning_rate=5e-4,
    warmup_steps=10000,
    batch_size=128,
    seq_length=128,
    train_steps=1000000,
)
