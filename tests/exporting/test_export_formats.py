"""The export formats registry: every `--format` by name, the served-only task kinds among them."""

import pytest

from electra_tf import export_formats, run_files, tasks


def test_every_format_is_a_registry_line_or_a_served_only_task_kind():
    served_only = [name for name, kind in tasks.KINDS.items() if not kind.finetunes]
    assert served_only and export_formats.names() == ["encoder", "preset", "serving", "tflite", *served_only]
    for name in served_only:
        assert isinstance(export_formats.get(name), export_formats.Served)


@pytest.mark.parametrize("name, artefact, claimed", [
    ("encoder", run_files.SAVED_MODEL, True), ("preset", run_files.KERAS_HUB_PRESET, False),
    ("serving", run_files.SAVED_MODEL, True), ("tflite", run_files.TFLITE_MODEL, True)])
def test_each_format_names_what_it_writes_and_where(name, artefact, claimed):
    class Options:
        output_dir, model_name, version = "exports", "movie", 3

    found = export_formats.get(name)
    assert (found.artefact, found.claimed) == (artefact, claimed)
    assert found.path(Options) == ("exports/movie/3" if name == "serving" else "exports")


def test_an_unknown_format_names_the_formats():
    with pytest.raises(ValueError, match=r"Unknown `--format=onnx`. The formats are \['encoder', 'preset'"):
        export_formats.get("onnx")
