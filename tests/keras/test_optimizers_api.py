"""Optimizer API: slots, clipping, schedules, learning-rate setting, config, errors, tracing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.keras import optimizers
from tapeflow.keras.optimizers import schedules


def _var(values, dtype=np.float32):
    return tf.Variable(np.asarray(values, dtype=dtype))


def test_get_resolves_names_configs_and_instances():
    assert isinstance(optimizers.get("adam"), optimizers.Adam)
    assert isinstance(optimizers.get("SGD"), optimizers.SGD)
    assert isinstance(optimizers.get("rmsprop"), optimizers.RMSprop)
    assert isinstance(optimizers.get("adagrad"), optimizers.Adagrad)
    opt = optimizers.Adam(0.5)
    assert optimizers.get(opt) is opt
    clone = optimizers.get(optimizers.serialize(opt))
    assert isinstance(clone, optimizers.Adam) and clone.get_config() == opt.get_config()
    assert optimizers.legacy.Adam is optimizers.Adam
    with pytest.raises(ValueError, match="Unknown optimizer: 'adamw2'"):
        optimizers.get("adamw2")


def test_keras_defaults():
    assert optimizers.SGD().get_config()["learning_rate"] == pytest.approx(0.01)
    cfg = optimizers.Adam().get_config()
    assert cfg["learning_rate"] == pytest.approx(0.001) and cfg["epsilon"] == 1e-7
    assert optimizers.RMSprop().get_config()["rho"] == 0.9
    assert optimizers.Adagrad().get_config()["initial_accumulator_value"] == 0.1


def test_config_round_trip_with_schedule():
    sched = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
    opt = optimizers.SGD(sched, momentum=0.9, nesterov=True, clipnorm=1.0)
    cfg = opt.get_config()
    clone = optimizers.SGD.from_config(cfg)
    assert isinstance(clone.learning_rate, schedules.ExponentialDecay)
    assert clone.get_config() == cfg


def test_unknown_and_invalid_kwargs():
    with pytest.raises(TypeError, match="Unexpected keyword argument.*'betas'"):
        optimizers.Adam(betas=(0.9, 0.99))
    with pytest.raises(ValueError, match="both `clipnorm` and `global_clipnorm`"):
        optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="decay cannot be less than 0"):
        optimizers.SGD(decay=-1.0)
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(momentum=1.5)


def test_slots_created_once_and_named():
    v = _var([1.0, 2.0])
    opt = optimizers.Adam(0.1)
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    m = opt.get_slot(v, "m")
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert opt.get_slot(v, "m") is m
    assert len(opt.variables()) == 3  # iterations, m, v
    assert int(opt.iterations.numpy()) == 2
    assert m.name.startswith("Adam/") and m.name.endswith("/m:0")
    assert opt.get_slot_names() == ["m", "v"]
    with pytest.raises(KeyError, match="no slot 'vhat'"):
        opt.get_slot(v, "vhat")


def test_weights_round_trip():
    v = _var([1.0, 2.0])
    opt = optimizers.RMSprop(0.1, momentum=0.5)
    opt.apply_gradients([(tf.constant([1.0, -1.0]), v)])
    weights = opt.get_weights()
    opt2 = optimizers.RMSprop(0.1, momentum=0.5)
    v2 = _var([1.0, 2.0])
    opt2.apply_gradients([(tf.constant([0.0, 0.0]), v2)])
    opt2.set_weights(weights)
    for a, b in zip(opt2.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="got 1 arrays for 3"):
        opt2.set_weights(weights[:1])


def test_none_gradients_skipped_with_warning_and_all_none_is_an_error():
    a, b = _var([1.0]), _var([2.0])
    opt = optimizers.SGD(1.0)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        opt.apply_gradients([(tf.constant([0.5]), a), (None, b)])
    np.testing.assert_allclose(a.numpy(), [0.5])
    np.testing.assert_allclose(b.numpy(), [2.0])
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, a), (None, b)])


def test_gradient_shape_and_dtype_mismatch_errors_name_the_variable():
    v = tf.Variable(np.zeros((3,), np.float32), name="w")
    opt = optimizers.Adam()
    with pytest.raises(errors.InvalidArgumentError, match=r"gradient of shape \[3, 1\].*w:0"):
        opt.apply_gradients([(tf.constant(np.zeros((3, 1), np.float32)), v)])
    with pytest.raises(errors.InvalidArgumentError, match="dtype float64 for variable w:0"):
        opt.apply_gradients([(tf.constant(np.zeros(3, np.float64)), v)])
    with pytest.raises(TypeError, match="in place of a Variable"):
        opt.apply_gradients([(tf.constant(np.zeros(3, np.float32)), np.zeros(3))])


def test_clipvalue_clipnorm_global_clipnorm():
    g1 = np.array([3.0, -4.0], np.float64)       # norm 5
    g2 = np.array([0.0, 12.0], np.float64)       # norm 12
    cases = [
        ({"clipvalue": 3.5}, [np.clip(g1, -3.5, 3.5), np.clip(g2, -3.5, 3.5)]),
        ({"clipnorm": 2.0}, [g1 * 2 / 5, g2 * 2 / 12]),
        ({"clipnorm": 10.0}, [g1, g2 * 10 / 12]),
        ({"global_clipnorm": 6.5}, [g1 * 6.5 / 13, g2 * 6.5 / 13]),
        ({"global_clipnorm": 20.0}, [g1, g2]),
        ({"clipvalue": 4.0, "clipnorm": 1.0},
         [np.clip(g1, -4, 4) / np.linalg.norm(np.clip(g1, -4, 4)),
          np.clip(g2, -4, 4) / np.linalg.norm(np.clip(g2, -4, 4))]),
    ]
    for kwargs, expected in cases:
        a, b = tf.Variable(np.zeros(2)), tf.Variable(np.zeros(2))
        optimizers.SGD(1.0, **kwargs).apply_gradients(
            [(tf.constant(g1), a), (tf.constant(g2), b)])
        np.testing.assert_allclose(-a.numpy(), expected[0], atol=1e-12, err_msg=str(kwargs))
        np.testing.assert_allclose(-b.numpy(), expected[1], atol=1e-12, err_msg=str(kwargs))


def test_learning_rate_settable_as_keras_callbacks_do():
    v = _var([1.0])
    opt = optimizers.SGD(0.1)
    lr_var = opt.learning_rate
    opt.learning_rate = 0.5
    assert opt.learning_rate is lr_var
    np.testing.assert_allclose(opt.lr.numpy(), 0.5)
    opt.lr.assign(0.25)
    opt.apply_gradients([(tf.constant([1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.75])
    opt.learning_rate = schedules.PiecewiseConstantDecay([0], [1.0, 2.0])
    opt.apply_gradients([(tf.constant([1.0]), v)])  # iterations = 1 > 0: 2.0
    np.testing.assert_allclose(v.numpy(), [-1.25])


SCHEDULE_CASES = [
    (schedules.ExponentialDecay(0.1, 3, 0.5), lambda s: 0.1 * 0.5 ** (s / 3)),
    (schedules.ExponentialDecay(0.1, 3, 0.5, staircase=True),
     lambda s: 0.1 * 0.5 ** math.floor(s / 3)),
    (schedules.InverseTimeDecay(0.2, 2, 0.5), lambda s: 0.2 / (1 + 0.5 * s / 2)),
    (schedules.InverseTimeDecay(0.2, 2, 0.5, staircase=True),
     lambda s: 0.2 / (1 + 0.5 * math.floor(s / 2))),
    (schedules.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1]),
     lambda s: 1.0 if s <= 2 else (0.5 if s <= 5 else 0.1)),
    (schedules.CosineDecay(0.1, 6, alpha=0.1),
     lambda s: 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 6) / 6)) + 0.1)),
    (schedules.CosineDecay(0.0, 4, warmup_target=0.2, warmup_steps=2),
     lambda s: 0.2 * s / 2 if s < 2 else 0.2 * 0.5 * (1 + math.cos(math.pi * min(s - 2, 4) / 4))),
    (schedules.PolynomialDecay(0.1, 4, end_learning_rate=0.01, power=2.0),
     lambda s: (0.09) * (1 - min(s, 4) / 4) ** 2 + 0.01),
]


@pytest.mark.parametrize("sched,formula", SCHEDULE_CASES,
                         ids=[type(c[0]).__name__ for c in SCHEDULE_CASES])
def test_schedules_follow_their_formulas(sched, formula):
    for step in range(0, 9):
        np.testing.assert_allclose(float(sched(step).numpy()), formula(step), rtol=1e-6,
                                   atol=1e-9)
    clone = type(sched).from_config(sched.get_config())
    np.testing.assert_allclose(clone(7).numpy(), sched(7).numpy())


def test_schedule_is_evaluated_at_iterations():
    sched = schedules.ExponentialDecay(1.0, 1, 0.5)
    v = _var([0.0])
    opt = optimizers.SGD(sched)
    for _ in range(4):
        opt.apply_gradients([(tf.constant([1.0]), v)])
    np.testing.assert_allclose(-v.numpy(), [1 + 0.5 + 0.25 + 0.125], rtol=1e-6)


def test_piecewise_rejects_bad_lengths():
    with pytest.raises(ValueError, match="1 less than the length of values"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0])


def test_minimize_with_callable_loss_and_with_tape():
    v = tf.Variable(np.array([3.0]))
    opt = optimizers.SGD(0.25)
    opt.minimize(lambda: v * v, [v])
    np.testing.assert_allclose(v.numpy(), [1.5])
    with tf.GradientTape() as tape:
        loss = v * v
    opt.minimize(loss, [v], tape=tape)
    np.testing.assert_allclose(v.numpy(), [0.75])
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(v * v, [v])


def test_constraint_applied_after_update_and_global_step():
    v = tf.Variable(np.array([0.5, -0.5], np.float32), constraint=lambda x: tf.maximum(x, 0.0))
    step = tf.Variable(np.int64(7))
    optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), v)], global_step=step)
    np.testing.assert_allclose(v.numpy(), [0.0, 0.0])
    assert int(step.numpy()) == 8


def test_sgd_without_momentum_has_no_slots():
    v = _var([1.0])
    opt = optimizers.SGD(0.1)
    opt.apply_gradients([(tf.constant([1.0], dtype=tf.float32), v)])
    assert opt.variables() == [opt.iterations]


def test_update_is_stateful_op_without_gradient():
    from tapeflow.keras.optimizers.adam import _apply_adam

    assert _apply_adam.stateful and _apply_adam.grad_fn is None


GRAPH_CASES = [
    lambda: optimizers.Adam(0.1, amsgrad=True, clipnorm=1.0),
    lambda: optimizers.SGD(schedules.ExponentialDecay(0.1, 2, 0.5), momentum=0.9, nesterov=True),
    lambda: optimizers.RMSprop(0.05, momentum=0.5, centered=True, global_clipnorm=0.5),
    lambda: optimizers.Adagrad(0.2, clipvalue=0.3),
]


@pytest.mark.parametrize("make", GRAPH_CASES, ids=["adam", "sgd", "rmsprop", "adagrad"])
def test_traced_step_creates_slots_once_and_matches_eager(make):
    function = pytest.importorskip("tapeflow.graph.function").function

    def setup():
        return [tf.Variable(np.array([1.0, -2.0])), tf.Variable(np.array([[0.5], [3.0]]))], make()

    (ve, oe), (vg, og) = setup(), setup()

    def step(vs, opt):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(vs[0] * vs[0]) + tf.reduce_sum(vs[1] * vs[1] * vs[1])
        opt.apply_gradients(zip(tape.gradient(loss, vs), vs))

    traced = function(lambda: step(vg, og))
    for i in range(4):
        if i == 2 and not isinstance(oe.learning_rate, schedules.LearningRateSchedule):
            oe.learning_rate = og.learning_rate = 0.01  # a callback changing the rate
        step(ve, oe)
        traced()
        for a, b in zip(vg, ve):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    assert len(og.variables()) == len(oe.variables())
    assert int(og.iterations.numpy()) == 4
    assert traced.experimental_get_tracing_count() == 1
