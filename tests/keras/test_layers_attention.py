"""Attention and AdditiveAttention: NumPy reference with query/value masks and the causal mask,
torch's scaled_dot_product_attention, gradients, eager vs graph, functional fit, errors."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def dense_attention_reference(scores, value, query_mask=None, value_mask=None, causal=False):
    """Keras's rule: -1e9 on dropped value steps, softmax, weighted sum, zero dropped queries."""
    keep = np.ones(scores.shape, bool)
    if value_mask is not None:
        keep &= value_mask[:, None, :]
    if causal:
        keep &= np.tril(np.ones(scores.shape[-2:], bool))
    scores = scores - 1e9 * (~keep)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = weights @ value
    if query_mask is not None:
        out = out * query_mask[..., None]
    return out, weights


def _data(seed=0, tq=3, tv=4, dim=5):
    rng = np.random.default_rng(seed)
    query, value, key = (rng.standard_normal((2, tq, dim)), rng.standard_normal((2, tv, dim)),
                         rng.standard_normal((2, tv, dim)))
    query_mask = np.array([[True, True, False], [True, True, True]])[:, :tq]
    value_mask = np.array([[True, True, True, False], [True, False, True, True]])[:, :tv]
    return query, value, key, query_mask, value_mask


@pytest.mark.parametrize("score_mode, use_scale", [("dot", False), ("dot", True),
                                                   ("concat", False), ("concat", True)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_numpy_reference(score_mode, use_scale, causal):
    query, value, key, query_mask, value_mask = _data()
    layer = layers.Attention(use_scale=use_scale, score_mode=score_mode, dtype="float64")
    layer([query, value])
    if use_scale:
        layer.scale.assign(np.float64(0.7))  # away from its initial 1
    if score_mode == "dot":
        scores = query @ key.transpose(0, 2, 1) * (0.7 if use_scale else 1.0)
    else:
        pairs = query[:, :, None] + key[:, None]
        scores = np.tanh(pairs * (0.7 if use_scale else 1.0)).sum(-1)
    out, weights = layer([query, value, key], mask=[query_mask, value_mask],
                         return_attention_scores=True, use_causal_mask=causal)
    ref, ref_weights = dense_attention_reference(scores, value, query_mask, value_mask, causal)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights.numpy(), ref_weights, rtol=1e-12, atol=1e-14)
    assert [v.name for v in layer.weights] == (["attention/scale:0"] if use_scale else []) + (
        ["attention/concat_score_weight:0"] if score_mode == "concat" else [])


def test_additive_attention_matches_numpy_reference():
    query, value, key, query_mask, value_mask = _data(1)
    layer = layers.AdditiveAttention(dtype="float64")
    out = layer([query, value, key], mask=[query_mask, value_mask]).numpy()
    assert [(v.name, tuple(v.shape)) for v in layer.weights] == [("additive_attention/scale:0",
                                                                  (5,))]
    scale = layer.scale.numpy()
    scores = (scale * np.tanh(query[:, :, None] + key[:, None])).sum(-1)
    ref, _ = dense_attention_reference(scores, value, query_mask, value_mask)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)
    plain = layers.AdditiveAttention(use_scale=False, dtype="float64")
    ref, _ = dense_attention_reference(np.tanh(query[:, :, None] + value[:, None]).sum(-1), value)
    np.testing.assert_allclose(plain([query, value]).numpy(), ref, rtol=1e-12)
    assert plain.weights == []


def test_attention_matches_torch_scaled_dot_product_attention():
    torch = pytest.importorskip("torch")
    query, value, key, _, value_mask = _data(2)
    keep = value_mask[:, None, :] & np.tril(np.ones((3, 4), bool))
    want = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(query), torch.tensor(key), torch.tensor(value),
        attn_mask=torch.tensor(keep), scale=1.0).numpy()
    got = layers.Attention(dtype="float64")([query, value, key], mask=[None, value_mask],
                                            use_causal_mask=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)


class _Attend(tf.keras.layers.Layer):
    """attention([x, 2x, x]) with a value mask: the helper moves query, value and key."""

    def __init__(self, inner, **kwargs):
        super().__init__(dtype="float64", **kwargs)
        self.inner = inner

    def call(self, x):
        mask = tf.constant([[True, True, False], [True, True, True]])
        return self.inner([x, x * 2.0, x], mask=[None, mask], use_causal_mask=True)


def check_grads_with_scalar_weights(layer, x, eps=1e-6):
    """Like layer_checks.check_layer_grads, which cannot perturb 0-d weights (Attention's)."""
    cot = np.random.default_rng(9).standard_normal(layer(tf.constant(x)).shape)

    def value(xv):
        return float(np.sum(layer(tf.constant(xv)).numpy() * cot))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(layer(xt) * cot)
    grads = tape.gradient(y, [xt] + layer.trainable_variables)
    numeric = np.zeros(x.size)
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = eps
        step = step.reshape(x.shape)
        numeric[j] = (value(x + step) - value(x - step)) / (2 * eps)
    np.testing.assert_allclose(grads[0].numpy().ravel(), numeric, rtol=1e-5, atol=1e-6)
    for w, g in zip(layer.trainable_variables, grads[1:]):
        base = np.array(w.numpy(), dtype=np.float64)
        numeric = np.zeros(base.size)
        for j in range(base.size):
            step = np.zeros(base.size)
            step[j] = eps
            w.assign(base + step.reshape(base.shape))
            up = value(x)
            w.assign(base - step.reshape(base.shape))
            numeric[j] = (up - value(x)) / (2 * eps)
        w.assign(base)
        np.testing.assert_allclose(np.ravel(g.numpy()), numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=w.name)


@pytest.mark.parametrize("make", [
    lambda: layers.Attention(use_scale=True, dtype="float64"),
    lambda: layers.Attention(use_scale=True, score_mode="concat", dtype="float64"),
    lambda: layers.AdditiveAttention(dtype="float64"),
])
def test_attention_gradients_match_finite_differences(make):
    check_grads_with_scalar_weights(_Attend(make()),
                                    np.random.default_rng(3).standard_normal((2, 3, 2)))


def test_attention_graph_with_unknown_sizes_equals_eager():
    layer = layers.Attention(use_scale=True)
    query, value, _, query_mask, value_mask = (a.astype(np.float32) if a.dtype == np.float64
                                               else a for a in _data(4))
    eager = layer([query, value], mask=[query_mask, value_mask], use_causal_mask=True)
    spec = [tf.TensorSpec([None, None, 5], tf.float32), tf.TensorSpec([None, None, 5], tf.float32),
            tf.TensorSpec([None, None], tf.bool), tf.TensorSpec([None, None], tf.bool)]
    graph = tf.function(lambda q, v, qm, vm: layer([q, v], mask=[qm, vm], use_causal_mask=True),
                        input_signature=spec)
    np.testing.assert_allclose(graph(query, value, query_mask, value_mask).numpy(),
                               eager.numpy(), rtol=1e-6, atol=1e-7)


def test_attention_dropout_in_training_only():
    layer = layers.Attention(dropout=0.5)
    x = np.random.default_rng(5).standard_normal((4, 6, 8)).astype(np.float32)
    calm = layer([x, x]).numpy()
    np.testing.assert_array_equal(layer([x, x], training=False).numpy(), calm)
    assert np.abs(layer([x, x], training=True).numpy() - calm).max() > 1e-3


def test_attention_functional_summary_fit_and_config(capsys):
    query = tf.keras.Input(shape=(4, 3))
    value = tf.keras.Input(shape=(6, 3))
    attended = layers.AdditiveAttention()([query, value])
    dot = layers.Attention()([query, value])  # (a scalar scale would hit the optimizer bug)
    model = tf.keras.Model([query, value], layers.Dense(1)(layers.Concatenate()([attended, dot])))
    assert model.layers[2].output_shape == (None, 4, 3)
    model.summary()
    text = capsys.readouterr().out
    assert f"Total params: {3 + 7:,}" in text
    rng = np.random.default_rng(6)
    q, v = rng.standard_normal((32, 4, 3)), rng.standard_normal((32, 6, 3))
    y = v.mean(axis=1, keepdims=True)[..., :1] + q[..., :1]
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    history = model.fit([q, v], y, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    for layer in model.layers[2:4]:
        config = layer.get_config()
        clone = type(layer).from_config({**config, "name": "copy_" + layer.name})
        assert clone.get_config() == {**config, "name": "copy_" + layer.name}
    assert layers.Attention(score_mode="concat").get_config()["score_mode"] == "concat"
    assert layers.Attention().compute_output_shape([(None, 4, 3), (None, 6, 7)]) == (None, 4, 7)


def test_attention_errors_name_the_layer_and_the_shapes():
    q, v = np.zeros((2, 3, 4), np.float32), np.zeros((2, 5, 4), np.float32)
    layer = layers.Attention()
    with pytest.raises(ValueError, match=r"Attention 'attention' must be called on a list"):
        layer(q)
    with pytest.raises(ValueError, match=r"Attention 'attention': query \(2, 3, 4\), value "
                                         r"\(2, 5, 4\): value_mask must have shape \(2, 5\), "
                                         r"got \(2, 4\)"):
        layer([q, v], mask=[None, np.ones((2, 4), bool)])
    with pytest.raises(ValueError, match=r"query and key last dims must be equal"):
        layer([q, np.zeros((2, 5, 6), np.float32)])
    with pytest.raises(ValueError, match=r"`mask` must be a list"):
        layer([q, v], mask=np.ones((2, 5), bool))
    with pytest.raises(ValueError, match=r"`score_mode` must be 'dot' or 'concat'"):
        layers.Attention(score_mode="add")
