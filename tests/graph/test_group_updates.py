"""Adam's per-variable updates grouped into one node (graph/passes/group_updates): the same bits
as the per-variable nodes over several steps, eagerly and in graphs, for mixed dtypes and shapes,
amsgrad, variables without gradients, and the groups the pass forms."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.passes import pipeline
from tapeflow.graph.verify import verify
from tapeflow.keras.optimizers import adam

rng = np.random.default_rng(11)


def _without_grouping(monkeypatch):
    monkeypatch.setattr(pipeline, "PASSES",
                        [p for p in pipeline.PASSES if p[0] != "group_updates"])


def _mlp():
    return tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(16, "relu"),
                                tf.keras.layers.Dropout(0.2), tf.keras.layers.Dense(10)])


def _conv_bn(bias=True):
    return tf.keras.Sequential([
        tf.keras.Input((8, 8, 3)), tf.keras.layers.Conv2D(4, 3, padding="same", use_bias=bias),
        tf.keras.layers.BatchNormalization(), tf.keras.layers.ReLU(),
        tf.keras.layers.Conv2D(6, 3, use_bias=False), tf.keras.layers.BatchNormalization(),
        tf.keras.layers.GlobalAveragePooling2D(), tf.keras.layers.Dense(10)])


def _train(make, x, y, steps=4, graph=True, amsgrad=False):
    """Every variable and optimizer slot after `steps` Adam steps, and the last step's
    optimization report."""
    tf.random.set_seed(3)
    model = make()
    opt = tf.keras.optimizers.Adam(1e-2, amsgrad=amsgrad)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    fn = tf.function(step) if graph else step
    for _ in range(steps):
        fn(x, y)
    report = fn.get_concrete_function(x, y).optimization_report() if graph else ""
    return [v.numpy() for v in model.variables + opt.variables()], report


_DATA = {
    _mlp: (rng.standard_normal((32, 20)).astype(np.float32), rng.integers(0, 10, 32)),
    _conv_bn: (rng.standard_normal((4, 8, 8, 3)).astype(np.float32), rng.integers(0, 10, 4)),
}


@pytest.mark.parametrize("make,count", [(_mlp, 4), (_conv_bn, 9)])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_grouped_updates_give_the_per_variable_bits(monkeypatch, make, count, amsgrad):
    x, y = (tf.constant(a) for a in _DATA[make])
    grouped, report = _train(make, x, y, amsgrad=amsgrad)
    assert f"group_updates: merged {count} updates into 1 grouped nodes ({count})" in report
    _without_grouping(monkeypatch)
    single, report = _train(make, x, y, amsgrad=amsgrad)
    assert "group_updates" not in report
    assert len(grouped) == len(single)
    for a, b in zip(grouped, single):
        np.testing.assert_array_equal(a, b)


def test_grouped_graph_matches_eager_training():
    """(No bias before a batch norm here: its gradient is rounding noise, which Adam scales up
    to a full step.)"""
    x, y = (tf.constant(a) for a in _DATA[_conv_bn])
    graph, _ = _train(lambda: _conv_bn(bias=False), x, y, steps=3)
    eager, _ = _train(lambda: _conv_bn(bias=False), x, y, steps=3, graph=False)
    for a, b in zip(graph, eager):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_the_group_op_eagerly_equals_the_per_variable_op():
    """Mixed dtypes and shapes (0-d, float16 on NumPy's path, float64 and float32 on the numba
    loop), several steps: the grouped kernel's bits are the per-variable kernel's."""
    shapes = [((3, 4), np.float32), ((), np.float32), ((5,), np.float64), ((2, 3), np.float16),
              ((7, 1, 2), np.float32)]
    inits = [rng.standard_normal(s).astype(d) for s, d in shapes]

    def states():
        return [[tf.Variable(w.copy()), tf.Variable(np.zeros_like(w)),
                 tf.Variable(np.zeros_like(w))] for w in inits]

    per_var, grouped = states(), states()
    lr = tf.constant(np.float32(0.01))
    hyper = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    for t in range(3):
        step = tf.constant(np.int64(t))
        grads = [tf.constant(rng.standard_normal(s).astype(d)) for s, d in shapes]
        for g, (w, m, v) in zip(grads, per_var):
            adam._apply_adam(g, lr, step, var=w, m=m, v=v, vhat=None, **hyper)
        out = adam._apply_adam_group(lr, step, *grads, vars=tuple(s[0] for s in grouped),
                                     ms=tuple(s[1] for s in grouped),
                                     vs=tuple(s[2] for s in grouped), vhat=None, **hyper)
        assert out.numpy() == lr.numpy()
        for a, b in zip(per_var, grouped):
            for u, w in zip(a, b):
                assert u.dtype == w.dtype and u.shape == w.shape
                np.testing.assert_array_equal(u.numpy(), w.numpy())


def test_variables_without_gradients_are_left_out_of_the_group(monkeypatch):
    """Only the variables that get gradients are updated (a frozen first layer)."""
    x, y = (tf.constant(a) for a in _DATA[_mlp])

    def frozen():
        model = _mlp()
        model.layers[0].trainable = False
        return model

    grouped, report = _train(frozen, x, y)
    assert "group_updates: merged 2 updates into 1 grouped nodes (2)" in report
    _without_grouping(monkeypatch)
    single, _ = _train(frozen, x, y)
    for a, b in zip(grouped, single):
        np.testing.assert_array_equal(a, b)


def test_optimizers_with_different_rates_form_different_groups():
    a, b = tf.Variable(np.ones(3, np.float32)), tf.Variable(np.ones((2, 2), np.float64))
    c, d = tf.Variable(np.ones(4, np.float32)), tf.Variable(np.ones(1, np.float32))
    fast, slow = tf.keras.optimizers.Adam(0.1), tf.keras.optimizers.Adam(0.01)

    @tf.function
    def step():
        fast.apply_gradients([(tf.ones(3), a), (tf.ones((2, 2), tf.float64), b)])
        slow.apply_gradients([(tf.ones(4), c), (tf.ones(1), d)])

    step()
    concrete = step.get_concrete_function()
    assert ("group_updates: merged 4 updates into 2 grouped nodes (2, 2)"
            in concrete.optimization_report())
    verify(concrete.graph)
    np.testing.assert_allclose(b.numpy(), np.full((2, 2), 0.9), rtol=1e-5)  # first step: ~lr
    np.testing.assert_allclose(d.numpy(), [0.99], rtol=1e-5)


def test_reads_after_the_grouped_update_see_the_new_values():
    a, b = tf.Variable(np.ones(3, np.float32)), tf.Variable(np.ones(3, np.float32))
    opt = tf.keras.optimizers.Adam(0.1)

    @tf.function
    def step():
        opt.apply_gradients([(tf.ones(3), a), (tf.ones(3), b)])
        return a.read_value() + b.read_value()

    got = step().numpy()
    assert "merged 2 updates into 1" in step.get_concrete_function().optimization_report()
    np.testing.assert_array_equal(got, a.numpy() + b.numpy())
