"""Bidirectional and TimeDistributed: PyTorch's bidirectional LSTM, NumPy, gradients, modes."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


X = np.random.default_rng(0).standard_normal((3, 5, 4))


def test_bidirectional_lstm_matches_torch_with_gradients():
    torch = pytest.importorskip("torch")
    layer = layers.Bidirectional(layers.LSTM(3, return_sequences=True, return_state=True,
                                             dtype="float64", bias_initializer="random_normal"))
    xt = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        seq, h_f, c_f, h_b, c_b = layer(xt)
        loss = tf.reduce_sum(seq * seq) + tf.reduce_sum(h_b * c_f)
    gx = tape.gradient(loss, xt)
    assert seq.shape == (3, 5, 6)
    tl = torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True, dtype=torch.float64)
    with torch.no_grad():
        for sub, suffix in ((layer.forward_layer, ""), (layer.backward_layer, "_reverse")):
            kernel, recurrent, bias = sub.get_weights()
            getattr(tl, f"weight_ih_l0{suffix}").copy_(torch.tensor(kernel.T))
            getattr(tl, f"weight_hh_l0{suffix}").copy_(torch.tensor(recurrent.T))
            getattr(tl, f"bias_ih_l0{suffix}").copy_(torch.tensor(bias))
            getattr(tl, f"bias_hh_l0{suffix}").zero_()
    tx = torch.tensor(X, requires_grad=True)
    tseq, (th, tc) = tl(tx)
    ((tseq * tseq).sum() + (th[1] * tc[0]).sum()).backward()
    np.testing.assert_allclose(seq.numpy(), tseq.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, theirs in ((h_f, th[0]), (h_b, th[1]), (c_f, tc[0]), (c_b, tc[1])):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("merge_mode,merge", [
    ("concat", lambda f, b: np.concatenate([f, b], -1)), ("sum", np.add),
    ("mul", np.multiply), ("ave", lambda f, b: (f + b) / 2), (None, lambda f, b: [f, b])])
@pytest.mark.parametrize("return_sequences", [True, False])
def test_bidirectional_merge_modes_match_the_two_directions(merge_mode, merge,
                                                            return_sequences):
    layer = layers.Bidirectional(layers.GRU(3, return_sequences=return_sequences,
                                            dtype="float64"), merge_mode=merge_mode)
    out = layer(X)
    forward = layers.GRU(3, return_sequences=True, dtype="float64")
    forward(X)
    forward.set_weights(layer.forward_layer.get_weights())
    backward = layers.GRU(3, return_sequences=True, dtype="float64")
    backward(X)
    backward.set_weights(layer.backward_layer.get_weights())
    f = forward(X).numpy()
    b = backward(X[:, ::-1]).numpy()[:, ::-1]  # step t of the reversed run, in input order
    if not return_sequences:
        f, b = f[:, -1], b[:, 0]
    expected = merge(f, b)
    got = out if isinstance(out, list) else [out]
    for ours, ref in zip(got, expected if isinstance(expected, list) else [expected]):
        np.testing.assert_allclose(ours.numpy(), ref, rtol=1e-12, atol=1e-14)


def test_bidirectional_initial_state_and_gradients():
    layer = layers.Bidirectional(layers.GRU(2, dtype="float64",
                                            bias_initializer="random_normal"), merge_mode="ave")
    check_layer_grads(layer, X[:2, :3, :2])
    h_f, h_b = np.ones((3, 2)), -np.ones((3, 2))
    out = layer(X[:, :, :2], initial_state=[h_f, h_b]).numpy()
    fw = layer.forward_layer(X[:, :, :2], initial_state=[h_f]).numpy()
    bw = layer.backward_layer(X[:, :, :2], initial_state=[h_b]).numpy()
    np.testing.assert_allclose(out, (fw + bw) / 2, rtol=1e-12)


def test_bidirectional_names_counts_copies_and_config():
    inner = layers.LSTM(4, bias_initializer="ones")
    layer = layers.Bidirectional(inner)
    layer(X.astype(np.float32))
    assert [v.name for v in layer.weights] == [
        "bidirectional/forward_lstm/lstm_cell/kernel:0",
        "bidirectional/forward_lstm/lstm_cell/recurrent_kernel:0",
        "bidirectional/forward_lstm/lstm_cell/bias:0",
        "bidirectional/backward_lstm/lstm_cell/kernel:0",
        "bidirectional/backward_lstm/lstm_cell/recurrent_kernel:0",
        "bidirectional/backward_lstm/lstm_cell/bias:0"]
    assert layer.count_params() == 2 * 4 * 4 * (4 + 4 + 1)
    assert not inner.built  # Keras copies the wrapped layer; the original stays unbuilt
    assert layer.backward_layer.go_backwards and not layer.forward_layer.go_backwards
    np.testing.assert_array_equal(layer.backward_layer.cell.bias.numpy(), 1.0)  # config kept
    assert not np.array_equal(layer.forward_layer.get_weights()[0],
                              layer.backward_layer.get_weights()[0])
    config = layer.get_config()
    assert config["merge_mode"] == "concat" and config["layer"]["class_name"] == "LSTM"
    clone = layers.Bidirectional.from_config({**config, "name": "bi_copy"})
    clone(X.astype(np.float32))
    assert clone.count_params() == layer.count_params()
    simple = layers.Bidirectional(layers.RNN(layers.SimpleRNNCell(2)), merge_mode="sum")
    assert simple(X.astype(np.float32)).shape == (3, 2)
    assert simple.weights[0].name.startswith("bidirectional_1/forward_rnn/")


def test_time_distributed_dense_and_conv_match_per_step_application():
    dense = layers.TimeDistributed(layers.Dense(2, bias_initializer="random_normal",
                                                dtype="float64"), dtype="float64")
    out = dense(X).numpy()
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(out, X @ kernel + bias, rtol=1e-12)
    assert [v.name for v in dense.weights] == ["time_distributed/kernel:0",
                                               "time_distributed/bias:0"]
    assert dense.count_params() == 4 * 2 + 2
    frames = np.random.default_rng(1).standard_normal((2, 3, 5, 5, 2))
    conv = layers.TimeDistributed(layers.Conv2D(3, 3, dtype="float64"), dtype="float64")
    out = conv(frames).numpy()
    assert out.shape == (2, 3, 3, 3, 3)
    for t in range(3):
        np.testing.assert_allclose(out[:, t], conv.layer(frames[:, t]).numpy(), rtol=1e-12)
    inherits = layers.TimeDistributed(layers.Dense(2, dtype="float64"))
    assert inherits.dtype == "float64"  # the wrapper takes its layer's dtype
    check_layer_grads(inherits, X[:2, :3, :3])


def test_wrappers_in_a_functional_model_summary_fit_and_graph(capsys):
    inputs = tf.keras.Input(shape=(6, 3))
    h = layers.Bidirectional(layers.GRU(4, return_sequences=True))(inputs)
    outputs = layers.TimeDistributed(layers.Dense(1))(h)
    model = tf.keras.Model(inputs, outputs)
    model.summary()
    text = capsys.readouterr().out
    assert "(None, 6, 8)" in text and "(None, 6, 1)" in text
    total = 2 * 3 * 4 * (3 + 4 + 2) + (8 + 1)
    assert f"Total params: {total:,}" in text
    rng = np.random.default_rng(2)
    x = rng.standard_normal((10, 6, 3)).astype(np.float32)
    y = np.cumsum(x[..., :1], axis=1)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    graph = tf.function(lambda v: model(v))(tf.constant(x))
    np.testing.assert_allclose(graph.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    wrapped = model.layers[2]
    again = layers.TimeDistributed.from_config({**wrapped.get_config(), "name": "td_copy"})
    assert isinstance(again.layer, layers.Dense) and again.layer.units == 1


def test_wrapper_errors_are_clear():
    with pytest.raises(TypeError, match="Bidirectional: `layer` must be a recurrent layer"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match=r"Bidirectional 'bidirectional'.*\(3, 5\)"):
        layers.Bidirectional(layers.LSTM(2))(X[..., 0])
    with pytest.raises(ValueError, match="backward_layer"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2))
    with pytest.raises(ValueError, match="TimeDistributed"):  # tf-keras raises ValueError
        layers.TimeDistributed(lambda t: t)
    with pytest.raises(ValueError, match=r"TimeDistributed 'time_distributed'.*\(3, 5\)"):
        layers.TimeDistributed(layers.Dense(2))(X[..., 0])
