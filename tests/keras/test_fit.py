"""compile/fit/evaluate/predict against hand-computed NumPy training."""

import io
import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _data(n=10):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32)


def _linear_model():
    model = keras.Sequential([layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", run_eagerly=True)
    return model


def _numpy_sgd(x, y, epochs, batch_size, lr=0.1):
    """Keras's epoch loss: batch losses (before each update) weighted by batch size."""
    w, b, history = np.ones((3, 1)), np.zeros(1), []
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(x), batch_size):
            xb, yb = x[start:start + batch_size], y[start:start + batch_size]
            pred = xb @ w + b
            total += np.mean((pred - yb) ** 2) * len(xb)
            g = 2 * (pred - yb) / len(xb)
            w, b = w - lr * xb.T @ g, b - lr * g.sum(0)
        history.append(total / len(x))
    return w, b, history


def test_fit_reproduces_hand_computed_loss_history():
    x, y = _data()
    model = _linear_model()
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    w, b, expected = _numpy_sgd(x, y, 3, 4)
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-5)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), w, rtol=1e-5)
    assert history.epoch == [0, 1, 2] and model.history is history
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0),
                               np.mean((x @ w + b - y) ** 2), rtol=1e-5)
    np.testing.assert_allclose(model.predict(x, batch_size=3, verbose=0), x @ w + b, rtol=1e-5)


def test_fit_with_dataset_matches_arrays():
    x, y = _data()
    model = _linear_model()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    history = model.fit(dataset, epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], _numpy_sgd(x, y, 2, 4)[2], rtol=1e-5)


def test_validation_split_and_initial_epoch_and_steps():
    x, y = _data(20)
    model = _linear_model()
    history = model.fit(x, y, batch_size=4, epochs=3, initial_epoch=1, validation_split=0.25,
                        shuffle=False, verbose=0)
    assert history.epoch == [1, 2] and len(history.history["val_loss"]) == 2
    _, _, expected = _numpy_sgd(x[:15], y[:15], 2, 4)
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-5)
    calls = []
    model.fit(x, y, batch_size=2, epochs=1, steps_per_epoch=3, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(
                  on_train_batch_end=lambda b, logs: calls.append(b))])
    assert calls == [0, 1, 2]


def test_validation_data_and_sample_weight():
    x, y = _data()
    model = _linear_model()
    sw = np.r_[np.ones(5), np.zeros(5)].astype(np.float32)
    first = model.test_on_batch(x, y, sample_weight=sw)
    pred = x @ np.ones((3, 1))
    np.testing.assert_allclose(first, np.sum(((pred - y) ** 2)[:, 0] * sw) / 10, rtol=1e-5)
    history = model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y))
    assert set(history.history) == {"loss", "val_loss"}


def test_train_on_batch_is_one_sgd_step():
    x, y = _data(4)
    model = _linear_model()
    loss = model.train_on_batch(x, y)
    w, _, expected = _numpy_sgd(x, y, 1, 4)
    np.testing.assert_allclose(loss, expected[0], rtol=1e-5)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), w, rtol=1e-5)


def test_metrics_and_accuracy_string_resolution():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int64)
    model = keras.Sequential([layers.Dense(2, input_shape=(4,))])
    model.compile(optimizer="sgd", run_eagerly=True, metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    logs = model.evaluate(x, labels, verbose=0, return_dict=True)
    logits = model.predict(x, verbose=0)
    assert model.metrics_names == ["loss", "accuracy"]
    np.testing.assert_allclose(logs["accuracy"], np.mean(logits.argmax(1) == labels), rtol=1e-6)
    onehot = keras.utils.to_categorical(labels, 2)
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["acc"],
                  run_eagerly=True)
    logs = model.evaluate(x, onehot, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["acc"], np.mean(logits.argmax(1) == labels), rtol=1e-6)


def test_regularization_losses_enter_the_total():
    x, y = _data(4)
    model = keras.Sequential([layers.Dense(1, input_shape=(3,), kernel_initializer="ones",
                                           kernel_regularizer=keras.regularizers.l2(0.5))])
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    loss = model.test_on_batch(x, y)
    np.testing.assert_allclose(loss, np.mean((x.sum(1, keepdims=True) - y) ** 2) + 0.5 * 3,
                               rtol=1e-5)


def test_multi_output_losses_are_weighted_and_logged():
    inp = keras.Input((3,))
    a = layers.Dense(1, name="a", kernel_initializer="ones")(inp)
    b = layers.Dense(1, name="b", kernel_initializer="zeros")(inp)
    model = keras.Model(inp, [a, b])
    model.compile(optimizer="sgd", loss=["mse", "mae"], loss_weights=[1.0, 2.0],
                  run_eagerly=True)
    x, y = _data(4)
    logs = model.evaluate(x, [y, y], verbose=0, return_dict=True)
    mse = np.mean((x.sum(1, keepdims=True) - y) ** 2)
    mae = np.mean(np.abs(y))
    np.testing.assert_allclose(logs["a_loss"], mse, rtol=1e-5)
    np.testing.assert_allclose(logs["b_loss"], mae, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], mse + 2 * mae, rtol=1e-5)


def test_fit_requires_compile_and_consistent_sizes():
    model = keras.Sequential([layers.Dense(1, input_shape=(3,))])
    with pytest.raises(RuntimeError, match="compile"):
        model.fit(np.ones((2, 3)), np.ones((2, 1)), verbose=0)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="cardinality"):
        model.fit(np.ones((4, 3)), np.ones((3, 1)), verbose=0)


def test_progress_bar_format(capsys):
    x, y = _data(64)
    model = _linear_model()
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", metrics=["mae"],
                  run_eagerly=True)
    model.fit(x, y, batch_size=32, epochs=2, verbose=1)
    out = capsys.readouterr().out
    assert "\r" not in out and "\x1b" not in out  # piped: plain lines, as Keras writes them
    lines = out.split("\n")
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and lines[4] == ""
    for line in (lines[1], lines[3]):
        assert re.fullmatch(r"2/2 \[={30}\] - \d+s \d+[mu]?s/step - loss: \d+\.\d{4} - mae: "
                            r"\d+\.\d{4}", line), line
    model.fit(x, y, batch_size=32, epochs=1, verbose=2)
    line = capsys.readouterr().out.split("\n")[1]
    assert line.startswith("2/2 - ") and "ms/epoch" in line


def test_traced_train_step_matches_eager():
    if not hasattr(tf, "function"):
        pytest.skip("tapeflow.function not available yet")
    x, y = _data()
    model = _linear_model()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], _numpy_sgd(x, y, 3, 4)[2], rtol=1e-5)


def test_partial_last_batch_does_not_retrace_each_epoch():
    x, y = _data(10)
    model = _linear_model()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], _numpy_sgd(x, y, 3, 4)[2], rtol=1e-5)
    assert model.make_train_function().experimental_get_tracing_count() <= 2
    model.evaluate(x, y, batch_size=4, verbose=0)
    model.evaluate(x, y, batch_size=3, verbose=0)
    assert model.make_test_function().experimental_get_tracing_count() <= 2
    w = model.layers[0].kernel.numpy()
    b = model.layers[0].bias.numpy()
    for batch_size in (4, 3, 7):
        np.testing.assert_allclose(model.predict(x, batch_size=batch_size, verbose=0),
                                   x @ w + b, rtol=1e-5)
    assert model.make_predict_function().experimental_get_tracing_count() <= 2


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progbar_live_on_a_terminal_and_partial_bar_when_stopped_early():
    from tapeflow.keras.callbacks import Progbar

    term = _Terminal()
    bar = Progbar(4, file=term)
    for step in range(1, 5):
        bar.update(step, {"loss": 0.5})
    bar.update(4, {"loss": 0.25}, finalize=True)
    final = term.getvalue().rstrip("\n").split("\r")[-1]
    assert "\r" in term.getvalue()  # redrawn in place by tqdm
    assert re.fullmatch(r"4/4 \[={30}\] - \d+s \d+[mu]?s/step - loss: 0\.2500", final), final

    pipe = io.StringIO()
    stopped = Progbar(10, file=pipe)
    stopped.update(3, {"loss": 1.0}, finalize=True)
    assert pipe.getvalue().startswith(" 3/10 [========>.....................] - ")
    unknown = io.StringIO()
    Progbar(None, file=unknown).update(12, finalize=True)
    assert unknown.getvalue().startswith("     12/Unknown - ")


def test_steps_run_with_single_threaded_blas_and_restore_it():
    from threadpoolctl import threadpool_limits

    from tapeflow.framework import threads

    if not threads.blas_threads():
        pytest.skip("needs a BLAS library threadpoolctl can control")
    seen = []

    class Probe(keras.Sequential):
        def train_step(self, data):
            seen.append(threads.blas_threads()[0])
            return super().train_step(data)

    x, y = _data()
    model = Probe([layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    with threadpool_limits(limits=2, user_api="blas"):
        model.fit(x, y, batch_size=5, epochs=1, verbose=0)
        assert seen == [1, 1] and threads.blas_threads()[0] == 2
