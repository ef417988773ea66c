"""TensorBoard callback: scalar event files that TensorBoard's own reader loads."""

import glob
import os
import sys

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _scalars(run_dir):
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    (path,) = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    out = {}
    for event in LegacyEventFileLoader(path).Load():
        for value in event.summary.value:
            out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out


def test_fit_writes_epoch_and_batch_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-1.0], [2.0]], np.float32)
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    board = keras.callbacks.TensorBoard(tmp_path, update_freq=2)
    history = model.fit(x, y, batch_size=5, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[board])

    train, val = _scalars(tmp_path / "train"), _scalars(tmp_path / "validation")
    for name in ("loss", "mae"):
        steps, values = zip(*train[f"epoch_{name}"])
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[name], rtol=1e-6)
        steps, values = zip(*val[f"epoch_{name}"])
        np.testing.assert_allclose(values, history.history[f"val_{name}"], rtol=1e-6)
    # 3 batches per epoch, 9 in all: a batch summary after batches 2, 4, 6, 8
    assert [step for step, _ in train["batch_loss"]] == [2, 4, 6, 8]


def test_unsupported_options_are_clear(tmp_path):
    pytest.importorskip("tensorboard")
    with pytest.raises(NotImplementedError, match="histogram_freq"):
        keras.callbacks.TensorBoard(tmp_path, histogram_freq=1)
    with pytest.raises(ValueError, match="update_freq"):
        keras.callbacks.TensorBoard(tmp_path, update_freq="sometimes")


def test_missing_package_names_the_extra(monkeypatch, tmp_path):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"tapeflow\[tensorboard\]"):
        keras.callbacks.TensorBoard(tmp_path)
