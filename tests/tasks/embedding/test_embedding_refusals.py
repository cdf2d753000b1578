"""What the embedding kind refuses before anything is written, through the commands users run: a sentence-transformers
`--init` of a layout or pooling it cannot reproduce, training rows whose batches hold no negative (the in-batch loss
is then constant and nothing is learned), a classification file, flags of another kind, `predict --metrics_file`.

Each refusal: one `error:` line naming the flag or the file, exit 1, no output folder, every input file unchanged.
"""

import json
import os
import re
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from helpers import checksums, command_cases, error_line, make_run_dir, run_python  # noqa: E402
from embedding_toy import WORDS, pairs, write_modules, write_task  # noqa: E402

from electra_tf import tasks  # noqa: E402
from electra_tf.tasks.embedding.kind import EmbeddingKind  # noqa: E402
from electra_tf.tasks.embedding.data import read_pairs  # noqa: E402
from electra_tf.tasks.embedding.sentence_transformers import read_folder  # noqa: E402

FINETUNE = ["-m", "electra_tf.finetune", "--task", "animals", "--task_kind", "embedding", "--seq_length", "16",
            "--epochs", "1"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A tiny pre-training run dir whose vocabulary holds the toy words."""
    root = tmp_path_factory.mktemp("embedding_refusals")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return make_run_dir(root / "pretrained", str(vocab), max_sequence_length=32, seq_length=32, num_layers=1)


def fake_sentence_transformer(folder, **modules):
    """A sentence-transformers folder's files around a BERT `config.json` and no weights: what is refused before any
    weight is read."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "vocab_size": 5 + len(WORDS), "hidden_size": 32, "num_hidden_layers": 1,
                   "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64}, f)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return write_modules(folder, **modules)


def write_jsonl(folder, split, rows):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{split}.jsonl"), "w") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows))
    return str(folder)


def classification_files(folder):
    """A classification TSV task (header, 0/1 labels), as `--task movie_polarity` reads it."""
    os.makedirs(folder, exist_ok=True)
    for split in ("train", "dev"):
        rows = [f"the {a} eats {f}\t{i % 2}" for i, (a, f) in enumerate(zip(WORDS[:8], WORDS[8:16]))]
        (folder / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    return str(folder)


def embedding_run(folder, tiny_run):
    """An embedding model's fine-tuning output (the --init model as it is, as `--epochs 0` leaves it)."""
    from electra_tf import run_files, sources
    from electra_tf.tasks.embedding.model import ElectraEmbedder

    encoder, vocab_file = sources.load_init(tiny_run)
    os.makedirs(folder)
    embedder = ElectraEmbedder(encoder)
    embedder.build()
    embedder.save(os.path.join(folder, EmbeddingKind.model_file))
    shutil.copyfile(vocab_file, os.path.join(folder, run_files.VOCAB_FILE))
    with open(os.path.join(folder, run_files.FINETUNE_CONFIG_FILE), "w") as f:
        json.dump({"task": "animals", "kind": "embedding", "seq_length": 16, "metric": "mrr@10"}, f)
    return str(folder)


def same_positive(count):
    return [{"query": row["query"], "positive": "the cat lives in the barn"} for row in pairs(count)]


# (command, arguments after the command's, what the error line holds, the inputs it must leave as they were):
# `{run}` the tiny run, `{tmp}` the test's folder; each case's files are written by `CASE_FILES`.
CASES = [
    ("finetune", "--data_dir {tmp}/data --init {tmp}/st_max --output_dir {tmp}/out",
     ["st_max/1_Pooling/config.json", "pooling max"]),
    ("finetune", "--data_dir {tmp}/data --init {run} --output_dir {tmp}/out --batch_size 1",
     ["`--batch_size=1`", "nothing is learned"]),
    ("finetune", "--data_dir {tmp}/one_row --init {run} --output_dir {tmp}/out",
     ["one_row/train.jsonl: one training row", "nothing is learned"]),
    ("finetune", "--data_dir {tmp}/same_positive --init {run} --output_dir {tmp}/out",
     ["same_positive/train.jsonl: all 12 rows (lines 1 to 12) have the same positive", "nothing is learned"]),
    ("finetune", "--data_dir {tmp}/classification --init {run} --output_dir {tmp}/out",
     ["classification/train.tsv: column 2 (the positive) is a number on every line from line 2 on (0, 1)"]),
    ("finetune", "--task_kind auto --task movie_polarity --data_dir {tmp}/classification --init {run} "
     "--output_dir {tmp}/out --pooling cls",
     ["`--pooling=cls` is a flag of the embedding kind", "of the classification kind"]),
    ("finetune", "--task_kind classification --data_dir {tmp}/classification --init {run} --output_dir {tmp}/out "
     "--similarity_scale 5", ["`--similarity_scale=5.0` is a flag of the embedding kind", "classification kind"]),
    ("predict", "--init {tmp}/embedder --input {tmp}/texts.txt --output_file {tmp}/out.jsonl "
     "--metrics_file {tmp}/metrics.json", ["`--metrics_file=", "is an embedding model, whose inputs carry none"]),
]


def case_files(tmp, tiny_run, arguments):
    """The files `arguments` name, written into `tmp` (those of other cases are not)."""
    write_task(tmp / "data", splits=(("train", 12), ("dev", 6)))
    if "st_max" in arguments:
        fake_sentence_transformer(tmp / "st_max", pooling="max")
    if "one_row" in arguments:
        write_jsonl(tmp / "one_row", "train", pairs(1))
        write_jsonl(tmp / "one_row", "dev", pairs(4))
    if "same_positive" in arguments:
        write_jsonl(tmp / "same_positive", "train", same_positive(12))
        write_jsonl(tmp / "same_positive", "dev", pairs(4))
    if "classification" in arguments:
        classification_files(tmp / "classification")
    if "embedder" in arguments:
        embedding_run(tmp / "embedder", tiny_run)
        (tmp / "texts.txt").write_text("where does the cat live\nthe dog eats meat\n")


@pytest.mark.parametrize("command, arguments, expected", command_cases(CASES))
def test_a_run_that_cannot_be_what_it_says_is_refused_before_anything_is_written(tmp_path, tiny_run, command,
                                                                                  arguments, expected):
    arguments = arguments.format(tmp=tmp_path, run=tiny_run)
    case_files(tmp_path, tiny_run, arguments)
    before, run_before = checksums(tmp_path), checksums(tiny_run)
    prefix = FINETUNE if command == "finetune" else ["-m", "electra_tf.predict"]
    line = error_line(run_python([*prefix, *arguments.split()], check=False))
    for part in expected:
        assert part in line, line
    assert checksums(tmp_path) == before and checksums(tiny_run) == run_before
    assert not any(os.path.exists(tmp_path / name) for name in ("out", "out.jsonl", "metrics.json"))


def test_the_pooling_modes_of_every_sentence_transformers_version_are_read(tmp_path):
    """Legacy `pooling_mode_*` keys (none set: mean, sentence-transformers' default) and `pooling_mode` (a str or a
    one-mode list); the modes the kind lacks are refused naming the file and the mode."""
    folder = fake_sentence_transformer(tmp_path / "st", max_seq_length=40)
    assert {name: value for name, (value, _) in read_folder(folder).items()} == {
        "pooling": "mean", "normalize_embeddings": True, "seq_length": 40}
    for pooling, expected in (({}, "mean"), ({"pooling_mode_cls_token": True}, "cls"), ({"pooling_mode": "cls"}, "cls"),
                              ({"pooling_mode": ["mean"]}, "mean")):
        write_modules(folder, pooling=pooling, normalize=False)
        assert read_folder(folder)["pooling"][0] == expected and read_folder(folder)["normalize_embeddings"][0] is False
    for pooling, named in (({"pooling_mode_lasttoken": True}, "lasttoken"), ({"pooling_mode": ["cls", "max"]},
                                                                             "cls + max"),
                           ({"pooling_mode_mean_sqrt_len_tokens": True}, "mean_sqrt_len_tokens")):
        write_modules(folder, pooling=pooling)
        with pytest.raises(ValueError, match=f"1_Pooling/config.json: pooling {re.escape(named)} is not a pooling of the "
                                             r"embedding kind \(mean or cls\)"):
            read_folder(folder)
    for pooling in ({"pooling_mode": "weightedmean"}, {"pooling_mode_weightedmean_tokens": True}):
        write_modules(folder, pooling=pooling)
        with pytest.raises(ValueError, match="pooling weightedmean is not"):
            read_folder(folder)
    write_modules(folder, modules=["Transformer"])
    with pytest.raises(ValueError, match=r"modules.json lists the modules Transformer, which"):
        read_folder(folder)
    write_modules(folder, modules=["Transformer", "Pooling", "Dense", "Normalize"])
    with pytest.raises(ValueError, match=r"modules.json lists the module 'sentence_transformers.models.Dense', "
                                         r"which the embedding kind cannot reproduce"):
        read_folder(folder)


def test_a_tsv_with_a_header_line_is_refused_naming_the_file_and_the_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("Query\tpositive\nhow do cats purr\tCats purr with the larynx.\n")
    with pytest.raises(ValueError, match=r"train.tsv:1: a header line \(Query, positive\); an embedding .tsv has none"):
        read_pairs(str(path))
    path.write_text("how do cats purr\tCats purr.\nwhat is 6 times 7\t42\n")  # one number is a text
    assert len(read_pairs(str(path))) == 2


def test_hard_negatives_train_at_any_batch_size_and_many_shared_positives_are_a_warning(tmp_path, caplog):
    """A row with its own hard negative learns even alone in its batch; rows that mostly share one positive are
    trained, with a warning naming the file."""
    data = write_task(tmp_path / "negatives", splits=(("train", 1), ("dev", 4)), negatives=True)
    for batch_size in (1, 32):
        EmbeddingKind(tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=data,
                                           batch_size=batch_size)).check_training(1)
    EmbeddingKind(tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=data, batch_size=1,
                                       epochs=0)).check_training(1)  # zero-shot trains nothing
    rows = same_positive(9) + pairs(3)
    shared = write_jsonl(tmp_path / "shared", "train", rows)
    write_jsonl(tmp_path / "shared", "dev", pairs(4))
    kind = EmbeddingKind(tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=shared, batch_size=4))
    with caplog.at_level("WARNING"):
        kind.check_training(1)
    assert "train.jsonl: 9 of 12 rows share the positive 'the cat lives in the barn'" in caplog.text
    limited = EmbeddingKind(tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=shared, train_limit=1))
    with pytest.raises(ValueError, match=r"shared/train.jsonl: one training row \(`--train_limit=1`\)"):
        limited.check_training(1)
    two = EmbeddingKind(tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=shared, batch_size=2))
    with pytest.raises(ValueError, match=r"`--batch_size=2` over 2 replicas is 1 row\(s\) each"):
        two.check_training(2)


def test_each_kind_takes_its_own_flags_and_the_recipes(tmp_path):
    """`TaskKind.flags()`: a kind's `Config` fields and its `shared_flags`; the recipe's flags are every kind's. A
    run's `results.json` hparams hold its kind's and the recipe's, none of another kind's."""
    kinds = tasks.FINETUNED
    assert set(kinds["embedding"].flags()) == {"pooling", "similarity_scale", "normalize_embeddings"}
    assert "label_column" in kinds["classification"].flags() and "label_column" in kinds["tagging"].flags()
    config = tasks.FinetuneConfig(task="faq", task_kind="embedding", pooling="cls", seq_length=64)
    kinds["embedding"].check_flags(config, {"pooling", "seq_length", "epochs", "batch_size"})
    recorded = {name: set(kind.without_other_kinds(config.hparams())) for name, kind in kinds.items()}
    assert {"pooling", "similarity_scale", "normalize_embeddings", "seq_length"} <= recorded["embedding"]
    assert "pooling" not in recorded["classification"] and "both_orders" not in recorded["embedding"]
    assert "both_orders" in recorded["classification"] and "epochs" in recorded["tagging"]
    owners = [name for name, kind in kinds.items() if "label_column" in kind.flags()]  # classification, tagging
    for name, kind in kinds.items():
        kind.check_flags(config, {"seq_length", "epochs", "learning_rate", "init", "output_dir"})
        if name not in owners:
            with pytest.raises(ValueError, match=rf"`--label_column=1` is a flag of the {' and '.join(owners)} "
                                                 rf"kinds, but the task 'faq' is of the {name} kind"):
                kind.check_flags(config.replace(label_column="1"), {"label_column"})
        if name != "embedding":
            with pytest.raises(ValueError, match=rf"`--pooling=cls` is a flag of the embedding kind, but the task "
                                                 rf"'faq' is of the {name} kind"):
                kind.check_flags(config, {"pooling"})
