"""Model files and records that a command cannot use: one `error:` line naming the flag and the file.

`--init` forms that hold the wrong thing or are damaged (a keras-hub preset with a truncated
`config.json` or without its weights, an encoder export or a bare encoder given to `predict`,
`keras:` a run folder, `hf:DIR,`), a `.keras` file holding Python code, a `finetune_config.json`
field of the wrong type, records with more segments than `--num_segments`, and memory running out.
Each runs the command (a subprocess) and checks the exit status, the one line, and that every file
that existed is unchanged and nothing was added.
"""

import json
import os
import pathlib
import shutil

import pytest

from helpers import make_run_dir, run_python, write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def tree(folder):
    """Every path under `folder` (folders too) with the sha256 of each file: what a refused command leaves alone."""
    import hashlib

    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def refused(args, *folders, exit_code=1):
    """Runs `python args`; returns its one `error:` line. Each of `folders` is unchanged and gained nothing."""
    before = [tree(folder) for folder in folders]
    result = run_python(args, check=False)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == exit_code and len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert [tree(folder) for folder in folders] == before
    return lines[0]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A pre-training run, its encoder export, a fine-tuned classifier output, a keras-hub preset, a task."""
    import keras

    from electra_tf.exporting.encoder_saved_model import export_encoder
    ElectraClassifier = task_kind("classification").model_class

    root = tmp_path_factory.mktemp("models")
    vocab = write_vocab(root / "vocab.txt", 400)
    run = pathlib.Path(make_run_dir(root / "run", vocab, max_sequence_length=64, seq_length=32))
    encoder = keras.saving.load_model(str(run / "discriminator.keras"))
    export_encoder(encoder, vocab, str(root / "encoder"), seq_length=32)
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    finetuned = root / "finetuned"
    finetuned.mkdir()
    classifier.save(str(finetuned / "classifier.keras"))
    shutil.copyfile(vocab, finetuned / "vocab.txt")
    (finetuned / "finetune_config.json").write_text(json.dumps(
        {"task": "toy", "kind": "classification", "label_names": ["negative", "positive"], "regression": False,
         "pair": False, "metric": "accuracy", "seq_length": 16}))
    task = root / "task"
    task.mkdir()
    rows = "".join(f"piece{i} piece{i + 1}\t{i % 2}\n" for i in range(16))
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    (root / "input.txt").write_text("piece1 piece2\n")
    return dict(root=root, run=run, encoder=root / "encoder", finetuned=finetuned, task=task, vocab=vocab,
                input=root / "input.txt")


def finetune_args(models, init, tmp_path):
    return ["-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(models["task"]), "--init", init,
            "--output_dir", str(tmp_path / "out"), "--seq_length", "16", "--epochs", "1"]


def predict_args(models, init, tmp_path):
    return ["-m", "electra_tf.predict", "--init", str(init), "--input", str(models["input"]), "--output_file",
            str(tmp_path / "predictions.jsonl")]


# --- --init forms --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def preset(models):
    """A keras-hub `ElectraBackbone` preset saved by keras-hub itself, with its tokenizer."""
    keras_hub = pytest.importorskip("keras_hub")
    backbone = keras_hub.models.ElectraBackbone(vocab_size=400, num_layers=1, num_heads=2, hidden_dim=32,
                                                embedding_dim=16, intermediate_dim=64, max_sequence_length=64)
    path = models["root"] / "preset"
    backbone.save_to_preset(str(path))
    keras_hub.tokenizers.ElectraTokenizer(vocabulary=models["vocab"], lowercase=True).save_to_preset(str(path))
    return path


@pytest.mark.parametrize("prefix", ["keras_hub:", ""])
def test_a_keras_hub_preset_with_a_truncated_config_json_names_the_flag_and_the_file(preset, models, tmp_path,
                                                                                     prefix):
    damaged = shutil.copytree(preset, tmp_path / "preset")
    text = (damaged / "config.json").read_text()
    (damaged / "config.json").write_text(text[:len(text) // 2])
    line = refused(finetune_args(models, f"{prefix}{damaged}", tmp_path), tmp_path, models["root"])
    assert line.startswith(f"error: `--init=keras_hub:{damaged}`: {damaged / 'config.json'} is not valid JSON (")
    assert line.endswith("): the preset is truncated or damaged.")


@pytest.mark.parametrize("prefix", ["keras_hub:", ""])
def test_a_keras_hub_preset_without_its_weights_names_model_weights_h5(preset, models, tmp_path, prefix):
    partial = shutil.copytree(preset, tmp_path / "preset")
    os.remove(partial / "model.weights.h5")
    line = refused(finetune_args(models, f"{prefix}{partial}", tmp_path), tmp_path, models["root"])
    assert line == (f"error: `--init=keras_hub:{partial}`: {partial / 'model.weights.h5'} is missing: the preset "
                    "holds no weights (copied in part?). Copy the whole preset folder, or save it again with "
                    "`ElectraBackbone.save_to_preset(DIR)`.")


def test_predict_refuses_an_encoder_export_naming_it(models, tmp_path):
    line = refused(predict_args(models, models["encoder"], tmp_path), tmp_path, models["root"])
    assert line.startswith(f"error: `--init={models['encoder']}` is an encoder export "
                           f"({models['encoder'] / 'assets' / 'encoder_config.json'}): a bare encoder, without a task "
                           "head, predicts nothing.")


def test_predict_refuses_a_bare_encoder_keras_file_naming_the_flag_and_the_file(models, tmp_path):
    path = models["run"] / "discriminator.keras"
    line = refused(predict_args(models, path, tmp_path), tmp_path, models["root"])
    assert line.startswith(f"error: `--init={path}` holds a ElectraEncoder, which is not a fine-tuned model "
                           "(ElectraClassifier, ")


def test_keras_form_of_a_run_folder_says_it_is_a_folder_and_how_to_give_it(models, tmp_path):
    run = models["run"]
    line = refused(finetune_args(models, f"keras:{run}", tmp_path), tmp_path, models["root"])
    assert line == (f"error: `--init={run}` is a folder without encoder.keras: a .keras model is a file. Name the "
                    f".keras file itself, or, since it holds a pre-training run, the folder as `--init {run}` (no "
                    "keras: form).")


@pytest.mark.parametrize("spec", ["hf:{run},", "hf:,{run}", "hf:{run},,{run}"])
def test_an_hf_form_with_an_empty_folder_name_is_named(models, tmp_path, spec):
    init = spec.format(run=models["run"])
    line = refused(finetune_args(models, init, tmp_path), tmp_path, models["root"])
    assert line == (f"error: `--init={init}` holds an empty folder name (a comma too many): hf:DIR, or hf:DISC,GEN "
                    "for a discriminator and its generator.")


# --- Damaged or unusable files -------------------------------------------------------------------


def test_a_keras_file_holding_a_python_lambda_is_named_as_code_not_as_damage(models, tmp_path):
    import keras

    inputs = keras.Input((4,))
    path = tmp_path / "lambda.keras"
    keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2)(inputs)).save(str(path))
    line = refused(finetune_args(models, str(path), tmp_path), tmp_path, models["root"])
    assert line == (f"error: `--init={path}` holds Python code (a Lambda layer's function, or another callable saved "
                    "as bytecode), which Keras loads only with safe_mode off: electra_tf does not run code from a "
                    "model file. Save the model without it.")
    assert "damaged" not in line


@pytest.mark.parametrize("field, value, wanted", [
    ("seq_length", "128", "`seq_length` expects an int; received '128' (str)."),
    ("label_names", "negative,positive", "`label_names` expects a list of str or null; received 'negative,positive'."),
    ("pair", "no", "`pair` expects a bool (true or false); received 'no'."),
])
def test_a_finetune_config_field_of_the_wrong_type_names_the_file_and_the_field(models, tmp_path, field, value,
                                                                                wanted):
    finetuned = shutil.copytree(models["finetuned"], tmp_path / "finetuned")
    path = finetuned / "finetune_config.json"
    values = json.loads(path.read_text())
    values[field] = value
    path.write_text(json.dumps(values))
    line = refused(predict_args(models, finetuned, tmp_path), tmp_path, models["root"])
    assert line == f"error: {path}: {wanted}"


def write_two_segment_records(path, num_examples=8, seq_length=32):
    """Records in the official format whose examples are `[CLS] A [SEP] B [SEP]` (segment ids 0 and 1)."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(num_examples):
            a, b = 5 + i % 4, 4
            n = a + b + 3
            values = {"input_ids": [101] + [200] * a + [102] + [300] * b + [102] + [0] * (seq_length - n),
                      "input_mask": [1] * n + [0] * (seq_length - n),
                      "segment_ids": [0] * (a + 2) + [1] * (b + 1) + [0] * (seq_length - n)}
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in values.items()}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def pretrain_args(folder, data, *extra):
    return ["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(folder / "run"), "--data", str(data),
            "--vocab_file", str(folder / "vocab.txt"), "--seq_length", "32", "--max_sequence_length", "32",
            "--train_steps", "1", "--batch_size", "4", *extra]


def test_pretrain_num_segments_1_on_two_segment_records_names_the_flag_and_the_records(tmp_path):
    write_vocab(tmp_path / "vocab.txt")
    data = tmp_path / "records.tfrecord"
    write_two_segment_records(data)
    line = refused(pretrain_args(tmp_path, data, "--num_segments", "1"), tmp_path)
    assert line == (f"error: `--num_segments=1` does not fit the records of `--data`: {data} holds segment id 1 (the "
                    "segment table has rows 0..0). Use --num_segments 2, or records built for one segment.")
    assert not (tmp_path / "run").exists()


def test_pretrain_num_segments_1_is_refused_by_the_builds_stats_json(tmp_path):
    """The first records of a file may all be single-segment; the build's statistics count the others."""
    from helpers import write_records

    data = write_records(tmp_path / "records", num_files=1, num_examples=8)  # segment id 0 only
    (tmp_path / "records" / "stats.json").write_text(json.dumps({"examples": 8, "single_segment": 3}))
    shutil.copyfile(tmp_path / "records" / "vocab.txt", tmp_path / "vocab.txt")
    line = refused(pretrain_args(tmp_path, data, "--num_segments", "1"), tmp_path)
    assert line == (f"error: `--num_segments=1` is too few for the records of `--data={data}`: "
                    f"{tmp_path / 'records' / 'stats.json'} counts 5 of 8 examples with two segments (segment id 1). "
                    "Use --num_segments 2 (the default).")
    assert not (tmp_path / "run").exists()


@pytest.mark.large  # a batch whose tensors are GBs: a minute on 2 busy cores
def test_memory_running_out_names_batch_size_and_seq_length(tmp_path):
    write_vocab(tmp_path / "vocab.txt")
    data = tmp_path / "records.tfrecord"
    write_two_segment_records(data)
    # A million examples of 32 tokens: the train step's first large tensors (Grappler's zeros for
    # the summed attention gradients, [1000000, 32, 32] float32, then each activation) are each 4 GB
    # or more, so the first one fails whole, far from the cap, wherever TensorFlow allocates it.
    args = pretrain_args(tmp_path, data, "--batch_size", "1000000")
    # `ulimit -v`: the address space is capped, then the command runs as a user starts it.
    result = run_python(["-c", "import os, resource, sys; "
                         "resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30)); "
                         "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])", *args], check=False)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error: out of memory (")
    assert lines[0].endswith("): lower `--batch_size=1000000` or `--seq_length=32`.")
    assert "Traceback" not in result.stderr


@pytest.mark.large  # TensorFlow's allocator waits 10 s for memory to be freed before each refusal
def test_a_tensor_or_a_graph_constant_too_large_to_allocate_is_out_of_memory():
    """Both ways TensorFlow reports an allocation it cannot make: an op's output (`ResourceExhaustedError`)
    and a graph constant made from its proto (`InvalidArgumentError`), each with 2**40 float32s (4.4 TB)."""
    import tensorflow as tf

    from electra_tf.cli.errors import is_memory_error, out_of_memory

    with pytest.raises(tf.errors.ResourceExhaustedError) as raised:
        tf.zeros([2**20, 2**20])
    assert is_memory_error(raised.value)
    line = out_of_memory(raised.value)
    assert line.startswith("out of memory (ResourceExhaustedError: OOM when allocating tensor with shape[1048576,1048576]")
    assert line.endswith("): free memory, or run it on a machine with more.")

    graph = tf.Graph()
    with graph.as_default():
        constant = tf.constant(0.0)  # then given the proto of a zero-filled [2**20, 2**20] tensor, as Grappler writes
    shape = tf.TensorShape([2**20, 2**20]).as_proto()
    constant.op._set_attr("value", tf.compat.v1.AttrValue(tensor=tf.compat.v1.make_tensor_proto(0.0).__class__(
        dtype=tf.float32.as_datatype_enum, tensor_shape=shape)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot parse tensor from proto") as raised:
        tf.compat.v1.Session(graph=graph).run(constant)
    assert is_memory_error(raised.value)
    assert out_of_memory(raised.value) == ("out of memory (InvalidArgumentError: a constant of shape [1048576, 1048576] "
                                           "float32 (4398.0 GB) could not be allocated): free memory, or run it on a "
                                           "machine with more.")
    assert not is_memory_error(tf.errors.InvalidArgumentError(None, None, "Expected a rank-2 tensor"))
