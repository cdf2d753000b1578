"""ElectraQuestionAnswerer: the beam equals the training-path logits, masking, loss, save/load."""

import keras
import numpy as np
import pytest

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer


def tiny(head="official", answerable=True, **kwargs):
    keras.utils.set_random_seed(0)
    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=32)
    return ElectraQuestionAnswerer(encoder, head=head, answerable=answerable, joint_hidden_dim=8, **kwargs)


def inputs(batch=2, length=12):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 50, (batch, length)).astype("int32")
    segments = np.zeros((batch, length), "int32")
    segments[:, 4:] = 1
    mask = np.ones((batch, length), "int32")
    mask[1, 9:] = 0
    segments[1, 9:] = 0
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("head", ["official", "simple"])
def test_beam_matches_the_training_logits(head):
    model = tiny(head, start_n_top=4, end_n_top=3)
    x = inputs()
    beam = {k: np.asarray(v) for k, v in model(x).items()}
    for i in range(4):
        starts = beam["start_top_index"][:, i]
        train = model(dict(x, start_positions=starts))
        start_lp, end_lp = log_softmax(np.asarray(train["start_logits"])), log_softmax(np.asarray(train["end_logits"]))
        np.testing.assert_allclose(beam["start_top_log_probs"][:, i], start_lp[np.arange(2), starts], atol=1e-4)
        expected = -np.sort(-end_lp, axis=-1)[:, :3]
        np.testing.assert_allclose(beam["end_top_log_probs"][:, i], expected, atol=1e-4)
        np.testing.assert_allclose(beam["answerable_logit"], np.asarray(train["answerable_logit"]), atol=1e-5)
    # only context pieces and [CLS] can be predicted
    allowed = (x["segment_ids"] * x["padding_mask"]).astype(bool)
    allowed[:, 0] = True
    for row in range(2):
        assert allowed[row, beam["start_top_index"][row]].all()
        assert allowed[row, beam["end_top_index"][row]].all()


def test_beam_wider_than_the_sequence():
    model = tiny(start_n_top=20, end_n_top=20)
    out = model(inputs(length=6))
    assert tuple(out["end_top_index"].shape) == (2, 20, 20)
    assert float(np.asarray(out["start_top_log_probs"])[:, -1].max()) <= -1e4 + 1


def test_loss_is_the_reference_loss():
    model = tiny()
    x = inputs()
    y = {"start_logits": np.array([5, 0]), "end_logits": np.array([7, 0]), "answerable_logit": np.array([0., 1.])}
    loss, weights = model.losses_and_weights()
    model.compile(optimizer="sgd", loss=loss, loss_weights=weights)
    out = model(dict(x, start_positions=y["start_logits"]))
    s, e = log_softmax(np.asarray(out["start_logits"])), log_softmax(np.asarray(out["end_logits"]))
    a = np.asarray(out["answerable_logit"])
    bce = np.maximum(a, 0) - a * y["answerable_logit"] + np.log1p(np.exp(-np.abs(a)))
    expected = np.mean((-s[[0, 1], [5, 0]] - e[[0, 1], [7, 0]]) / 2 + 0.5 * bce)
    got = model.evaluate(dict(x, start_positions=y["start_logits"]), y, verbose=0, return_dict=True)["loss"]
    assert got == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("head", ["official", "simple"])
def test_save_and_load(tmp_path, head):
    model = tiny(head, answerable=head == "official")
    x = inputs()
    before = model(x)
    model.save(tmp_path / "qa.keras")
    loaded = keras.saving.load_model(tmp_path / "qa.keras", compile=False)
    assert loaded.get_config()["head"] == head
    for name, value in loaded(x).items():
        np.testing.assert_allclose(np.asarray(value), np.asarray(before[name]), atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`head` must be one of"):
        tiny(head="xlnet")
    with pytest.raises(ValueError, match="start_n_top"):
        tiny(start_n_top=0)


def test_a_loss_saved_by_an_earlier_version_reads_its_target():
    """A model file of an earlier version names the loss's target `kind`: it loads as that target."""
    from electra_tf.tasks.span_qa.model import GlobalMeanLoss

    config = GlobalMeanLoss("binary").get_config()
    config["kind"] = config.pop("target")
    loss = GlobalMeanLoss.from_config(config)
    logits, labels = np.array([0.3, -1.2], "float32"), np.array([1.0, 0.0], "float32")
    expected = np.mean(np.log1p(np.exp(-logits)) * labels + np.log1p(np.exp(logits)) * (1 - labels))
    assert loss.target == "binary"
    np.testing.assert_allclose(float(loss(labels, logits)), expected, rtol=1e-6)
