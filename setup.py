"""electra_tf: ELECTRA pre-training, fine-tuning and serving on TensorFlow 2 / Keras 3."""

import setuptools

DASK = ["dask>=2024.4.2", "distributed>=2024.4.2"]

setuptools.setup(
    name="electra_tf",
    version="0.1.0",
    description=(
        "ELECTRA (replaced token detection) pre-training, fine-tuning and "
        "serving on TensorFlow 2 / Keras 3, from one CPU to TPU pods."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.12",
    # `configs/` and `pipelines/` stay top-level folders of the repository but install inside the
    # package, as `electra_tf.configs` and `electra_tf.pipelines`: no generic top-level import name.
    # (In the source tree, `electra_tf/configs/` and `electra_tf/pipelines/` are one-line packages that point
    # there; an installed copy holds the folders themselves in their place.)
    packages=setuptools.find_packages(include=["electra_tf", "electra_tf.*"],
                                      exclude=["electra_tf.configs", "electra_tf.pipelines"])
    + ["electra_tf.configs", "electra_tf.pipelines"],
    package_dir={"electra_tf.configs": "configs", "electra_tf.pipelines": "pipelines"},
    install_requires=[
        "tensorflow~=2.21.0",
        "tensorflow-text~=2.21.0",
        "flatbuffers>=24.3",  # the tokenizer's normaliser table (electra_tf/data/bert_normalizer.py); TensorFlow needs it too
        "keras>=3.15,<4",
        "keras-hub>=0.32,<1",
        "absl-py>=2.1",
        "tensorboard>=2.20",
        "numpy>=1.26",
        "numba>=0.60",  # compiled packing and Example encoding in pipelines/ (3x the builder throughput)
        "apache-beam>=2.60",
        "isal>=1.6",  # ISA-L gunzip in pipelines/: 3x zlib's speed, a tenth of the builder's CPU time
        "tokenizers>=0.20",
        "mwxml>=0.3.8",
        "mwparserfromhell>=0.7",
        "safetensors>=0.4",  # Hugging Face checkpoints: convert --from/--to hf, --init hf:DIR
    ],
    extras_require={
        # Kept as an alias: safetensors is a core requirement now.
        "interop": ["safetensors>=0.4"],
        # `build_pretraining_data --runner DaskRunner` on a dask.distributed cluster: where the build is
        # submitted and on every worker (the versions Beam's DaskRunner asks for; tested with 2026.8).
        "dask": DASK,
        # `export --format tflite` and running its models (`electra_tf.exporting.tflite_runtime`): the LiteRT
        # interpreter; a raw-text model also needs tensorflow-text's TFLite kernels (a core requirement).
        "tflite": ["ai-edge-litert~=2.3"],
        # The suite checks conversions against transformers itself (PyTorch, CPU).
        "test": [
            "pytest>=8",
            "pytest-xdist>=3.5",  # pytest.ini runs the suite on every core (-n auto, at most 4)
            "safetensors>=0.4",
            "transformers>=5,<6",
            "torch==2.13.0",
            # The model core runs under KERAS_BACKEND=jax and torch too: tests/models/test_backends.py checks both
            # against TensorFlow on the CPU.
            "jax[cpu]>=0.10,<0.12",
            "tensorflow-serving-api~=2.21.0",
            "matplotlib>=3.8",
            "seqeval>=1.2",  # independent reference for the tagging metrics
            *DASK,  # the corpus build on a local Dask cluster
            "ai-edge-litert~=2.3",  # the LiteRT export's models run in its interpreter
            # benchmarks/serving_peers.py serves the same checkpoint in ONNX Runtime (fp32 and int8).
            "onnxruntime>=1.20",
            "onnx>=1.17",
            # The embedding kind's vectors, loss and retrieval metrics are checked against sentence-transformers.
            "sentence-transformers>=5",
        ],
    },
    entry_points={
        "console_scripts": [
            # Every CLI; each quiets TensorFlow's start-up before importing it (electra_tf.cli).
            "electra-pretrain=electra_tf.pretrain:run",
            "electra-finetune=electra_tf.finetune:run",
            "electra-export=electra_tf.export:run",
            "electra-predict=electra_tf.predict:run",
            "electra-convert=electra_tf.convert:run",
            "electra-build-data=electra_tf.data_scripts:build_data",
            "electra-build-vocab=electra_tf.data_scripts:build_vocab",
        ],
    },
)
