"""The formats `python -m electra_tf.convert --to T` writes: one class each, registered by name (`TARGETS`).

| `--to` | writes | `--output_dir` names |
|---|---|---|
| `hf` | transformers folders: `discriminator/` + `generator/` for a pair, one folder for a part or an encoder (`ElectraModel`), a fine-tuned model as the class its task kind gives | a folder, new or empty |
| `keras` | a `.keras` file (`keras.saving.load_model` reads it back) | the file |
| `official` | a google-research/electra TF1 checkpoint | the checkpoint prefix |

A target says what its output is (`artefact`, which the output guards compare), what the
`--output_dir` must look like (`check_path`), the files it writes (`writes`, None for a folder
written whole), the folders the input's vocabulary is copied into (`vocab_folders`), what of a
generator + discriminator pair it takes for `--part` (`select`), and how it saves (`save`;
`write` adds the vocabulary). The convert command asks the target of `--to`, and nothing else
(`electra_tf.convert`).
"""

import contextlib
import os

from electra_tf import run_files


class ConvertTarget:
    """One `--to` of the convert command."""

    artefact = None  # what the output folder holds once written (`run_files.guard_output`), None for a file

    def check_path(self, path):
        """Refuses an `--output_dir` this target cannot write, before anything is read."""
        del path

    def writes(self, path):
        """The files the target writes at `path` (absolute), or None when it writes a folder whole."""
        raise NotImplementedError

    def vocab_folders(self, model, path, part):
        """The folders the vocabulary goes into beside what `save` writes."""
        del model, part
        return [os.path.dirname(os.path.abspath(path))]

    def select(self, model, part):
        """The model to write for `--part`: a pair's discriminator (the encoder fine-tuning starts from), or all."""
        from electra_tf.models.pretrainer import ElectraPretrainer

        if part == "both":
            return model
        if not isinstance(model, ElectraPretrainer):
            return _part_of_one_model(model, part)
        if part == "generator":
            raise ValueError(f"`--part=generator --to {self.name}` would drop the generator's LM head: use --to hf "
                             "(ElectraForMaskedLM) or --part both.")
        return model.discriminator

    def save(self, model, path, part, settings):
        """Writes `model` to `path`; returns the paths written. `settings`: a fine-tuned input's
        `finetune_config.json` (its label names), else empty."""
        raise NotImplementedError

    def write(self, model, path, part, settings, vocab, vocab_files):
        """`save`, then the vocabulary (and its tokenizer settings) into each of `vocab_files`; returns `save`'s
        paths."""
        from electra_tf.data.tokenizer import copy_vocab

        written = self.save(model, path, part, settings)
        for destination in vocab_files:
            copy_vocab(vocab, destination)
        return written


def _part_of_one_model(model, part):
    if part == "discriminator":
        return model
    raise ValueError(f"`--part=generator`: the input holds a {type(model).__name__}, no generator.")


class HuggingFace(ConvertTarget):
    """transformers folders (`ElectraForPreTraining`, `ElectraForMaskedLM`, `ElectraModel`, a task head), written into
    a hidden folder beside `--output_dir` and renamed once complete."""

    name = "hf"
    artefact = run_files.HUGGING_FACE

    def writes(self, path):
        return None

    def vocab_folders(self, model, path, part):
        from electra_tf.models.pretrainer import ElectraPretrainer

        if isinstance(model, ElectraPretrainer) and part == "both":
            return [os.path.join(path, "discriminator"), os.path.join(path, "generator")]
        return [path]

    def select(self, model, part):
        from electra_tf.models.pretrainer import ElectraPretrainer

        if part == "both" or isinstance(model, ElectraPretrainer):
            return model  # `export_hugging_face(part=...)` writes that part with its head
        return _part_of_one_model(model, part)

    def save(self, model, path, part, settings):
        """A fine-tuned model goes with the head its task kind gives (`TaskKind.hf_head`)."""
        from electra_tf import converting, tasks

        try:
            kind = tasks.OUTPUTS.kind_of_model(model, settings)
        except TypeError:  # an encoder or a pretrainer
            return converting.export_hugging_face(model, path, part=part)
        from electra_tf.converting.hf_heads import export_task_model

        return export_task_model(model, path, kind.hf_head(model, settings or {}))

    def write(self, model, path, part, settings, vocab, vocab_files):
        """Into a staged folder renamed to `path` when complete, vocabulary and transformers' tokenizer settings
        (AutoTokenizer reads the casing from its own file) included."""
        from electra_tf.data.tokenizer import (DEFAULT_SETTINGS, read_settings, warn_unless_bert,
                                               write_hugging_face_settings)

        tokenizer_settings = (read_settings(vocab) or DEFAULT_SETTINGS) if vocab_files else None
        if vocab_files:
            warn_unless_bert(tokenizer_settings, vocab)  # transformers normalises text the BERT way only
        with _staged_folder(path) as stage:
            staged = [os.path.join(stage, os.path.relpath(v, path)) for v in vocab_files]
            written = super().write(model, stage, part, settings, vocab, staged)
            for destination in staged:
                write_hugging_face_settings(os.path.dirname(destination), tokenizer_settings)
        return [os.path.normpath(os.path.join(path, os.path.relpath(w, stage))) for w in written]


class Keras(ConvertTarget):
    """A `.keras` file, written whole under a temporary name and renamed."""

    name = "keras"

    def check_path(self, path):
        if not path.endswith(".keras"):
            raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output_dir={path!r}`")

    def writes(self, path):
        return [os.path.abspath(path)]

    def save(self, model, path, part, settings):
        from electra_tf import atomic

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with atomic.staged(path, "output_dir") as partial:  # a `.keras` file that exists is complete
            model.save(partial)
        return [path]


class Official(ConvertTarget):
    """A google-research/electra checkpoint at the prefix `--output_dir` (its index, data and `checkpoint` list)."""

    name = "official"

    def writes(self, path):
        from electra_tf.converting.official import written_files

        return written_files(path)

    def save(self, model, path, part, settings):
        from electra_tf import converting

        return [converting.export_official(model, path)]


# One line per target, by its `--to` name.
TARGETS = {target.name: target for target in (HuggingFace(), Keras(), Official())}


@contextlib.contextmanager
def _staged_folder(path):
    """Yields a hidden folder beside `path` to write into; renamed to `path` (new or empty) when the block ends
    (`atomic.staged_folder`).

    On an error the staged folder is removed and the error is one `OSError` naming
    `--output_dir` (the cause, e.g. a full disk, in its text): nothing is left behind,
    so the same command runs again once the cause is gone.
    """
    from electra_tf import atomic

    try:
        with atomic.staged_folder(path, "output_dir") as stage:
            yield stage
    except BaseException as e:
        if type(e).__module__.startswith("tensorflow") or (isinstance(e, OSError) and "--output_dir" not in str(e)):
            reason = (getattr(e, "message", None) or str(e) or type(e).__name__).splitlines()[0][:300]
            raise OSError(f"`--output_dir={path}` could not be written ({reason}); nothing was left "
                          "there.") from e
        raise
