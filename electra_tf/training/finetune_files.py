"""Files of fine-tuning: what `--init` may be, and what a run leaves in `output_dir`.

    output_dir/results.json           per-trial dev metrics and their summary
    output_dir/classifier.keras       the best trial's `ElectraClassifier` (classification)
    output_dir/token_classifier.keras the best trial's `ElectraTokenClassifier` (tagging)
    output_dir/vocab.txt              its vocabulary
    output_dir/finetune_config.json   task, kind, label names, pair or single / tag scheme, max_seq_length
"""

import os

import keras
import tensorflow as tf

from electra_tf.models.encoder import ElectraEncoder

CLASSIFIER_FILE = "classifier.keras"
TOKEN_CLASSIFIER_FILE = "token_classifier.keras"
FINETUNE_CONFIG_FILE = "finetune_config.json"
RESULTS_FILE = "results.json"


def load_init(init, vocab_file=None):
    """The encoder to fine-tune and its vocabulary, from any `--init` form.

    Args:
        init: str. A pre-training `model_dir`, an `ElectraEncoder` `.keras`
            file, or an `export --kind encoder` folder.
        vocab_file: str or None. Overrides the vocabulary found beside `init`.

    Returns:
        `(ElectraEncoder, vocab_file)`.
    """
    from electra_tf.export.encoder_saved_model import ENCODER_CONFIG_ASSET, load_encoder

    if init is None:
        raise ValueError("`--init` is required: a pre-training model_dir, a .keras encoder or an exported encoder.")
    if tf.io.gfile.exists(os.path.join(init, "config.json")):
        from electra_tf.training.checkpoints import load_discriminator

        encoder, _ = load_discriminator(init)
        found_vocab = os.path.join(init, "vocab.txt")
    elif tf.io.gfile.exists(os.path.join(init, "assets", ENCODER_CONFIG_ASSET)):
        encoder, found_vocab = load_encoder(init)
    elif init.endswith(".keras") and tf.io.gfile.exists(init):
        try:
            encoder = keras.saving.load_model(init)
        except Exception as e:  # Keras reports a damaged zip as "File not found"
            raise ValueError(f"`--init={init}` cannot be read ({type(e).__name__}: {str(e)[:200]}): a truncated "
                             "or damaged .keras file.") from None
        found_vocab = os.path.join(os.path.dirname(init), "vocab.txt")
    else:
        raise FileNotFoundError(
            f"Cannot read `--init={init}`: expected a pre-training model_dir (with config.json), "
            "an ElectraEncoder .keras file, or an exported encoder (with assets/encoder_config.json)."
        )
    if not isinstance(encoder, ElectraEncoder):
        raise TypeError(f"`--init={init}` holds a {type(encoder).__name__}, not an ElectraEncoder.")
    vocab_file = vocab_file or found_vocab
    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"No vocabulary for `--init={init}`: {vocab_file} is missing; pass --vocab_file.")
    return encoder, vocab_file
