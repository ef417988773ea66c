"""GRUCell/GRU: PyTorch with matched weights, NumPy reference, gradients, names, modes."""

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


def gru_reference(x, kernel, recurrent, bias, h, reset_after=True):
    """Keras's GRU equations, gate order (update z, reset r, candidate h)."""
    u = h.shape[-1]
    b_in, b_rec = (bias[0], bias[1]) if reset_after else (bias, np.zeros_like(bias))
    outputs = []
    for t in range(x.shape[1]):
        xp = x[:, t] @ kernel + b_in
        if reset_after:
            hp = h @ recurrent + b_rec
            z, r = _sigmoid(xp[:, :u] + hp[:, :u]), _sigmoid(xp[:, u:2 * u] + hp[:, u:2 * u])
            cand = np.tanh(xp[:, 2 * u:] + r * hp[:, 2 * u:])
        else:
            hp = h @ recurrent[:, :2 * u]
            z, r = _sigmoid(xp[:, :u] + hp[:, :u]), _sigmoid(xp[:, u:2 * u] + hp[:, u:])
            cand = np.tanh(xp[:, 2 * u:] + (r * h) @ recurrent[:, 2 * u:])
        h = z * h + (1 - z) * cand
        outputs.append(h)
    return np.stack(outputs, axis=1), h


def _torch_gru(torch, kernel, recurrent, bias):
    """torch.nn.GRU holding Keras's reset_after=True weights: torch orders gates (r, z, n)."""
    features, width = kernel.shape
    u = width // 3

    def reorder(m):  # Keras columns (z, r, h) <-> torch rows (r, z, n): swap the first two
        return np.concatenate([m[..., u:2 * u], m[..., :u], m[..., 2 * u:]], axis=-1)

    gru = torch.nn.GRU(features, u, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        gru.weight_ih_l0.copy_(torch.tensor(reorder(kernel).T))
        gru.weight_hh_l0.copy_(torch.tensor(reorder(recurrent).T))
        gru.bias_ih_l0.copy_(torch.tensor(reorder(bias[0])))
        gru.bias_hh_l0.copy_(torch.tensor(reorder(bias[1])))
    return gru, reorder


def test_gru_weights_names_initializers_and_count():
    layer = layers.GRU(6)
    layer(np.zeros((2, 3, 4), np.float32))
    assert [v.name for v in layer.weights] == ["gru/gru_cell/kernel:0",
                                               "gru/gru_cell/recurrent_kernel:0",
                                               "gru/gru_cell/bias:0"]
    kernel, recurrent, bias = layer.get_weights()
    assert kernel.shape == (4, 18) and recurrent.shape == (6, 18) and bias.shape == (2, 18)
    np.testing.assert_array_equal(bias, 0)
    for block in np.split(recurrent, 3, axis=1):
        assert np.abs(block).max() > 0
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(6), atol=1e-5)
    assert layer.count_params() == 3 * 6 * (4 + 6 + 2)  # Keras: 3 * units * (in + units + 2)
    second = layers.GRU(2, reset_after=False)
    second(np.zeros((1, 2, 3), np.float32))
    assert [v.name for v in second.weights] == ["gru_1/gru_cell/kernel:0",
                                                "gru_1/gru_cell/recurrent_kernel:0",
                                                "gru_1/gru_cell/bias:0"]
    assert second.count_params() == 3 * 2 * (3 + 2 + 1)


def test_gru_matches_torch_forward_and_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4))
    h0 = rng.standard_normal((3, 6))
    layer = layers.GRU(6, return_sequences=True, return_state=True, dtype="float64",
                       bias_initializer="random_normal")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        seq, state = layer(xt, initial_state=h0)
        loss = tf.reduce_sum(seq * seq) + tf.reduce_sum(state)
    grads = tape.gradient(loss, [xt] + layer.trainable_variables)
    kernel, recurrent, bias = layer.get_weights()
    assert np.abs(bias[1]).max() > 0  # the recurrent bias row is exercised
    gru, reorder = _torch_gru(torch, kernel, recurrent, bias)
    tx = torch.tensor(x, requires_grad=True)
    tseq, tstate = gru(tx, torch.tensor(h0[None]))
    ((tseq * tseq).sum() + tstate.sum()).backward()
    np.testing.assert_allclose(seq.numpy(), tseq.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.numpy(), tstate.detach().numpy()[0], rtol=1e-10)
    np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    to_keras = reorder  # swapping the first two blocks is its own inverse
    np.testing.assert_allclose(grads[1].numpy(), to_keras(gru.weight_ih_l0.grad.numpy().T),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads[2].numpy(), to_keras(gru.weight_hh_l0.grad.numpy().T),
                               rtol=1e-9, atol=1e-12)
    torch_bias = np.stack([gru.bias_ih_l0.grad.numpy(), gru.bias_hh_l0.grad.numpy()])
    np.testing.assert_allclose(grads[3].numpy(), to_keras(torch_bias), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_numpy_reference(reset_after):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3))
    layer = layers.GRU(5, return_sequences=True, reset_after=reset_after, dtype="float64",
                       bias_initializer="random_normal")
    out = layer(x).numpy()
    kernel, recurrent, bias = layer.get_weights()
    ref, _ = gru_reference(x, kernel, recurrent, bias, np.zeros((2, 5)), reset_after)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)


def test_gru_go_backwards_reads_the_sequence_reversed():
    x = np.random.default_rng(2).standard_normal((2, 5, 3))
    forward = layers.GRU(4, return_sequences=True, dtype="float64")
    backward = layers.GRU(4, return_sequences=True, go_backwards=True, dtype="float64")
    forward(x)
    backward(x)
    backward.set_weights(forward.get_weights())
    np.testing.assert_allclose(backward(x).numpy(), forward(x[:, ::-1]).numpy(), rtol=1e-12)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_gradients_match_finite_differences(reset_after):
    layer = layers.GRU(2, reset_after=reset_after, dtype="float64",
                       bias_initializer="random_normal")
    check_layer_grads(layer, np.random.default_rng(3).standard_normal((2, 3, 2)))


def test_gru_cell_step_and_rnn_wrapper():
    cell = layers.GRUCell(4)
    x = np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
    h0 = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    out, state = cell(x, h0)  # a bare state in, a bare state out
    assert [v.name for v in cell.weights] == ["gru_cell/kernel:0", "gru_cell/recurrent_kernel:0",
                                              "gru_cell/bias:0"]
    kernel, recurrent, bias = cell.get_weights()
    _, ref = gru_reference(x[:, None].astype(np.float64), kernel, recurrent, bias, h0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state.numpy(), out.numpy())
    out_list, states = cell(x, [h0])
    assert isinstance(states, list) and len(states) == 1
    np.testing.assert_array_equal(out_list.numpy(), out.numpy())
    rnn = layers.RNN(layers.GRUCell(4))
    assert rnn(np.zeros((2, 3, 2), np.float32)).shape == (2, 4)
    assert rnn.weights[0].name == "rnn/gru_cell_1/kernel:0"


def test_gru_eager_equals_graph():
    x = np.random.default_rng(6).standard_normal((2, 5, 3)).astype(np.float32)
    layer = layers.GRU(4, return_sequences=True, return_state=True,
                       bias_initializer="random_normal")
    eager = layer(x)
    graph = tf.function(lambda v: layer(v))(tf.constant(x))
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, atol=1e-7)


def test_gru_functional_summary_fit_and_config(capsys):
    inputs = tf.keras.Input(shape=(6, 3))
    seq = layers.GRU(5, return_sequences=True)(inputs)
    last = layers.GRU(4)(seq)
    model = tf.keras.Model(inputs, layers.Dense(1)(last))
    assert model.output_shape == (None, 1)
    model.summary()
    text = capsys.readouterr().out
    assert "(None, 6, 5)" in text and "(None, 4)" in text
    total = 3 * 5 * (3 + 5 + 2) + 3 * 4 * (5 + 4 + 2) + 5
    assert f"Total params: {total:,}" in text
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 6, 3)).astype(np.float32)
    y = x.sum(axis=(1, 2))[:, None]
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    np.testing.assert_allclose(model.predict(x, verbose=0), model(x).numpy(), rtol=1e-5,
                               atol=1e-6)
    config = model.layers[1].get_config()
    assert config["units"] == 5 and config["reset_after"] is True
    assert config["recurrent_activation"] == "sigmoid" and config["return_sequences"] is True
    clone = layers.GRU.from_config({**config, "name": "copy"})
    assert clone.cell.reset_after and clone.units == 5 and clone.return_sequences


def test_gru_errors_name_layer_and_shape():
    with pytest.raises(ValueError, match=r"GRU 'gru'.*batch, time, features.*\(2, 3\)"):
        layers.GRU(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="units"):
        layers.GRU(0)


def test_every_recurrent_layer_names_its_cell_like_keras():
    """Keras 2 names the cell of every LSTM/GRU/SimpleRNN layer plainly: lstm_1/lstm_cell/..."""
    x = np.zeros((1, 2, 3), np.float32)
    for cls, cell in [(layers.LSTM, "lstm_cell"), (layers.SimpleRNN, "simple_rnn_cell")]:
        first, second = cls(2), cls(2)
        first(x)
        second(x)
        assert second.weights[0].name == f"{second.name}/{cell}/kernel:0"
        config = second.get_config()
        assert config["units"] == 2
        assert cls.from_config({**config, "name": "again"}).units == 2
