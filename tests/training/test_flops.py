"""Analytic FLOP counts: a hand calculation, the peers' workload.py, and the paper's total."""

import importlib.util
import pathlib

import pytest

from electra_tf.config import get_config
from electra_tf.training import flops

PEERS_WORKLOAD = pathlib.Path(__file__).resolve().parents[3] / "shared" / "bench" / "peers" / "workload.py"


def test_small_by_hand():
    # ELECTRA-Small: S=128, E=128, H=256, L=12, F=1024, V=30522; generator Hg=64, Fg=256; P=19 slots.
    gen_project = 2 * 128 * 128 * 64  # 128 tokens x (E -> Hg)
    gen_layer_per_token = 4 * 2 * 64 * 64 + 2 * 2 * 64 * 256 + 2 * 2 * 128 * 64  # QKVO, FFN, attention
    gen_layers = 12 * 128 * gen_layer_per_token
    gen_head = 19 * (2 * 64 * 128 + 2 * 128 * 30522)  # dense Hg -> E, tied E -> V
    disc_project = 2 * 128 * 128 * 256
    disc_layer_per_token = 4 * 2 * 256 * 256 + 2 * 2 * 256 * 1024 + 2 * 2 * 128 * 256
    disc_layers = 12 * 128 * disc_layer_per_token
    disc_head = 128 * (2 * 256 * 256 + 2 * 256)  # dense H -> H, dense H -> 1
    assert (gen_project, gen_layers, gen_head) == (2_097_152, 201_326_592, 148_770_304)
    assert (disc_project, disc_layers, disc_head) == (8_388_608, 2_617_245_696, 16_842_752)
    forward = gen_project + gen_layers + gen_head + disc_project + disc_layers + disc_head
    assert forward == 2_994_671_104

    parts = flops.breakdown(get_config("small"))
    assert parts == {
        "generator_embeddings_project": gen_project,
        "generator_layers": gen_layers,
        "generator_head": gen_head,
        "discriminator_embeddings_project": disc_project,
        "discriminator_layers": disc_layers,
        "discriminator_head": disc_head,
        "forward": forward,
        "train": 3 * forward,
    }
    assert flops.train_flops_per_sequence(get_config("small")) == 8_984_013_312


def test_matches_peers_workload():
    if not PEERS_WORKLOAD.exists():
        pytest.skip(f"{PEERS_WORKLOAD} not available")
    spec = importlib.util.spec_from_file_location("peers_workload", PEERS_WORKLOAD)
    workload = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workload)
    assert flops.train_flops_per_sequence(get_config("small")) == workload.TRAIN_FLOPS_PER_SEQ
    # workload.py's "generator head over all positions" variant = num_predictions = seq_length.
    full = workload.flops_per_sequence(n_pred=128)["train"]
    assert flops.train_flops_per_sequence(get_config("small", max_predictions_per_seq=128)) == full


def test_objectives():
    small = get_config("small")
    electra = flops.breakdown(small)
    mlm_head_per_position = 2 * 256 * 128 + 2 * 128 * 30522  # discriminator-sized: H -> E, tied E -> V
    assert flops.breakdown(small.replace(objective="electra_15")) == electra
    replace = flops.breakdown(small.replace(objective="replace_mlm"))
    assert replace["discriminator_head"] == 19 * mlm_head_per_position
    assert replace["generator_head"] == electra["generator_head"]
    all_tokens = flops.breakdown(small.replace(objective="all_tokens_mlm"))
    assert all_tokens["discriminator_head"] == 128 * mlm_head_per_position
    mlm = flops.breakdown(small.replace(objective="mlm"))
    assert mlm["generator_layers"] == mlm["generator_head"] == mlm["generator_embeddings_project"] == 0
    assert mlm["forward"] == electra["discriminator_embeddings_project"] + electra["discriminator_layers"] + (
        19 * mlm_head_per_position
    )
    # Generator width, heads and depth follow the config.
    wider = flops.breakdown(small.replace(generator_hidden_fraction=0.5))
    assert wider["generator_layers"] == 12 * 128 * (4 * 2 * 128**2 + 2 * 2 * 128 * 512 + 2 * 2 * 128 * 128)


def test_paper_total_for_electra_small():
    """The paper's 1.4e18 FLOPs for ELECTRA-Small (1M steps x batch 128 x seq 128).

    Our matmul-only count (3 x forward, sparse lookups) gives 1.150e18, 17.9 % under
    1.4e18: a different convention, not a missing part. The paper's script
    (google-research/electra flops_computation.py, `electra_small` entry) counts
    training as 2 x forward, but counts each encoder's embedding lookup as a dense
    one-hot matmul (2 E V per token, in both encoders), element-wise ops, and the
    output softmax at 20 of 128 positions. That convention, re-derived in
    `paper_train_flops_per_sequence`, prints 1.2937e18 (7.6 % under 1.4e18; checked
    against the script itself). The 1.4e18 in Table 1 is the script's BERT-Small
    figure (1.42e18; Table 1's "6.25 % trained = 8.9e16" also implies 1.42e18), the
    compute ELECTRA-Small was matched to.
    """
    small = get_config("small")
    sequences = 1_000_000 * 128
    ours = flops.train_flops_per_sequence(small) * sequences
    paper = flops.paper_train_flops_per_sequence(small) * sequences
    assert ours == pytest.approx(1.150e18, rel=1e-3)
    assert abs(ours / 1.4e18 - 1) > 0.10  # documented above: a convention gap
    assert paper == pytest.approx(1.293743798272e18, rel=1e-12)  # flops_computation.py's number
    assert paper == pytest.approx(1.4e18, rel=0.10)

    # The gap, term by term (train FLOPs per sequence, in the paper's 2 x convention).
    dense_lookups = 2 * 2 * (2 * 128 * 30522) * 128  # 2 x (fwd+bwd) x 2 encoders x 2EV x S
    assert dense_lookups == pytest.approx(4.0e9, rel=1e-3)
    our_matmuls_at_2x = 2 * flops.breakdown(small)["forward"]
    other = flops.paper_train_flops_per_sequence(small) - our_matmuls_at_2x - dense_lookups
    assert 0 < other / flops.paper_train_flops_per_sequence(small) < 0.06  # element-wise ops, 20 vs 19 slots

    # The paper's convention reproduces its ELECTRA-Base figure (6.4e19, 766k steps x 256 x 512).
    base = get_config("base")
    assert flops.paper_train_flops_per_sequence(base) * 766_000 * 256 == pytest.approx(6.4e19, rel=0.01)
    # With the generator's softmax over every position the paper's count would be 1.52e18.
    assert flops.paper_train_flops_per_sequence(small, output_frac=1.0) * sequences == pytest.approx(
        1.516e18, rel=1e-3
    )
    with pytest.raises(ValueError, match="objective='mlm'"):
        flops.paper_train_flops_per_sequence(small.replace(objective="mlm"))
