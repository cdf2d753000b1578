"""Console scripts of the data pipelines: `electra-build-data`, `electra-build-vocab`.

Each prepares TensorFlow's start (`electra_tf.cli.prepare_tensorflow`) before the
pipeline module imports TensorFlow and Apache Beam. The same programs run as
`python -m electra_tf.pipelines.build_pretraining_data` and
`python -m electra_tf.pipelines.build_vocab`. A program-layer module: the
pipelines import `electra_tf.cli`, so `cli` must not import them.
"""

from electra_tf.cli import prepare_tensorflow


def build_data():
    """The `electra-build-data` console script: `python -m electra_tf.pipelines.build_pretraining_data`."""
    prepare_tensorflow()
    from electra_tf.pipelines import build_pretraining_data

    build_pretraining_data.run()


def build_vocab():
    """The `electra-build-vocab` console script: `python -m electra_tf.pipelines.build_vocab`."""
    prepare_tensorflow()
    from electra_tf.pipelines import build_vocab as program

    program.run()
