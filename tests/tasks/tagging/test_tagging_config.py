"""Which tasks are of the tagging kind (`--task_kind auto`), and its generic columns and tag scheme."""

import pytest

from electra_tf.tasks import FinetuneConfig, for_config
from electra_tf.tasks.tagging.data import tagging_task


def test_task_kind_and_generic_tagging_columns():
    def is_tagging(config):
        return for_config(config).name == "tagging"

    assert is_tagging(FinetuneConfig(task="conll2003")) and is_tagging(FinetuneConfig(task="CoNLL2003_pos"))
    assert not is_tagging(FinetuneConfig(task="sst-2"))
    assert is_tagging(FinetuneConfig(task="my_ner", task_kind="tagging"))
    assert tagging_task(FinetuneConfig(task="conll2003_chunk")).label_column == 2
    task = tagging_task(FinetuneConfig(task="x", task_kind="tagging", token_column=1, label_column="-2",
                                       tag_scheme="BIOES"))
    assert (task.token_column, task.label_column, task.scheme) == (1, -2, "BIOES")
    with pytest.raises(ValueError, match="column index"):
        tagging_task(FinetuneConfig(task="x", task_kind="tagging", label_column="ner"))
