"""MultiHeadAttention: Keras's weights and counts, NumPy and PyTorch references (masks,
causal), gradients vs finite differences, eager vs graph, functional fit, config, errors."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def mha_reference(layer, query, value, key=None, mask=None):
    """softmax(Q K^T / sqrt(key_dim) - 1e9 * (1 - mask)) V per head, projected out (NumPy)."""
    key = value if key is None else key
    w = {v.name.split("/", 1)[1]: v.numpy() for v in layer.weights}
    q = np.einsum("btd,dnh->btnh", query, w["query/kernel:0"]) + w["query/bias:0"]
    k = np.einsum("bsd,dnh->bsnh", key, w["key/kernel:0"]) + w["key/bias:0"]
    v = np.einsum("bsd,dnh->bsnh", value, w["value/kernel:0"]) + w["value/bias:0"]
    scores = np.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(layer.key_dim)
    if mask is not None:
        scores = scores - 1e9 * (1 - mask[:, None].astype(scores.dtype))
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    heads = np.einsum("bnts,bsnh->btnh", probs, v)
    out = np.einsum("btnh,nho->bto", heads, w["attention_output/kernel:0"])
    return out + w["attention_output/bias:0"], probs


def _layer(**kwargs):
    kwargs.setdefault("bias_initializer", "random_normal")
    return layers.MultiHeadAttention(dtype="float64", **kwargs)


def test_weights_names_shapes_and_parameter_count_match_keras():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    x = np.zeros((1, 5, 4), np.float32)
    layer(x, x)
    assert [(v.name, tuple(v.shape)) for v in layer.weights] == [
        ("multi_head_attention/query/kernel:0", (4, 2, 3)),
        ("multi_head_attention/query/bias:0", (2, 3)),
        ("multi_head_attention/key/kernel:0", (4, 2, 3)),
        ("multi_head_attention/key/bias:0", (2, 3)),
        ("multi_head_attention/value/kernel:0", (4, 2, 3)),
        ("multi_head_attention/value/bias:0", (2, 3)),
        ("multi_head_attention/attention_output/kernel:0", (2, 3, 4)),
        ("multi_head_attention/attention_output/bias:0", (4,))]
    assert layer.count_params() == 3 * (4 * 6 + 6) + (6 * 4 + 4)
    np.testing.assert_array_equal(layer.weights[1].numpy(), 0)  # bias_initializer='zeros'
    query, key, value = (v.numpy() for v in layer.weights[0:6:2])
    assert np.abs(query - key).max() > 0 and np.abs(key - value).max() > 0  # own draws
    other = layers.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=5, use_bias=False,
                                      output_shape=7)
    out = other(np.zeros((2, 4, 6), np.float32), np.zeros((2, 3, 8), np.float32))
    assert out.shape == (2, 4, 7)
    assert [(v.name, tuple(v.shape)) for v in other.weights] == [
        ("multi_head_attention_1/query/kernel:0", (6, 3, 2)),
        ("multi_head_attention_1/key/kernel:0", (8, 3, 2)),
        ("multi_head_attention_1/value/kernel:0", (8, 3, 5)),
        ("multi_head_attention_1/attention_output/kernel:0", (3, 5, 7))]


@pytest.mark.parametrize("masking", ["none", "padding", "causal", "both"])
def test_matches_numpy_reference_with_masks(masking):
    rng = np.random.default_rng(0)
    query, value, key = (rng.standard_normal((2, 4, 5)), rng.standard_normal((2, 4, 3)),
                         rng.standard_normal((2, 4, 3)))
    layer = _layer(num_heads=2, key_dim=3, value_dim=2)
    padding = np.ones((2, 4, 4), bool)
    padding[0, :, 3:] = False  # the first example's last value step is padding
    padding[1, :, 1:3] = False
    causal = np.tril(np.ones((4, 4), bool))[None]
    mask = {"none": None, "padding": padding, "causal": causal,
            "both": padding & causal}[masking]
    out, scores = layer(query, value, key=key, return_attention_scores=True,
                        attention_mask=padding if masking in ("padding", "both") else None,
                        use_causal_mask=masking in ("causal", "both"))
    ref, ref_scores = mha_reference(layer, query, value, key, mask)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scores.numpy(), ref_scores, rtol=1e-10, atol=1e-12)
    if mask is not None:
        assert np.all(scores.numpy()[np.broadcast_to(~mask[:, None], scores.shape)] < 1e-300)


def test_fully_masked_query_row_attends_uniformly_as_keras():
    """Scores of -1e9 + s are all -1e9 in float32 (its spacing there is 64): a uniform row."""
    layer = layers.MultiHeadAttention(num_heads=1, key_dim=2)
    x = np.random.default_rng(1).standard_normal((1, 3, 2)).astype(np.float32)
    mask = np.ones((1, 3, 3), bool)
    mask[0, 1] = False
    _, scores = layer(x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy()[0, 0, 1], 1 / 3, rtol=1e-6)


def test_matches_torch_forward_and_gradients_with_padding_and_causal_masks():
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    rng = np.random.default_rng(2)
    batch, steps, src, dim, heads, key_dim = 2, 4, 5, 6, 2, 3  # torch: dim == heads * key_dim
    query = rng.standard_normal((batch, steps, dim))
    value = rng.standard_normal((batch, src, 5))
    layer = _layer(num_heads=heads, key_dim=key_dim)
    padding = np.ones((batch, steps, src), bool)
    padding[1, :, 3:] = False
    tq, tv = tf.constant(query), tf.constant(value)
    with tf.GradientTape() as tape:
        tape.watch([tq, tv])
        out = layer(tq, tv, attention_mask=padding, use_causal_mask=True)
        loss = tf.reduce_sum(out * out)
    grads = tape.gradient(loss, [tq, tv] + layer.trainable_variables)
    qk, qb, kk, kb, vk, vb, ok, ob = [torch.tensor(w, requires_grad=True)
                                      for w in layer.get_weights()]

    def proj(kernel):  # Keras [in, heads, key_dim] -> torch [heads * key_dim, in]
        return kernel.reshape(kernel.shape[0], -1).T

    allowed = padding & np.tril(np.ones((steps, src), bool))
    tquery = torch.tensor(query, requires_grad=True)
    tvalue = torch.tensor(value, requires_grad=True)
    tout, _ = functional.multi_head_attention_forward(
        tquery.transpose(0, 1), tvalue.transpose(0, 1), tvalue.transpose(0, 1), dim, heads,
        None, torch.cat([qb.reshape(-1), kb.reshape(-1), vb.reshape(-1)]), None, None, False,
        0.0, ok.reshape(-1, dim).T, ob, training=False, need_weights=False,
        attn_mask=torch.tensor(~np.repeat(allowed, heads, axis=0)),
        use_separate_proj_weight=True, q_proj_weight=proj(qk), k_proj_weight=proj(kk),
        v_proj_weight=proj(vk))
    tout = tout.transpose(0, 1)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    expected = [tquery, tvalue, qk, qb, kk, kb, vk, vb, ok, ob]
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got.numpy(), want.grad.numpy(), rtol=1e-9, atol=1e-11)


class _SelfAttention(tf.keras.layers.Layer):
    """mha(x, x): so the finite-difference helper moves query, key and value together."""

    def __init__(self, mha, **kwargs):
        super().__init__(dtype="float64", **kwargs)
        self.mha = mha

    def call(self, x):
        return self.mha(x, x, use_causal_mask=True)


def test_gradients_match_finite_differences():
    check_layer_grads(_SelfAttention(_layer(num_heads=2, key_dim=2)),
                      np.random.default_rng(3).standard_normal((2, 3, 3)))
    value = np.random.default_rng(4).standard_normal((2, 4, 2))
    check_layer_grads(_layer(num_heads=1, key_dim=2, value_dim=3, output_shape=2),
                      np.random.default_rng(5).standard_normal((2, 3, 3)),
                      call_kwargs={"value": tf.constant(value), "key": tf.constant(value * 2)})


def test_graph_with_unknown_batch_and_lengths_equals_eager():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, bias_initializer="random_normal")
    rng = np.random.default_rng(6)
    query = rng.standard_normal((3, 5, 4)).astype(np.float32)
    value = rng.standard_normal((3, 6, 4)).astype(np.float32)
    mask = rng.random((3, 5, 6)) > 0.3
    eager = layer(query, value, attention_mask=mask, use_causal_mask=True)
    spec = [tf.TensorSpec([None, None, 4], tf.float32), tf.TensorSpec([None, None, 4], tf.float32),
            tf.TensorSpec([None, None, None], tf.bool)]
    graph = tf.function(lambda q, v, m: layer(q, v, attention_mask=m, use_causal_mask=True),
                        input_signature=spec)
    np.testing.assert_allclose(graph(query, value, mask).numpy(), eager.numpy(), rtol=1e-5,
                               atol=1e-6)
    short = layer(query[:2, :3], value[:2, :4], attention_mask=mask[:2, :3, :4],
                  use_causal_mask=True)
    np.testing.assert_allclose(graph(query[:2, :3], value[:2, :4], mask[:2, :3, :4]).numpy(),
                               short.numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_acts_on_the_probabilities_in_training_only():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5)
    x = np.random.default_rng(7).standard_normal((4, 6, 8)).astype(np.float32)
    calm = layer(x, x).numpy()
    np.testing.assert_array_equal(layer(x, x, training=False).numpy(), calm)
    out, scores = layer(x, x, training=True, return_attention_scores=True)
    assert np.abs(out.numpy() - calm).max() > 1e-3
    np.testing.assert_allclose(scores.numpy().sum(-1), 1, rtol=1e-5)  # scores: before dropout


def test_attention_axes_over_a_2d_grid_axis_is_attention_per_row():
    layer = _layer(num_heads=2, key_dim=2, attention_axes=(2,))
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 5))
    out = layer(x, x).numpy()
    assert layer.attention_axes == (2,)
    rows, _ = mha_reference(layer, x.reshape(6, 4, 5), x.reshape(6, 4, 5))
    np.testing.assert_allclose(out, rows.reshape(2, 3, 4, 5), rtol=1e-10, atol=1e-12)


def test_functional_summary_fit_and_config(capsys):
    inputs = tf.keras.Input(shape=(6, 4))
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=3)(inputs, inputs,
                                                                use_causal_mask=True)
    model = tf.keras.Model(inputs, layers.Dense(1)(attended))
    assert model.output_shape == (None, 6, 1)
    model.summary()
    text = capsys.readouterr().out
    assert "multi_head_attention (MultiHea" in text and "(None, 6, 4)" in text
    assert f"Total params: {118 + 5:,}" in text
    rng = np.random.default_rng(9)
    x = rng.standard_normal((40, 6, 4)).astype(np.float32)
    y = np.cumsum(x[..., :1], axis=1) / np.arange(1, 7)[:, None]  # running mean: causal
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=6, verbose=0)  # 16, 16, 8: two traces
    assert history.history["loss"][-1] < 0.7 * history.history["loss"][0]
    np.testing.assert_allclose(model.predict(x, verbose=0), model(x).numpy(), rtol=1e-4,
                               atol=1e-5)
    mha = model.layers[1]
    config = mha.get_config()
    assert config["num_heads"] == 2 and config["key_dim"] == 3 and config["value_dim"] == 3
    assert config["attention_axes"] == (1,) and config["query_shape"][-1] == 4
    clone = layers.MultiHeadAttention.from_config({**config, "name": "copy"})
    assert [v.name for v in clone.weights][0] == "copy/query/kernel:0"  # built from config
    clone.set_weights(mha.get_weights())
    np.testing.assert_allclose(clone(x, x, use_causal_mask=True).numpy(),
                               mha(x, x, use_causal_mask=True).numpy(), rtol=1e-6)
    assert clone.compute_output_shape((None, 6, 4)) == (None, 6, 4)


def test_softmax_layer_takes_a_mask_and_several_axes():
    x = np.random.default_rng(10).standard_normal((2, 3, 4))
    both = layers.Softmax(axis=(1, 2), dtype="float64")(x).numpy()
    np.testing.assert_allclose(both.sum(axis=(1, 2)), 1, rtol=1e-12)
    mask = np.array([1, 1, 0, 1])
    masked = layers.Softmax(dtype="float64")(x, mask=mask).numpy()
    np.testing.assert_array_equal(masked[..., 2], 0)
    e = np.exp(x[..., [0, 1, 3]])
    np.testing.assert_allclose(masked[..., [0, 1, 3]], e / e.sum(-1, keepdims=True), rtol=1e-12)


def test_errors_name_the_layer_and_the_shapes():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    q = np.zeros((2, 5, 4), np.float32)
    with pytest.raises(ValueError, match=r"MultiHeadAttention 'multi_head_attention': "
                                         r"attention_mask of shape \(2, 5, 7\) does not "
                                         r"broadcast to .* \(2, 5, 6\)"):
        layer(q, np.zeros((2, 6, 4), np.float32), attention_mask=np.ones((2, 5, 7), bool))
    with pytest.raises(ValueError, match=r"key and value must have the same shape"):
        layer(q, np.zeros((2, 6, 4), np.float32), key=np.zeros((2, 7, 4), np.float32))
    layer(q, q)
    with pytest.raises(ValueError, match=r"'multi_head_attention': query has shape \(2, 5, 6\), "
                                         r"but the layer was built for query \(2, 5, 4\)"):
        layer(np.zeros((2, 5, 6), np.float32), q)
    with pytest.raises(ValueError, match=r"same rank"):
        layers.MultiHeadAttention(num_heads=1, key_dim=2)(np.zeros((2, 4), np.float32),
                                                          np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"`num_heads` must be a positive integer"):
        layers.MultiHeadAttention(num_heads=0, key_dim=2)
