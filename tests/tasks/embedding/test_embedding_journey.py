"""The embedding kind end to end as users run it: `finetune` (and `--epochs 0`) -> `export --format serving` ->
`predict` from the run dir and from the export (vectors, and `--passages --top_k`) -> a fresh process with
TensorFlow and tensorflow-text alone serving the raw text -> `convert --to hf`, read by sentence-transformers.

All agree: the same vectors everywhere (within 1e-5; sentence-transformers within 1e-4), the dev mrr@10 that
`finetune` reports is the one computed here from the served vectors, and the top passages are the served vectors'
nearest by cosine.
"""

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from helpers import make_run_dir, run_python  # noqa: E402
from embedding_toy import ST_ENCODE, WORDS, write_task  # noqa: E402

pytestmark = [pytest.mark.large, pytest.mark.filterwarnings("ignore::UserWarning")]

SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
assert not [m for m in sys.modules if m.startswith("electra_tf")]
export, texts, out = sys.argv[1:]
serve = tf.saved_model.load(export).signatures["serving_default"]
vectors = serve(text=tf.constant(json.load(open(texts))))["embedding"].numpy()
np.save(out, vectors)
"""

def mrr_at_10(query_vectors, passage_vectors, gold):
    """The mean over queries of 1 / rank of the first gold passage (`gold[i]`: a set) within the 10 nearest by
    cosine (0 beyond)."""
    q = query_vectors / np.linalg.norm(query_vectors, axis=1, keepdims=True)
    p = passage_vectors / np.linalg.norm(passage_vectors, axis=1, keepdims=True)
    similarity = q @ p.T
    ranks = [min((similarity[i] > similarity[i, g]).sum() + 1 for g in golds) for i, golds in enumerate(gold)]
    return float(np.mean([1.0 / r if r <= 10 else 0.0 for r in ranks]))


def records(path):
    return [json.loads(line) for line in open(path)]


def test_embedding_journey(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    run = make_run_dir(tmp_path / "pretrained", str(vocab), max_sequence_length=32, seq_length=32)
    data = write_task(tmp_path / "data", splits=(("train", 64), ("dev", 24), ("test", 12)), negatives=True)
    out, zero = str(tmp_path / "out"), str(tmp_path / "zero_shot")
    common = ["--task_kind", "embedding", "--task", "animals", "--data_dir", data, "--init", run, "--batch_size",
              "16", "--seq_length", "32", "--seed", "1"]
    run_python(["-m", "electra_tf.finetune", *common, "--output_dir", out, "--epochs", "2", "--learning_rate", "1e-3"])
    run_python(["-m", "electra_tf.finetune", *common, "--output_dir", zero, "--epochs", "0"])
    results, zero_results = (json.load(open(os.path.join(d, "results.json"))) for d in (out, zero))
    assert results["metric"] == "mrr@10" and results["kind"] == "embedding"
    assert zero_results["trials"][0]["kept_epoch"] == 0 and os.path.exists(os.path.join(zero, "embedder.keras"))

    # The dev split's queries and distinct positives, in a text file each.
    dev = [json.loads(line) for line in open(os.path.join(data, "dev.jsonl"))]
    queries = list(dict.fromkeys(r["query"] for r in dev))
    passages = list(dict.fromkeys(r["positive"] for r in dev))
    gold = [{passages.index(r["positive"]) for r in dev if r["query"] == q} for q in queries]
    texts = queries + passages
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n")
    (tmp_path / "passages.txt").write_text("\n".join(passages) + "\n")
    (tmp_path / "texts.json").write_text(json.dumps(texts))

    serving = str(tmp_path / "serving")
    run_python(["-m", "electra_tf.export", "--format", "serving", "--init", out, "--output_dir", serving,
                "--model_name", "animals"])
    export = os.path.join(serving, "animals", "1")
    for name, init in (("run", out), ("export", export)):
        run_python(["-m", "electra_tf.predict", "--init", init, "--input", str(tmp_path / "texts.txt"),
                    "--output_file", str(tmp_path / f"{name}.jsonl")])
    from_run, from_export = (np.array([r["embedding"] for r in records(tmp_path / f"{n}.jsonl")])
                             for n in ("run", "export"))
    run_python(["-c", SERVE, export, str(tmp_path / "texts.json"), str(tmp_path / "served.npy")])
    served = np.load(tmp_path / "served.npy")
    np.testing.assert_allclose(from_run, served, atol=1e-5)
    np.testing.assert_allclose(from_export, served, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, atol=1e-5)

    # The dev metric of the served vectors is the one fine-tuning reported (the kept epoch's).
    q, p = served[:len(queries)], served[len(queries):]
    assert results["trials"][0]["dev"]["mrr@10"] == pytest.approx(mrr_at_10(q, p, gold), abs=1e-4)

    # Each query's top passages: its nearest by cosine among the served passage vectors.
    run_python(["-m", "electra_tf.predict", "--init", export, "--input", str(tmp_path / "texts.txt"), "--passages",
                str(tmp_path / "passages.txt"), "--top_k", "3", "--output_file", str(tmp_path / "top.jsonl")])
    top = records(tmp_path / "top.jsonl")
    similarity = served @ p.T
    for i, record in enumerate(top):
        expected = np.argsort(-similarity[i], kind="stable")[:3]
        assert [hit["index"] for hit in record["top_k"]] == expected.tolist()
        assert [hit["text"] for hit in record["top_k"]] == [passages[j] for j in expected]
        np.testing.assert_allclose([hit["score"] for hit in record["top_k"]], similarity[i, expected], atol=1e-5)

    # sentence-transformers reads the `convert --to hf` folder and gives the same vectors.
    hf = str(tmp_path / "hf")
    run_python(["-m", "electra_tf.convert", "--from", "keras", "--input", os.path.join(out, "embedder.keras"),
                "--to", "hf", "--output_dir", hf])
    pooling = json.load(open(os.path.join(hf, "1_Pooling", "config.json")))
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]
    run_python(["-c", ST_ENCODE, hf, str(tmp_path / "texts.json"), str(tmp_path / "st.npy")])
    np.testing.assert_allclose(np.load(tmp_path / "st.npy"), served, atol=1e-4)
