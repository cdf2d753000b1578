"""A fine-tuned multiple-choice model to Hugging Face: `convert --from keras --to hf` gives transformers' own
`ElectraForMultipleChoice`, whose logits equal the Keras model's (<= 1e-4) on padded (context, choice) rows."""

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "converting"))
from convert_helpers import inputs, perturb_head, perturbed_encoder, tiny_config, to_hf  # noqa: E402
from helpers import write_vocab  # noqa: E402

from electra_tf.tasks.multiple_choice.kind import MultipleChoiceKind  # noqa: E402
from electra_tf.tasks.multiple_choice.model import ElectraMultipleChoice  # noqa: E402

TOLERANCE = 1e-4


def choice_batch(config, questions=2, choices=3, seq_len=16):
    """`(questions, choices, seq_len)` inputs: each choice a `convert_helpers.inputs` row, with its own padding."""
    rows = [inputs(config, batch=2, seq_len=seq_len, seed=seed) for seed in range(questions * choices // 2 + 1)]
    flat = {name: np.concatenate([r[name] for r in rows])[:questions * choices] for name in rows[0]}
    return {name: value.reshape(questions, choices, seq_len) for name, value in flat.items()}


def test_multiple_choice_gives_the_keras_logits_in_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    config = tiny_config()
    model = ElectraMultipleChoice(perturbed_encoder(5))
    model.build()
    perturb_head(model, 5)
    folder = tmp_path / "swag"
    folder.mkdir()
    model.save(str(folder / MultipleChoiceKind.model_file))
    write_vocab(folder / "vocab.txt", vocab_size=config.vocab_size)
    (folder / "finetune_config.json").write_text(json.dumps({"kind": "multiple_choice", "task": "swag"}))

    hf = transformers.ElectraForMultipleChoice.from_pretrained(
        to_hf(str(folder / MultipleChoiceKind.model_file), tmp_path / "swag_hf")).eval()
    batch = choice_batch(config)
    with torch.no_grad():
        out = hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                 attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                 token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long)).logits.numpy()
    ours = np.asarray(model(batch))
    assert out.shape == ours.shape == (2, 3)
    np.testing.assert_allclose(out, ours, atol=TOLERANCE)
    assert np.ptp(ours) > 0.1  # the choices are told apart: not a test of constants
