"""A tiny ELECTRA learns from real text: MLM accuracy and discriminator AUC rise far above chance."""

import pytest

from electra_tf.config import get_config
from electra_tf.data.pretraining_dataset import pretraining_dataset
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.training.pretraining import resolve_data, train


@pytest.mark.large
def test_tiny_model_learns_on_the_demo_corpus(tmp_path, demo_data):
    config = resolve_data(get_config("tiny", data=demo_data["data"], vocab_file=demo_data["vocab_file"],
                                     train_steps=300, save_checkpoints_steps=300), demo_dir=None)

    def evaluate(model):
        data = pretraining_dataset(config.data, 32, config.seq_length, config.vocab_size, seed=1)
        return model.evaluate(data, steps=20, verbose=0, return_dict=True)

    untrained = build_pretrainer(config)
    untrained.compile()
    before = evaluate(untrained)
    after = evaluate(train(config, str(tmp_path / "run"), verbose=2))
    print("before", before, "\nafter", after)
    # Chance: MLM accuracy ~1/vocab_size, AUC 0.5. Measured: MLM ~0.08, AUC ~0.8 after 300 steps.
    assert before["masked_lm_accuracy"] < 0.01 and abs(before["disc_auc"] - 0.5) < 0.1
    assert after["masked_lm_accuracy"] > 0.05
    assert after["disc_auc"] > 0.7
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.5

    # TensorBoard got the official metrics, the learning rate and the throughput.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "run" / "logs" / "train")).Reload()
    tags = set(events.Tags()["tensors"]) | set(events.Tags()["scalars"])
    for name in ("disc_auc", "masked_lm_accuracy", "learning_rate", "sequences_per_second"):
        assert any(name in tag for tag in tags), (name, sorted(tags))
