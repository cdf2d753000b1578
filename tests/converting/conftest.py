"""Fixtures for the checkpoint-conversion tests."""

import pytest

from convert_helpers import hf_configs, perturb, save_pretrained, tiny_config


@pytest.fixture(scope="session")
def hf_pair(tmp_path_factory):
    """Randomly initialised (and perturbed) transformers discriminator + generator, saved as safetensors.

    The generator's embeddings are the discriminator's, as in released pairs.
    Returns (config, discriminator_dir, generator_dir, discriminator, generator).
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = tiny_config()
    disc_kwargs, gen_kwargs = hf_configs(config)
    discriminator = transformers.ElectraForPreTraining(transformers.ElectraConfig(**disc_kwargs))
    generator = transformers.ElectraForMaskedLM(transformers.ElectraConfig(**gen_kwargs))
    discriminator.load_state_dict(perturb(discriminator.state_dict(), seed=1))
    state = perturb(generator.state_dict(), seed=2)
    for name, value in discriminator.state_dict().items():
        if name.startswith("electra.embeddings."):
            state[name] = value
    state["generator_lm_head.weight"] = state["electra.embeddings.word_embeddings.weight"]
    generator.load_state_dict(state)
    discriminator.eval()
    generator.eval()
    root = tmp_path_factory.mktemp("hf")
    disc_dir, gen_dir = str(root / "discriminator"), str(root / "generator")
    save_pretrained(discriminator, disc_dir)
    save_pretrained(generator, gen_dir)
    return config, disc_dir, gen_dir, discriminator, generator
