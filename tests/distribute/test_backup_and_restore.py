"""BackupAndRestore: a restarted fit resumes after the last backed-up epoch, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from tests.distribute import mpi_helpers

import tapeflow as tf


def _model():
    tf.random.set_seed(1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(5,)),
                                 tf.keras.layers.Dense(2)])
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    return model


def test_restarted_fit_resumes_with_weights_and_optimizer_state(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = rng.normal(size=(64, 2)).astype(np.float32)
    reference = _model()
    reference.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0)

    class Die(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                raise RuntimeError("the worker died")

    backup = tmp_path / "backup"
    with pytest.raises(RuntimeError, match="the worker died"):
        _model().fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0,
                     callbacks=[tf.keras.callbacks.BackupAndRestore(str(backup)), Die()])
    assert backup.exists()
    epochs = []
    restarted = _model()
    restarted.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0, callbacks=[
        tf.keras.callbacks.BackupAndRestore(str(backup)),
        tf.keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs=None: epochs.append(e))])
    assert epochs == [2, 3] and int(restarted.optimizer.iterations.numpy()) == 16
    for a, b in zip(reference.get_weights(), restarted.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not backup.exists()  # deleted when training finished
    with pytest.raises(ValueError, match="save_freq='step'"):
        tf.keras.callbacks.BackupAndRestore(str(backup), save_freq="step")


def test_save_freq_in_batches_resumes_mid_epoch(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = rng.normal(size=(64, 2)).astype(np.float32)
    reference = _model()
    reference.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)

    class Die(tf.keras.callbacks.Callback):  # 4 batches an epoch; backups after batches 3, 6
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_begin(self, batch, logs=None):
            if self.epoch == 1 and batch == 3:
                raise RuntimeError("pre-empted")

    backup = tmp_path / "backup"
    with pytest.raises(RuntimeError, match="pre-empted"):
        _model().fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, callbacks=[
            tf.keras.callbacks.BackupAndRestore(str(backup), save_freq=3), Die()])
    batches = []
    restarted = _model()
    restarted.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0, callbacks=[
        tf.keras.callbacks.BackupAndRestore(str(backup), save_freq=3),
        tf.keras.callbacks.LambdaCallback(
            on_train_batch_begin=lambda b, logs=None: batches.append(b))])
    assert batches == [2, 3, 0, 1, 2, 3]  # epoch 1 from its third batch, then epoch 2
    assert int(restarted.optimizer.iterations.numpy()) == 12
    for a, b in zip(reference.get_weights(), restarted.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_multi_worker_job_restarted_after_a_worker_died(tmp_path):
    out = tmp_path / "run.npz"
    died = mpi_helpers.mpiexec(2, "mwms_train.py", str(out), "backup", "adam", "32", "4", "2")
    assert died.returncode != 0 and not out.exists()
    resumed = mpi_helpers.mpiexec(2, "mwms_train.py", str(out), "backup", "adam", "32", "4")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    one = tmp_path / "one.npz"
    assert mpi_helpers.python("mwms_train.py", str(one), "backup", "adam", "32", "4"
                              ).returncode == 0
    two, ref = np.load(out), np.load(one)
    assert two["epochs_run"].tolist() == [2, 3] and ref["epochs_run"].tolist() == [0, 1, 2, 3]
    for i in range(4):
        np.testing.assert_allclose(two[f"w{i}"], ref[f"w{i}"], rtol=1e-5, atol=1e-5)
