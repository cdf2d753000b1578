"""The progress bar shows the metrics a user watches (and a loss scaler's skipped updates); every metric still reaches
the other callbacks."""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.training import callbacks

LOGS = {"loss": 45.6, "masked_lm_accuracy": 0.1, "disc_auc": 0.51, "sequences_per_second": 12.5,
        "disc_accuracy": 0.3, "disc_precision": 0.14, "disc_recall": 0.8, "learning_rate": 1e-5,
        "masked_lm_loss": 9.0, "sampled_masked_lm_accuracy": 0.0, "skipped_updates": 3}


def test_the_bar_shows_loss_mlm_accuracy_auc_and_throughput(capsys):
    progress = callbacks.Progress()
    progress.set_params({"verbose": 1, "epochs": 1, "steps": 2})
    progress.on_train_begin()
    progress.on_epoch_begin(0)
    logs = dict(LOGS)
    progress.on_train_batch_end(0, logs)
    progress.on_epoch_end(0, {**logs, "val_loss": 1.0, "val_disc_recall": 0.5})
    out = capsys.readouterr().out
    for name in callbacks.PROGRESS_METRICS + ("val_loss",):
        assert f"{name}: " in out, name
    for name in ("disc_accuracy", "disc_precision", "disc_recall", "learning_rate", "masked_lm_loss",
                 "sampled_masked_lm_accuracy"):
        assert f"{name}:" not in out, name
    assert logs == LOGS  # the logs other callbacks (TensorBoard, History) see are untouched


def test_fit_uses_it_instead_of_keras_bar_and_history_keeps_every_metric(capsys):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    data = tf.data.Dataset.from_tensor_slices((np.ones((4, 2)), np.ones((4, 1)))).batch(2)
    history = model.fit(data, epochs=1, verbose=2, shuffle=False, callbacks=[callbacks.Progress(("loss",))])
    line = [line for line in capsys.readouterr().out.splitlines() if "loss" in line]
    assert len(line) == 1 and "mae" not in line[0]
    assert set(history.history) == {"loss", "mae"}
