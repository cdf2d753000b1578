"""Other libraries' model folders as `--init`: Hugging Face ELECTRA and BERT, official TF1 checkpoints, keras-hub.

Each reads through `electra_tf.converting` (names and shapes checked, all or nothing). A
Hugging Face or BERT folder's `config.json` is checked first (`model_type`,
`architectures`), before any size or weight is read. A generator-only Hugging Face folder
(`ElectraForMaskedLM`) is refused as `hf:DIR`: fine-tuning, export and continued
pre-training start from the discriminator; `hf_generator:DIR` asks for the generator itself.
"""

import os

import tensorflow as tf

from electra_tf import atomic, run_files
from electra_tf.sources.base import Source


class GeneratorFolderError(ValueError):
    """`hf:DIR` of a generator-only folder: the discriminator was meant, or the generator must be asked for.

    Attributes:
        folder: str. The generator folder.
    """

    def __init__(self, folder, flag="init"):
        self.folder = folder
        super().__init__(
            f"`--{flag}`: {folder} is an ELECTRA generator (ElectraForMaskedLM in its config.json), "
            "not a discriminator, which fine-tuning, export and pre-training start from. Pass the discriminator "
            f"folder (ElectraForPreTraining, the `*-discriminator` of a release), or both as hf:DISC,GEN; to use "
            f"the generator itself, pass hf_generator:{folder}."
        )


class HuggingFace(Source):
    """`hf:DIR[,DIR]` (or a bare Hugging Face folder): transformers `ElectraModel` / `ElectraForPreTraining`,
    with `ElectraForMaskedLM` as a pair's generator (a pair gives a pretrainer)."""

    prefix = "hf"
    form = "hf:DIR[,DIR]"

    def recognises(self, path):
        return run_files.artefact_in(path) == run_files.HUGGING_FACE

    def inputs(self, path):
        return [p for p in path.split(",") if p]

    def check_path(self, path, given):
        if any(not folder.strip() for folder in path.split(",")):
            raise ValueError(f"{given} holds an empty folder name (a comma too many): {self.prefix}:DIR, or "
                             f"{self.prefix}:DISC,GEN for a discriminator and its generator.")

    def folders(self, path, flag="init"):
        """The folders to read; a generator alone is refused (`GeneratorFolderError`)."""
        from electra_tf.converting.hugging_face import folder_roles

        roles = folder_roles(path)
        if [role for _, _, role in roles] == ["generator"]:
            raise GeneratorFolderError(roles[0][0], flag)
        return [directory for directory, _, _ in roles]

    def load(self, path, flag="init", **options):
        from electra_tf.converting.hugging_face import build_from_hugging_face

        return build_from_hugging_face(self.folders(path, flag))

    def detector(self, path, flag="init", generator_for=None):
        """A pair (`ElectraPretrainer`, heads included) or one `ElectraForPreTraining` folder (`ElectraDiscriminator`),
        told by their `config.json` before any weight is read."""
        from electra_tf.converting.hugging_face import build_discriminator_from_hugging_face, folder_roles

        roles = folder_roles(path)
        found = sorted(role for _, _, role in roles)
        if found == ["discriminator", "generator"]:
            return self.load(path, flag=flag)
        if found == ["discriminator"]:
            if generator_for:
                raise ValueError(f"{generator_for} needs the generator: `--{flag}` {roles[0][0]} is a discriminator "
                                 "alone (ElectraForPreTraining in its config.json). Pass both folders as hf:DISC,GEN, "
                                 f"or leave out {generator_for}.")
            return build_discriminator_from_hugging_face(roles[0][0])
        architectures = {"generator": "an ELECTRA generator (ElectraForMaskedLM in its config.json)",
                         "model": "the encoder alone (ElectraModel in its config.json)"}
        what = " and ".join(f"{directory} is {architectures.get(role, role)}" for directory, _, role in roles
                            if role != "discriminator")
        raise ValueError(f"`--{flag}`: {what}, without the replaced-token head "
                         "(discriminator_predictions). Replaced-token scores need the discriminator: an "
                         "ElectraForPreTraining folder, or hf:DISC,GEN.")

    def initialise(self, path, pretrainer, strict=False, flag="init"):
        from electra_tf.converting.hugging_face import load_hugging_face

        return load_hugging_face(self.folders(path, flag), pretrainer, strict=strict)

    def vocabulary(self, path):
        from electra_tf.converting.hugging_face import expand_directories

        vocabs = [os.path.join(folder, run_files.VOCAB_FILE)
                  for folder in self.inputs(path) + expand_directories(path)]
        return next((v for v in vocabs if tf.io.gfile.exists(v)), vocabs[0] if vocabs else None)


class HuggingFaceGenerator(HuggingFace):
    """`hf_generator:DIR[,DIR]`: the generator (`ElectraForMaskedLM`) of a folder or pair, asked for by name.

    As an encoder it is the generator's body; into a pretrainer it fills the generator and
    the shared embeddings.
    """

    prefix = "hf_generator"
    form = "hf_generator:DIR"

    def recognises(self, path):
        return False  # only by name: a bare folder is read as `hf`

    def folders(self, path, flag="init"):
        from electra_tf.converting.hugging_face import folder_roles

        generators = [directory for directory, _, role in folder_roles(path) if role == "generator"]
        if len(generators) != 1:
            raise ValueError(f"`--{flag}={self.prefix}:{path}` names {len(generators)} generator folders "
                             "(ElectraForMaskedLM in config.json); hf_generator: takes one.")
        return generators


class Official(Source):
    """`official:DIR` (or a checkpoint prefix): a google-research/electra TF1 checkpoint."""

    prefix = "official"
    form = "official:DIR"

    def load(self, path, flag="init", num_heads=None, generator_num_heads=None, **options):
        from electra_tf.converting.official import build_from_official

        return build_from_official(path, num_heads=num_heads, generator_num_heads=generator_num_heads)

    def initialise(self, path, pretrainer, strict=False, flag="init"):
        from electra_tf.converting.official import load_official

        return load_official(path, pretrainer, strict=strict)

    def vocabulary(self, path):
        folder = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
        return os.path.join(folder, run_files.VOCAB_FILE)


class Bert(Source):
    """`bert:DIR` (or a bare folder whose `config.json` says `model_type: bert`): a Hugging Face BERT (E = H)."""

    prefix = "bert"
    form = "bert:DIR"

    def recognises(self, path):
        from electra_tf.converting.hugging_face import read_config

        return (run_files.artefact_in(path) == run_files.HUGGING_FACE
                and read_config(path).get("model_type") == "bert")

    def load(self, path, flag="init", **options):
        from electra_tf.converting.bert import build_from_bert

        return build_from_bert(path)

    def initialise(self, path, pretrainer, strict=False, flag="init"):
        from electra_tf.converting.bert import load_bert

        return load_bert(path, pretrainer, strict=strict)

    def vocabulary(self, path):
        return os.path.join(path, run_files.VOCAB_FILE)


class KerasHub(Source):
    """`keras_hub:DIR` (or a bare preset folder): a keras-hub `ElectraBackbone` preset with its `ElectraTokenizer`."""

    prefix = "keras_hub"
    form = "keras_hub:DIR"

    def recognises(self, path):
        return run_files.artefact_in(path) == run_files.KERAS_HUB_PRESET or is_preset_folder(path)

    def load(self, path, flag="init", **options):
        from electra_tf.converting.keras_hub import read_keras_hub_preset

        return read_keras_hub_preset(path, flag)

    def vocabulary(self, path):
        from electra_tf.converting.keras_hub import preset_tokenizer_settings

        vocab, settings = preset_tokenizer_settings(path)
        return _vocabulary_with_settings(vocab, settings) if vocab else None


def is_preset_folder(path):
    """Whether `path` holds keras-hub's preset files (`config.json`, `metadata.json`), its weights there or not."""
    from electra_tf.converting.keras_hub import PRESET_FILES

    return all(tf.io.gfile.exists(os.path.join(path, name)) for name in PRESET_FILES)


def _vocabulary_with_settings(vocab_file, settings):
    """`vocab_file`, or a copy of it beside `settings` when those are not what `read_settings` gives it."""
    from electra_tf.data.tokenizer import DEFAULT_SETTINGS, read_settings, write_settings

    if (read_settings(vocab_file) or DEFAULT_SETTINGS) == settings:
        return vocab_file
    folder = atomic.scratch_folder("vocab")
    tf.io.gfile.copy(vocab_file, os.path.join(folder, run_files.VOCAB_FILE))
    write_settings(folder, settings)
    return os.path.join(folder, run_files.VOCAB_FILE)
