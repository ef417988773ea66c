"""Model API completeness (issue 19 item 1): functional subclasses, custom train/test/predict
steps, fit's options, generators and Sequences, add_metric, summary(expand_nested), freezing."""

import os
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers

RNG = np.random.default_rng(5)
X = RNG.normal(size=(24, 4)).astype(np.float32)
Y = RNG.normal(size=(24, 1)).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _dense_graph():
    inputs = keras.Input((4,))
    return inputs, layers.Dense(1, kernel_initializer="ones")(inputs)


class CustomModel(keras.Model):
    """Keras's guide pattern: only train_step is overridden."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


@pytest.mark.parametrize("run_eagerly", [True, False])
def test_functional_subclass_keeps_its_train_step_and_matches_plain_fit(run_eagerly):
    histories = []
    for cls in (keras.Model, CustomModel):
        model = cls(*_dense_graph())
        model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mae"],
                      run_eagerly=run_eagerly)
        histories.append(model.fit(X, Y, batch_size=8, epochs=2, shuffle=False,
                                   verbose=0).history)
    assert isinstance(model, CustomModel) and model.inputs and len(model.layers) == 2
    np.testing.assert_allclose(histories[0]["loss"], histories[1]["loss"], rtol=1e-6)
    np.testing.assert_allclose(histories[0]["mae"], histories[1]["mae"], rtol=1e-6)


class InitFunctional(keras.Model):
    def __init__(self, scale):
        inputs, outputs = _dense_graph()
        super().__init__(inputs=inputs, outputs=outputs)
        self.scale = scale

    def predict_step(self, data):
        return self(data, training=False) * self.scale

    def test_step(self, data):
        x, y = data
        return {"max_err": tf.reduce_max(tf.abs(self(x) - y))}


def test_super_init_with_inputs_and_outputs_and_overridden_test_and_predict_steps():
    model = InitFunctional(3.0)
    model.compile("sgd", "mse")
    np.testing.assert_allclose(model.predict(X, verbose=0), 3 * X.sum(1, keepdims=True),
                               rtol=1e-5)
    logs = model.evaluate(X, Y, batch_size=len(X), verbose=0, return_dict=True)
    assert logs == {"max_err": pytest.approx(np.abs(X.sum(1, keepdims=True) - Y).max())}
    assert model.output_shape == (None, 1) and model.get_config()["output_layers"]


class Tracked(keras.Model):
    """A custom step with its own tracker and optimizer.minimize; no `metrics` override:
    the tracker is found as an attribute (Keras 2) and reset every epoch."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1, kernel_initializer="ones")
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


def test_custom_train_step_with_minimize_and_per_epoch_metric_reset():
    model = Tracked()
    model.compile(keras.optimizers.SGD(0.0))  # lr 0: every epoch sees the same batch losses
    hist = model.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    batch_losses = [np.mean((X[i:i + 8].sum(1, keepdims=True) - Y[i:i + 8]) ** 2)
                    for i in range(0, 24, 8)]
    np.testing.assert_allclose(hist.history["loss"], [np.mean(batch_losses)] * 3, rtol=1e-5)
    assert model.metrics == [model.loss_tracker]


def test_missing_super_init_is_a_clear_error_at_construction():
    class Forgot(keras.Model):
        def __init__(self):
            self.dense = layers.Dense(1)

        def call(self, x):
            return self.dense(x)

    with pytest.raises(RuntimeError, match=r"forgot to call `super\(\).__init__\(\)` in "
                                           r"Forgot.__init__"):
        Forgot()

    class ForgotLayer(layers.Layer):  # tf-keras: "You must call `super().__init__()` ..."
        def __init__(self):
            self.inner = layers.Dense(1)

    with pytest.raises(RuntimeError, match=r"You must call `super\(\).__init__\(\)` in the "
                                           r"layer constructor \(ForgotLayer.__init__\)"):
        ForgotLayer()


def test_fit_options_validation_freq_initial_epoch_steps_and_execution():
    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.01), "mse", steps_per_execution=2, jit_compile=True)
    assert model.jit_compile is True

    class CountBatches(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(batch)

    counter = CountBatches()
    hist = model.fit(X, Y, batch_size=4, epochs=4, initial_epoch=1, validation_split=0.25,
                     validation_freq=[2, 4], steps_per_epoch=3, callbacks=[counter],
                     verbose=0)
    assert hist.epoch == [1, 2, 3]
    assert len(hist.history["loss"]) == 3 and len(hist.history["val_loss"]) == 2
    assert counter.ends == [1, 2] * 3  # one callback per 2-step execution, then the tail
    with pytest.raises(ValueError, match="steps_per_execution"):
        model.compile("sgd", "mse", steps_per_execution=0)


def _batches():
    return [(X[i:i + 8], Y[i:i + 8]) for i in range(0, 24, 8)]


def _reference_history(epochs=2):
    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.05), "mse")
    return model.fit(X, Y, batch_size=8, epochs=epochs, shuffle=False, verbose=0).history


def test_python_generators_train_like_arrays():
    def forever():
        while True:
            yield from _batches()

    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.05), "mse")
    hist = model.fit(forever(), steps_per_epoch=3, epochs=2, verbose=0).history
    np.testing.assert_allclose(hist["loss"], _reference_history()["loss"], rtol=1e-6)
    finite = iter(_batches())
    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.05), "mse")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hist = model.fit(finite, epochs=3, verbose=0).history
    assert len(hist["loss"]) == 1 and "ran out of data" in str(caught[-1].message)
    preds = model.predict((x for x, _ in _batches()), verbose=0)
    assert preds.shape == (24, 1)


class Batches(keras.utils.Sequence):
    def __init__(self):
        self.epochs_ended = 0

    def __len__(self):
        return 3

    def __getitem__(self, index):
        return _batches()[index]

    def on_epoch_end(self):
        self.epochs_ended += 1


@pytest.mark.parametrize("workers", [1, 3])
def test_sequence_with_workers_trains_like_arrays(workers):
    seq = Batches()
    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.05), "mse")
    hist = model.fit(seq, epochs=2, shuffle=False, workers=workers, max_queue_size=2,
                     use_multiprocessing=workers > 1, verbose=0).history
    np.testing.assert_allclose(hist["loss"], _reference_history()["loss"], rtol=1e-6)
    assert seq.epochs_ended == 2
    w = model.get_weights()[0]
    assert model.evaluate(seq, verbose=0, workers=workers) == pytest.approx(
        np.mean((X @ w + model.get_weights()[1] - Y) ** 2), rel=1e-5)
    assert model.predict(seq, verbose=0).shape == (24, 1)
    with pytest.raises(ValueError, match="`y` argument is not supported when using a Sequence"):
        model.fit(seq, Y, verbose=0)


class PidBatches(Batches):
    """Notes which process loaded each batch."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def __getitem__(self, index):
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return super().__getitem__(index)


def test_sequence_with_use_multiprocessing_loads_batches_in_worker_processes(tmp_path):
    log = tmp_path / "pids.txt"
    seq = PidBatches(str(log))
    model = keras.Model(*_dense_graph())
    model.compile(keras.optimizers.SGD(0.05), "mse")
    hist = model.fit(seq, epochs=2, shuffle=False, workers=2, use_multiprocessing=True,
                     verbose=0).history
    np.testing.assert_allclose(hist["loss"], _reference_history()["loss"], rtol=1e-6)
    pids = {int(line) for line in log.read_text().split()}
    assert pids and os.getpid() not in pids
    assert seq.epochs_ended == 2  # on_epoch_end runs in the training process


def test_shuffled_sequence_follows_the_seed():
    def run():
        tf.random.set_seed(2)
        model = keras.Model(*_dense_graph())
        model.compile(keras.optimizers.SGD(0.05), "mse")
        return model.fit(Batches(), epochs=2, shuffle=True, verbose=0).history["loss"]

    assert run() == run()


def test_add_metric_add_loss_and_activity_regularizer_in_fit():
    class Probe(layers.Layer):
        def call(self, inputs):
            self.add_loss(0.5 * tf.reduce_mean(inputs))
            self.add_metric(tf.reduce_mean(inputs), name="mean_in")
            return inputs

    inputs = keras.Input((4,))
    hidden = layers.Dense(2, kernel_initializer="ones", activity_regularizer="l1")
    outputs = layers.Dense(1, kernel_initializer="ones")(hidden(Probe()(inputs)))
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.SGD(0.0), "mse")
    logs = model.evaluate(X, Y, batch_size=len(X), verbose=0, return_dict=True)
    h = np.repeat(X.sum(1, keepdims=True), 2, axis=1)
    mse = np.mean((h.sum(1, keepdims=True) - Y) ** 2)
    activity = 0.01 * np.abs(h).sum() / len(X)
    assert logs["mean_in"] == pytest.approx(X.mean(), rel=1e-5)
    assert logs["loss"] == pytest.approx(mse + 0.5 * X.mean() + activity, rel=1e-5)
    assert len(model.losses) == 2  # collected through the nested layers
    with pytest.raises(ValueError, match="provide a name"):
        layers.Layer().add_metric(tf.constant(1.0))


# recorded with TensorFlow 2.21 + tf-keras 2.21 (model built in the test below); rows are
# padded to the table's width of 76
BAR = "\u00af"
NESTED_ROWS = [
    " inner (Sequential)          (None, 3)                 19        Y".ljust(76),
    "|" + BAR * 74 + "|",
    "| d_in1 (Dense)              (None, 2)                 10        Y         |",
    "|" + " " * 74 + "|",
    "| d_in2 (Dense)              (None, 3)                 9         Y         |",
    BAR * 76,
    " head (Dense)                (None, 1)                 4         N".ljust(76),
]


def test_summary_expand_nested_and_show_trainable_match_keras():
    inner = keras.Sequential([layers.Dense(2, input_shape=(4,), name="d_in1"),
                              layers.Dense(3, name="d_in2")], name="inner")
    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, layers.Dense(1, name="head")(inner(inputs)), name="outer")
    model.layers[-1].trainable = False
    lines = []
    model.summary(expand_nested=True, show_trainable=True, print_fn=lines.append)
    start = lines.index(NESTED_ROWS[0])
    assert lines[start:start + len(NESTED_ROWS)] == NESTED_ROWS
    assert "Trainable  " in lines[2] and len(lines[1]) == 76
    lines = []
    model.summary(layer_range=["inner", "head"], print_fn=lines.append)
    assert not any(line.startswith(" x (InputLayer)") for line in lines)


def test_frozen_batch_norm_runs_in_inference_mode_and_keeps_its_statistics():
    bn = layers.BatchNormalization()
    model = keras.Sequential([layers.Dense(3, input_shape=(4,)), bn])
    model(X)
    bn.trainable = False
    before = [w.copy() for w in bn.get_weights()]
    model.compile(keras.optimizers.SGD(0.1), "mse")
    model.fit(X, np.zeros((24, 3), np.float32), epochs=2, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, bn.get_weights()))
    gamma, beta, mean, var = bn.get_weights()
    h = model.layers[0](X).numpy()
    expected = (h - mean) / np.sqrt(var + bn.epsilon) * gamma + beta
    np.testing.assert_allclose(bn(model.layers[0](X), training=True).numpy(), expected,
                               rtol=1e-5, atol=1e-6)
    model.trainable = False
    assert model.trainable_weights == [] and len(model.non_trainable_weights) == 6
