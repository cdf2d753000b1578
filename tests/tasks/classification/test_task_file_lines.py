"""A line ends at `\\n` (or `\\r\\n`) and nowhere else in fine-tuning's task TSV/CSV files.

The lines hold the characters `str.splitlines` also breaks at (`helpers.LINE_TEXTS`); the list is the reference.
"""

import pytest

from electra_tf.tasks.classification import data as tasks_lib
from helpers import LINE_TEXTS as TEXTS, write_lines as write


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_fine_tuning_task_files_give_a_record_per_line(tmp_path, end):
    tsv_dir, csv_dir = tmp_path / "tsv", tmp_path / "csv"
    tsv_dir.mkdir(), csv_dir.mkdir()
    write(tsv_dir / "train.tsv", ["sentence\tlabel"] + [f"{t}\t{i % 2}" for i, t in enumerate(TEXTS)], end)
    spec = tasks_lib.load_task("toy", str(tsv_dir))
    assert [(e.text_a, e.label) for e in tasks_lib.read_examples(spec, str(tsv_dir))] == [
        (t, i % 2) for i, t in enumerate(TEXTS)]

    write(csv_dir / "train.csv", ["sentence,label", f'"{TEXTS[0]}{end}{TEXTS[1]}",a', f"{TEXTS[2]},b",
                                  f'"lone\rreturn",a'], end)
    spec = tasks_lib.load_task("toy", str(csv_dir), file_format="csv")
    assert [(e.text_a, e.label) for e in tasks_lib.read_examples(spec, str(csv_dir))] == [
        (TEXTS[0] + end + TEXTS[1], 0), (TEXTS[2], 1), ("lone\rreturn", 0)]
    (csv_dir / "train.csv").write_text("sentence,label\nfine,a\nwrong,c\n")
    with pytest.raises(ValueError, match=r"train.csv:3: unknown label 'c'"):
        tasks_lib.read_examples(tasks_lib.load_task("toy", str(csv_dir), file_format="csv", labels=["a", "b"]),
                                str(csv_dir))

