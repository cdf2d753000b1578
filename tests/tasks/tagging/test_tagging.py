"""Tagging fine-tuning: the masked loss against PyTorch, batch trimming, evaluation against seqeval,
the end-to-end run and the CLI (named CoNLL-2003 task and generic CoNLL files)."""

import doctest
import json
import os

import keras
import numpy as np
import pytest

from electra_tf.tasks.tagging import data as tagging_data, kind as tagging
from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks.tagging.kind import tagging_dataset
from electra_tf.tasks.tagging.model import MaskedSparseCrossEntropy
from electra_tf.tasks.tagging.features import IGNORE_INDEX
from electra_tf.tasks import finetune as run_trials
from helpers import run_python
from toy_tasks import independent_dev_tags, write_conll

# seqeval's zero-division warnings; the slow tier: together these tests take minutes
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.large]
def test_masked_loss_equals_pytorch_cross_entropy_with_ignore_index():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(0)
    logits = rng.randn(4, 7, 5).astype("float32")
    labels = rng.randint(0, 5, (4, 7)).astype("int32")
    labels[rng.rand(4, 7) < 0.5] = IGNORE_INDEX
    ours = float(MaskedSparseCrossEntropy()(labels, logits))
    reference = torch.nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX)(
        torch.tensor(logits).reshape(-1, 5), torch.tensor(labels, dtype=torch.long).reshape(-1)).item()
    assert ours == pytest.approx(reference, rel=1e-5)
    assert float(MaskedSparseCrossEntropy()(np.full((2, 3), IGNORE_INDEX), logits[:2, :3])) == 0.0
    clone = MaskedSparseCrossEntropy.from_config(MaskedSparseCrossEntropy().get_config())
    assert float(clone(labels, logits)) == pytest.approx(ours, rel=1e-6)


def test_batches_are_cut_to_the_longest_row_without_changing_labelled_logits():
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.tasks.tagging.model import ElectraTokenClassifier

    features = {name: np.zeros((3, 64), np.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
    features["label_ids"] = np.full((3, 64), IGNORE_INDEX, np.int32)
    for row, length in enumerate((5, 19, 9)):
        features["token_ids"][row, :length] = np.arange(10, 10 + length)
        features["padding_mask"][row, :length] = 1
        features["label_ids"][row, 1:length - 1] = 1
    inputs, labels = next(iter(tagging_dataset(features, batch_size=3)))
    assert inputs["token_ids"].shape == (3, 19) and labels.shape == (3, 19)  # the longest row
    under_xla, xla_labels = next(iter(tagging_dataset(features, batch_size=3, multiple=16)))
    assert under_xla["token_ids"].shape == (3, 32) and xla_labels.shape == (3, 32)  # 19 rounded up to 16s
    np.testing.assert_array_equal(xla_labels[:, :19], labels)
    np.testing.assert_array_equal(under_xla["padding_mask"][:, 19:], 0)
    tagger = ElectraTokenClassifier(ElectraEncoder(vocab_size=60, num_layers=1, num_heads=2, hidden_dim=16,
                                                   embedding_dim=16, intermediate_dim=32,
                                                   max_sequence_length=64), num_labels=3)
    full = tagger({k: features[k] for k in tagging.INPUTS}, training=False).numpy()
    cut = tagger(under_xla, training=False).numpy()
    labelled = features["label_ids"][:, :32] != IGNORE_INDEX
    np.testing.assert_allclose(cut[labelled], full[:, :32][labelled], atol=1e-5)
    np.testing.assert_array_equal(tagging.predict_piece_labels(tagger, features)[:, :32][labelled],
                                  full.argmax(-1)[:, :32][labelled])


@pytest.mark.parametrize("jit_compile, length", [(False, 19), (True, 32)])
def test_the_kinds_training_batches_are_rounded_up_to_16_only_under_xla(jit_compile, length):
    """Without XLA a batch is cut at its longest row; an XLA-compiled step sees lengths of 16s (one compilation each)."""
    features = {name: np.zeros((3, 64), np.int32) for name in ("token_ids", "segment_ids", "padding_mask", "label_ids")}
    features["padding_mask"][1, :19] = 1
    kind = object.__new__(tagging.TaggingKind)  # the kind's own `train_dataset`, without reading a task
    kind.config = FinetuneConfig(task="conll2003", batch_size=3, jit_compile=jit_compile)
    kind.features = {"train": features}
    inputs, labels = next(iter(kind.train_dataset(seed=None, epoch=0, skip=0)))
    assert inputs["token_ids"].shape == (3, length) and labels.shape == (3, length)


def test_tagging_learns_and_scores_as_seqeval(run_dir, tmp_path):
    from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score

    from electra_tf.tasks.tagging import conll
    from electra_tf.finetuning.recipe import create_optimizer

    data = write_conll(tmp_path / "data")
    config = FinetuneConfig(task="toy_ner", task_kind="tagging", data_dir=data, init=run_dir,
                            output_dir=str(tmp_path / "out"), epochs=5, batch_size=16, learning_rate=3e-3,
                            seq_length=32, num_trials=2, verbose=0)
    results = run_trials(config)
    out = tmp_path / "out"
    assert {"results.json", "token_classifier.keras", "vocab.txt", "finetune_config.json"} <= set(os.listdir(out))
    assert results["labels"] == ["O", "B-LOC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]
    assert [t["seed"] for t in results["trials"]] == [0, 1]
    saved = json.loads((out / "results.json").read_text())
    assert saved["metric"] == "entity_f1" and saved["summary"]["dev_entity_f1"]["max"] == max(
        t["dev"]["entity_f1"] for t in results["trials"])
    best = results["trials"][results["best_trial"]]
    assert best["dev"]["entity_f1"] > 0.4  # learned: a constant-O tagger scores 0
    assert best["train_loss"][-1] < best["train_loss"][0]
    # The best trial's saved model, scored by seqeval on tags read independently of the package.
    model = keras.saving.load_model(out / "token_classifier.keras")
    dev = conll.read_conll(os.path.join(data, "dev.txt"))
    true = [list(s.tags) for s in dev]
    predicted = independent_dev_tags(model, str(out / "vocab.txt"), dev, results["labels"])
    assert best["dev"]["entity_f1"] == pytest.approx(f1_score(true, predicted), abs=1e-9)
    assert best["dev"]["entity_precision"] == pytest.approx(precision_score(true, predicted), abs=1e-9)
    assert best["dev"]["entity_recall"] == pytest.approx(recall_score(true, predicted), abs=1e-9)
    assert best["dev"]["token_accuracy"] == pytest.approx(accuracy_score(true, predicted), abs=1e-9)
    config_file = json.loads((out / "finetune_config.json").read_text())
    assert config_file["kind"] == "tagging" and config_file["label_names"] == results["labels"]
    # Layer-wise decay as for classification: head 1, embeddings decay^(L + 2).
    optimizer = create_optimizer(config, num_layers=2, total_steps=10)
    optimizer.build(model.trainable_variables)
    multipliers = optimizer.multipliers()
    assert multipliers[model.head.kernel.path] == 1.0
    assert multipliers[model.encoder.embeddings.token_embedding.embeddings.path] == pytest.approx(0.8 ** 4)


def test_pos_tags_are_scored_by_token_accuracy(run_dir, tmp_path):
    data = write_conll(tmp_path / "data", splits=(("train", 32), ("dev", 16)), columns="{w} {t} X")
    config = FinetuneConfig(task="toy_pos", task_kind="tagging", tag_scheme="none", label_column="1",
                            data_dir=data, init=run_dir, output_dir=str(tmp_path / "out"), epochs=1,
                            batch_size=16, seq_length=16, verbose=0)
    results = run_trials(config)
    assert results["metric"] == "token_accuracy" and set(results["trials"][0]["dev"]) == {"token_accuracy"}
    assert results["trials"][0]["dev_per_type"] is None


def test_cli_generic_conll_files_under_mirrored(run_dir, tmp_path):
    """`--task_kind tagging --token_column 0 --label_column -1` over 2 mirrored logical CPUs."""
    data = write_conll(tmp_path / "data", splits=(("train", 32), ("dev", 16)))
    out = tmp_path / "out"
    result = run_python(["-m", "electra_tf.finetune", "--task", "toy_ner", "--task_kind", "tagging",
                         "--token_column", "0", "--label_column", "-1", "--data_dir", data, "--init", run_dir,
                         "--output_dir", str(out), "--epochs", "1", "--batch_size", "8",
                         "--seq_length", "16", "--strategy", "mirrored", "--num_cpu_devices", "2",
                         "--verbose", "0"])
    assert "trial 0 seed 0: dev entity_f1 = " in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["kind"] == "tagging" and results["hparams"]["strategy"] == "mirrored"
    assert (out / "token_classifier.keras").exists()


def test_cli_conll2003(run_dir, conll2003_dir, tmp_path):
    """`--task conll2003` on the real files (first sentences only): IOB2 tags, nine labels, entity F1."""
    out = tmp_path / "out"
    result = run_python(["-m", "electra_tf.finetune", "--task", "conll2003", "--data_dir", conll2003_dir,
                         "--init", run_dir, "--output_dir", str(out), "--epochs", "1", "--batch_size", "16",
                         "--seq_length", "64", "--train_limit", "64", "--dev_limit", "32",
                         "--verbose", "0"])
    assert "dev entity_f1: mean" in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    assert results["num_train_sentences"] == 64 and results["num_dev_sentences"] == 32
    assert set(results["trials"][0]["dev"]) == {"entity_f1", "entity_precision", "entity_recall", "token_accuracy"}


def test_docstring_examples():
    result = doctest.testmod(tagging_data, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_sentence_longer_than_max_seq_length_is_windowed_and_named(bert_vocab, tmp_path):
    """Bad input, documented behaviour: a long sentence is no error; the run names its file and line and
    every word is trained on and predicted once (windows)."""
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.tagging import conll
    from electra_tf.tasks.tagging.features import build_features, tokenize_words, word_predictions

    words = ["John", "went", "to", "Paris"] * 10
    text = "short O\nline O\n\n" + "".join(f"{w} {'B-PER' if w == 'John' else 'O'}\n" for w in words)
    path = tmp_path / "train.txt"
    path.write_text(text)
    sentences = conll.read_conll(str(path))
    tokenizer = WordPieceTokenizer(bert_vocab)
    pieces = tokenize_words(tokenizer, [s.words for s in sentences])
    message = tagging.long_sentences(sentences, pieces, 16)
    assert message.startswith("1 sentence(s) longer than seq_length - 2 = 14 pieces are split")
    assert f"the first at {path}:4 (40 pieces)" in message
    assert tagging.long_sentences(sentences, pieces, 64) is None
    labels = conll.encode_labels(sentences, ["O", "B-PER"])
    features = build_features(tokenizer, pieces, labels, 16)
    assert len(features["token_ids"]) > 3
    got = word_predictions(features["label_ids"], features, [len(s.words) for s in sentences])
    assert all(np.array_equal(g, l) for g, l in zip(got, labels))
