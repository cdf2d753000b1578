"""Files of a fine-tuning run written by an earlier version (`max_seq_length`, now `seq_length`) still export and resume."""

import dataclasses
import json
import shutil
import zipfile

import pytest

from helpers import run_python

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def test_export_serving_reads_the_max_seq_length_of_an_earlier_finetune_config(artifacts, tmp_path):
    run = shutil.copytree(artifacts.finetuned, tmp_path / "finetuned")
    config = json.loads((run / "finetune_config.json").read_text())
    config["max_seq_length"] = 24  # as electra_tf 0.1 wrote it
    del config["seq_length"]
    (run / "finetune_config.json").write_text(json.dumps(config))
    result = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(run),
                         "--output_dir", str(tmp_path / "serving"), "--model_name", "toy"], check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    asset = json.loads((tmp_path / "serving" / "toy" / "1" / "assets" / "serving_config.json").read_text())
    assert asset["seq_length"] == 24


def test_an_unfinished_run_of_an_earlier_version_resumes_and_other_settings_are_named():
    from electra_tf.finetuning import trials
    from electra_tf.tasks import FinetuneConfig

    config = FinetuneConfig(task="toy", data_dir="d", init="i", output_dir="out", seq_length=64)
    saved = trials.settings(config)
    saved["max_seq_length"] = saved.pop("seq_length")  # settings.json / results.json of electra_tf 0.1
    trials._refuse_other_settings(saved, config, "a run")  # the same settings: no error
    with pytest.raises(FileExistsError, match=r"--seq_length=32 vs 64"):
        trials._refuse_other_settings(saved, dataclasses.replace(config, seq_length=32), "a run")


# The module each fine-tuned model class lived in before the task kinds moved to `electra_tf/tasks/<kind>/`: a
# `.keras` file of that version names it (`config.json`'s "module"), beside the registered name Keras loads by.
EARLIER_MODULES = {"classification": "electra_tf.models.classifier", "tagging": "electra_tf.models.token_classifier",
                   "span_qa": "electra_tf.models.question_answerer",
                   "multiple_choice": "electra_tf.models.multiple_choice"}


def _as_earlier_version(path, module):
    """Rewrites the `.keras` file `path` as an earlier version wrote it: every class of the package at `module`."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    config["module"] = module
    for loss in [config.get("compile_config", {}).get("loss")]:
        if isinstance(loss, dict) and loss.get("module", "").startswith("electra_tf."):
            loss["module"] = module
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _earlier_file(name, tmp_path):
    """`(path, inputs, outputs)`: a small model of kind `name` saved as the earlier layout wrote it, what it was
    called with and what it returned."""
    import keras
    import numpy as np

    from electra_tf import tasks
    from electra_tf.models.encoder import ElectraEncoder

    kind = tasks.get(name)
    encoder = ElectraEncoder(vocab_size=20, num_layers=1, num_heads=1, hidden_dim=16, embedding_dim=8,
                             intermediate_dim=32)
    model = kind.model_class(encoder, **({} if name == "span_qa" else {"num_labels": 1 if name == "multiple_choice"
                                                                          else 3}))
    if kind.saved_classes:
        model.compile(optimizer="adam", loss=kind.saved_classes[0]())
    ids = np.array([[2, 5, 6, 3, 0, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids > 0).astype("int32")}
    if name == "multiple_choice":
        inputs = {key: value[:, None, :] for key, value in inputs.items()}
    expected = keras.tree.map_structure(np.asarray, model(inputs, training=False))
    path = str(tmp_path / kind.model_file)
    model.save(path)
    _as_earlier_version(path, EARLIER_MODULES[name])
    return path, inputs, expected


@pytest.mark.parametrize("name", sorted(EARLIER_MODULES))
def test_a_keras_file_of_the_earlier_layout_loads_with_its_kind_by_the_class_it_saved(name, tmp_path):
    """A bare `.keras` file (no `finetune_config.json` beside it) whose classes name the modules of the earlier layout
    loads, compiled loss included, with the same outputs; its kind is the one whose registered class it saved."""
    import keras
    import numpy as np

    from electra_tf import tasks

    kind = tasks.get(name)
    path, inputs, expected = _earlier_file(name, tmp_path)
    finetuned = tasks.OUTPUTS.load(path)
    assert finetuned.kind is kind and finetuned.settings == {}
    got = keras.tree.map_structure(np.asarray, finetuned.model(inputs, training=False))
    keras.tree.map_structure(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6), expected, got)
    if kind.saved_classes:  # `load_finetuned` leaves the model uncompiled; Keras' own load restores the loss
        assert type(keras.saving.load_model(path).loss) is kind.saved_classes[0]


# A user's script: the one documented import, then Keras' own load of a file that names a module that is gone.
LOAD_EARLIER = """
import json, sys
import electra_tf.saved_classes, keras
import numpy as np
model = keras.saving.load_model(sys.argv[1])
inputs = {key: np.array(value, "int32") for key, value in json.loads(sys.argv[2]).items()}
print(json.dumps({"model": type(model).__name__, "loss": type(model.loss).__name__,
                  "logits": np.asarray(model(inputs, training=False)).tolist()}))
"""


def test_a_keras_file_of_the_earlier_layout_loads_in_a_users_script_after_the_one_import(tmp_path):
    """`import electra_tf.saved_classes, keras; keras.saving.load_model(path)` in a fresh process: Keras finds each
    class of a file whose "module" no longer exists (`electra_tf.models.token_classifier`) by its registered name."""
    import numpy as np

    path, inputs, expected = _earlier_file("tagging", tmp_path)
    with zipfile.ZipFile(path) as archive:
        assert json.loads(archive.read("config.json"))["module"] == "electra_tf.models.token_classifier"
    result = run_python(["-c", LOAD_EARLIER, path, json.dumps({k: v.tolist() for k, v in inputs.items()})],
                        check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert (loaded["model"], loaded["loss"]) == ("ElectraTokenClassifier", "MaskedSparseCrossEntropy")
    np.testing.assert_allclose(loaded["logits"], expected, rtol=1e-5, atol=1e-6)


def test_a_run_of_an_earlier_version_without_a_kind_is_told_by_its_model_file_and_a_named_kind_wins(tmp_path):
    """A run folder's kind: the "kind" of its `finetune_config.json`; a run that wrote none, by its model's file."""
    from electra_tf import tasks

    for kind in tasks.FINETUNED.values():
        run = tmp_path / kind.name
        run.mkdir()
        (run / kind.model_file).write_bytes(b"")
        assert tasks.OUTPUTS.kind_of(str(run)) is kind
        (run / "finetune_config.json").write_text(json.dumps({"kind": kind.name, "seq_length": 16}))
        assert tasks.OUTPUTS.kind_of(str(run)) is kind
    assert tasks.OUTPUTS.kind_of(str(tmp_path)) is None
