"""Task readers: GLUE layouts, the shared tasks, generic TSV/CSV, and errors naming file + line."""

import os

import pytest

from electra_tf.tasks.classification import data as tasks

SHARED_TASKS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "tasks"))


def write(folder, name, lines):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "w") as f:
        f.write("".join(line + "\n" for line in lines))


# Lines in the layouts of the GLUE download (header + one or two rows).
GLUE_FILES = {
    "cola": {"train.tsv": ["gj04\t1\t\tOur friends won't buy this analysis.", "gj04\t0\t*\tThey drank the pub."]},
    "sst-2": {"train.tsv": ["sentence\tlabel", "hide new secretions \t0", 'a "great" film \t1']},
    "mrpc": {"train.tsv": ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t702876\t702977\tAmrozi accused.\tReferring to him."]},
    "sts-b": {"train.tsv": ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
                            "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air plane is taking off.\t5.000"]},
    "qqp": {"train.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "133273\t213221\t213222\tHow is it?\tHow was it?\t0",
                          "999\t1\t2\tbroken line"]},
    "mnli": {
        "train.tsv": ["index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label",
                      "0\t31193\t31193n\tgovernment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tConceptually cream skimming.\tProduct and geography.\tneutral\tneutral"],
        "dev_matched.tsv": ["index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
                            "0\t63735\t63735n\tslate\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tThe new rights.\tEveryone really likes.\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral"],
        "dev_mismatched.tsv": ["index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
                               "0\t75290\t75290c\tletters\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tYour contribution.\tMake no sense.\tcontradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction"],
    },
    "qnli": {"dev.tsv": ["index\tquestion\tsentence\tlabel", "0\tWhat came?\tThe Pre.\tnot_entailment"]},
    "rte": {"train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tNo weapons.\tWeapons found.\tnot_entailment"]},
    "wnli": {"train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tI stuck a pin.\tI stuck a pin through a carrot.\t1"]},
}
EXPECTED = {
    "cola": [("Our friends won't buy this analysis.", None, 1), ("They drank the pub.", None, 0)],
    "sst-2": [("hide new secretions ", None, 0), ('a "great" film ', None, 1)],
    "mrpc": [("Amrozi accused.", "Referring to him.", 1)],
    "sts-b": [("A plane is taking off.", "An air plane is taking off.", 5.0)],
    "qqp": [("How is it?", "How was it?", 0)],
    "mnli": [("Conceptually cream skimming.", "Product and geography.", 2)],
    "qnli": [("What came?", "The Pre.", 1)],
    "rte": [("No weapons.", "Weapons found.", 1)],
    "wnli": [("I stuck a pin.", "I stuck a pin through a carrot.", 1)],
}


@pytest.mark.parametrize("name", sorted(GLUE_FILES))
def test_glue_layouts(name, tmp_path):
    for file_name, lines in GLUE_FILES[name].items():
        write(tmp_path, file_name, lines)
    spec = tasks.load_task(name.upper())
    split = "dev" if name == "qnli" else "train"
    examples = tasks.read_examples(spec, str(tmp_path), split)
    assert [(e.text_a, e.text_b, e.label) for e in examples] == EXPECTED[name]
    if name == "mnli":
        assert tasks.read_examples(spec, str(tmp_path), "dev")[0].label == 2
        assert tasks.read_examples(spec, str(tmp_path), "dev_mismatched")[0].label == 0
    if name == "sts-b":
        assert spec.is_regression and spec.num_labels == 1 and spec.metric == "spearman"


def test_glue_test_split_without_labels(tmp_path):
    write(tmp_path, "test.tsv", ["index\tsentence", "0\tuneasy mishmash of styles"])
    examples = tasks.read_examples(tasks.load_task("sst2"), str(tmp_path), "test")
    assert examples == [tasks.Example("uneasy mishmash of styles", None, None)]


@pytest.mark.skipif(not os.path.isdir(SHARED_TASKS), reason="../shared/data missing")
@pytest.mark.parametrize("name", ["movie_polarity", "trec6", "sms_spam"])
def test_shared_tasks_match_an_independent_read(name):
    folder = os.path.join(SHARED_TASKS, name)
    spec = tasks.load_task(name, folder)
    assert spec.label_names == open(os.path.join(folder, "labels.txt")).read().split()
    for split in ("train", "dev"):
        with open(os.path.join(folder, f"{split}.tsv"), encoding="utf-8") as f:
            rows = [line.rstrip("\n").rsplit("\t", 1) for line in f][1:]
        examples = tasks.read_examples(spec, folder, split)
        assert [(e.text_a, e.label) for e in examples] == [(text, int(label)) for text, label in rows]


def test_generic_pair_csv_with_names_and_inferred_labels(tmp_path):
    write(tmp_path, "train.csv", ["premise,hypothesis,verdict", '"a, b","c ""d""",yes', "e,f,no"])
    spec = tasks.load_task("mine", str(tmp_path), text_a_column="premise", text_b_column="hypothesis",
                           label_column="verdict", file_format="csv")
    assert spec.labels == ["no", "yes"]
    examples = tasks.read_examples(spec, str(tmp_path), "train")
    assert examples == [tasks.Example("a, b", 'c "d"', 1), tasks.Example("e", "f", 0)]


def test_label_file_names_are_accepted_as_values(tmp_path):
    write(tmp_path, "labels.txt", ["negative", "positive"])
    write(tmp_path, "train.tsv", ["sentence\tlabel", "bad\tnegative", "good\t1"])
    spec = tasks.load_task("polarity", str(tmp_path))
    assert [e.label for e in tasks.read_examples(spec, str(tmp_path), "train")] == [0, 1]


def test_missing_column_names_file_and_line(tmp_path):
    write(tmp_path, "labels.txt", ["negative", "positive"])
    write(tmp_path, "train.tsv", ["text\tlabel", "bad\t0"])
    spec = tasks.load_task("polarity", str(tmp_path))
    path = os.path.join(str(tmp_path), "train.tsv")
    with pytest.raises(ValueError, match=f"{path}:1: missing text_a column 'sentence'; the header has"):
        tasks.read_examples(spec, str(tmp_path), "train")


def test_short_line_names_file_and_line(tmp_path):
    write(tmp_path, "labels.txt", ["negative", "positive"])
    write(tmp_path, "train.tsv", ["sentence\tlabel", "bad\t0", "no label here"])
    spec = tasks.load_task("polarity", str(tmp_path))
    with pytest.raises(ValueError, match=r"train.tsv:3: expected at least 2 fields"):
        tasks.read_examples(spec, str(tmp_path), "train")


def test_unknown_label_names_file_and_line(tmp_path):
    write(tmp_path, "labels.txt", ["negative", "positive"])
    write(tmp_path, "train.tsv", ["sentence\tlabel", "bad\t0", "good\t1", "meh\t2"])
    spec = tasks.load_task("polarity", str(tmp_path))
    with pytest.raises(ValueError, match=r"train.tsv:4: unknown label '2' for task 'polarity'"):
        tasks.read_examples(spec, str(tmp_path), "train")


def test_bad_regression_label_and_missing_file(tmp_path):
    write(tmp_path, "train.tsv", ["sentence1\tsentence2\tscore", "a\tb\tfive"])
    spec = tasks.load_task("sts-b")
    spec.text_a, spec.text_b = "sentence1", "sentence2"
    with pytest.raises(ValueError, match=r"train.tsv:2: label 'five' is not a finite number"):
        tasks.read_examples(spec, str(tmp_path), "train")
    with pytest.raises(FileNotFoundError, match="split 'dev' file not found"):
        tasks.read_examples(spec, str(tmp_path), "dev")
