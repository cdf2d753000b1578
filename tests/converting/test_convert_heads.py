"""Fine-tuned heads to Hugging Face: `convert --from keras --to hf` of a classifier, a tagger and a simple-head QA
model gives transformers' own ElectraFor... classes with the Keras model's logits (<= 1e-4) and its label names."""

import json
import os
import sys

import numpy as np
import pytest

from convert_helpers import inputs, perturb_head, perturbed_encoder, tiny_config, to_hf

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import run_python, write_vocab  # noqa: E402

from electra_tf import tasks  # noqa: E402

ElectraClassifier = tasks.get("classification").model_class
ElectraTokenClassifier = tasks.get("tagging").model_class
ElectraQuestionAnswerer = tasks.get("span_qa").model_class
NEG = 1000.0  # the reference's QA mask: logits outside the context (and [CLS]) get -1000
TOLERANCE = 1e-4


def save_run(model, folder, file_name, label_names, kind):
    os.makedirs(folder, exist_ok=True)
    model.save(os.path.join(folder, file_name))
    write_vocab(os.path.join(folder, "vocab.txt"), vocab_size=tiny_config().vocab_size)
    with open(os.path.join(folder, "finetune_config.json"), "w") as f:
        json.dump({"kind": kind, "label_names": label_names}, f)
    return os.path.join(folder, file_name)


def torch_logits(model, batch):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                     token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long))


@pytest.mark.large
def test_classifier_tagger_and_simple_qa_give_the_keras_logits_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    batch = inputs(tiny_config())

    classifier = ElectraClassifier(perturbed_encoder(1), num_labels=3)
    classifier.build()
    perturb_head(classifier, 1)
    path = save_run(classifier, tmp_path / "cls", "classifier.keras", ["neg", "neutral", "pos"], "classification")
    hf = transformers.ElectraForSequenceClassification.from_pretrained(to_hf(path, tmp_path / "cls_hf")).eval()
    assert hf.config.id2label == {0: "neg", 1: "neutral", 2: "pos"}
    np.testing.assert_allclose(torch_logits(hf, batch).logits.numpy(), np.asarray(classifier(batch)),
                               atol=TOLERANCE)
    assert (tmp_path / "cls_hf" / "vocab.txt").exists()
    assert json.loads((tmp_path / "cls_hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True

    tagger = ElectraTokenClassifier(perturbed_encoder(2), num_labels=5)
    tagger.build()
    perturb_head(tagger, 2)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    path = save_run(tagger, tmp_path / "tag", "token_classifier.keras", tags, "tagging")
    hf = transformers.ElectraForTokenClassification.from_pretrained(to_hf(path, tmp_path / "tag_hf")).eval()
    assert hf.config.id2label == dict(enumerate(tags))
    np.testing.assert_allclose(torch_logits(hf, batch).logits.numpy(), np.asarray(tagger(batch)), atol=TOLERANCE)

    qa = ElectraQuestionAnswerer(perturbed_encoder(3), head="simple")
    qa.build()
    perturb_head(qa, 3)
    path = save_run(qa, tmp_path / "qa", "question_answerer.keras", [], "span_qa")
    hf = transformers.ElectraForQuestionAnswering.from_pretrained(to_hf(path, tmp_path / "qa_hf")).eval()
    out = torch_logits(hf, batch)
    ours = qa({**batch, "start_positions": np.zeros(len(batch["token_ids"]), "int32")})
    penalty = NEG * (np.asarray(ElectraQuestionAnswerer.answer_mask(batch)) - 1.0)  # the Keras model's own mask
    np.testing.assert_allclose(out.start_logits.numpy() + penalty, np.asarray(ours["start_logits"]), atol=TOLERANCE)
    np.testing.assert_allclose(out.end_logits.numpy() + penalty, np.asarray(ours["end_logits"]), atol=TOLERANCE)


def test_the_official_qa_head_is_refused_with_the_reason(tmp_path):
    qa = ElectraQuestionAnswerer(perturbed_encoder(4), head="official")
    qa.build()
    path = save_run(qa, tmp_path / "qa", "question_answerer.keras", [], "span_qa")
    result = run_python(["-m", "electra_tf.convert", "--from", "keras", "--input", path, "--to", "hf",
                         "--output_dir", str(tmp_path / "qa_hf")], check=False)
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: The official QA head cannot be written as ElectraForQuestionAnswering: its end "
                           "logits are conditioned on the start")
    assert not (tmp_path / "qa_hf").exists()
