"""tf.keras.mixed_precision: policies, AutoCastVariable, LossScaleOptimizer, fit under
mixed_float16 / mixed_bfloat16, and 16-bit tensors through the heavy kernels.

Expected values from tf-keras 2.21: reference/make_mixed_precision_values.py.
"""

import json
import os

import ml_dtypes
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import mixed_precision as mp

REF = json.load(open(os.path.join(os.path.dirname(__file__), "reference",
                                  "mixed_precision_values.json")))


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    mp.set_global_policy(None)


def test_policies_match_keras():
    for name, (compute, variable) in REF["policies"].items():
        p = mp.Policy(name)
        assert (p.compute_dtype, p.variable_dtype) == (compute, variable), name
    assert repr(mp.Policy("mixed_float16")) == '<Policy "mixed_float16">'
    with pytest.raises(ValueError, match="Cannot convert value bad"):
        mp.Policy("bad")
    with pytest.raises(ValueError, match="floating-point policies"):
        mp.set_global_policy("int32")
    assert mp.global_policy().name == "float32"
    mp.set_global_policy("mixed_bfloat16")
    assert mp.global_policy() == mp.Policy("mixed_bfloat16")
    assert keras.layers.Dense(2).compute_dtype == "bfloat16"
    mp.set_global_policy(None)
    assert keras.layers.Dense(2).compute_dtype == "float32"


def test_layer_config_dtype_round_trips():
    d = keras.layers.Dense(3, dtype="mixed_float16")
    assert d.get_config()["dtype"] == REF["dense_config_dtype"]
    assert keras.layers.Dense(3).get_config()["dtype"] == REF["dense_config_dtype_float32"]
    again = keras.layers.Dense.from_config(d.get_config())
    assert again.dtype_policy == mp.Policy("mixed_float16")
    assert (again.compute_dtype, again.variable_dtype, again.dtype) == \
        ("float16", "float32", "float32")


def _ref_dense():
    dense = keras.layers.Dense(2, dtype="mixed_float16")
    dense.build((None, 4))
    dense.set_weights([np.linspace(-1, 1, 8).reshape(4, 2), np.ones(2)])
    return dense


def test_mixed_dense_computes_in_float16_with_float32_variables():
    dense = _ref_dense()
    x = np.array(REF["dense_input"], np.float32)
    y = dense(x)
    assert y.dtype.name == REF["dense_output_dtype"] == "float16"
    np.testing.assert_allclose(y.numpy().astype(np.float32), REF["dense_output_float16"],
                               rtol=1e-3)
    assert isinstance(dense.kernel, mp.AutoCastVariable)
    assert dense.kernel.dtype == tf.float32
    assert [w.dtype for w in dense.weights] == [tf.float32, tf.float32]
    assert all(isinstance(w, tf.Variable) for w in dense.trainable_variables)
    # outside the layer's call the wrapper reads as float32
    assert tf.convert_to_tensor(dense.kernel).dtype == tf.float32
    out = keras.layers.Activation("softmax", dtype="float32")(y)
    assert out.dtype.name == REF["softmax_float32_dtype"] == "float32"


def test_gradients_reach_float32_variables_eager_and_traced():
    dense = _ref_dense()
    x = tf.constant(np.array(REF["dense_input"], np.float32))

    def grads(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(dense(x), tf.float32) ** 2)
        return tape.gradient(loss, dense.trainable_variables)

    eager = grads(x)
    traced = tf.function(grads)(x)
    assert [g.dtype for g in eager] == [tf.float32, tf.float32]
    for a, b in zip(eager, traced):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the same gradients in float32 (within float16 rounding of the forward pass)
    k, b = (w.numpy() for w in dense.trainable_variables)
    xv = x.numpy()
    y = xv @ k + b
    np.testing.assert_allclose(eager[0].numpy(), xv.T @ (2 * y), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(eager[1].numpy(), (2 * y).sum(0), rtol=2e-2, atol=2e-2)


def test_autocast_variable_assign_and_operators():
    dense = _ref_dense()
    kernel = dense.kernel
    kernel.assign(tf.ones((4, 2), tf.float16))  # any float dtype is stored as float32
    assert kernel.numpy().dtype == np.float32 and kernel.numpy().sum() == 8
    assert (kernel * 2.0).dtype == tf.float32  # outside a call: float32
    from tapeflow.keras.mixed_precision.autocast_variable import enable_auto_cast_variables

    with enable_auto_cast_variables("float16"):
        assert (kernel * 2.0).dtype == tf.float16
        assert (tf.ones((3, 4), tf.float16) @ kernel).dtype == tf.float16


def _lso_step(opt, v, grad):
    opt.apply_gradients([(tf.constant(grad, tf.float32), v)])
    return (v.numpy().tolist(), float(opt.loss_scale.numpy()),
            int(opt.dynamic_counter.numpy()), int(opt.iterations.numpy()))


@pytest.mark.parametrize("traced", [False, True])
def test_dynamic_loss_scaling_matches_keras(traced):
    v = tf.Variable([1.0, 2.0])
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic_growth_steps=2)
    apply = opt.apply_gradients
    if traced:
        apply = tf.function(lambda g: opt.apply_gradients([(g, v)]))
    for step in REF["lso_steps"]:
        grad = np.array([float(x) for x in step["grad"]], np.float32)
        if traced:
            apply(tf.constant(grad))
        else:
            apply([(tf.constant(grad), v)])
        np.testing.assert_allclose(v.numpy(), step["var"], rtol=1e-6)
        assert float(opt.loss_scale.numpy()) == step["loss_scale"]
        assert int(opt.dynamic_counter.numpy()) == step["counter"]
        assert int(opt.iterations.numpy()) == step["iterations"]


def test_loss_scale_optimizer_api():
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    assert (opt.initial_scale, opt.dynamic_growth_steps, opt.dynamic) == (32768.0, 2000, True)
    config = {k: v for k, v in opt.get_config().items() if k != "inner_optimizer"}
    ref = dict(REF["lso_config"], dynamic_growth_steps=2000)
    assert config == ref
    again = mp.LossScaleOptimizer.from_config(opt.get_config())
    assert isinstance(again.inner_optimizer, keras.optimizers.SGD)
    assert float(opt.get_scaled_loss(tf.constant(2.0)).numpy()) == REF["scaled_loss"] * 2
    assert opt.get_unscaled_gradients([None]) == [None]
    np.testing.assert_allclose(opt.get_unscaled_gradients([tf.constant(4.0)])[0].numpy(),
                               4.0 / 32768)
    opt.learning_rate = 0.5
    assert float(opt.inner_optimizer.learning_rate.numpy()) == 0.5
    with pytest.raises(ValueError, match="initial_scale"):
        mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic=False)
    with pytest.raises(ValueError, match="dynamic_growth_steps"):
        mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic=False, initial_scale=2,
                              dynamic_growth_steps=3)
    with pytest.raises(TypeError, match="inner_optimizer"):
        mp.LossScaleOptimizer("sgd")
    fixed = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic=False, initial_scale=4.0)
    assert float(fixed.loss_scale.numpy()) == 4.0 and fixed.dynamic_counter is None


def test_custom_loop_with_scaled_loss():
    """The Keras guide's custom training loop: scale, differentiate, unscale, apply."""
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)),
                              keras.layers.Activation("linear", dtype="float32")])
    opt = mp.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    x, y = np.ones((8, 3), np.float32), np.zeros((8, 4), np.float32)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
            scaled = opt.get_scaled_loss(loss)
        grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = [float(step(x, y)) for _ in range(5)]
    assert losses[-1] < losses[0]
    assert float(opt.loss_scale.numpy()) == 32768.0


def _image_data(n=48):
    rng = np.random.default_rng(0)
    x = rng.random((n, 8, 8, 1), dtype=np.float32)
    y = (x[:, :4].mean((1, 2, 3)) > x[:, 4:].mean((1, 2, 3))).astype(np.int64)
    return x, y


def _cnn():
    return keras.Sequential([
        keras.layers.Conv2D(4, 3, padding="same", input_shape=(8, 8, 1)),
        keras.layers.BatchNormalization(),
        keras.layers.ReLU(),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(2),
        keras.layers.Activation("softmax", dtype="float32"),
    ])


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_fit_under_mixed_policy(policy):
    mp.set_global_policy(policy)
    tf.random.set_seed(1)
    model = _cnn()
    model.compile(keras.optimizers.Adam(0.02), "sparse_categorical_crossentropy")
    # Keras wraps the optimizer for mixed_float16 only
    assert isinstance(model.optimizer, mp.LossScaleOptimizer) == (policy == "mixed_float16")
    x, y = _image_data()
    history = model.fit(x, y, epochs=4, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    assert model.predict(x[:4], verbose=0).dtype == np.float32
    assert model.layers[0].compute_dtype == policy.split("_")[1]
    assert all(w.dtype == tf.float32 for w in model.weights)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16_bit_kernels_round_the_float32_result(dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(dtype)
    b = rng.standard_normal((7, 3)).astype(dtype)
    out = tf.matmul(a, b)
    assert out.dtype == tf.as_dtype(dtype)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(out.numpy().astype(np.float32), want.astype(np.float32))
    traced = tf.function(lambda a, b: tf.matmul(a, b))(tf.constant(a), tf.constant(b))
    np.testing.assert_array_equal(traced.numpy().astype(np.float32), want.astype(np.float32))
    x = rng.standard_normal((2, 6, 6, 3)).astype(dtype)
    w = rng.standard_normal((3, 3, 3, 4)).astype(dtype)
    y = tf.nn.conv2d(x, w, 1, "SAME")
    y32 = tf.nn.conv2d(x.astype(np.float32), w.astype(np.float32), 1, "SAME")
    assert y.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(y.numpy().astype(np.float32),
                                  y32.numpy().astype(dtype).astype(np.float32))
    # the conv gradients in 16 bits are the float32 ones, rounded
    xt, wt = tf.constant(x), tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch([xt, wt])
        loss = tf.reduce_sum(tf.nn.conv2d(xt, wt, 1, "SAME"))
    gx, gw = tape.gradient(loss, [xt, wt])
    assert gx.dtype == gw.dtype == tf.as_dtype(dtype)
    x32, w32 = tf.constant(x.astype(np.float32)), tf.constant(w.astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch([x32, w32])
        loss = tf.reduce_sum(tf.nn.conv2d(x32, w32, 1, "SAME"))
    gx32, gw32 = tape.gradient(loss, [x32, w32])
    np.testing.assert_allclose(gx.numpy().astype(np.float32), gx32.numpy(), rtol=2e-2,
                               atol=2e-2)
    np.testing.assert_allclose(gw.numpy().astype(np.float32), gw32.numpy(), rtol=2e-2,
                               atol=5e-2)


def test_bfloat16_dtype():
    assert tf.bfloat16.name == "bfloat16" and tf.bfloat16.is_floating and tf.bfloat16.size == 2
    assert tf.as_dtype("bfloat16") is tf.bfloat16
    assert tf.as_dtype(ml_dtypes.bfloat16) is tf.bfloat16
    x = tf.constant([1.0, 2.5, 1e3], tf.bfloat16)
    assert x.dtype is tf.bfloat16
    np.testing.assert_array_equal(tf.cast(x, tf.float32).numpy(), [1.0, 2.5, 1000.0])
    np.testing.assert_allclose(tf.exp(tf.constant([0.0, 1.0], tf.bfloat16)).numpy()
                               .astype(np.float32), [1.0, np.e], rtol=1e-2)
    assert float(tf.bfloat16.max) > 3e38


_LAYERS = {
    "LSTM": (lambda L: L.LSTM(4), (2, 5, 3)),
    "GRU": (lambda L: L.GRU(4), (2, 5, 3)),
    "Bidirectional": (lambda L: L.Bidirectional(L.SimpleRNN(4)), (2, 5, 3)),
    "Conv1D": (lambda L: L.Conv1D(4, 3, padding="causal"), (2, 5, 3)),
    "LayerNormalization": (lambda L: L.LayerNormalization(), (2, 5, 3)),
    "MultiHeadAttention": (lambda L: L.MultiHeadAttention(2, 4), (2, 5, 8)),
    "DepthwiseConv2D": (lambda L: L.DepthwiseConv2D(3), (2, 6, 6, 3)),
    "Conv2DTranspose": (lambda L: L.Conv2DTranspose(4, 3, strides=2), (2, 6, 6, 3)),
    "Embedding": (lambda L: L.Embedding(10, 4), None),
}


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_layers_compute_in_the_policy_dtype(policy, name):
    """Output in the compute dtype, eager and traced; float32 weights; float32 gradients."""
    mp.set_global_policy(policy)
    make, shape = _LAYERS[name]
    layer = make(keras.layers)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.integers(0, 10, (2, 5)) if shape is None else
                    rng.random(shape, dtype=np.float32))
    call = (lambda x: layer(x, x)) if name == "MultiHeadAttention" else layer
    with tf.GradientTape() as tape:
        y = call(x)
        loss = tf.reduce_sum(tf.cast(y, tf.float32))
    grads = tape.gradient(loss, layer.trainable_variables)
    compute = policy.split("_")[1]
    assert y.dtype.name == compute and tf.function(call)(x).dtype.name == compute
    assert layer.weights and all(w.dtype == tf.float32 for w in layer.weights)
    assert all(g is not None and g.dtype == tf.float32 for g in grads)


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_mixed_model_saves_and_loads_with_its_loss_scale_optimizer(tmp_path, suffix):
    mp.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.layers.Dense(4, input_shape=(3,)),
                              keras.layers.Activation("softmax", dtype="float32")])
    model.compile("adam", "mse")
    x = np.linspace(0, 1, 24, dtype=np.float32).reshape(8, 3)
    model.fit(x, np.ones((8, 4), np.float32), verbose=0)
    path = str(tmp_path / f"m{suffix}")
    model.save(path)
    mp.set_global_policy(None)
    again = keras.models.load_model(path)
    assert again.layers[0].dtype_policy == mp.Policy("mixed_float16")
    assert again.layers[1].dtype_policy == mp.Policy("float32")
    assert isinstance(again.optimizer, mp.LossScaleOptimizer)
    assert float(again.optimizer.loss_scale.numpy()) == 32768.0
    assert int(again.optimizer.iterations.numpy()) == 1
    kernel = again.trainable_variables[0]
    np.testing.assert_array_equal(again.optimizer.get_slot(kernel, "m").numpy(),
                                  model.optimizer.get_slot(model.trainable_variables[0],
                                                           "m").numpy())
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


def test_compiled_float16_conversion_is_numpys_bit_for_bit():
    from tapeflow.kernels import low_precision

    halves = np.arange(2 ** 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    wide = low_precision.astype(halves, np.float32)
    np.testing.assert_array_equal(wide.view(np.uint32), halves.astype(np.float32).view(np.uint32))
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)  # 1M float32 patterns
    floats = bits.view(np.float32)
    with np.errstate(over="ignore"):
        want = floats.astype(np.float16)
    got = low_precision.astype(floats, np.float16)
    same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), floats[~same][:5]
    x = tf.constant(np.linspace(-70000, 70000, 5000, dtype=np.float32))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(tf.cast(x, tf.float16).numpy(),
                                      x.numpy().astype(np.float16))
