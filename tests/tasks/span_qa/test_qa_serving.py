"""QA serving: raw question + context in, answer and character offsets out, tokenization and windows in the
graph; in a fresh process with only tensorflow + tensorflow_text it equals the Keras model read through
`qa_features` + `qa_metrics.postprocess` (several windows per context), and context[start:end] == answer."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

VOCAB = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "vocab",
                                     "bert_uncased_vocab.txt"))
RUN = {}
DEV = os.path.join(os.path.expanduser("~"), ".cache", "electra_tf", "benchmarks", "squad_v1.1", "dev.json")
SETTINGS = {"seq_length": 48, "doc_stride": 16, "max_query_length": 12, "max_answer_length": 8,
            "null_threshold": 0.05}
TOY = [("Where does Anna live?", "The weather was good. Anna lives in Zürich, near the café! " * 6),
       ("Who?", "Paris."),
       ("  what   is the   river of the city of light called, and how long is it, in kilometres or miles, "
        "and who named it first?", "The Seine flows through Paris. It is 777 km long. " * 3),
       # Without SQuAD's dev set (a fresh machine) these keep the threshold test at half of 7 answered.
       ("When was the bridge built?", "The old bridge was built in 1602; the new one, in 1891, after a flood. " * 2),
       ("Which colour is the door?", "Behind the garden there is a house. Its door is green and its roof red."),
       ("Who wrote the letter?", "Dear Sir, thank you for the parcel. Yours, Margaret Hale (Milton, 1854). " * 4),
       ("How many?", "Seven.")]


def examples():
    from electra_tf.tasks.span_qa.squad import QAExample, read_squad

    toy = [QAExample(f"toy{i}", q, c) for i, (q, c) in enumerate(TOY)]
    if os.path.exists(DEV):  # real dev questions: contexts of several windows at 48 pieces
        return toy + read_squad(DEV)[:: 150][:10]
    return toy


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    if not os.path.exists(VOCAB):
        pytest.skip("shared vocabulary missing")
    from electra_tf.export_formats import export_serving
    from electra_tf.tasks import OUTPUTS
    from electra_tf.run_files import FINETUNE_CONFIG_FILE

    keras.utils.set_random_seed(5)
    encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    model = ElectraQuestionAnswerer(encoder, answerable=True, start_n_top=5, end_n_top=5, joint_hidden_dim=16)
    model.build()
    _, answers = keras_answers(model, examples())  # a threshold that answers about half the questions,
    odds = sorted(a.null_score - a.score for a in answers)  # halfway between two of them: a median equal to one
    SETTINGS["null_threshold"] = float(odds[len(odds) // 2 - 1] + odds[len(odds) // 2]) / 2  # would be a tie
    run = tmp_path_factory.mktemp("finetuned")  # as a span_qa `finetune` run leaves it
    model.save(str(run / "question_answerer.keras"))
    (run / "vocab.txt").write_text(open(VOCAB).read())
    (run / FINETUNE_CONFIG_FILE).write_text(json.dumps(dict(SETTINGS, task="squad", kind="span_qa", answerable=True)))
    finetuned = OUTPUTS.load(str(run))  # what `python -m electra_tf.export --format serving` does
    assert isinstance(finetuned.model, ElectraQuestionAnswerer) and finetuned.kind.name == "span_qa"
    path = export_serving(finetuned.model, finetuned.vocab_file, str(tmp_path_factory.mktemp("serving")), "squad", 1,
                          finetuned.settings)
    RUN["dir"] = str(run)  # for the CLI test
    return model, path


@pytest.fixture(scope="module")
def serve(exported):
    return tf.saved_model.load(exported[1]).signatures["serving_default"]


def keras_answers(model, items):
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.tasks.span_qa import features as qa_features
    from electra_tf.tasks.span_qa import metrics as qa_metrics
    from electra_tf.tasks import FinetuneConfig
    from electra_tf.tasks.span_qa.kind import predict_windows

    features = qa_features.build_qa_features(WordPieceTokenizer(VOCAB), items, SETTINGS["seq_length"],
                                             SETTINGS["doc_stride"], SETTINGS["max_query_length"])
    config = FinetuneConfig(max_answer_length=SETTINGS["max_answer_length"], batch_size=8)
    outputs = predict_windows(model, features, config.batch_size)
    answers, _ = qa_metrics.postprocess(features, outputs, features.examples, 20, SETTINGS["max_answer_length"])
    return features, answers


SERVE_SCRIPT = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the in-graph tokenizer's ops)
assert not [m for m in sys.modules if m.startswith(("electra_tf", "keras_hub"))]
path, questions, contexts = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
serve = tf.saved_model.load(path).signatures["serving_default"]
out = serve(question=tf.constant(questions), context=tf.constant(contexts))
print(json.dumps({k: [x.decode() if isinstance(x, bytes) else x for x in v.numpy().tolist()] for k, v in out.items()}))
"""


def test_fresh_process_serving_equals_the_keras_model(exported):
    model, path = exported
    items = examples()
    features, answers = keras_answers(model, items)
    assert max(np.bincount(features.arrays["example_index"])) >= 3  # several windows per context
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    result = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, path, json.dumps([e.question for e in items]),
                             json.dumps([e.context for e in items])], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout.strip().splitlines()[-1])
    threshold = SETTINGS["null_threshold"]
    answered = 0
    for i, (example, answer) in enumerate(zip(items, answers)):
        null_odds = answer.null_score - answer.score if np.isfinite(answer.score) else 1e9
        no_answer = null_odds > threshold
        assert served["no_answer"][i] == no_answer, (i, null_odds)
        assert served["null_odds"][i] == pytest.approx(null_odds, abs=1e-3)
        assert served["score"][i] == pytest.approx(answer.score, abs=1e-3)
        if no_answer:
            assert (served["answer"][i], served["start"][i], served["end"][i]) == ("", -1, -1)
            continue
        answered += 1
        assert served["answer"][i] == answer.text, i
        assert (served["start"][i], served["end"][i]) == (answer.char_start, answer.char_end)
        assert example.context[served["start"][i]:served["end"][i]] == served["answer"][i]
    assert 3 <= answered < len(items), (answered, threshold)


def test_same_answers_without_the_threshold(exported, serve):
    """Spans (before the null decision) agree for every question, the long multi-window ones included."""
    model, _ = exported
    items = examples()
    _, answers = keras_answers(model, items)
    out = serve(question=tf.constant([e.question for e in items]), context=tf.constant([e.context for e in items]))
    np.testing.assert_allclose(out["score"].numpy(), [a.score for a in answers], atol=1e-3)


def test_batch_order_does_not_change_answers(serve):
    questions, contexts = [q for q, _ in TOY], [c for _, c in TOY]
    forward = serve(question=tf.constant(questions), context=tf.constant(contexts))
    backward = serve(question=tf.constant(questions[::-1]), context=tf.constant(contexts[::-1]))
    assert forward["answer"].numpy().tolist() == backward["answer"].numpy().tolist()[::-1]
    single = serve(question=tf.constant(questions[:1]), context=tf.constant(contexts[:1]))
    assert single["answer"].numpy()[0] == forward["answer"].numpy()[0]


@pytest.mark.large  # a fresh process importing TensorFlow and Keras: ~1 min on 2 shared cores
def test_export_cli_on_a_span_qa_run(exported, tmp_path):
    from helpers import run_python

    model, path = exported
    result = run_python(["-m", "electra_tf.export", "--format=serving", f"--init={RUN['dir']}",
                         f"--output={tmp_path}", "--model_name=squad", "--version=3"])
    cli_path = result.stdout.strip().splitlines()[-1]
    assert cli_path == os.path.join(str(tmp_path), "squad", "3")
    config = json.loads(open(os.path.join(cli_path, "assets", "serving_config.json")).read())
    assert config["kind"] == "span_qa" and config["doc_stride"] == SETTINGS["doc_stride"]
    assert config["null_threshold"] == pytest.approx(SETTINGS["null_threshold"])
    question, context = tf.constant([TOY[0][0]]), tf.constant([TOY[0][1]])
    ours = tf.saved_model.load(cli_path).signatures["serving_default"](question=question, context=context)
    reference = tf.saved_model.load(path).signatures["serving_default"](question=question, context=context)
    assert ours["answer"].numpy().tolist() == reference["answer"].numpy().tolist()


def test_mismatched_batch_is_a_clear_error(serve):
    with pytest.raises(tf.errors.InvalidArgumentError, match="`question` and `context` must have the same batch"):
        serve(question=tf.constant(["Where?", "Who?"]), context=tf.constant(["Paris is in France."]))


@pytest.mark.parametrize("question, context, name", [("", "Paris is in France.", "question"),
                                                     ("Where?", "   ", "context")])
def test_empty_question_or_context_is_a_clear_error(serve, question, context, name):
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"`{name}` must not be empty"):
        serve(question=tf.constant([question]), context=tf.constant([context]))


def test_empty_batch_gives_empty_outputs(serve):
    out = serve(question=tf.constant([], tf.string), context=tf.constant([], tf.string))
    assert set(out) == {"answer", "start", "end", "score", "no_answer", "null_odds"}
    assert all(v.shape == (0,) for v in out.values()), {k: v.shape for k, v in out.items()}


def test_a_question_longer_than_the_window_keeps_its_first_pieces_as_training_does(exported, serve):
    """70 pieces against `max_query_length=12` at 48 pieces a window: `qa_features` truncates, serving too."""
    from electra_tf.tasks.span_qa.squad import QAExample

    model, _ = exported
    question = "why " * 69 + "where does anna live?"
    context = TOY[0][1]
    _, answers = keras_answers(model, [QAExample("long", question, context)])
    out = serve(question=tf.constant([question, "why " * 12]), context=tf.constant([context, context]))
    assert out["score"].numpy()[0] == pytest.approx(answers[0].score, abs=1e-3)
    assert out["score"].numpy()[0] == out["score"].numpy()[1]  # only the first 12 pieces count


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_export_refuses_a_query_length_that_leaves_no_context():
    from electra_tf.tasks.span_qa.serving import QAServingModule

    encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32, max_sequence_length=64)
    model = ElectraQuestionAnswerer(encoder)
    with pytest.raises(ValueError, match=r"`max_query_length=61` .* `seq_length=64`: need max_query_length \+ 3"):
        QAServingModule(model, VOCAB, seq_length=64, max_query_length=61)
    QAServingModule(model, VOCAB, seq_length=64, max_query_length=60, doc_stride=16)  # one context piece: fine


@pytest.mark.large  # a fresh process importing TensorFlow and Keras
def test_export_cli_refuses_max_query_length_plus_3_not_below_seq_length(exported, tmp_path):
    import shutil

    from helpers import run_python
    from electra_tf.run_files import FINETUNE_CONFIG_FILE

    run = tmp_path / "run"
    shutil.copytree(RUN["dir"], run)
    config = json.loads((run / FINETUNE_CONFIG_FILE).read_text())
    (run / FINETUNE_CONFIG_FILE).write_text(json.dumps(dict(config, max_query_length=64)))
    result = run_python(["-m", "electra_tf.export", "--format=serving", f"--init={run}", f"--output_dir={tmp_path}/out",
                         "--seq_length=64"], check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: `max_query_length=64` leaves no room"), lines[-3:]
    assert "`seq_length=64`" in lines[-1]
    assert not os.path.exists(tmp_path / "out")


def test_predict_ids_equals_the_keras_model_on_qa_features_windows(exported):
    model, path = exported
    features, _ = keras_answers(model, examples()[:3])
    inputs = {k: tf.constant(features.arrays[k], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")}
    served = tf.saved_model.load(path).signatures["predict_ids"](**inputs)
    expected = model(inputs, training=False)
    assert set(served) == set(expected)
    for k in expected:
        np.testing.assert_allclose(served[k].numpy(), np.asarray(expected[k]), atol=1e-5, err_msg=k)
