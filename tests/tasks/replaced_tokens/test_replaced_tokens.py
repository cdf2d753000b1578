"""Replaced-token scores, run as a user runs them (`python -m electra_tf.predict --init <pre-trained ELECTRA>`,
`python -m electra_tf.export --format rtd`): equal to transformers' `ElectraForPreTraining` on a folder that
transformers wrote; word offsets that slice every word out of a unicode stress file; the export serving what
`predict` gives from the run (read back in a process that imports only TensorFlow and tensorflow-text); a
trained discriminator spotting its own generator's replacements on held-out text (AUC from its definition);
bad input refused in one `error:` line, nothing written."""

import json
import os
import pathlib
import shutil

import numpy as np
import pytest

from helpers import checksums, error_line, run_python, shared_data, tensorboard_values
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

TOLERANCE = 1e-4
STEPS = 100  # of the tiny preset on the demo corpus, for the held-out AUC (measured: 0.70, words 0.77)
MIN_AUC = 0.6
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Replaced-token detection spots words a generator swapped in, unbelievably quickly!",
    "",
    "Café déjà vu: naïve résumés in Zürich, 1.5% of U.S. exports.",
]
# Every line is one text; offsets must slice each word out of it (Python `str` indexing, code points).
STRESS = [
    "Accents: crème brûlée, Ångström, São Paulo, Dvořák, façade.",
    "CJK: 東京都は日本の首都です。北京，上海。한국어 텍스트도 있다.",
    "Emoji: 👍🏽 family 👨‍👩‍👧 flags 🇫🇷🇯🇵 and a smile 😀!",
    "Combining marks: e\u0301le\u0300ve, n\u0303, a\u030a, Z\u0335\u0321a\u0338l\u0334g\u0335o\u0337.",
    "RTL: שלום עולם and مرحبا بالعالم, mixed ‏right-to-left‏ marks.",
    "Zero-width: zero\u200bwidth\u200cnon\u200djoiner\ufeffbom and a soft\u00adhyphen.",
    "Tabs\tbetween\t\twords\tand  double  spaces , and\u00a0no-break\u2003em space.",
    "Control \x01 and \x7f characters, a lone \ufffd replacement.",
    "Long: " + " ".join(f"word{i} is here," for i in range(60)),  # more pieces than one window: windowed
    "One overlong word: " + ".".join(["ab"] * 90) + " ends it.",  # 179 pieces in one word: its tail unscored
]
# Prose written for the check (no 6-word run of it is in the demo corpus the run trains on), one text a line.
HELD_OUT = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "held_out_prose.txt"

# Runs in a fresh interpreter: the served SavedModel's outputs, from TensorFlow and tensorflow-text alone.
SERVED = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, texts, out = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
signatures = tf.saved_model.load(path).signatures
decode = np.vectorize(bytes.decode, otypes=[str])
result = {}
for name, args in (("serving_default", {"text": tf.constant(texts)}),
                   ("serve_corrupted", {"text": tf.constant(texts), "seed": tf.constant([7] * len(texts), tf.int64)})):
    values = signatures[name](**args)
    result[name] = {k: (decode(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist() for k, v in values.items()}
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
json.dump(result, open(out, "w"))
"""


def predict(*args, check=True):
    return run_python(["-m", "electra_tf.predict", *map(str, args)], check=check)


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def auc_by_definition(labels, scores):
    """P(a replaced piece scores above a kept one), ties half: every pair compared."""
    labels, scores = np.asarray(labels, bool), np.asarray(scores, float)
    positive, negative = scores[labels][:, None], scores[~labels][None, :]
    return float(np.mean((positive > negative) + 0.5 * (positive == negative)))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A pre-training run (random weights, one checkpoint), and transformers-written HF folders."""
    import keras
    import torch
    import transformers

    from helpers import make_run_dir
    from electra_tf import run_files
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.sources.named_checkpoint import NamedCheckpoint

    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    root = tmp_path_factory.mktemp("rtd")
    run = make_run_dir(root / "run", vocab, seed=3, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                       intermediate_dim=64)
    keras.utils.set_random_seed(3)
    pretrainer = build_pretrainer(run_files.read_config(run))
    NamedCheckpoint(pretrainer).checkpoint.write(os.path.join(run, run_files.CHECKPOINT_DIR, "ckpt-1"))
    with open(os.path.join(run, run_files.CHECKPOINT_DIR, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-1"\n')

    # transformers writes the Hugging Face folders itself. Its initialiser (std 0.02) leaves every probability
    # near 0.5: the weights get noise, and the head's output is centred and spread (logit std 2 on random ids)
    # so that the probabilities cover (0, 1).
    torch.manual_seed(0)
    common = dict(vocab_size=30522, embedding_size=16, num_hidden_layers=2, max_position_embeddings=128,
                  hidden_act="gelu")
    hf = {}
    for name, cls, sizes in (("discriminator", transformers.ElectraForPreTraining,
                              dict(hidden_size=32, num_attention_heads=2, intermediate_size=64)),
                             ("generator", transformers.ElectraForMaskedLM,
                              dict(hidden_size=16, num_attention_heads=1, intermediate_size=32))):
        model = cls(transformers.ElectraConfig(**common, **sizes)).eval()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(0.3 * torch.randn(parameter.shape))
            if name == "discriminator":
                logits = model(input_ids=torch.randint(1000, 30000, (8, 24))).logits
                head = model.discriminator_predictions.dense_prediction
                head.weight.mul_(2.0 / logits.std())
                head.bias.sub_(logits.mean()).mul_(2.0 / logits.std())
        folder = root / f"hf_{name}"
        model.save_pretrained(folder, safe_serialization=True)
        shutil.copyfile(vocab, folder / "vocab.txt")
        hf[name] = (str(folder), model)
    return {"run": run, "vocab": vocab, "hf": hf, "root": root}


@pytest.mark.large
def test_scores_of_an_hf_electra_for_pretraining_equal_transformers(models, tmp_path):
    import torch

    folder, model = models["hf"]["discriminator"]
    text = write_lines(tmp_path / "texts.txt", TEXTS)
    out = tmp_path / "scores.jsonl"
    predict("--init", f"hf:{folder}", "--input", text, "--output_file", out)
    got = records(out)
    assert [r["line"] for r in got] == [1, 2, 3, 4] and got[2] == {"line": 3, "skipped": "blank line"}
    vocab = {token: i for i, token in enumerate(open(models["vocab"], encoding="utf-8").read().splitlines())}
    spread = []
    for record in (r for r in got if "skipped" not in r):
        pieces = [piece for word in record["words"] for piece in word["pieces"]]
        ids = torch.tensor([[vocab["[CLS]"], *(vocab[p] for p in pieces), vocab["[SEP]"]]])
        with torch.no_grad():
            expected = torch.sigmoid(model(input_ids=ids, attention_mask=torch.ones_like(ids),
                                           token_type_ids=torch.zeros_like(ids)).logits)[0, 1:-1].numpy()
        scores = [p for word in record["words"] for p in word["piece_p_replaced"]]
        np.testing.assert_allclose(scores, expected, atol=TOLERANCE, rtol=0)
        for word in record["words"]:  # a word's probability: the highest of its pieces'
            assert word["p_replaced"] == max(word["piece_p_replaced"])
        assert record["max_p_replaced"] == max(w["p_replaced"] for w in record["words"])
        assert record["num_flagged"] == sum(w["p_replaced"] > 0.5 for w in record["words"])
        spread += scores
    assert np.std(spread) > 0.1, "probabilities too alike to tell a wrong token from a right one"


@pytest.mark.large
def test_offsets_slice_every_word_out_of_a_unicode_stress_file(models, tmp_path):
    lines = STRESS + ["", "last line"]
    path = write_lines(tmp_path / "stress.txt", lines)
    out = tmp_path / "stress.jsonl"
    predict("--init", models["run"], "--input", path, "--input_format", "text", "--output_file", out)
    got = records(out)
    assert [r["line"] for r in got] == list(range(1, len(lines) + 1))
    unscored = 0
    for line, record in zip(lines[:len(STRESS)], got):
        assert record["text"] == line
        assert record["words"], line
        previous_end = 0
        for word in record["words"]:
            assert line[word["start"]:word["end"]] == word["text"], (line, word)
            assert word["start"] >= previous_end and not word["text"].isspace()
            previous_end = word["end"]
            assert len(word["pieces"]) == len(word["piece_p_replaced"]) >= 1
            scored = [p for p in word["piece_p_replaced"] if p is not None]
            assert scored and word["p_replaced"] == max(scored)
            unscored += len(word["piece_p_replaced"]) - len(scored)
        # Every character outside the words is whitespace (or an invisible character no word holds).
        covered = set()
        for word in record["words"]:
            covered.update(range(word["start"], word["end"]))
        assert all(c.isspace() or not c.isprintable() or i in covered for i, c in enumerate(line)), line
    assert len(got[8]["words"]) == 2 + 60 * 4  # "Long", ":" and 60 x "wordN is here ,": every word scored
    assert unscored > 0  # the overlong word's pieces past its window
    assert got[-2] == {"line": len(lines) - 1, "skipped": "blank line"}
    # JSON Lines: the same text, its id written back.
    jsonl = write_lines(tmp_path / "stress_input.jsonl", [json.dumps({"text": STRESS[0], "id": 7})])
    predict("--init", models["run"], "--input", jsonl, "--output_file", tmp_path / "again.jsonl")
    again = records(tmp_path / "again.jsonl")
    assert again[0]["id"] == "7" and again[0]["words"] == got[0]["words"]


@pytest.mark.large
def test_the_export_serves_what_predict_gives_from_the_run(models, tmp_path):
    run = models["run"]
    text = write_lines(tmp_path / "texts.txt", TEXTS + STRESS[:3])
    base = tmp_path / "serving"
    result = run_python(["-m", "electra_tf.export", "--format", "rtd", "--init", run, "--output_dir", str(base),
                         "--model_name", "rtd"])
    version = result.stdout.strip().splitlines()[-1]
    assert version == str(base / "rtd" / "1")
    config = json.loads((base / "rtd" / "1" / "assets" / "serving_config.json").read_text())
    assert (config["kind"], config["generator"], config["seq_length"]) == ("rtd", True, 128)
    for flags in ([], ["--corrupt", "--seed", "7"]):
        from_run, from_export = tmp_path / "run.jsonl", tmp_path / "export.jsonl"
        predict("--init", run, "--input", text, "--output_file", from_run, *flags)
        predict("--init", base / "rtd", "--input", text, "--output_file", from_export, *flags)
        assert records(from_export) == records(from_run), flags

    # The served model alone (TensorFlow and tensorflow-text, no project code) gives the same numbers.
    texts = [t for t in TEXTS + STRESS[:3] if t]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    run_python(["-c", SERVED, version, str(tmp_path / "texts.json"), str(tmp_path / "served.json")])
    served = json.loads((tmp_path / "served.json").read_text())
    expected = [r for r in records(tmp_path / "run.jsonl") if "skipped" not in r]  # the --corrupt run, seed 7
    for i, record in enumerate(expected):
        row = served["serve_corrupted"]
        n, m = row["num_words"][i], row["num_pieces"][i]
        assert [w["text"] for w in record["words"]] == row["words"][i][:n]
        assert [(w["start"], w["end"]) for w in record["words"]] == list(zip(row["word_start"][i][:n],
                                                                            row["word_end"][i][:n]))
        np.testing.assert_allclose([w["p_replaced"] for w in record["words"]], row["word_p_replaced"][i][:n],
                                   atol=1e-6)
        assert [p for w in record["words"] for p in w["corrupted_pieces"]] == row["corrupted_pieces"][i][:m]
        assert [w["replaced"] for w in record["words"]] == [bool(r) for r in row["word_replaced"][i][:n]]
        assert served["serving_default"]["pieces"][i][:m] == [p for w in record["words"] for p in w["pieces"]]


@pytest.mark.large
def test_bad_input_is_refused_in_one_line_and_nothing_is_written(models, tmp_path):
    from electra_tf import run_files
    from electra_tf.sources import load_discriminator
    ClassificationKind = task_kind("classification")
    ElectraClassifier = task_kind("classification").model_class

    finetuned = tmp_path / "finetuned"
    finetuned.mkdir()
    encoder, _ = load_discriminator(models["run"])
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    classifier.save(str(finetuned / ClassificationKind.model_file))
    shutil.copyfile(models["vocab"], finetuned / run_files.VOCAB_FILE)
    (finetuned / run_files.FINETUNE_CONFIG_FILE).write_text(json.dumps(
        {"task": "toy", "kind": "classification", "label_names": ["a", "b"], "seq_length": 16}))
    untrained = tmp_path / "no_checkpoints"
    shutil.copytree(models["run"], untrained)
    shutil.rmtree(untrained / run_files.CHECKPOINT_DIR)  # discriminator.keras alone: the encoder, no head
    disc, _ = models["hf"]["discriminator"]
    gen, _ = models["hf"]["generator"]
    text = write_lines(tmp_path / "texts.txt", TEXTS)
    out = tmp_path / "out.jsonl"
    before = {p: checksums(p) for p in (finetuned, untrained, disc, gen, models["run"])}
    cases = [
        (["--init", finetuned, "--corrupt"], "`--corrupt` applies to rtd models (replaced-token scores of a "
         f"pre-training run, hf:, official: or an `export --format rtd`); --init {finetuned} is a classification model."),
        (["--init", f"hf:{gen}"], f"`--init`: {gen} is an ELECTRA generator (ElectraForMaskedLM in its config.json), "
         "without the replaced-token head (discriminator_predictions)"),
        (["--init", f"hf:{disc}", "--corrupt"], f"`--corrupt` needs the generator: `--init` {disc} is a "
         "discriminator alone (ElectraForPreTraining in its config.json)"),
        (["--init", untrained], f"no checkpoint in {untrained / 'checkpoints'}, and its discriminator.keras is the "
         "encoder alone, without the replaced-token head"),
    ]
    for args, message in cases:
        result = predict(*args, "--input", text, "--output_file", out, check=False)
        assert message in error_line(result), args
        assert not out.exists() and result.stdout == ""
    flag = predict("--init", models["run"], "--input", text, "--seed", "3", check=False)
    assert "--seed seeds --corrupt's masking and sampling" in error_line(flag, exit_code=2)
    exports = tmp_path / "serving"
    for init, message in ((finetuned, "is a fine-tuning output (classifier.keras): a fine-tuned model has no "
                           "replaced-token head. Export it with --format serving"),
                          (f"hf:{gen}", "is an ELECTRA generator (ElectraForMaskedLM in its config.json)")):
        result = run_python(["-m", "electra_tf.export", "--format", "rtd", "--init", str(init), "--output_dir",
                             str(exports)], check=False)
        assert message in error_line(result)
        assert not (exports / "electra" / "1").exists()
    # An export of a discriminator alone serves no corruption.
    run_python(["-m", "electra_tf.export", "--format", "rtd", "--init", f"hf:{disc}", "--output_dir", str(exports),
                "--model_name", "disc"])
    result = predict("--init", exports / "disc", "--input", text, "--output_file", out, "--corrupt", check=False)
    assert "`--corrupt` needs the generator: hf:" in error_line(result) and not out.exists()
    assert {p: checksums(p) for p in before} == before


@pytest.mark.large
def test_a_trained_discriminator_spots_its_generators_replacements_on_held_out_text(tmp_path, demo_data):
    """A tiny run on the demo corpus, then `predict --corrupt` on prose it never saw: the generator's replaced
    pieces score higher than the kept ones (AUC from its definition), as pre-training's own `disc_auc` says."""
    run = tmp_path / "run"
    run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(run), "--demo_dir",
                demo_data["demo_dir"], "--train_steps", str(STEPS),
                "--save_checkpoints_steps", str(STEPS), "--verbose", "2"])
    text = HELD_OUT
    out, metrics = tmp_path / "scores.jsonl", tmp_path / "metrics.json"
    result = predict("--init", run, "--input", text, "--corrupt", "--seed", "1", "--output_file", out,
                     "--metrics_file", metrics)
    got = records(out)
    p = [s for r in got for w in r["words"] for s in w["piece_p_replaced"]]
    y = [c != o for r in got for w in r["words"] for c, o in zip(w["corrupted_pieces"], w["pieces"])]
    word_p = [w["p_replaced"] for r in got for w in r["words"]]
    word_y = [w["replaced"] for r in got for w in r["words"]]
    auc, word_auc = auc_by_definition(y, p), auc_by_definition(word_y, word_p)
    reported = json.loads(metrics.read_text())
    epoch_auc = tensorboard_values(run / "logs" / "train", "epoch_disc_auc")
    train_auc = epoch_auc[max(epoch_auc)]  # one epoch: all steps
    print(f"held-out AUC {auc:.4f} (words {word_auc:.4f}) over {sum(y)} replaced of {len(y)} pieces; "
          f"pre-training's disc_auc {train_auc:.4f} after {STEPS} steps; {result.stderr.splitlines()[-1]}")
    assert sum(y) >= 50  # enough replaced pieces for the AUC to mean something
    assert reported["disc_auc"] == pytest.approx(auc, abs=1e-9)
    assert reported["word_auc"] == pytest.approx(word_auc, abs=1e-9)
    assert reported["replaced_pieces"] == sum(y) and reported["pieces"] == len(y)
    assert auc > MIN_AUC and word_auc > MIN_AUC
    assert abs(auc - train_auc) < 0.15  # held-out text scores as the training batches did



def test_auc_equals_its_definition_with_ties():
    from electra_tf.tasks.replaced_tokens.metrics import auc

    rng = np.random.default_rng(0)
    labels = rng.random(500) < 0.2
    scores = np.round(rng.random(500) + 0.3 * labels, 2)  # rounded: many ties
    assert auc(labels, scores) == pytest.approx(auc_by_definition(labels, scores), abs=1e-12)
    assert auc([True, True], [0.1, 0.2]) is None


def test_a_texts_corruption_depends_on_the_text_and_seed_not_on_its_batch():
    """`serve_corrupted` seeds each window by its text: alone or among others, a text is corrupted alike."""
    import tensorflow as tf

    from electra_tf.config import get_config
    from electra_tf.tasks.replaced_tokens.serving import rtd_serving_module
    from electra_tf.models.discriminator import ElectraDiscriminator
    from electra_tf.models.pretrainer import build_pretrainer

    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    pretrainer = build_pretrainer(get_config("tiny", vocab_size=30522, embedding_dim=16, hidden_dim=32,
                                             intermediate_dim=64, num_layers=1))
    module = rtd_serving_module(ElectraDiscriminator.from_pretrainer(pretrainer), vocab, seq_length=16,
                                pretrainer=pretrainer)
    corrupt = module.signatures()["serve_corrupted"]
    long = " ".join(f"word{i}" for i in range(20))  # 40 pieces: windows of 14
    texts = ["The quick brown fox jumps over the lazy dog.", long, "short"]

    def pieces(batch, seed):
        out = corrupt(text=tf.constant(batch), seed=tf.constant([seed] * len(batch), tf.int64))
        return [(row[:n].tolist(), p[:n].tolist()) for row, p, n in zip(
            out["corrupted_pieces"].numpy(), out["piece_p_replaced"].numpy(), out["num_pieces"].numpy())]

    together = pieces(texts, 5)
    for i, text in enumerate(texts):
        alone = pieces([text], 5)[0]
        assert alone[0] == together[i][0]
        np.testing.assert_allclose(alone[1], together[i][1], atol=1e-6)
    assert pieces(texts, 6) != together  # another seed, another corruption
    replaced = [a != b for (got, _), text in zip(together, texts)
                for a, b in zip(got, pieces_of(module, text))]
    assert any(replaced)


def pieces_of(module, text):
    import tensorflow as tf

    out = module.signatures()["serving_default"](text=tf.constant([text]))
    return out["pieces"].numpy()[0][:out["num_pieces"].numpy()[0]].tolist()
