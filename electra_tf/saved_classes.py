"""Every class a saved electra_tf model file names, registered with Keras (package `electra_tf`).

Importing this module registers them all: the models (encoder, discriminator, pre-trainer and
each fine-tuned kind's), their layers, losses, optimizers and learning-rate schedules, so
`keras.saving.load_model(path)` restores any `.keras` file electra_tf writes (pre-training's
`discriminator.keras` and every task kind's model file: each kind's `model_class` and
`saved_classes`, through the registry `electra_tf.tasks`), its compiled optimizer included.
It is the one import a script needs before `load_model`:

    import electra_tf.saved_classes  # noqa: F401
    import keras

    model = keras.saving.load_model("runs/movie_polarity/classifier.keras")

Keras finds a saved class by the registered name its config holds (`"electra_tf>ElectraClassifier"`,
through `keras.saving.get_custom_objects()`); the config's `"module"` is not imported for a class
outside Keras' own packages, so a file that names a module of an earlier layout
(`electra_tf.models.classifier`) loads by its registered name as well.
"""

from electra_tf.finetuning.layerwise_lr import LayerwiseAdamW
from electra_tf.layers.discriminator_head import DiscriminatorHead
from electra_tf.layers.embeddings import ElectraEmbeddings
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import ElectraPretrainer
from electra_tf.tasks import FINETUNED
from electra_tf.training.optimization import AdamW, Lamb, WarmupLinearDecay

SAVED_CLASSES = (
    ElectraEncoder, ElectraDiscriminator, ElectraPretrainer,
    *(saved for kind in FINETUNED.values() for saved in (kind.model_class, *kind.saved_classes)),
    ElectraEmbeddings, DiscriminatorHead, AdamW, Lamb, LayerwiseAdamW, WarmupLinearDecay,
)
