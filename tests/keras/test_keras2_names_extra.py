"""CosineDecayRestarts, mish, OrthogonalRegularizer, RadialConstraint, RandomHeight /
RandomWidth, BaseLogger: NumPy formulas written here, float64 finite-difference gradients,
eager vs tf.function, configs; a few values recorded from tf_keras 2.21 (marked)."""

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import activations, backend, callbacks, constraints, layers, regularizers
from tapeflow.keras.optimizers import schedules


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _restarts(step, initial, first, t_mul, m_mul, alpha):
    """SGDR written out: walk the periods until the one holding `step`."""
    start, period, restart = 0.0, float(first), 0
    while step >= start + period:
        start, period, restart = start + period, period * t_mul, restart + 1
    fraction = (step - start) / period
    cosine = 0.5 * m_mul ** restart * (1 + math.cos(math.pi * fraction))
    return initial * ((1 - alpha) * cosine + alpha)


@pytest.mark.parametrize("t_mul,m_mul,alpha", [(2.0, 0.5, 0.01), (1.0, 0.9, 0.0),
                                               (3.0, 1.0, 0.2), (1.5, 0.8, 0.1)])
def test_cosine_decay_restarts_values(t_mul, m_mul, alpha):
    schedule = schedules.CosineDecayRestarts(0.1, 10, t_mul=t_mul, m_mul=m_mul, alpha=alpha)
    steps = [0, 1, 5, 9, 10, 11, 25, 29, 30, 31, 64, 70, 100, 157]
    got = [float(schedule(s)) for s in steps]
    want = [_restarts(s, 0.1, 10, t_mul, m_mul, alpha) for s in steps]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    traced = tf.function(lambda s: schedule(s))
    np.testing.assert_allclose([float(traced(tf.constant(s))) for s in steps[:4]], want[:4],
                               rtol=1e-6)


def test_cosine_decay_restarts_tf_keras_values_config_and_optimizer():
    schedule = schedules.CosineDecayRestarts(0.1, 10, t_mul=2.0, m_mul=0.5, alpha=0.01)
    recorded = [0.1, 0.0505, 0.0034227, 0.0505, 0.0501953, 0.0013047, 0.02575, 0.0257119,
                0.013375, 0.0095554]  # tf_keras 2.21 at steps 0 5 9 10 11 29 30 31 70 100
    got = [float(schedule(s)) for s in [0, 5, 9, 10, 11, 29, 30, 31, 70, 100]]
    np.testing.assert_allclose(got, recorded, atol=1e-7)
    config = schedule.get_config()
    assert config == {"initial_learning_rate": 0.1, "first_decay_steps": 10.0, "t_mul": 2.0,
                      "m_mul": 0.5, "alpha": 0.01, "name": None}
    again = schedules.deserialize(schedules.serialize(schedule))
    assert isinstance(again, schedules.CosineDecayRestarts) and again.get_config() == config
    opt = tf.keras.optimizers.SGD(schedule)
    v = tf.Variable(1.0)
    for _ in range(3):
        opt.apply_gradients([(tf.constant(1.0), v)])
    lrs = [_restarts(s, 0.1, 10, 2.0, 0.5, 0.01) for s in range(3)]
    np.testing.assert_allclose(v.numpy(), 1.0 - sum(lrs), rtol=1e-6)
    with pytest.raises(ValueError, match="first_decay_steps"):
        schedules.CosineDecayRestarts(0.1, 0)


def test_mish_values_gradient_and_by_name():
    x = np.linspace(-4, 4, 9)
    want = x * np.tanh(np.log1p(np.exp(x)))
    np.testing.assert_allclose(activations.mish(tf.constant(x)).numpy(), want, rtol=1e-12)
    assert activations.get("mish") is activations.mish
    assert activations.serialize(activations.mish) == "mish"
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(activations.mish(xt))
    eps = 1e-6
    numeric = (np.asarray(activations.mish(tf.constant(x + eps)))
               - np.asarray(activations.mish(tf.constant(x - eps)))) / (2 * eps)
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), numeric, rtol=1e-6, atol=1e-9)
    dense = layers.Dense(2, activation="mish")
    out = dense(np.ones((1, 3), np.float32))
    np.testing.assert_allclose(tf.function(dense)(tf.ones((1, 3))).numpy(), out.numpy(),
                               rtol=1e-6)
    assert dense.get_config()["activation"] == "mish"


def _orthogonal_reference(w, factor, mode):
    v = w if mode == "rows" else w.T
    unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6)
    gram = unit @ unit.T
    n = v.shape[0]
    return factor * 0.5 * np.abs(gram - np.diag(np.diag(gram))).sum() / (n * (n - 1) / 2)


W = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [1.0, 1.0, 1.0], [0.0, 2.0, -1.0]])


@pytest.mark.parametrize("mode", ["rows", "columns"])
def test_orthogonal_regularizer_value_gradient_and_config(mode):
    reg = regularizers.OrthogonalRegularizer(0.1, mode)
    factor = float(np.float32(0.1))  # Keras keeps the factor as a float32 number
    np.testing.assert_allclose(float(reg(tf.constant(W))), _orthogonal_reference(W, factor, mode),
                               rtol=1e-12)
    recorded = {"rows": 0.05140387639403343, "columns": 0.0474872849881649}  # tf_keras 2.21
    np.testing.assert_allclose(float(reg(tf.constant(W, tf.float32))), recorded[mode],
                               rtol=1e-6)
    w = tf.Variable(W)
    with tf.GradientTape() as tape:
        loss = reg(w)
    grad = tape.gradient(loss, w).numpy()
    numeric = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        up, down = W.copy(), W.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        numeric[i] = (_orthogonal_reference(up, factor, mode)
                      - _orthogonal_reference(down, factor, mode)) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    config = reg.get_config()
    assert config == {"factor": factor, "mode": mode}
    assert regularizers.deserialize(regularizers.serialize(reg)).get_config() == config
    assert np.isclose(float(regularizers.OrthogonalRegularizer(0.1, mode)(np.eye(3))), 0.0)


def test_orthogonal_regularizer_in_a_layer_and_errors():
    dense = layers.Dense(3, kernel_regularizer=regularizers.OrthogonalRegularizer(0.5),
                         kernel_initializer="orthogonal")
    dense(np.ones((1, 3), np.float32))
    assert float(dense.losses[0]) < 1e-6  # an orthogonal kernel costs nothing
    assert regularizers.get("orthogonal_regularizer").mode == "rows"
    with pytest.raises(ValueError, match="must have rank 2"):
        regularizers.OrthogonalRegularizer()(tf.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="Invalid value for argument `mode`"):
        regularizers.OrthogonalRegularizer(mode="diagonal")


def _radial_reference(w):
    """Keras's construction: the centre (1x1, or 2x2 for an even size) from kernel[s-1, s-1],
    then rings padded on outside with kernel[s+i, s+i]."""
    h = w.shape[0]
    s = h // 2
    out = np.empty_like(w)
    for c in np.ndindex(w.shape[2:]):
        k = w[(slice(None), slice(None)) + c]
        core = np.full((1, 1) if h % 2 else (2, 2), k[s - 1, s - 1])
        for i in range(0 if h % 2 else 1, s):
            core = np.pad(core, 1, constant_values=k[s + i, s + i])
        out[(slice(None), slice(None)) + c] = core
    return out


@pytest.mark.parametrize("size", [3, 4, 5, 6])
def test_radial_constraint_matches_construction(size):
    w = np.random.default_rng(size).standard_normal((size, size, 2, 3))
    got = constraints.RadialConstraint()(tf.constant(w)).numpy()
    np.testing.assert_array_equal(got, _radial_reference(w))
    traced = tf.function(lambda t: constraints.RadialConstraint()(t))
    np.testing.assert_array_equal(traced(tf.constant(w)).numpy(), got)


def test_radial_constraint_recorded_config_and_errors():
    w = np.arange(5 * 5 * 2, dtype=np.float32).reshape(5, 5, 1, 2)
    got = constraints.RadialConstraint()(w).numpy()[..., 0, 0]
    assert got[2, 2] == 12 and got[1, 2] == 24 and got[0, 0] == 36  # tf_keras 2.21
    assert constraints.get("radial_constraint").get_config() == {}
    conv = layers.Conv2D(2, 3, kernel_constraint="radial_constraint")
    conv(np.ones((1, 5, 5, 1), np.float32))
    assert conv.get_config()["kernel_constraint"]["class_name"] == "RadialConstraint"
    with pytest.raises(ValueError, match="must have rank 4"):
        constraints.RadialConstraint()(tf.ones((3, 3)))
    with pytest.raises(ValueError, match="must be square"):
        constraints.RadialConstraint()(tf.ones((3, 2, 1, 1)))


@pytest.mark.parametrize("cls,axis", [(layers.RandomHeight, 1), (layers.RandomWidth, 2)])
def test_random_height_width_resize_one_axis(cls, axis):
    images = np.random.default_rng(0).random((2, 10, 8, 3)).astype(np.float32)
    grow = cls((0.5, 0.5))  # a fixed factor of 1.5
    out = grow(images)
    want_shape = list(images.shape)
    want_shape[axis] = int(1.5 * images.shape[axis])
    assert list(out.shape) == want_shape
    np.testing.assert_allclose(out.numpy(), tf.image.resize(images, want_shape[1:3]).numpy(),
                               rtol=1e-6)
    np.testing.assert_array_equal(grow(images, training=False).numpy(), images)
    traced = tf.function(lambda x: grow(x, training=True))
    np.testing.assert_allclose(traced(tf.constant(images)).numpy(), out.numpy(), rtol=1e-6)
    shrink = cls(0.3, seed=4)
    sizes = {shrink(images).shape[axis] for _ in range(12)}
    side = images.shape[axis]
    assert all(int(0.7 * side) <= s <= int(1.3 * side) for s in sizes) and len(sizes) > 1
    single = cls((-0.5, -0.5), interpolation="nearest")(images[0])
    assert single.shape[axis - 1] == images.shape[axis] // 2
    config = shrink.get_config()
    assert (config["factor"], config["interpolation"], config["seed"]) == (0.3, "bilinear", 4)
    assert cls.from_config(config).get_config() == config
    shape = list(images.shape)
    shape[axis] = None
    assert shrink.compute_output_shape(images.shape).as_list() == shape


def test_random_height_seeded_and_errors():
    images = np.random.default_rng(1).random((1, 20, 6, 1)).astype(np.float32)
    tf.random.set_seed(7)
    first = [layers.RandomHeight(0.4, seed=3)(images).shape[1] for _ in range(5)]
    tf.random.set_seed(7)
    again = [layers.RandomHeight(0.4, seed=3)(images).shape[1] for _ in range(5)]
    assert first == again
    with pytest.raises(ValueError, match="cannot have an upper bound lesser than the lower"):
        layers.RandomHeight((0.3, 0.1))
    with pytest.raises(ValueError, match="must have values larger than -1"):
        layers.RandomWidth((-1.5, 0.0))
    with pytest.raises(NotImplementedError, match="interpolation"):
        layers.RandomWidth(0.1, interpolation="gaussian")
    # tf-keras 2.21's config carries rng_type; it loads here
    loaded = tf.keras.layers.deserialize({"class_name": "RandomHeight", "config": {
        "name": "random_height", "trainable": True, "dtype": "float32", "rng_type": "stateful",
        "factor": [0.2, 0.2], "interpolation": "bilinear", "seed": None}})
    assert isinstance(loaded, layers.RandomHeight)


def test_base_logger_weights_batches_by_size():
    logger = callbacks.BaseLogger(stateful_metrics=["acc"])
    logger.set_params({"metrics": ["loss", "acc"]})
    logger.on_epoch_begin(0)
    logger.on_batch_end(0, {"size": 2, "loss": 1.0, "acc": 0.5})
    logger.on_train_batch_end(1, {"size": 3, "loss": 2.0, "acc": 0.7, "num_steps": 2})
    logs = {}
    logger.on_epoch_end(0, logs)
    # recorded from tf_keras 2.21: seen = 2 + 3 * 2; loss = (1 * 2 + 2 * 3) / 8
    assert logs == {"loss": 1.0, "acc": 0.7} and logger.seen == 8
    model = tf.keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    history = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=4, epochs=1, verbose=0,
                        callbacks=[callbacks.BaseLogger()])
    assert len(history.history["loss"]) == 1  # TF2 fit: the logs stay fit's own averages
