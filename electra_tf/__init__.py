"""ELECTRA pre-training, fine-tuning and serving on TensorFlow 2 / Keras 3.

The repository keeps `configs/` (presets) and `pipelines/` (data tools) as top-level folders
beside `electra_tf/`; they are parts of this package, `electra_tf.configs` and
`electra_tf.pipelines` (`SOURCE_FOLDERS`). An installed copy holds them inside the package
(`setup.py`, `package_dir`). In a source tree (the repository on `sys.path`, as `python -m ...`
or `pytest` from its root) `electra_tf/configs/` and `electra_tf/pipelines/` are one-line
packages whose `__path__` is the top-level folder, so their modules are found there.

Keras loads a saved electra_tf model once its classes are registered: `import
electra_tf.saved_classes` registers every class a model file electra_tf writes names, so

    import electra_tf.saved_classes  # noqa: F401
    import keras

    model = keras.saving.load_model("runs/movie_polarity/classifier.keras")

restores it, compiled optimizer included, as keras-hub's models load after `import keras_hub`.
This module imports neither TensorFlow nor Keras (the programs set their environment first).
"""

__version__ = "0.1.0"

SOURCE_FOLDERS = ("configs", "pipelines")  # repository folders that are subpackages of `electra_tf`
