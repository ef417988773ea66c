"""One small program per optimizer pass, for the golden before/after listings in goldens/.

``python tests/graph/pass_goldens.py`` rewrites the golden files (review the diff: a golden
changes only when a pass's behaviour is meant to change); test_pass_goldens.py compares.
"""

from __future__ import annotations

import pathlib

import numpy as np

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes.pipeline import PASSES
from tapeflow.graph.printer import format_graph
from tapeflow.ops import normalization_ops

GOLDENS = pathlib.Path(__file__).parent / "goldens"
_rng = np.random.default_rng(0)


def _t(*shape):
    return tf.constant(_rng.standard_normal(shape).astype(np.float32))


def _bn(x, c):
    ones, zeros = tf.ones([c]), tf.zeros([c])
    return apply(normalization_ops._fused_batch_norm, x, ones, zeros, epsilon=1e-3)[0]


def _fold(x):
    return x + tf.constant(2.0) * 3.0


def _simplify(x):
    return tf.reshape(x * 1.0, [2, 3]) - 0.0


def _pool_first(x, w, b):
    y = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "VALID"), b)
    return tf.nn.avg_pool2d(y, 2, 2, "VALID")


def _table_first(table, kernel):
    ids = tf.constant([[0, 1, 2, 1], [2, 2, 0, 1]])  # [B, T]: 8 rows of a 3-row table
    with tf.GradientTape() as tape:
        tape.watch([table, kernel])
        rows = tf.reshape(tf.transpose(tf.gather(table, ids), [1, 0, 2]), [-1, 2])
        loss = tf.reduce_sum(tf.square(tf.matmul(rows, kernel)))
    return tape.gradient(loss, [table, kernel])


def _cse(x):
    return tf.exp(x) + tf.exp(x)


def _dce(x):
    tf.sin(x)
    return tf.cos(x)


def _fuse(x, w, b):
    return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b))


def _share_tiles(x, w, b):
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.nn.bias_add(tf.nn.conv2d(tf.nn.relu(x), w, 1, "SAME"), b)
        loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, w)


def _prologue(x, w, b):
    return tf.nn.bias_add(tf.nn.conv2d(tf.nn.relu(_bn(x, 16)), w, 1, "SAME"), b)


def _reuse_statistics(a, b):
    return tf.nn.relu(_bn(a, 5)), _bn(tf.concat([a, b], axis=-1), 8)


def _grow_concat(x, y1, y2):
    c1 = tf.concat([x, y1], axis=-1)
    c2 = tf.concat([c1, y2], axis=-1)
    return tf.nn.relu(c1), tf.nn.relu(c2)


def _conv_into_concat(x, w1, w2, b):
    y1 = tf.nn.bias_add(tf.nn.conv2d(tf.nn.relu(_bn(x, 16)), w1, 1, "SAME"), b)
    c1 = tf.concat([x, y1], axis=-1)
    y2 = tf.nn.bias_add(tf.nn.conv2d(tf.nn.relu(_bn(c1, 28)), w2, 1, "SAME"), b)
    return _bn(tf.concat([c1, y2], axis=-1), 40)


def _bias_grad_sums(x, w, b):
    with tf.GradientTape() as tape:
        tape.watch(b)
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
        loss = tf.reduce_sum(tf.nn.relu(_bn(tf.concat([x, y], axis=-1), 4)) * x[..., :1])
    return tape.gradient(loss, b)


def _group_updates(g1, g2, g3):
    w1, w2, b = (tf.Variable(np.ones(s, np.float32), name=n)
                 for s, n in (((2, 3), "w1"), ((3,), "w2"), ((), "b")))
    opt = tf.keras.optimizers.Adam(0.01)

    def step(g1, g2, g3):
        opt.apply_gradients([(g1, w1), (g2, w2), (g3, b)])
        return w1.read_value()

    return step, (g1, g2, g3)


def programs() -> dict:
    """pass name -> (python function, example arguments)."""
    conv = (_t(4, 16, 16, 16), _t(3, 3, 16, 16), _t(16))
    return {
        "fold": (_fold, (_t(3),)),
        "simplify": (_simplify, (_t(2, 3),)),
        "pool_first": (_pool_first, (_t(2, 4, 4, 3), _t(1, 1, 3, 5), _t(5))),
        "table_first": (_table_first, (tf.ones([3, 2]), tf.ones([2, 4]))),
        "group_updates": _group_updates(_t(2, 3), _t(3), tf.constant(np.float32(0.5))),
        "cse": (_cse, (_t(3),)),
        "dce": (_dce, (_t(3),)),
        "fuse": (_fuse, (_t(1, 4, 4, 2), _t(3, 3, 2, 2), _t(2))),
        "share_tiles": (_share_tiles, conv),
        "prologue": (_prologue, conv),
        "reuse_statistics": (_reuse_statistics, (_t(2, 3, 3, 5), _t(2, 3, 3, 3))),
        "grow_concat": (_grow_concat, (_t(1, 2, 2, 2), _t(1, 2, 2, 1), _t(1, 2, 2, 1))),
        "conv_into_concat": (_conv_into_concat, (_t(2, 16, 16, 16), _t(3, 3, 16, 12),
                                                 _t(3, 3, 28, 12), _t(12))),
        "bias_grad_sums": (_bias_grad_sums, (_t(1, 3, 3, 2), _t(1, 1, 2, 2), _t(2))),
    }


def before_and_after(name: str) -> str:
    """The listing of the graph the pass receives in the pipeline, its report, and the
    listing of what it returns."""
    fn, args = programs()[name]
    graph = tf.function(fn, name=name).get_concrete_function(*args).traced_graph
    for pass_name, run in PASSES:
        before = format_graph(graph)
        graph, report = run(graph)
        if pass_name == name:
            return f"# before\n{before}\n# {report}\n{format_graph(graph)}\n"
    raise KeyError(name)


if __name__ == "__main__":
    GOLDENS.mkdir(exist_ok=True)
    for pass_name in programs():
        (GOLDENS / f"{pass_name}.txt").write_text(before_and_after(pass_name))
