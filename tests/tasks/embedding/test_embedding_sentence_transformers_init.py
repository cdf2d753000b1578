"""A sentence-transformers folder as `--init`: its own pooling (`1_Pooling/config.json`), normalisation (a `Normalize`
module in `modules.json`) and length (`sentence_bert_config.json`'s `max_seq_length`), with no flag given.

Zero-shot as the docs run it (`finetune --epochs 0`, then `predict` from the run), the vectors are
`SentenceTransformer(folder).encode`'s (in a process of its own) within 1e-4, a text longer than the folder's length
included. A flag given against the folder wins, with a warning naming the flag and the folder's file.
"""

import json
import os
import shutil
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "converting"))
from helpers import run_python  # noqa: E402
from convert_helpers import minilm_dir  # noqa: E402
from embedding_toy import ST_ENCODE, tiny_sentence_transformer, write_modules, write_task  # noqa: E402

pytestmark = [pytest.mark.large, pytest.mark.filterwarnings("ignore::UserWarning")]

TEXTS = ["where does the cat live", "the dog eats meat", "lion", " ".join(["the cow lives in the barn"] * 50)]


def zero_shot_vectors(tmp_path, init, name, texts, *flags):
    """`finetune --epochs 0 --init INIT` (no --pooling, --normalize_embeddings or --seq_length unless in `flags`),
    then `predict` from the run: `(vectors, results.json, the finetune stderr)`."""
    data = write_task(tmp_path / "data", splits=(("train", 4), ("dev", 6)))
    run, inputs = str(tmp_path / name), tmp_path / f"{name}.txt"
    finetuned = run_python(["-m", "electra_tf.finetune", "--task", "animals", "--task_kind", "embedding",
                            "--data_dir", data, "--init", init, "--output_dir", run, "--epochs", "0", *flags])
    inputs.write_text("\n".join(texts) + "\n")
    run_python(["-m", "electra_tf.predict", "--init", run, "--input", str(inputs), "--output_file",
                str(tmp_path / f"{name}.jsonl")])
    vectors = np.array([json.loads(line)["embedding"] for line in open(tmp_path / f"{name}.jsonl")])
    return vectors, json.load(open(os.path.join(run, "results.json"))), finetuned.stderr


def sentence_transformers_vectors(tmp_path, folder, texts):
    """`SentenceTransformer(folder).encode(texts)` in its own process, and the length it cuts at."""
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    out = run_python(["-c", ST_ENCODE, folder, str(tmp_path / "texts.json"), str(tmp_path / "st.npy")])
    return np.load(tmp_path / "st.npy"), json.loads(out.stdout.strip().splitlines()[-1])["max_seq_length"]


def test_a_cls_pooled_unnormalised_folder_gives_sentence_transformers_vectors_and_a_flag_against_it_is_named(
        tmp_path):
    folder = tiny_sentence_transformer(str(tmp_path / "st"), pooling="cls", normalize=False, max_seq_length=24)
    reference, length = sentence_transformers_vectors(tmp_path, folder, TEXTS)
    assert length == 24 and len(TEXTS[-1].split()) > 24  # the long text is cut at the folder's length
    vectors, results, _ = zero_shot_vectors(tmp_path, folder, "zero_shot", TEXTS)
    np.testing.assert_allclose(vectors, reference, atol=1e-4)
    assert np.linalg.norm(reference, axis=1).min() > 2  # not normalised
    hparams = results["hparams"]
    assert (hparams["pooling"], hparams["normalize_embeddings"], hparams["seq_length"]) == ("cls", False, 24)

    # Flags given against the folder win, each with a warning naming it and the folder's file.
    _, results, stderr = zero_shot_vectors(tmp_path, folder, "flags", TEXTS[:1], "--pooling", "mean",
                                           "--seq_length", "32")
    warnings = [line for line in stderr.splitlines() if "WARNING: `--" in line]
    assert len(warnings) == 2, stderr[-3000:]
    assert "`--pooling=mean` overrides the --init's own setting" in warnings[0]
    assert os.path.join(folder, "1_Pooling", "config.json") + " (cls pooling)" in warnings[0]
    assert "`--seq_length=32`" in warnings[1] and "sentence_bert_config.json (max_seq_length 24)" in warnings[1]
    hparams = results["hparams"]
    assert (hparams["pooling"], hparams["normalize_embeddings"], hparams["seq_length"]) == ("mean", False, 32)


def test_minilm_rewritten_to_cls_pooling_without_normalize_gives_sentence_transformers_vectors_at_its_length(
        tmp_path):
    """all-MiniLM-L6-v2's folder copied (its weights linked) with [CLS] pooling and no Normalize module, its own
    length 256: a 300-word text is cut there, by sentence-transformers and here alike."""
    source, folder = minilm_dir(), str(tmp_path / "minilm_cls")
    os.makedirs(folder)
    for name in os.listdir(source):
        if os.path.isfile(os.path.join(source, name)) and name != "model.safetensors":
            shutil.copyfile(os.path.join(source, name), os.path.join(folder, name))
    os.symlink(os.path.join(source, "model.safetensors"), os.path.join(folder, "model.safetensors"))
    write_modules(folder, pooling="cls", normalize=False, dimension=384)
    texts = ["How do cats purr?", "The Eiffel Tower is in Paris, France.",
             " ".join(f"word{i % 37} and more" for i in range(100))]  # 300 words: well past 256 pieces
    reference, length = sentence_transformers_vectors(tmp_path, folder, texts)
    assert length == 256
    vectors, results, _ = zero_shot_vectors(tmp_path, folder, "minilm", texts)
    np.testing.assert_allclose(vectors, reference, atol=1e-4)
    assert results["hparams"]["seq_length"] == 256 and results["hparams"]["pooling"] == "cls"
