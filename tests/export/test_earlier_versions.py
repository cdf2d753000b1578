"""Files of a fine-tuning run written by an earlier version (`max_seq_length`, now `seq_length`) still export and resume."""

import dataclasses
import json
import shutil

import pytest

from helpers import run_python


def test_export_serving_reads_the_max_seq_length_of_an_earlier_finetune_config(artifacts, tmp_path):
    run = shutil.copytree(artifacts.finetuned, tmp_path / "finetuned")
    config = json.loads((run / "finetune_config.json").read_text())
    config["max_seq_length"] = 24  # as electra_tf 0.1 wrote it
    del config["seq_length"]
    (run / "finetune_config.json").write_text(json.dumps(config))
    result = run_python(["-m", "electra_tf.export", "--kind", "serving", "--init", str(run),
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
