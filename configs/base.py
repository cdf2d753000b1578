"""ELECTRA-Base (paper Table 6): 110M parameters, 766k steps at batch 256, seq 512."""

CONFIG = dict(
    embedding_dim=768,
    hidden_dim=768,
    num_layers=12,
    num_heads=12,
    intermediate_dim=3072,
    generator_hidden_fraction=1 / 3,
    mask_prob=0.15,
    learning_rate=2e-4,
    warmup_steps=10000,
    batch_size=256,
    seq_length=512,
    train_steps=766000,
)
