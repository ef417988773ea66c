"""LSTMCell/LSTM, SimpleRNN and Embedding: NumPy references, PyTorch, gradients, counts."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_reference(x, kernel, recurrent, bias, h, c):
    """Keras's LSTM equations, gate order (input, forget, cell, output)."""
    outputs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c


def test_seed_003_lstm_cell_step():
    cell = tf.keras.layers.LSTMCell(10)
    inputs = tf.zeros([10, 10])
    state = [tf.zeros([10, 10])] * 2
    out, (h, c) = cell(inputs, state)
    assert out.shape == (10, 10) and h.shape == (10, 10) and c.shape == (10, 10)
    assert [v.name for v in cell.weights] == ["lstm_cell/kernel:0",
                                              "lstm_cell/recurrent_kernel:0",
                                              "lstm_cell/bias:0"]
    rng = np.random.default_rng(0)
    x, h0, c0 = (rng.standard_normal((10, 10)).astype(np.float32) for _ in range(3))
    kernel, recurrent, bias = cell.get_weights()
    _, h_ref, c_ref = lstm_reference(x[:, None], kernel, recurrent, bias, h0, c0)
    out, (h, c) = cell(x, [h0, c0])
    np.testing.assert_allclose(out.numpy(), h_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), c_ref, rtol=1e-5, atol=1e-6)

    @tf.function
    def fn(inputs, state):
        return cell(inputs, state)

    traced, _ = fn(x, [h0, c0])
    np.testing.assert_allclose(traced.numpy(), h_ref, rtol=1e-5, atol=1e-6)


def test_lstm_initializers_unit_forget_bias_and_orthogonal_recurrent():
    layer = layers.LSTM(6)
    layer(np.zeros((2, 3, 4), np.float32))
    kernel, recurrent, bias = layer.get_weights()
    assert [v.name for v in layer.weights] == ["lstm/lstm_cell/kernel:0",
                                               "lstm/lstm_cell/recurrent_kernel:0",
                                               "lstm/lstm_cell/bias:0"]
    assert kernel.shape == (4, 24) and recurrent.shape == (6, 24)
    np.testing.assert_array_equal(bias, np.r_[np.zeros(6), np.ones(6), np.zeros(12)])
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(6), atol=1e-5)
    assert layer.count_params() == 4 * 24 + 6 * 24 + 24
    no_forget = layers.LSTM(3, unit_forget_bias=False)
    no_forget(np.zeros((1, 2, 2), np.float32))
    np.testing.assert_array_equal(no_forget.cell.bias.numpy(), np.zeros(12))


def test_lstm_sequences_and_states_match_reference():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4))
    layer = layers.LSTM(6, return_sequences=True, return_state=True, dtype="float64",
                        bias_initializer="random_normal")
    seq, h, c = layer(x)
    kernel, recurrent, bias = layer.get_weights()
    zeros = np.zeros((3, 6))
    ref_seq, ref_h, ref_c = lstm_reference(x, kernel, recurrent, bias, zeros, zeros)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), ref_c, rtol=1e-12)
    last = layers.LSTM(6, dtype="float64")
    last(x)
    last.set_weights([kernel, recurrent, bias])
    np.testing.assert_allclose(last(x).numpy(), ref_h, rtol=1e-12)
    h0, c0 = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    _, ref_h, _ = lstm_reference(x, kernel, recurrent, bias, h0, c0)
    np.testing.assert_allclose(last(x, initial_state=[h0, c0]).numpy(), ref_h, rtol=1e-12)


def test_lstm_matches_torch_with_matched_weights():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 3))
    layer = layers.LSTM(5, return_sequences=True, dtype="float64",
                        bias_initializer="random_normal")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out)
    grads = tape.gradient(loss, [xt] + layer.trainable_variables)
    kernel, recurrent, bias = layer.get_weights()
    tl = torch.nn.LSTM(3, 5, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        tl.weight_ih_l0.copy_(torch.tensor(kernel.T))
        tl.weight_hh_l0.copy_(torch.tensor(recurrent.T))
        tl.bias_ih_l0.copy_(torch.tensor(bias))
        tl.bias_hh_l0.zero_()
    tx = torch.tensor(x, requires_grad=True)
    tout, _ = tl(tx)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads[1].numpy(), tl.weight_ih_l0.grad.numpy().T, rtol=1e-9)
    np.testing.assert_allclose(grads[2].numpy(), tl.weight_hh_l0.grad.numpy().T, rtol=1e-9)
    np.testing.assert_allclose(grads[3].numpy(), tl.bias_ih_l0.grad.numpy(), rtol=1e-9)


def test_lstm_gradients_match_finite_differences():
    layer = layers.LSTM(2, dtype="float64", bias_initializer="random_normal")
    check_layer_grads(layer, np.random.default_rng(3).standard_normal((2, 3, 2)))


def test_simple_rnn_matches_reference_and_gradients():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 3))
    layer = layers.SimpleRNN(3, return_sequences=True, dtype="float64",
                             bias_initializer="random_normal")
    out = layer(x).numpy()
    kernel, recurrent, bias = layer.get_weights()
    assert [v.name for v in layer.weights][0] == "simple_rnn/simple_rnn_cell/kernel:0"
    h = np.zeros((2, 3))
    for t in range(4):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        np.testing.assert_allclose(out[:, t], h, rtol=1e-12)
    check_layer_grads(layers.SimpleRNN(2, dtype="float64"), x[:1, :3, :2])


def test_rnn_errors_are_clear():
    with pytest.raises(ValueError, match="batch, time, features"):
        layers.LSTM(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="cell"):
        layers.RNN(layers.Dense(2))  # no state_size
    with pytest.raises(TypeError, match="not understood"):
        layers.LSTM(2, recurrent_dropout_rate=0.5)


def test_seed_003_embedding_parameter_count_and_summary_shape():
    model = tf.keras.Sequential()
    model.add(layers.Embedding(1000, 64))
    out = model(np.array([[1, 2, 3], [4, 5, 999]]))
    assert out.shape == (2, 3, 64)
    assert model.count_params() == 64000
    emb = model.layers[0]
    assert emb.weights[0].name == "embedding/embeddings:0"
    np.testing.assert_array_equal(out.numpy()[1, 2], emb.embeddings.numpy()[999])
    assert np.abs(emb.embeddings.numpy()).max() <= 0.05


def test_embedding_gradient_reaches_only_looked_up_rows():
    emb = layers.Embedding(5, 2)
    ids = np.array([[0, 2, 2]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(emb(ids))
    grad = np.asarray(tf.convert_to_tensor(tape.gradient(loss, emb.embeddings)))
    np.testing.assert_array_equal(grad, [[1, 1], [0, 0], [2, 2], [0, 0], [0, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError):
        emb(np.array([[7]]))


def test_seed_003_embedding_summary_table(capsys):
    model = tf.keras.Sequential()
    model.add(layers.Embedding(1000, 64))
    model.summary()
    text = capsys.readouterr().out
    assert "embedding (Embedding)" in text and "(None, None, 64)" in text
    assert "Total params: 64,000" in text and "Non-trainable params: 0" in text
