"""A cased vocabulary end to end: vocab -> records -> pre-training -> fine-tuning -> serving keep "Paris" != "paris".

The commands use the spellings of electra_tf 0.1 (`--output`, `--vocab`, `--max_seq_length`): they
still work, each with one deprecation line naming the new flag.

The reference is Hugging Face `tokenizers`' BERT WordPiece with the same
vocabulary, not our own tokenizer.
"""

import glob
import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops the served model uses)

from helpers import run_python
from electra_tf.data.tokenizer import new_settings

SENTENCES = ["Paris is a city in France.", "the paris agreement was signed.", "Berlin and Paris are cities.",
             "Rome is old.", "We saw paris hilton.", "A good film about Paris.", "A bad film."]


def deprecations(result):
    """The deprecation lines a command printed, without their common tail."""
    return [line.split(" (")[0] for line in result.stderr.splitlines() if " is deprecated; use --" in line]


@pytest.mark.large
def test_cased_vocabulary_keeps_case_from_records_to_serving(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))) * 20)
    vocab = tmp_path / "vocab" / "vocab.txt"
    result = run_python(["-m", "electra_tf.pipelines.build_vocab", "--input", str(corpus), "--vocab_size", "300",
                         "--output", str(vocab), "--nolower_case", "--num_unused", "0"])
    assert deprecations(result) == ["warning: --output is deprecated; use --vocab_file"]
    assert json.loads((vocab.parent / "electra_tokenizer.json").read_text())["lower_case"] is False
    reference = tokenizers.BertWordPieceTokenizer(str(vocab), lowercase=False, strip_accents=False)
    paris, lower = (reference.encode(w, add_special_tokens=False).ids for w in ("Paris", "paris"))
    assert paris != lower

    data = tmp_path / "data"
    result = run_python(["-m", "electra_tf.pipelines.build_pretraining_data", "--input", str(corpus), "--vocab", str(vocab),
                         "--output_dir", str(data), "--max_seq_length", "32", "--num_shards", "2",
                         "--direct_running_mode=in_memory"])
    assert deprecations(result) == ["warning: --vocab is deprecated; use --vocab_file",
                                    "warning: --max_seq_length is deprecated; use --seq_length"]
    stats = json.loads((data / "stats.json").read_text())
    assert stats["tokenizer"] == new_settings(lower_case=False)
    ids = np.concatenate([tf.train.Example.FromString(r.numpy()).features.feature["input_ids"].int64_list.value
                          for path in glob.glob(str(data / "*.tfrecord*"))
                          for r in tf.data.TFRecordDataset(path)])
    assert set(paris) <= set(ids.tolist()) and set(lower) <= set(ids.tolist())  # both cases in the records

    run_dir = tmp_path / "run"
    run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(run_dir),
                "--data", str(data / "*.tfrecord*"), "--vocab_file", str(vocab), "--seq_length", "32",
                "--batch_size", "4", "--train_steps", "2", "--verbose", "0", "--hidden_dim", "32",
                "--num_heads", "2", "--intermediate_dim", "64", "--num_layers", "1"])
    assert json.loads((run_dir / "electra_tokenizer.json").read_text())["lower_case"] is False

    task = tmp_path / "task"
    task.mkdir()
    rows = "sentence\tlabel\n" + "".join(f"{s}\t{int('good' in s or 'Paris' in s)}\n" for s in SENTENCES)
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text(rows)
    finetuned = tmp_path / "finetuned"
    result = run_python(["-m", "electra_tf.finetune", "--task", "cities", "--data_dir", str(task),
                         "--init", str(run_dir), "--output_dir", str(finetuned), "--epochs", "1", "--batch_size", "4",
                         "--max_seq_length", "16", "--verbose", "0"])
    assert deprecations(result) == ["warning: --max_seq_length is deprecated; use --seq_length"]
    serving = tmp_path / "serving"
    result = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(finetuned),
                         "--output", str(serving)])
    assert deprecations(result) == ["warning: --output is deprecated; use --output_dir"]
    loaded = tf.saved_model.load(glob.glob(str(serving / "*" / "1"))[0])
    served = loaded.signatures["preprocess"](text=tf.constant(["Paris", "paris"]))
    got = [[int(i) for i, m in zip(row, mask) if m][1:-1]
           for row, mask in zip(served["token_ids"].numpy(), served["padding_mask"].numpy())]
    assert got == [paris, lower]
