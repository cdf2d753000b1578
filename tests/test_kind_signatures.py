"""Each task kind's described serving signatures (`KindDescription.signatures`) are the ones its serving
module exports, and its described `predict` record is the one `predict` writes: for a tiny model of every
kind, the signatures' names, their inputs (`input_signature`) and their outputs (the traced function's),
and the keys of a record `predict`'s predictor formats (`ServedPredictor`, as `predict --init` runs it),
against the description. The kinds come from the registry.
"""

import json

import pytest

from electra_tf import tasks

pytestmark = pytest.mark.large  # slow tier: traces every signature of every kind (a minute or two on 2 cores)

SEQ_LENGTH = 32
LABELS = ["O", "B-PER", "I-PER"]
# One `predict` input of each kind: (input format, text).
INPUTS = {
    "span_qa": ("jsonl", json.dumps({"id": "q1", "question": "who is it", "context": "it is a cat ."})),
    "multiple_choice": ("jsonl", json.dumps({"question": "which one", "choices": ["a cat", "a dog"], "answer": 0})),
}


def _vocab(path):
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *("##" + c for c in letters), ".", ","]
    path.write_text("".join(t + "\n" for t in tokens))
    return str(path)


def _model_and_settings(name, vocab):
    """A tiny untrained model of the kind `name` and the settings its export reads (`finetune_config.json`)."""
    import keras

    from electra_tf.models.encoder import ElectraEncoder

    keras.utils.set_random_seed(0)
    encoder = ElectraEncoder(vocab_size=len(open(vocab).read().split()), num_layers=1, num_heads=2, hidden_dim=16,
                             embedding_dim=16, intermediate_dim=32, max_sequence_length=SEQ_LENGTH)
    settings = {"seq_length": SEQ_LENGTH, "task": "toy"}
    kind = tasks.KINDS[name]
    if name == tasks.PRETRAINED:
        from electra_tf.models.discriminator import ElectraDiscriminator
        from electra_tf.sources import Detector

        discriminator = ElectraDiscriminator(encoder)
        discriminator.build()
        return Detector(discriminator, None, vocab), settings
    if name in ("classification", "tagging"):
        model = kind.model_class(encoder, num_labels=len(LABELS))
        settings["label_names"] = LABELS
    else:
        model = kind.model_class(encoder)
    if name == "span_qa":
        settings["max_query_length"] = 8
    model.build()
    return model, settings


def _record_keys(record):
    """The keys of the first JSON object of a described record (`...` standing for values left out)."""
    value, _ = json.JSONDecoder().raw_decode(record.replace("...", "null"))
    return set(value)



@pytest.mark.parametrize("name", list(tasks.descriptions()))
def test_the_served_signatures_and_the_predict_record_are_the_described_ones(name, tmp_path):
    from electra_tf.predicting.predictor import ServedPredictor

    description, kind = tasks.descriptions()[name], tasks.KINDS[name]
    vocab = _vocab(tmp_path / "vocab.txt")
    model, settings = _model_and_settings(name, vocab)
    module = kind.serving_module(model, vocab, settings)
    signatures = module.signatures()
    described = {s.name: s for s in description.signatures}
    always = {n for n, s in described.items() if s.always}
    assert always <= set(signatures) <= set(described), (name, sorted(signatures))
    for signature_name, function in signatures.items():
        expected = described[signature_name]
        inputs = [spec.name for spec in function.input_signature]
        outputs = set(function.get_concrete_function().structured_outputs)
        assert set(expected.inputs) <= set(inputs) <= set(expected.inputs) | set(expected.optional), \
            (name, signature_name, inputs)
        assert outputs <= set(expected.outputs) | set(expected.optional), (name, signature_name, sorted(outputs))
        assert set(expected.outputs) <= outputs, (name, signature_name, sorted(outputs))  # not a regression model
    # `predict`'s record: the served signature's outputs as the kind formats them (`predict --init` runs this)
    with open(module.config_asset.asset_path.numpy().decode()) as f:
        served = ServedPredictor(signatures, json.load(f), "toy", kind, keep=module)
    options = tasks.ReadOptions()
    served.settings = kind.predict_settings(served, options)
    input_format, text = INPUTS.get(name, ("text", "a cat sat on it ."))
    examples = kind.read_examples("input", text + "\n", input_format, served.settings, options)
    [record] = [p.output for p in served.predict(examples)]
    assert set(record) - {"line"} == _record_keys(description.record) - {"line"}, (name, record)
