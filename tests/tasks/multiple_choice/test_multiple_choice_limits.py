"""Multiple choice: inputs that carry nothing, questions of very many choices, blank choices served.

- A `--seq_length` that packs every question's choices to the same tokens is refused, naming the
  length that keeps a piece of every choice; one that cuts many pairs trains with a warning of the
  counts.
- A question of more than 64 choices is refused naming its file, line and count (fine-tuning and
  `predict`); the training and evaluation batches are padded to their own widest question.
- The served graph: an empty or blank choice is missing (probability 0); a question with no other
  choice, or a `choices` with no column, is an error naming `choices`.

The toy questions use words that are one BERT piece each: the context "Pick the one that is alive."
is 7 pieces, the question "Which is an animal?" 5, each choice 1; a pair is [CLS] 7 [SEP] 5+1 [SEP]:
16 tokens. Longest-first truncation keeps the choice (the 6th piece of the second segment) from a
budget of 6 + 6 pieces on, 15 tokens with the specials.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import checksums, error_line, make_run_dir, request_feeds, run_python, warmup_requests

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

CONTEXT, QUESTION = "Pick the one that is alive.", "Which is an animal?"
ANIMALS = ["cat", "dog", "horse", "cow"]
THINGS = ["car", "table", "lamp", "door", "cup", "chair"]
PAIR_TOKENS, NEEDED = 16, 15  # see the module docstring


def question(i, num_choices=3):
    things = [THINGS[(i + k) % len(THINGS)] for k in range(num_choices - 1)]
    answer = i % num_choices
    return {"context": CONTEXT, "question": QUESTION, "answer": answer,
            "choices": things[:answer] + [ANIMALS[i % len(ANIMALS)]] + things[answer:]}


def write_split(path, questions):
    with open(path, "w") as f:
        f.write("".join(json.dumps(q) + "\n" for q in questions))


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, bert_vocab):
    return make_run_dir(tmp_path_factory.mktemp("pre"), bert_vocab)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pick")
    write_split(folder / "train.jsonl", [question(i) for i in range(8)])
    write_split(folder / "dev.jsonl", [question(i) for i in range(8, 12)])
    return folder


def finetune(pretrained, data, output_dir, seq_length):
    return run_python(["-m", "electra_tf.finetune", "--task", "pick", "--task_kind", "multiple_choice",
                       "--data_dir", str(data), "--init", pretrained, "--output_dir", str(output_dir),
                       "--seq_length", str(seq_length), "--epochs", "1", "--batch_size", "4"], check=False)


@pytest.fixture(scope="module")
def trained(pretrained, data, tmp_path_factory):
    """A run at a length that cuts every pair by one piece (the warning), and its TF Serving export."""
    root = tmp_path_factory.mktemp("trained")
    result = finetune(pretrained, data, root / "run", NEEDED)
    assert result.returncode == 0, result.stderr[-3000:]
    export = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(root / "run"),
                         "--output_dir", str(root / "serving"), "--model_name", "pick"], check=False)
    assert export.returncode == 0, export.stderr[-3000:]
    return {"root": root, "run": str(root / "run"), "stderr": result.stderr,
            "export": export.stdout.strip().splitlines()[-1]}


@pytest.mark.parametrize("seq_length", [3, 5, NEEDED - 1])
def test_a_seq_length_that_packs_every_choice_alike_is_refused(seq_length, pretrained, data, tmp_path):
    before = checksums(data)
    result = finetune(pretrained, data, tmp_path / "out", seq_length)
    line = error_line(result)
    assert f"`--seq_length={seq_length}` leaves no room for the choices" in line, line
    assert str(data / "train.jsonl") in line and f"use --seq_length {NEEDED} or more" in line, line
    assert not (tmp_path / "out").exists() and checksums(data) == before


def test_a_length_that_cuts_every_pair_trains_with_the_counts(trained, data):
    pairs = 8 * 3  # train: 8 questions of 3 choices, each pair one piece over the length
    assert (f"--seq_length={NEEDED} cuts {pairs} of {pairs} (context, choice) pairs of {data / 'train.jsonl'} "
            f"({pairs * (PAIR_TOKENS - NEEDED)} of {pairs * (PAIR_TOKENS - 3)} word pieces); 0 of 8 questions"
            in trained["stderr"]), trained["stderr"][-3000:]
    results = json.load(open(os.path.join(trained["run"], "results.json")))
    assert results["num_choices"] == {"train": 3, "dev": 3}


@pytest.mark.parametrize("num_choices", [65, 2000])
def test_a_question_of_too_many_choices_is_refused_naming_its_line(num_choices, pretrained, data, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    wide = dict(question(2), choices=[f"choice {i}" for i in range(num_choices)])
    write_split(folder / "train.jsonl", [question(0), question(1), wide, question(3)])
    write_split(folder / "dev.jsonl", [question(4)])
    before = checksums(folder)
    result = finetune(pretrained, folder, tmp_path / "out", 32)
    line = error_line(result)
    assert f"{folder / 'train.jsonl'}:3: {num_choices} choices; a question may have at most 64" in line, line
    assert not (tmp_path / "out").exists() and checksums(folder) == before


def test_predict_refuses_a_question_of_too_many_choices(trained, tmp_path):
    wide = dict(question(0), choices=[f"choice {i}" for i in range(2000)])
    write_split(tmp_path / "ask.jsonl", [question(1), wide])
    before = checksums(tmp_path)
    output = tmp_path / "choices.jsonl"
    result = run_python(["-m", "electra_tf.predict", "--init", trained["run"], "--input", str(tmp_path / "ask.jsonl"),
                         "--output_file", str(output)], check=False)
    line = error_line(result)
    assert f"{tmp_path / 'ask.jsonl'}:2: 2000 choices; a question may have at most 64" in line, line
    assert not output.exists() and checksums(tmp_path) == before


def test_batches_are_padded_to_their_own_widest_question(data, tmp_path, bert_vocab):
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.finetuning.batching import epoch_order, predict_in_batches
    from electra_tf.tasks import FinetuneConfig
    from electra_tf.tasks.multiple_choice.kind import MultipleChoiceKind

    folder = tmp_path / "wide"
    folder.mkdir()
    widths = [2] * 30 + [64] + [3] * 9
    write_split(folder / "train.jsonl", [dict(question(i), choices=[f"choice {k}" for k in range(w)], answer=0)
                                         for i, w in enumerate(widths)])
    write_split(folder / "dev.jsonl", [question(0)])
    kind = MultipleChoiceKind(FinetuneConfig(task="wide", task_kind="multiple_choice", data_dir=str(folder),
                                             seq_length=32, batch_size=8))
    kind.prepare(WordPieceTokenizer(bert_vocab))
    order = epoch_order(len(widths), 0, 0)
    batches = list(kind.train_dataset(seed=0, epoch=0, skip=0))
    assert len(batches) == 5
    for i, (inputs, labels) in enumerate(batches):
        rows = order[8 * i:8 * i + 8]
        assert inputs["token_ids"].shape[:2] == (len(rows), max(widths[r] for r in rows))
        assert labels.numpy().tolist() == [0] * len(rows)
    # Every slot past a question's own choices is empty; its choices are packed.
    inputs = batches[0][0]
    for b, r in enumerate(order[:8]):
        present = inputs["padding_mask"].numpy()[b].any(-1)
        assert present.tolist() == [True] * widths[r] + [False] * (present.shape[0] - widths[r])

    shapes = []

    def width_of_each_row(batch):  # a stand-in model: each row's own number of choices, padded to 64
        shapes.append(tuple(batch["token_ids"].shape))
        counts = tf.reduce_sum(tf.cast(tf.reduce_any(batch["padding_mask"] > 0, -1), tf.int32), -1)
        return tf.pad(tf.cast(counts, tf.float32)[:, None], [[0, 0], [0, 63]])

    out = predict_in_batches(width_of_each_row, kind.packed["train"], 8)
    assert out[:, 0].tolist() == widths
    assert sorted(s[1] for s in shapes) == [2, 2, 2, 3, 64]  # only the batch of the wide question is wide


BLANKS = ["", "   ", "\t\n", "\u3000", "\u00a0\u2028\x1c"]


def test_served_blank_choices_are_missing_and_a_question_without_a_choice_is_an_error(trained):
    import tensorflow_text  # noqa: F401  (the tokenizer ops of the served graph)

    assert all(not blank.strip() for blank in BLANKS)  # what the readers refuse as an empty choice
    serve = tf.saved_model.load(trained["export"]).signatures["serving_default"]

    def ask(choices):
        return serve(context=tf.constant([CONTEXT] * len(choices)), question=tf.constant([QUESTION] * len(choices)),
                     choices=tf.constant(choices, tf.string))

    # TF Serving's warm-up replay at load: each request of the export's file is served (two choices each).
    for request in warmup_requests(trained["export"]):
        feeds = request_feeds(request)
        assert feeds["choices"].shape == (1, 2)
        assert serve(**feeds)["probabilities"].shape == (1, 2)

    out = ask([["cat"] + BLANKS, BLANKS[1:3] + ["car", "dog"] + BLANKS[3:]])
    probabilities = out["probabilities"].numpy()
    np.testing.assert_array_equal(probabilities[0], [1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(probabilities[1][[0, 1, 4, 5]], [0, 0, 0, 0])
    np.testing.assert_allclose(probabilities[1].sum(), 1, rtol=1e-6)
    assert out["choice"].numpy()[0] == 0 and out["choice"].numpy()[1] in (2, 3)

    for choices in ([BLANKS[:2]], [["cat", "dog"], BLANKS[2:4]], [[""]]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"`choices`: a question whose choices are all "
                                                                 r"empty or blank"):
            ask(choices)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"`choices` has no column"):
        ask(np.zeros((2, 0), object))
    assert ask([["cow", "   "]])["choice"].numpy().tolist() == [0]  # and it keeps serving
