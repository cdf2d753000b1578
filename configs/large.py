"""ELECTRA-Large (paper Table 6): 335M parameters, 400k steps at batch 2048, seq 512."""

CONFIG = dict(
    embedding_dim=1024,
    hidden_dim=1024,
    num_layers=24,
    num_heads=16,
    intermediate_dim=4096,
    generator_hidden_fraction=0.25,
    mask_prob=0.25,
    learning_rate=2e-4,
    warmup_steps=10000,
    batch_size=2048,
    seq_length=512,
    train_steps=400000,
)
