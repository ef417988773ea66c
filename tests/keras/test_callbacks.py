"""Callbacks driven by fit: early stopping, LR schedules, CSV logs, checkpoints."""

import csv

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _model(lr=0.1):
    model = keras.Sequential([layers.Dense(1, input_shape=(3,), kernel_initializer="zeros")])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse", run_eagerly=True)
    return model


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    return x, x @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def test_early_stopping_stops_and_restores_best():
    x, y = _data()
    model = _model(lr=0.0)  # loss never improves after the first epoch
    stopper = keras.callbacks.EarlyStopping(monitor="loss", patience=2,
                                            restore_best_weights=True)
    history = model.fit(x, y, epochs=10, shuffle=False, verbose=0, callbacks=[stopper])
    assert len(history.history["loss"]) == 3 and stopper.stopped_epoch == 2


def test_learning_rate_scheduler_and_reduce_on_plateau():
    x, y = _data()
    model = _model()
    seen = []
    sched = keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    spy = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: seen.append(float(model.optimizer.learning_rate)))
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[sched, spy])
    np.testing.assert_allclose(seen, [0.1, 0.05, 0.1 / 3], rtol=1e-6)
    np.testing.assert_allclose(history.history["lr"], seen, rtol=1e-6)
    flat = _model(lr=0.2)
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1)
    flat.fit(x, np.zeros_like(y), epochs=3, verbose=0, callbacks=[plateau])  # loss stays 0
    np.testing.assert_allclose(float(flat.optimizer.learning_rate), 0.05, rtol=1e-6)


def test_csv_logger_writes_one_row_per_epoch(tmp_path):
    x, y = _data()
    path = tmp_path / "log.csv"
    history = _model().fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                           callbacks=[keras.callbacks.CSVLogger(str(path))])
    rows = list(csv.DictReader(open(path)))
    assert [r["epoch"] for r in rows] == ["0", "1"]
    np.testing.assert_allclose([float(r["loss"]) for r in rows], history.history["loss"],
                               rtol=1e-6)
    assert set(rows[0]) == {"epoch", "loss", "val_loss"}


def test_model_checkpoint_saves_best_only(tmp_path):
    x, y = _data()
    model = _model()
    saved = []
    model.save_weights = lambda path: saved.append(path)
    ckpt = keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}"), monitor="loss",
                                           save_best_only=True)
    model.fit(x, y, epochs=3, verbose=0, callbacks=[ckpt])
    assert [p.rsplit("/", 1)[1] for p in saved] == ["w-01", "w-02", "w-03"]


def test_save_and_load_weights_roundtrip(tmp_path):
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=1, verbose=0)
    path = model.save_weights(str(tmp_path / "ckpt"))
    before = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in before])
    model.load_weights(path)
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)
