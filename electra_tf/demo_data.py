"""`--data=demo` for the programs: the training library resolves the data, the data tools build the demo.

The pre-training library (`electra_tf.training.pretraining`) never imports the
data tools (`electra_tf.pipelines`); this module, at the programs' layer, joins
the two: `resolve_data` is `electra_tf.training.pretraining.resolve_data` with
the embedded demo corpus builder (`electra_tf.pipelines.demo_corpus`).
"""

from electra_tf.pipelines.demo_corpus import build_demo_data, check_seq_length
from electra_tf.training import pretraining


def resolve_data(config, demo_dir, model_dir=None):
    """`pretraining.resolve_data`, building the demo corpus in `demo_dir` for `--data=demo`."""
    return pretraining.resolve_data(config, demo_dir, model_dir, build_demo_data=build_demo_data)


def check_demo_settings(config):
    """Refuses, before anything is built, a config the demo records cannot be built for (`--seq_length` too short)."""
    check_seq_length(config.seq_length)
