"""Every command that writes a file refuses an output that is its input, its model, or a file of another run or
export: one `error:` line naming the flag, exit 1, before any model is built, every file unchanged (checksums).

The commands that write (each module read for what it writes): `pretrain` (`--model_dir`), `finetune`
(`--output_dir`), `export` (`--output_dir`), `convert` (`--output_dir`), `predict` (`--output_file`,
`--metrics_file`; it reads `--input`, `--init` and `--passages`), `pipelines.build_vocab` (`--vocab_file`, and `electra_tokenizer.json` beside it),
`pipelines.build_pretraining_data` (`--output_dir`). `pipelines.inspect_records` writes only to stdout.

The artefacts here only look like what they are (the files `run_files.artefact_in` reads): every refusal
happens before anything is loaded, so a real model would change nothing but the time. Each case is a
process (TensorFlow's import is most of its time): each command's first case runs in the fast suite.
"""

import os

import pytest

from helpers import command_cases, digests, refusal, write_vocab

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A pre-training run, a fine-tuning output, a serving export, a task folder, a corpus and records."""
    root = tmp_path_factory.mktemp("guards")
    files = {
        "pre/config.json": "{}", "pre/discriminator.keras": "model", "pre/vocab.txt": None,
        "ft/classifier.keras": "model", "ft/finetune_config.json": "{}", "ft/results.json": "{}",
        "ft/vocab.txt": None,
        "serving/toy/1/saved_model.pb": "graph", "serving/toy/1/assets/vocab.txt": None,
        "task/train.tsv": "sentence\tlabel\ngood\t1\n", "task/dev.tsv": "sentence\tlabel\nbad\t0\n",
        "corpus/text.txt": "The cat sat on the mat.\nIt purred.\n",
        "records/pretrain_data.tfrecord-00000-of-00001": "records", "records/vocab.txt": None,
        "dev.tsv": "sentence\tlabel\ngood\t1\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            write_vocab(path)
        else:
            path.write_text(text)
    return root


# (command, arguments with {root}, the flag named, what the line says)
CASES = [
    ("pretrain", "--config tiny --model_dir {root}/pre --init {root}/pre --data demo", "model_dir",
     "is or overlaps the input"),
    ("pretrain", "--config tiny --model_dir {root}/ft/more --data demo", "model_dir", "lies inside .*fine-tuning"),
    ("pretrain", "--config tiny --model_dir {root}/records --data {root}/records/pretrain_data.tfrecord-*",
     "model_dir", "the folder of the `--data` records"),
    ("finetune", "--task toy --data_dir {root}/task --init {root}/pre --output_dir {root}/pre", "output_dir",
     "is `--init`"),
    ("finetune", "--task toy --data_dir {root}/task --init {root}/pre --output_dir {root}/serving/toy/1/ft",
     "output_dir", "lies inside .*SavedModel"),
    ("finetune", "--task toy --data_dir {root}/task --init {root}/pre --output_dir {root}/task", "output_dir",
     "is `--data_dir`"),
    ("export", "--format encoder --init {root}/pre --output_dir {root}/pre/export", "output_dir",
     "is or overlaps the input"),
    ("export", "--format serving --init {root}/ft --output_dir {root}/pre", "output_dir",
     "lies inside .*pre-training run"),
    ("export", "--format rtd --init {root}/pre --output_dir {root}/pre", "output_dir",
     "is or overlaps the input"),
    ("convert", "--from keras --input {root}/ft/classifier.keras --to keras --output_dir {root}/ft/classifier.keras",
     "output_dir", "is or overlaps the input"),
    ("convert", "--from keras --input {root}/ft/classifier.keras --to hf --output_dir {root}/pre/hf", "output_dir",
     "lies inside .*pre-training run"),
    ("predict", "--init {root}/ft --input {root}/dev.tsv --output_file {root}/dev.tsv", "output_file",
     "is `--input="),
    ("predict", "--init {root}/ft --input {root}/dev.tsv --output_file {root}/ft/classifier.keras", "output_file",
     "lies inside `--init="),
    ("predict", "--init {root}/ft --input {root}/dev.tsv --metrics_file {root}/serving/toy/1/m.json", "metrics_file",
     "lies inside an exported SavedModel"),
    ("predict", "--init {root}/pre --input {root}/dev.tsv --output_file {root}/pre/scores.jsonl --corrupt",
     "output_file", "lies inside `--init="),
    ("predict", "--init {root}/ft --input {root}/dev.tsv --passages {root}/task/dev.tsv --metrics_file "
     "{root}/task/dev.tsv", "metrics_file", "is `--passages="),
    ("pipelines.build_vocab", "--input {root}/corpus/text.txt --vocab_size 200 --vocab_file {root}/corpus/text.txt",
     "vocab_file", "is an --input file"),
    ("pipelines.build_vocab", "--input {root}/corpus/text.txt --vocab_size 200 --vocab_file {root}/pre/vocab.txt",
     "vocab_file", "exists .*nothing is overwritten"),
    ("pipelines.build_pretraining_data", "--input {root}/corpus/text.txt --vocab_file {root}/records/vocab.txt "
     "--output_dir {root}/corpus/text.txt", "output_dir", "would replace the input"),
    ("pipelines.build_pretraining_data", "--input {root}/corpus/text.txt --vocab_file {root}/records/vocab.txt "
     "--output_dir {root}/ft", "output_dir", "holds other files than a build's"),
]


@pytest.mark.parametrize("command,arguments,flag,expected", command_cases(CASES))
def test_every_writing_command_refuses_its_input_its_model_and_another_artefacts_files(world, command, arguments,
                                                                                       flag, expected):
    before = digests(world)
    refusal(command, arguments.format(root=world), flag, expected)
    assert digests(world) == before
    assert not [p for p in os.listdir(world) if p not in ("pre", "ft", "serving", "task", "corpus", "records",
                                                          "dev.tsv")]


def test_a_parent_is_a_run_only_with_its_config_and_results(tmp_path):
    """A working folder where a Keras script saved `discriminator.keras` (docs/pretraining.md does) is no run
    for the folders under it; a run's folder (config.json and results) is, and so is any folder holding one."""
    from electra_tf.run_files import PRETRAINING_RUN, enclosing_artefact

    (tmp_path / "discriminator.keras").write_text("model")
    (tmp_path / "encoders").mkdir()
    assert enclosing_artefact(tmp_path / "encoders" / "minilm.keras") is None
    assert enclosing_artefact(tmp_path) == (str(tmp_path), PRETRAINING_RUN)  # the folder itself: not overwritten
    (tmp_path / "config.json").write_text("{}")
    assert enclosing_artefact(tmp_path / "encoders" / "minilm.keras") == (str(tmp_path), PRETRAINING_RUN)



def test_a_results_json_of_another_tool_is_no_finetuning_output(tmp_path):
    """The efficiency experiment writes its report as results.json at the top of its output, above the
    fine-tuning runs it makes there: that report (no trials, no metric) makes no fine-tuning output, so a
    re-run with more units can write its runs under it; a fine-tuning run's own results.json (trials and
    metric) does, even alone, and so does one that cannot be read."""
    import json

    from electra_tf.run_files import FINETUNING_OUTPUT, enclosing_artefact

    (tmp_path / "results.json").write_text(json.dumps({"runs": [], "summary": {}, "seeds": 1}))
    assert enclosing_artefact(tmp_path / "finetune" / "unit" / "classifier.keras") is None
    (tmp_path / "results.json").write_text(json.dumps({"trials": [], "metric": "accuracy"}))
    assert enclosing_artefact(tmp_path / "finetune" / "unit") == (str(tmp_path), FINETUNING_OUTPUT)
    (tmp_path / "results.json").write_text('{"trials": [')  # cut short
    assert enclosing_artefact(tmp_path / "finetune" / "unit") == (str(tmp_path), FINETUNING_OUTPUT)

def test_predict_writes_beside_a_script_saved_discriminator_but_not_into_a_run(tmp_path):
    """`predict --output_file` in a working folder where a Keras script saved `discriminator.keras` is written;
    into a run's folder (config.json and results) it is refused, naming the flag."""
    from electra_tf.predicting.writing import check_outputs

    (tmp_path / "discriminator.keras").write_text("model")
    check_outputs({"output_file": str(tmp_path / "predictions.jsonl")}, {"input": str(tmp_path / "few.tsv")})
    with pytest.raises(FileExistsError, match=r"`--output_file=.*discriminator.keras` is a model file"):
        check_outputs({"output_file": str(tmp_path / "discriminator.keras")}, {"input": str(tmp_path / "few.tsv")})
    assert (tmp_path / "discriminator.keras").read_text() == "model"
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileExistsError, match=r"`--output_file=.*predictions.jsonl` lies inside a pre-training run"):
        check_outputs({"output_file": str(tmp_path / "predictions.jsonl")}, {"input": str(tmp_path / "few.tsv")})
