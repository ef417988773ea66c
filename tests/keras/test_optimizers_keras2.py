"""Nadam, Adamax, Adadelta, Ftrl and AdamW: Keras 2's update rules (and all optimizers vs tf-keras).

Three checks per optimizer: five steps against the formulas written out in NumPy (float64, to
1e-12), against values recorded from tf-keras 2.21 (float32, to 1e-6; made by
reference/make_optimizer_values.py), and eager against a traced step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from optimizer_cases import CASES, FTRL_ALL
from optimizer_cases import X0 as X032
from optimizer_cases import A as A32
from optimizer_cases import B as B32

import tapeflow as tf
from tapeflow.keras import optimizers

A, B, X0 = (a.astype(np.float64) for a in (A32, B32, X032))
STEPS = 5
LR = float(np.float32(0.1))   # the learning rate is a float32 variable, as in Keras

# tf-keras 2.21, float32. tapeflow's optimizers are Keras 2's with the moments' (1 - beta) taken in
# float64 as tf.keras.optimizers' are; the legacy classes of tf-keras take them in float32 and end
# up to 4e-6 away from these after five steps at these rates (measured for Adam).
TF_VALUES = {
    'legacy_nadam': [
        [0.13196799159049988, -0.6027311682701111, 2.416966199874878],
        [1.1158294677734375, -0.16307279467582703, -1.1409173011779785],
    ],
    'legacy_adamax': [
        [0.0640726238489151, -0.5148735046386719, 2.480170726776123],
        [1.0387898683547974, -0.23619070649147034, -1.2230809926986694],
    ],
    'legacy_adadelta': [
        [0.49281004071235657, -0.9927978515625, 2.0072124004364014],
        [1.4928038120269775, 0.24278981983661652, -0.757199227809906],
    ],
    'legacy_ftrl': [
        [0.061539798974990845, -0.5073521137237549, 2.1642086505889893],
        [1.083414077758789, -0.1654270440340042, -0.9045419692993164],
    ],
    'legacy_ftrl_all': [
        [0.0491180494427681, -0.5427718162536621, 1.9704960584640503],
        [1.2150784730911255, -0.11374669522047043, -0.720281720161438],
    ],
    'nadam': [
        [0.13726912438869476, -0.6109024882316589, 2.4067366123199463],
        [1.1226838827133179, -0.15325641632080078, -1.1333903074264526],
    ],
    'adamax': [
        [0.06407265365123749, -0.5148736238479614, 2.480170726776123],
        [1.0387898683547974, -0.23619060218334198, -1.2230808734893799],
    ],
    'adadelta': [
        [0.49281004071235657, -0.9927978515625, 2.0072124004364014],
        [1.4928038120269775, 0.24278981983661652, -0.757199227809906],
    ],
    'ftrl': [
        [0.061539798974990845, -0.5073521137237549, 2.1642086505889893],
        [1.083414077758789, -0.1654270440340042, -0.9045419692993164],
    ],
    'adamw': [
        [0.00445682555437088, -0.4818352162837982, 2.446983814239502],
        [0.9735152125358582, -0.2523868680000305, -1.223517656326294],
    ],
    'adamw_amsgrad': [
        [0.00445682555437088, -0.4818352162837982, 2.446983814239502],
        [0.9735152125358582, -0.2523868680000305, -1.223517656326294],
    ],
    'adam': [
        [0.011509247124195099, -0.501537024974823, 2.5015807151794434],
        [1.0051575899124146, -0.2511727809906006, -1.2468701601028442],
    ],
    'rmsprop': [
        [-0.2668953537940979, -0.02654382586479187, 3.0780768394470215],
        [0.6143184304237366, -0.8101018071174622, -1.6824560165405273],
    ],
    'adagrad': [
        [0.21528257429599762, -0.6855093836784363, 2.331757068634033],
        [1.1926374435424805, -0.06447666883468628, -1.0587230920791626],
    ],
    'sgd': [
        [-0.3836653530597687, 1.325796127319336, 15.995208740234375],
        [-0.2971362769603729, -1.1229419708251953, -2.518580675125122],
    ],
}


def build(name: str) -> optimizers.Optimizer:
    namespace, cls, kwargs = CASES[name]
    module = optimizers.legacy if namespace == "legacy" else optimizers
    return getattr(module, cls)(**kwargs)


def quad_grad(x: np.ndarray) -> np.ndarray:
    return A * x + B


def run_tapeflow(opt, dtype=np.float64, steps=STEPS, traced=False) -> np.ndarray:
    x = tf.Variable(X0.astype(dtype))
    a, b = tf.constant(A.astype(dtype)), tf.constant(B.astype(dtype))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(a * x * x) * tf.constant(dtype(0.5)) + tf.reduce_sum(b * x)
        opt.apply_gradients([(tape.gradient(loss, x), x)])

    step = tf.function(step) if traced else step
    for _ in range(steps):
        step()
    return x.numpy()


# --- the formulas, written out independently ------------------------------------------------


def ref_nadam(lr, exponent, b1=0.9, b2=0.999, eps=1e-7):
    x, m, v, product = X0.copy(), np.zeros_like(X0), np.zeros_like(X0), 1.0
    mu = lambda t: b1 * (1 - 0.5 * 0.96 ** (exponent * t))  # noqa: E731
    for t in range(1, STEPS + 1):
        g = quad_grad(x)
        product *= mu(t)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = mu(t + 1) * m / (1 - product * mu(t + 1)) + (1 - mu(t)) * g / (1 - product)
        x = x - lr * m_hat / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return x


def ref_adamax(lr, b1=0.9, b2=0.999, eps=1e-7):
    x, m, u = X0.copy(), np.zeros_like(X0), np.zeros_like(X0)
    for t in range(1, STEPS + 1):
        g = quad_grad(x)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        x = x - lr / (1 - b1 ** t) * m / (u + eps)
    return x


def ref_adadelta(lr, rho=0.95, eps=1e-7):
    x, eg2, ed2 = X0.copy(), np.zeros_like(X0), np.zeros_like(X0)
    for _ in range(STEPS):
        g = quad_grad(x)
        eg2 = rho * eg2 + (1 - rho) * g * g
        d = np.sqrt(ed2 + eps) / np.sqrt(eg2 + eps) * g
        ed2 = rho * ed2 + (1 - rho) * d * d
        x = x - lr * d
    return x


def ref_ftrl(lr, learning_rate_power=-0.5, initial_accumulator_value=0.1,
             l1_regularization_strength=0.0, l2_regularization_strength=0.0,
             l2_shrinkage_regularization_strength=0.0, beta=0.0):
    p, l1 = learning_rate_power, l1_regularization_strength
    l2 = l2_regularization_strength + beta / (2 * lr)
    x = X0.copy()
    n, z = np.full_like(X0, initial_accumulator_value), np.zeros_like(X0)
    for _ in range(STEPS):
        g = quad_grad(x)
        n_new = n + g * g
        z = z + g + 2 * l2_shrinkage_regularization_strength * x - (
            n_new ** -p - n ** -p) / lr * x
        n = n_new
        x = np.where(np.abs(z) > l1, (np.sign(z) * l1 - z) / (n ** -p / lr + 2 * l2), 0.0)
    return x


def ref_adamw(lr, weight_decay, b1=0.9, b2=0.999, eps=1e-7):
    x, m, v = X0.copy(), np.zeros_like(X0), np.zeros_like(X0)
    for t in range(1, STEPS + 1):
        g = quad_grad(x)
        x = x - x * weight_decay * lr
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        x = x - lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return x


REFERENCES = {
    "legacy_nadam": lambda: ref_nadam(LR, exponent=0.004),
    "legacy_adamax": lambda: ref_adamax(LR),
    "legacy_adadelta": lambda: ref_adadelta(1.0),
    "legacy_ftrl": lambda: ref_ftrl(LR),
    "legacy_ftrl_all": lambda: ref_ftrl(LR, **FTRL_ALL),
    "nadam": lambda: ref_nadam(LR, exponent=1.0),
    "adamax": lambda: ref_adamax(LR),
    "adadelta": lambda: ref_adadelta(1.0),
    "ftrl": lambda: ref_ftrl(LR),
    "adamw": lambda: ref_adamw(LR, 0.05),
    "adamw_amsgrad": lambda: ref_adamw(LR, 0.05),   # v never shrinks here: same as without
}


@pytest.mark.parametrize("name", sorted(REFERENCES))   # the others: test_optimizers_rules.py
def test_matches_the_formulas_in_float64(name):
    np.testing.assert_allclose(run_tapeflow(build(name)), REFERENCES[name](), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras_in_float32(name):
    got = run_tapeflow(build(name), dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.array(TF_VALUES[name], np.float32), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["nadam", "legacy_nadam", "ftrl", "legacy_ftrl_all", "adamw",
                                  "adamax", "adadelta"])
def test_a_traced_step_gives_the_eager_numbers(name):
    np.testing.assert_allclose(run_tapeflow(build(name), traced=True),
                               run_tapeflow(build(name)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("alias,cls", [("nadam", "Nadam"), ("adamax", "Adamax"),
                                       ("adadelta", "Adadelta"), ("ftrl", "Ftrl"),
                                       ("adamw", "AdamW"), ("Nadam", "Nadam")])
def test_string_names_in_compile(alias, cls):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    model.compile(optimizer=alias, loss="mse")
    assert type(model.optimizer) is getattr(optimizers, cls)
    x = np.ones((4, 3), np.float32)
    model.fit(x, np.zeros((4, 1), np.float32), epochs=1, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 1


def test_legacy_namespace_holds_subclasses_with_the_keras2_differences():
    for cls in ("Adam", "AdamW"):
        assert getattr(optimizers.legacy, cls) is getattr(optimizers, cls)
    for cls in ("SGD", "RMSprop", "Adagrad", "Adamax", "Adadelta", "Ftrl"):
        legacy = getattr(optimizers.legacy, cls)
        assert legacy is not getattr(optimizers, cls) and legacy.__name__ == cls
        assert issubclass(legacy, getattr(optimizers, cls))
    assert optimizers.legacy.Nadam is not optimizers.Nadam
    assert tf.keras.optimizers.legacy.Nadam().get_config()["decay"] == 0.004


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_round_trip_gives_the_same_updates(name):
    opt = build(name)
    again = type(opt).from_config(opt.get_config())
    assert again.get_config() == opt.get_config()
    np.testing.assert_allclose(run_tapeflow(again), run_tapeflow(build(name)), rtol=0, atol=0)


def test_nadam_momentum_product_is_checkpointed(tmp_path):
    """Three steps, save, restore into a fresh optimizer, two more: as five uninterrupted."""
    x = tf.Variable(X0.copy())
    opt = optimizers.Nadam(0.1)

    def steps(var, optimizer, n):
        for _ in range(n):
            optimizer.apply_gradients([(tf.constant(quad_grad(var.numpy())), var)])

    steps(x, opt, 3)
    path = tf.train.Checkpoint(x=x, opt=opt).save(str(tmp_path / "ckpt"))
    y, fresh = tf.Variable(np.zeros_like(X0)), optimizers.Nadam(0.1)
    steps(y, fresh, 1)  # creates slots, moves the product: all must be overwritten
    tf.train.Checkpoint(x=y, opt=fresh).restore(path)
    assert fresh.variables()[1].numpy() == pytest.approx(opt.variables()[1].numpy())
    steps(y, fresh, 2)
    np.testing.assert_allclose(y.numpy(), ref_nadam(LR, exponent=1.0), rtol=1e-12)


def test_adamw_exclusions_skip_the_decay():
    decayed, kept = tf.Variable(np.ones(3)), tf.Variable(np.ones(3), name="bias")
    opt = optimizers.AdamW(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    zero = tf.constant(np.zeros(3))
    opt.apply_gradients([(zero, decayed), (zero, kept)])
    np.testing.assert_allclose(decayed.numpy(), np.full(3, 1 - 0.5 * 0.1))
    np.testing.assert_allclose(kept.numpy(), np.ones(3))


@pytest.mark.parametrize("cls,kwargs,word", [
    ("Ftrl", dict(learning_rate_power=0.5), "learning_rate_power"),
    ("Ftrl", dict(l1_regularization_strength=-1.0), "l1_regularization_strength"),
    ("AdamW", dict(weight_decay=-0.1), "weight_decay"),
])
def test_bad_hyperparameters_are_named(cls, kwargs, word):
    with pytest.raises(ValueError, match=word):
        getattr(optimizers, cls)(**kwargs)
