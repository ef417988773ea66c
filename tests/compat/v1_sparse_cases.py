"""tf.compat.v1.train optimizers given tf.IndexedSlices gradients (duplicate indices, rows that
some steps leave alone) and a dense step: the case table run by TF 2.21
(record_v1_sparse.py, fixture fixtures/v1_sparse.json) and by tapeflow (test_v1_sparse.py)."""

import numpy as np

START = np.arange(10.0, dtype=np.float32).reshape(5, 2) / 4.0 - 1.0
STEPS = [  # (values, indices); indices None: a dense gradient
    ([[1.0, 2.0], [3.0, -4.0], [0.5, 0.5]], [0, 2, 0]),
    ([[-1.0, 1.0], [2.0, 0.0], [1.0, 1.0]], [1, 1, 3]),
    ([[0.5, -0.5], [0.25, 1.0], [-1.0, 0.75], [0.1, 0.2], [2.0, -2.0]], None),
    ([[0.3, 0.3]], [4]),
]
CASES = {  # name: (class in tf.compat.v1.train, kwargs, slot names)
    "gradient_descent": ("GradientDescentOptimizer", {"learning_rate": 0.1}, []),
    "momentum": ("MomentumOptimizer", {"learning_rate": 0.1, "momentum": 0.9}, ["momentum"]),
    "nesterov": ("MomentumOptimizer", {"learning_rate": 0.1, "momentum": 0.9,
                                       "use_nesterov": True}, ["momentum"]),
    "adam": ("AdamOptimizer", {"learning_rate": 0.1}, ["m", "v"]),
    "adagrad": ("AdagradOptimizer", {"learning_rate": 0.1}, ["accumulator"]),
    "rmsprop": ("RMSPropOptimizer", {"learning_rate": 0.05, "momentum": 0.5},
                ["rms", "momentum"]),
    "rmsprop_centered": ("RMSPropOptimizer", {"learning_rate": 0.05, "momentum": 0.5,
                                              "centered": True}, ["rms", "momentum", "mg"]),
    "ftrl": ("FtrlOptimizer", {"learning_rate": 0.1}, ["accum", "linear"]),
    "ftrl_regularized": ("FtrlOptimizer", {"learning_rate": 0.1, "learning_rate_power": -0.7,
                                           "l1_regularization_strength": 0.05,
                                           "l2_regularization_strength": 0.1,
                                           "initial_accumulator_value": 0.2},
                         ["accum", "linear"]),
    "ftrl_shrinkage": ("FtrlOptimizer", {"learning_rate": 0.1, "l1_regularization_strength": 0.01,
                                         "l2_shrinkage_regularization_strength": 0.05, "beta": 0.2},
                       ["accum", "linear"]),
    "adadelta": ("AdadeltaOptimizer", {"learning_rate": 1.0}, ["accum", "accum_update"]),
    "proximal_adagrad": ("ProximalAdagradOptimizer", {"learning_rate": 0.1,
                                                      "l1_regularization_strength": 0.05,
                                                      "l2_regularization_strength": 0.1},
                         ["accumulator"]),
    "adagrad_da": ("AdagradDAOptimizer", {"learning_rate": 0.1},
                   ["gradient_accumulator", "gradient_squared_accumulator"]),
    "adagrad_da_regularized": ("AdagradDAOptimizer", {"learning_rate": 0.1,
                                                      "l1_regularization_strength": 0.05,
                                                      "l2_regularization_strength": 0.1},
                               ["gradient_accumulator", "gradient_squared_accumulator"]),
    "proximal_gradient_descent": ("ProximalGradientDescentOptimizer",
                                  {"learning_rate": 0.1, "l1_regularization_strength": 0.05,
                                   "l2_regularization_strength": 0.1}, []),
}


def run(tf, name):
    """Apply the steps with the case's optimizer; the variable and slots after each step."""
    cls, kwargs, slots = CASES[name]
    var = tf.Variable(START)
    step = tf.Variable(0, dtype=tf.int64)  # the global step (AdagradDA reads it)
    if cls == "AdagradDAOptimizer":
        kwargs = dict(kwargs, global_step=step)
    opt = getattr(tf.compat.v1.train, cls)(**kwargs)
    trace = []
    for values, indices in STEPS:
        if indices is None:
            grad = tf.constant(values)
        else:
            grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices),
                                    tf.constant(START.shape))
        opt.apply_gradients([(grad, var)], global_step=step)
        trace.append({"var": var.numpy().tolist(),
                      **{s: opt.get_slot(var, s).numpy().tolist() for s in slots}})
    return trace


GRAPH_STEPS = [[[0, 2]], [[2, 2], [3, 3]], [[0, 1]]]  # ids fed at each step


def run_graph(tf, name):
    """Three `minimize` steps of a TF1 graph whose loss looks rows up (embedding_lookup: an
    IndexedSlices gradient), run in a Session; the table after each step."""
    cls, kwargs, _ = CASES[name]
    v1 = tf.compat.v1
    trace = []
    with tf.Graph().as_default():
        table = v1.get_variable("table", initializer=START)
        ids = v1.placeholder(tf.int32, [None, 2])
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids) - 0.5))
        step = v1.train.get_or_create_global_step()
        if cls == "AdagradDAOptimizer":
            kwargs = dict(kwargs, global_step=step)
        train_op = getattr(v1.train, cls)(**kwargs).minimize(loss, global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for fed in GRAPH_STEPS:
                sess.run(train_op, {ids: fed})
                trace.append(sess.run(table).tolist())
    return trace
