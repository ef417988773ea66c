"""Recurrent-layer options: dropout / recurrent_dropout (one mask per sequence, training only),
stateful=True with reset_states, return_state, unroll, go_backwards, and their configs."""

import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers
RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 6, 3)).astype(np.float32)


def _twin(layer_cls, **kwargs):
    """`layer_cls` with `kwargs`, and the same layer without dropout sharing its weights."""
    a = layer_cls(4, **kwargs)
    b = layer_cls(4, return_sequences=kwargs.get("return_sequences", False))
    a(X)
    b(X)
    b.set_weights(a.get_weights())
    return a, b


@pytest.mark.parametrize("layer_cls", [L.SimpleRNN, L.LSTM, L.GRU])
def test_dropout_only_while_training(layer_cls):
    a, b = _twin(layer_cls, dropout=0.5, recurrent_dropout=0.5, return_sequences=True)
    np.testing.assert_allclose(a(X, training=False).numpy(),
                               b(X).numpy(), rtol=1e-6)
    tf.random.set_seed(3)
    dropped = a(X, training=True).numpy()
    assert not np.allclose(dropped, b(X).numpy())
    tf.random.set_seed(3)
    np.testing.assert_allclose(a(X, training=True).numpy(), dropped)  # seeded


@pytest.mark.parametrize("layer_cls", [L.SimpleRNN, L.LSTM, L.GRU])
def test_recurrent_dropout_leaves_the_first_step_alone(layer_cls):
    """h0 is zero, so dropping it changes nothing at step 0, and later steps change."""
    a, b = _twin(layer_cls, recurrent_dropout=0.6, return_sequences=True)
    out, plain = a(X, training=True).numpy(), b(X).numpy()
    np.testing.assert_allclose(out[:, 0], plain[:, 0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(out[:, 1:], plain[:, 1:])


def test_input_dropout_mask_is_one_per_sequence():
    """With an identity kernel, a zero recurrent kernel and a linear activation each output is
    x_t * mask: the mask must be 0 or 1/(1-rate) per feature and the same at every step."""
    layer = L.SimpleRNN(3, activation=None, dropout=0.5, kernel_initializer="identity",
                        recurrent_initializer="zeros")
    layer_seq = L.SimpleRNN(3, activation=None, dropout=0.5, kernel_initializer="identity",
                            recurrent_initializer="zeros", return_sequences=True)
    x = np.ones((4, 5, 3), np.float32) + np.arange(5, dtype=np.float32)[None, :, None]
    out = layer_seq(x, training=True).numpy()
    masks = out / x
    assert set(np.round(np.unique(masks), 5)) <= {0.0, 2.0}
    np.testing.assert_allclose(masks, np.repeat(masks[:, :1], 5, axis=1))
    assert layer(x, training=True).shape == (4, 3)


@pytest.mark.parametrize("layer_cls", [L.SimpleRNN, L.LSTM, L.GRU])
def test_stateful_continues_from_the_last_batch(layer_cls):
    stateful = layer_cls(4, stateful=True, return_sequences=True)
    plain = layer_cls(4, return_sequences=True)
    full = plain(X).numpy()
    stateful(X[:, :2])
    stateful.set_weights(plain.get_weights())
    stateful.reset_states()
    first = stateful(X[:, :2]).numpy()
    second = stateful(X[:, 2:]).numpy()
    np.testing.assert_allclose(np.concatenate([first, second], 1), full, rtol=1e-5, atol=1e-6)
    assert len(stateful.states) == (2 if layer_cls is L.LSTM else 1)
    assert len(stateful.weights) == len(plain.weights)  # states are not weights
    stateful.reset_states()
    np.testing.assert_allclose(stateful(X[:, :2]).numpy(), first, rtol=1e-6)
    h = np.full((2, 4), 0.5, np.float32)
    stateful.reset_states([h] * len(stateful.states))
    np.testing.assert_allclose(stateful.states[0].numpy(), h)
    with pytest.raises(ValueError, match="expected states of shapes"):
        stateful.reset_states([np.zeros((3, 4))] * len(stateful.states))


def test_stateful_in_fit_and_the_batch_size_error():
    with pytest.raises(ValueError, match="needs to know its batch size"):
        tf.keras.Sequential([L.LSTM(2, stateful=True, input_shape=(3, 2))])
    model = tf.keras.Sequential([L.LSTM(2, stateful=True, batch_input_shape=(2, 3, 3)),
                                 L.Dense(1)])
    model.compile("sgd", "mse")
    assert not np.any(model.layers[0].states[0].numpy())  # building did not move them
    model.fit(X[:, :3], np.zeros((2, 1), np.float32), batch_size=2, epochs=1, verbose=0)
    after_fit = model.layers[0].states[0].numpy()
    assert np.any(after_fit)
    model.reset_states()
    assert not np.any(model.layers[0].states[0].numpy())


def test_stateful_states_advance_inside_tf_function():
    layer = L.GRU(3, stateful=True)
    layer(X[:, :1])
    layer.reset_states()
    fn = tf.function(lambda t: layer(t))
    a = fn(tf.constant(X[:, :2])).numpy()
    b = fn(tf.constant(X[:, :2])).numpy()
    assert not np.allclose(a, b)
    layer.reset_states()
    np.testing.assert_allclose(fn(tf.constant(X[:, :2])).numpy(), a, rtol=1e-6)


def test_return_state_unroll_go_backwards_and_config():
    layer = L.GRU(3, return_state=True, go_backwards=True, unroll=True, dropout=0.2,
                  recurrent_dropout=0.1)
    out, h = layer(X)
    np.testing.assert_allclose(out.numpy(), h.numpy())
    config = layer.get_config()
    assert (config["unroll"], config["stateful"], config["dropout"],
            config["recurrent_dropout"]) == (True, False, 0.2, 0.1)
    clone = L.GRU.from_config(config)
    assert clone.unroll and clone.cell.recurrent_dropout == 0.1 and clone.go_backwards
    backwards = L.GRU(3, go_backwards=True)
    forwards = L.GRU(3)
    backwards(X)
    forwards(X)
    forwards.set_weights(backwards.get_weights())
    np.testing.assert_allclose(backwards(X).numpy(), forwards(X[:, ::-1]).numpy(), rtol=1e-6)
    fn = tf.function(lambda t: L.SimpleRNN(2, unroll=True)(t),
                     input_signature=[tf.TensorSpec([None, None, 3])])
    with pytest.raises(ValueError, match="cannot unroll"):
        fn.get_concrete_function()
    with pytest.raises(ValueError, match="dropout"):
        L.LSTM(2, dropout=1.5)


def test_bidirectional_dropout_and_stateful():
    layer = L.Bidirectional(L.LSTM(2, dropout=0.3, stateful=True, return_sequences=True))
    out = layer(X)
    assert out.shape == (2, 6, 4)
    assert layer.backward_layer.cell.dropout == 0.3 and layer.forward_layer.stateful
    before = layer.forward_layer.states[0].numpy().copy()
    assert np.any(before)
    layer.reset_states()
    assert not np.any(layer.forward_layer.states[0].numpy())
    assert not np.any(layer.backward_layer.states[1].numpy())


class _AddCell(tf.keras.layers.Layer):
    """h_t = h_{t-1} + x_t (a custom cell, as the Keras RNN guide writes them)."""

    state_size = 3

    def call(self, inputs, states, training=None):
        out = states[0] + inputs
        return out, [out]


def test_custom_cells_run_in_every_loop_form():
    layer = L.RNN(_AddCell(), return_sequences=True, return_state=True)
    x = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    out, h = layer(x)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=1), rtol=1e-6)
    fn = tf.function(lambda t: layer(t)[0], input_signature=[tf.TensorSpec([None, None, 3])])
    np.testing.assert_allclose(fn(x).numpy(), out.numpy(), rtol=1e-6)  # tf.while_loop
    stateful = L.RNN(_AddCell(), stateful=True)
    stateful(x[:, :2])
    np.testing.assert_allclose(stateful(x[:, 2:]).numpy(), np.sum(x, axis=1), rtol=1e-6)
    stacked = L.RNN([_AddCell(), L.SimpleRNNCell(2)])
    assert stacked(x).shape == (2, 2) and len(stacked.cell.state_size) == 2
    with pytest.raises(TypeError, match="state_size"):
        L.RNN(L.Dense(2))
