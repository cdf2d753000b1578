"""Every model of the core on the Keras backend of `KERAS_BACKEND`: outputs, the pre-training loss and its gradients.

Run by `test_backends.py` once per backend, in a process of its own (Keras fixes the backend at import):

    KERAS_BACKEND=tensorflow python tests/models/backend_outputs.py --dir D --write
    KERAS_BACKEND=jax python tests/models/backend_outputs.py --dir D --without_tensorflow

With `--write` (TensorFlow) the models are built from seeds, their weights written to `D/<model>.weights.h5` and the
inputs, the masks and the generator samples to `D/inputs.npz`; otherwise the same models are built and those weights
and inputs read. Either way every output, the pre-training loss given those masks and samples, and its gradient with
respect to every trainable variable (the backend's own autodiff) go to `D/<backend>.npz`, with the step's own draws
(`own_*`: masking and sampling from the backend's generator). `--without_tensorflow` makes `import tensorflow` fail
first, as on a host that has no TensorFlow. `--fit` instead pre-trains a tiny model with Keras' `fit` (3 epochs of 8
steps on fixed random ids), evaluates it, and writes the logs to `D/<backend>_fit.npz`.
"""

import argparse
import contextlib
import os
import sys

import numpy as np

SIZES = dict(vocab_size=64, embedding_dim=8, hidden_dim=16, num_layers=2, num_heads=2, intermediate_dim=32,
             max_sequence_length=16, seq_length=12, generator_hidden_fraction=0.5, max_predictions_per_seq=3,
             dropout=0.0, cls_id=1, sep_id=2, mask_id=3)
BATCH, SEQ = 3, 12


def batch_inputs(rng):
    ids = rng.integers(5, SIZES["vocab_size"], (BATCH, SEQ)).astype("int32")
    padding = (np.arange(SEQ)[None] < np.array([[SEQ], [9], [6]])).astype("int32")
    ids[:, 0] = SIZES["cls_id"]
    ids = ids * padding
    segments = ((np.arange(SEQ)[None] >= 4) * padding).astype("int32")
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": padding}


def task_models():
    """(name, model, inputs maker) of every task head, each on an encoder of its own."""
    import keras

    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.tasks.classification.model import ElectraClassifier
    from electra_tf.tasks.embedding.model import ElectraEmbedder
    from electra_tf.tasks.multiple_choice.model import ElectraMultipleChoice
    from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer
    from electra_tf.tasks.tagging.model import ElectraTokenClassifier

    def encoder(seed):
        keras.utils.set_random_seed(seed)
        return ElectraEncoder(vocab_size=SIZES["vocab_size"], num_layers=2, num_heads=2, hidden_dim=16,
                              embedding_dim=8, intermediate_dim=32, max_sequence_length=16, dropout=0.1)

    return [
        ("classifier", ElectraClassifier(encoder(1), num_labels=3)),
        ("tagger", ElectraTokenClassifier(encoder(2), num_labels=5)),
        ("multiple_choice", ElectraMultipleChoice(encoder(3))),
        ("qa_official", ElectraQuestionAnswerer(encoder(4), answerable=True, start_n_top=3, end_n_top=2,
                                                joint_hidden_dim=8)),
        ("qa_simple", ElectraQuestionAnswerer(encoder(5), head="simple", start_n_top=2, end_n_top=3)),
        ("embedder_mean", ElectraEmbedder(encoder(6))),
        ("embedder_cls", ElectraEmbedder(encoder(7), pooling="cls", normalize=False)),
    ]


def numpy(value):
    import keras

    return np.asarray(keras.ops.convert_to_numpy(value))


def compiled(function):
    """`function` as JAX runs a model (one XLA program: eager JAX compiles every op on its own), else itself."""
    import keras

    if keras.backend.backend() != "jax":
        return function
    import jax

    return jax.jit(function)


STEP_FIELDS = ("loss", "mlm_losses", "disc_logits", "disc_losses", "disc_ids", "sampled_correct")


def gradients(pretrainer, batch, masked, sampled):
    """The step's outputs given `masked` and `sampled`, and the loss's gradient per trainable variable, by the
    backend's own autodiff."""
    import keras

    variables = pretrainer.trainable_variables
    seed = pretrainer._step_seed(0)

    def step():
        out = pretrainer.compute_losses(batch, seed, training=True, masked=masked, sampled=sampled)
        return out.loss, {f"step/{field}": getattr(out, field) for field in STEP_FIELDS}

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss, outputs = step()
        grads = tape.gradient(loss, variables)
    elif backend == "jax":
        import jax

        def loss_fn(values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return step()

        (loss, outputs), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))([v.value for v in variables])
    else:
        for v in variables:
            v.value.grad = None
        loss, outputs = step()
        loss.backward()
        grads = [v.value.grad for v in variables]
    outputs.update({f"grad/{i:03d}/{v.path}": np.zeros(v.shape, "float32") if g is None else g
                    for i, (v, g) in enumerate(zip(variables, grads))})
    return {k: numpy(v) for k, v in outputs.items()}


def model_outputs(models, batch, masked, choices, start_positions):
    """Every model's outputs on the stored inputs (inference), and the task losses on them."""
    import keras

    from electra_tf.models.discriminator import ElectraDiscriminator
    from electra_tf.tasks.span_qa.model import GlobalMeanLoss
    from electra_tf.tasks.tagging.model import MaskedSparseCrossEntropy

    models = dict(models)
    pretrainer = models["pretrainer"]
    discriminator = ElectraDiscriminator.from_pretrainer(pretrainer)
    results = {}
    results["encoder"] = pretrainer.discriminator(batch)
    results["discriminator"] = discriminator(batch)
    results["pretrainer"] = pretrainer(batch)
    hidden = pretrainer.generator(dict(batch, token_ids=masked["masked_ids"]))
    results["generator"] = pretrainer.generator_head(hidden, mask_positions=masked["positions"])
    results["classifier"] = models["classifier"](batch)
    results["tagger"] = models["tagger"](batch)
    labels = np.where(batch["padding_mask"] > 0, np.arange(SEQ)[None] % 5, -100)
    results["tagger_loss"] = MaskedSparseCrossEntropy()(labels, results["tagger"])
    results["multiple_choice"] = models["multiple_choice"](choices)
    for name in ("qa_official", "qa_simple"):
        trained = models[name](dict(batch, start_positions=start_positions), training=False)
        results.update({f"{name}/train/{key}": value for key, value in trained.items()})
        results[f"{name}/loss"] = GlobalMeanLoss()(start_positions, trained["start_logits"])
        results.update({f"{name}/beam/{key}": value for key, value in models[name](batch).items()})
    results["embedder_mean"] = models["embedder_mean"](batch)
    results["embedder_mean_3d"] = models["embedder_mean"](choices)
    results["embedder_cls"] = models["embedder_cls"](batch)
    # The step's own draws: masking and Gumbel sampling from this backend's generator, twice with one seed.
    for key, step in (("own_a", 0), ("own_b", 0), ("own_c", 1)):
        seed = keras.ops.stack([keras.ops.convert_to_tensor(0, "int32"), keras.ops.convert_to_tensor(step, "int32")])
        own = pretrainer.compute_losses(batch, seed, training=False)
        results.update({f"{key}/{field}": getattr(own, field)
                        for field in ("positions", "weights", "disc_ids", "disc_labels", "loss")})
    return results


def fit(folder):
    """Pre-trains a tiny model with `fit` on this backend; writes the per-epoch logs, the step count and how many
    weights changed."""
    import keras

    from electra_tf.config import get_config
    from electra_tf.models.pretrainer import build_pretrainer

    keras.utils.set_random_seed(0)
    config = get_config("tiny", vocab_size=200, embedding_dim=16, hidden_dim=32, num_layers=1, num_heads=2,
                        intermediate_dim=64, max_sequence_length=32, seq_length=32, generator_hidden_fraction=0.5)
    model = build_pretrainer(config)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    ids = np.random.default_rng(0).integers(110, 200, (64, 32)).astype("int32")
    ids[:, 0], ids[:, -1] = 101, 102
    before = [numpy(v).copy() for v in model.trainable_variables]
    history = model.fit({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids}, batch_size=8,
                        epochs=3, shuffle=False, verbose=0).history
    changed = sum(not np.array_equal(a, numpy(v)) for a, v in zip(before, model.trainable_variables))
    evaluation = model.evaluate({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 1 + 0 * ids},
                                batch_size=8, verbose=0, return_dict=True)
    np.savez(os.path.join(folder, f"{keras.backend.backend()}_fit.npz"), changed=changed, weights=len(before),
             iterations=numpy(model.optimizer.iterations), eval_loss=evaluation["loss"],
             eval_auc=evaluation["disc_auc"], **{k: np.array(v) for k, v in history.items()})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--without_tensorflow", action="store_true")
    args = parser.parse_args()
    if args.without_tensorflow:
        sys.modules["tensorflow"] = None  # `import tensorflow` raises ImportError from here on
    if args.fit:
        return fit(args.dir)

    import keras

    from electra_tf.config import get_config
    from electra_tf.layers.initializers import weights_set_after_build
    from electra_tf.models.pretrainer import build_pretrainer

    backend = keras.backend.backend()
    keras.utils.set_random_seed(0)
    # Models that read their weights start from zeros (no draws to compile under JAX).
    with contextlib.nullcontext() if args.write else weights_set_after_build():
        pretrainer = build_pretrainer(get_config("tiny", **SIZES))
        models = [("pretrainer", pretrainer), *task_models()]
        for _, model in models:
            model.build()
    inputs_file = os.path.join(args.dir, "inputs.npz")
    if args.write:
        rng = np.random.default_rng(0)
        batch = batch_inputs(rng)
        masked = {k: numpy(v) for k, v in pretrainer.mask(batch["token_ids"], batch["padding_mask"],
                                                         pretrainer._step_seed(0)).items()}
        out = pretrainer.compute_losses(batch, pretrainer._step_seed(0), training=False, masked=masked)
        sampled = numpy(out.disc_ids)[np.arange(BATCH)[:, None], masked["positions"]]
        choices = {k: np.stack([v, v[::-1]], axis=1) for k, v in batch.items()}  # (batch, 2 choices, seq)
        choices["padding_mask"][2, 1] = 0  # the last question has one choice
        np.savez(inputs_file, sampled=sampled, start_positions=np.array([5, 0, 4], "int32"),
                 **{f"batch/{k}": v for k, v in batch.items()}, **{f"masked/{k}": v for k, v in masked.items()},
                 **{f"choices/{k}": v for k, v in choices.items()})
        for name, model in models:
            model.save_weights(os.path.join(args.dir, f"{name}.weights.h5"))
    stored = np.load(inputs_file)
    batch, masked, choices = ({k.split("/")[1]: stored[k] for k in stored.files if k.startswith(f"{group}/")}
                              for group in ("batch", "masked", "choices"))
    for name, model in models:
        if not args.write:
            model.load_weights(os.path.join(args.dir, f"{name}.weights.h5"))

    results = compiled(lambda: model_outputs(models, batch, masked, choices, stored["start_positions"]))()
    results = {k: numpy(v) for k, v in results.items()}
    # What runs where: the layer classes of the pre-training model, and whether the TensorFlow-only sampler is taken.
    layers = {type(layer).__name__ for layer in pretrainer._flatten_layers()}
    results["facts/layer_classes"] = np.array(sorted(layers))
    try:
        build_pretrainer(get_config("tiny", **SIZES, sampler="inverse_cdf"))
        results["facts/inverse_cdf"] = np.array("accepted")
    except ValueError as e:
        results["facts/inverse_cdf"] = np.array(str(e))
    results.update(gradients(pretrainer, batch, masked, stored["sampled"]))
    np.savez(os.path.join(args.dir, f"{backend}.npz"), **results)
    print("tensorflow imported:", sys.modules.get("tensorflow") is not None)


if __name__ == "__main__":
    main()
