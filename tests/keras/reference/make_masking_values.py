"""Records tf-keras 2.21 numbers for the masking cases of tests/keras/test_masking.py.

Run with TensorFlow 2.21 and tf-keras installed (not tapeflow), from the repository root:
    python tests/keras/reference/make_masking_values.py
Writes tests/keras/reference/masking_values.npz. Each case builds a small model with the same
code on either framework (``build(keras)`` takes the ``keras`` module), sets weights drawn
here (recorded by weight name), and records the output, the output's ``_keras_mask``, and
the gradients of sum(output * cotangent) w.r.t. every trainable weight. The loss cases also record
``evaluate`` results and the weights after one SGD step of ``fit``.
"""

import os
import re

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "masking_values.npz")
VOCAB, STEPS, BATCH = 7, 5, 3
# ids with zero padding: trailing, leading and in the middle (the RNNs must carry the state)
SAMPLE_WEIGHT = np.array([0.5, 2.0, 1.0], np.float32)
IDS = np.array([[3, 1, 4, 0, 0], [0, 0, 2, 6, 5], [1, 0, 3, 0, 2]], dtype=np.int32)


def _ids(keras):
    return keras.Input(shape=(STEPS,), dtype="int32")


def _embed(keras, x, name="embedding"):
    return keras.layers.Embedding(VOCAB, 4, mask_zero=True, name=name)(x)


def simple_rnn_last(keras):
    x = _ids(keras)
    return keras.Model(x, keras.layers.SimpleRNN(3)(_embed(keras, x)))


def lstm_sequences(keras):
    x = _ids(keras)
    h = keras.layers.LSTM(3, return_sequences=True)(_embed(keras, x))
    return keras.Model(x, keras.layers.Dense(2)(h))


def gru_backwards(keras):
    x = _ids(keras)
    return keras.Model(x, keras.layers.GRU(3, return_sequences=True, go_backwards=True)(
        _embed(keras, x)))


def lstm_state(keras):
    x = _ids(keras)
    out, h, c = keras.layers.LSTM(3, return_state=True)(_embed(keras, x))
    return keras.Model(x, keras.layers.Concatenate()([out, h, c]))


def masking_lstm(keras):
    x = keras.Input(shape=(STEPS, 2))
    return keras.Model(x, keras.layers.LSTM(3)(keras.layers.Masking(0.0)(x)))


def bidirectional(keras):
    x = _ids(keras)
    return keras.Model(x, keras.layers.Bidirectional(keras.layers.LSTM(
        2, return_sequences=True))(_embed(keras, x)))


def through_dense(keras):
    x = _ids(keras)
    h = keras.layers.Dense(3, activation="tanh")(_embed(keras, x))
    h = keras.layers.LayerNormalization()(keras.layers.Dropout(0.5)(h))
    return keras.Model(x, keras.layers.SimpleRNN(2)(h))


def merged(keras):
    x = _ids(keras)
    a = _embed(keras, x, "embedding")
    b = keras.layers.Dense(4)(keras.layers.Embedding(VOCAB, 4, name="embedding_b")(x))
    h = keras.layers.Concatenate()([keras.layers.Add()([a, b]), b])
    return keras.Model(x, keras.layers.GRU(2, return_sequences=True)(h))


def global_average(keras):
    x = _ids(keras)
    return keras.Model(x, keras.layers.Dense(2)(
        keras.layers.GlobalAveragePooling1D()(_embed(keras, x))))


def self_attention(keras):
    x = _ids(keras)
    h = _embed(keras, x)
    return keras.Model(x, keras.layers.MultiHeadAttention(2, 3)(h, h))


def dot_attention(keras):
    x = _ids(keras)
    h = _embed(keras, x)
    return keras.Model(x, keras.layers.Attention()([h, h]))


def stacked_cells(keras):
    x = _ids(keras)
    cells = [keras.layers.LSTMCell(3), keras.layers.GRUCell(2)]
    return keras.Model(x, keras.layers.RNN(cells, return_sequences=True)(_embed(keras, x)))


def custom_cell(keras):
    class MinimalRNNCell(keras.layers.Layer):  # the cell of Keras's RNN API docs
        def __init__(self, units, **kwargs):
            self.units = units
            self.state_size = units
            super().__init__(**kwargs)

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units),
                                                    name="recurrent_kernel")

        def call(self, inputs, states):
            output = keras.backend.dot(inputs, self.kernel) + keras.backend.dot(
                states[0], self.recurrent_kernel)
            return keras.activations.tanh(output), [output]

    x = _ids(keras)
    layer = keras.layers.RNN(MinimalRNNCell(3), return_sequences=True, go_backwards=True)
    return keras.Model(x, layer(_embed(keras, x)))


# name: model builder
CASES = {f.__name__: f for f in (simple_rnn_last, lstm_sequences, gru_backwards, lstm_state,
                                 masking_lstm, bidirectional, through_dense, merged,
                                 global_average, self_attention, dot_attention, stacked_cells,
                                 custom_cell)}
# models compiled with a per-timestep loss and metric: evaluate and one SGD step of fit
LOSS_CASES = {"lstm_sequences": ("mse", ["mae"]),
              "dot_attention": ("mae", ["mse"])}


def key(weight) -> str:
    """A weight's name without the uniquifying suffixes (``lstm_3/...`` -> ``lstm/...``)."""
    return re.sub(r"_\d+(?=[/:])", "", weight.name)


def inputs(name: str) -> np.ndarray:
    if name == "masking_lstm":
        x = np.random.default_rng(1).standard_normal((BATCH, STEPS, 2)).astype(np.float32)
        x[IDS == 0] = 0.0
        return x
    return IDS


def main() -> None:
    import tensorflow as tf
    import tf_keras as keras

    rng = np.random.default_rng(0)
    out = {}
    for name, build in CASES.items():
        model = build(keras)
        weights = [rng.standard_normal(w.shape).astype(np.float32) * 0.5
                   for w in model.get_weights()]
        model.set_weights(weights)
        names = [key(w) for w in model.weights]  # layer order may differ: keyed by name
        x = tf.constant(inputs(name))
        with tf.GradientTape() as tape:
            y = model(x)
            cot = rng.standard_normal(y.shape).astype(np.float32)
            s = tf.reduce_sum(y * cot)
        grads = tape.gradient(s, model.trainable_weights)
        mask = getattr(y, "_keras_mask", None)
        out[f"{name}/y"] = y.numpy()
        out[f"{name}/cot"] = cot
        out[f"{name}/mask"] = np.array([]) if mask is None else mask.numpy()
        for n, w in zip(names, weights):
            out[f"{name}/w/{n}"] = w
        for w, g in zip(model.trainable_weights, grads):
            out[f"{name}/dw/{key(w)}"] = tf.convert_to_tensor(g).numpy()
        if name in LOSS_CASES:
            loss, metrics = LOSS_CASES[name]
            target = rng.standard_normal(y.shape).astype(np.float32)
            model.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss, metrics=metrics)
            out[f"{name}/target"] = target
            out[f"{name}/evaluate"] = np.array(model.evaluate(x, target, verbose=0))
            out[f"{name}/evaluate_sw"] = np.array(model.evaluate(
                x, target, sample_weight=SAMPLE_WEIGHT, verbose=0))
            model.fit(x, target, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
            for n, w in zip(names, model.get_weights()):
                out[f"{name}/fit_w/{n}"] = w
    np.savez(PATH, **out)


if __name__ == "__main__":
    main()
