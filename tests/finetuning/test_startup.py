"""What `python -m electra_tf.finetune` loads and builds besides the work itself (no timing).

A short run's fixed costs are its imports and its set-up: `--help` and a tiny fine-tuning run, each in
a fresh interpreter, must not import the data builder's or the peers' libraries (Apache Beam, numba,
PyTorch, transformers), nor what Keras imports for its scikit-learn wrappers and plots (scikit-learn, SciPy,
matplotlib) or `tf.lite` for its JAX converter (JAX), nor, for `--help`, TensorFlow, Keras and the model libraries;
and a run builds the vocabulary's tokenizer once (checked, then used to tokenize), with Python's garbage collector on and the
objects of the imports frozen.
"""

import json

from helpers import make_run_dir, run_python, write_vocab
from test_finetune_strategies import write_toy_tasks

# Never needed by the fine-tuning command.
FOREIGN = ("apache_beam", "numba", "torch", "transformers", "electra_tf.pipelines.")  # the builder's modules
# Needed by a run, not by `--help`.
MODEL_LIBRARIES = ("keras_hub", "tensorflow_text")
# Installed here (the test extras), imported by Keras or TensorFlow (JAX: `tf.lite`) with TensorFlow where nothing
# hides them (`cli.quiet.KERAS_EXTRAS`).
KERAS_EXTRAS = ("sklearn", "matplotlib", "scipy", "jax")

# Runs the command as `python -m` does, in this interpreter; then prints what it loaded and (after a first
# argument `count`) the vocabularies of the tokenizers it built.
COMMAND = r"""
import gc, json, runpy, sys

built = []
if sys.argv[1] == "count":  # imports the tokenizer's module (and TensorFlow, as the command does) first
    from electra_tf import cli

    cli.prepare_tensorflow()
    from electra_tf.data import tokenizer

    original = tokenizer.WordPieceTokenizer.__init__

    def counted(self, vocab_file, *args, **kwargs):
        built.append(str(vocab_file))
        original(self, vocab_file, *args, **kwargs)

    tokenizer.WordPieceTokenizer.__init__ = counted
sys.argv = ["electra_tf.finetune", *sys.argv[2:]]
try:
    runpy.run_module("electra_tf.finetune", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code or 0
else:
    code = 0
print(json.dumps({"exit": code, "tokenizers": built, "modules": sorted(sys.modules),
                  "collector": {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}}))
"""


def loaded(mode, *args):
    result = run_python(["-c", COMMAND, mode, *args], check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def imported(modules, names):
    return sorted(name for name in names
                  if any(m == name or m.startswith(name.rstrip(".") + ".") for m in modules))


def test_help_imports_neither_foreign_nor_model_libraries():
    out = loaded("plain", "--help")
    assert imported(out["modules"], FOREIGN + MODEL_LIBRARIES + KERAS_EXTRAS) == []
    assert "tensorflow" not in out["modules"] and "keras" not in out["modules"]  # the flags need neither
    assert out["collector"]["enabled"], out["collector"]


def test_a_refused_flag_or_a_missing_one_is_refused_before_tensorflow_is_imported():
    for args, code in ((["--epochs=-1"], 2), (["--task=toy"], 2)):  # out of range; --data_dir etc. missing
        out = loaded("plain", *args)
        assert out["exit"] == code and "tensorflow" not in out["modules"], (args, out["exit"])


def test_a_run_imports_no_foreign_library_and_builds_the_tokenizer_once(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    data_dir = write_toy_tasks(tmp_path / "data", num_sentences=16)
    run_dir = make_run_dir(tmp_path / "run", vocab, num_layers=1, hidden_dim=16, embedding_dim=16,
                           intermediate_dim=32, max_sequence_length=32, seq_length=16)
    out = loaded("count", "--task=toy", f"--data_dir={data_dir}", f"--init={run_dir}",
                 f"--output_dir={tmp_path / 'out'}", "--text_a_column=sentence", "--label_column=label",
                 "--epochs=1", "--batch_size=8", "--seq_length=16", "--verbose=0")
    assert out["exit"] == 0
    assert (tmp_path / "out" / "results.json").exists()
    assert imported(out["modules"], FOREIGN + KERAS_EXTRAS) == []
    assert out["tokenizers"] == [str(tmp_path / "run" / "vocab.txt")]
    # TensorFlow's objects are out of the garbage collector's way (`cli.collector`), and it is on again.
    assert out["collector"]["enabled"] and out["collector"]["frozen"] > 100_000, out["collector"]
