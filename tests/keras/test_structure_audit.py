"""Issue 24, item 4: every other place that takes a user structure pairs it by key (dicts) or by
position (lists) as TensorFlow does. Each case uses dicts whose insertion order differs from
their sorted order and values that differ per key, so a re-pairing changes the result.

The Keras-engine places (x, y, loss, loss_weights, metrics, sample_weight, class_weight,
datasets, predict and the *_on_batch methods) are tested in test_structures.py.
"""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_nest_map_structure_pairs_dicts_by_key():
    out = tf.nest.map_structure(lambda a, b: a - b, {"b": 1, "a": 10}, {"a": 1, "b": 100})
    assert out == {"b": -99, "a": 9}


def test_function_dict_arguments_signature_and_outputs():
    spec = {"b": tf.TensorSpec([None], tf.float32), "a": tf.TensorSpec([None], tf.float32)}

    @tf.function(input_signature=[spec])
    def f(d):
        return {"diff": d["a"] - 2 * d["b"], "a": d["a"]}

    out = f({"a": tf.constant([1.0]), "b": tf.constant([10.0])})
    assert out["diff"].numpy()[0] == -19.0 and out["a"].numpy()[0] == 1.0

    @tf.function
    def g(d, pair):
        return d["x"] - pair[1]

    assert g({"y": tf.constant(5.0), "x": tf.constant(1.0)},
             [tf.constant(0.0), tf.constant(3.0)]).numpy() == -2.0


def test_gradient_tape_dict_sources_come_back_keyed():
    v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        loss = 3 * v1 + 5 * v2
    grads = tape.gradient(loss, {"z": v1, "a": v2})
    assert grads["z"].numpy() == 3.0 and grads["a"].numpy() == 5.0


def test_cond_branches_returning_dicts_in_different_orders():
    @tf.function
    def c(p):
        return tf.cond(p, lambda: {"x": tf.constant(1.0), "y": tf.constant(2.0)},
                       lambda: {"y": tf.constant(20.0), "x": tf.constant(10.0)})

    assert c(tf.constant(False))["x"].numpy() == 10.0
    assert c(tf.constant(True))["y"].numpy() == 2.0


def test_while_loop_dict_loop_vars():
    @tf.function
    def w():
        return tf.while_loop(lambda d: d["i"] < 3,
                             lambda d: {"s": d["s"] + 10.0, "i": d["i"] + 1},
                             [{"i": tf.constant(0), "s": tf.constant(0.0)}])

    (out,) = w()
    assert out["i"].numpy() == 3 and out["s"].numpy() == 30.0


def test_dataset_padded_batch_and_zip_pair_by_key():
    def gen():
        for i in range(2):
            yield {"short": np.arange(i + 1, dtype=np.int64),
                   "long": np.arange(5 + i, dtype=np.int64)}

    sig = {"short": tf.TensorSpec([None], tf.int64), "long": tf.TensorSpec([None], tf.int64)}
    ds = tf.data.Dataset.from_generator(gen, output_signature=sig).padded_batch(
        2, padded_shapes={"long": [8], "short": [3]},
        padding_values={"long": np.int64(-1), "short": np.int64(-7)})
    batch = next(iter(ds))
    np.testing.assert_array_equal(batch["short"].numpy(), [[0, -7, -7], [0, 1, -7]])
    assert batch["long"].shape == (2, 8) and batch["long"].numpy()[0, -1] == -1
    zipped = next(iter(tf.data.Dataset.zip({"b": tf.data.Dataset.range(2),
                                            "a": tf.data.Dataset.range(10, 12)})))
    assert zipped["b"].numpy() == 0 and zipped["a"].numpy() == 10


def test_a_layer_receives_a_dict_as_given():
    class Diff(layers.Layer):
        def call(self, inputs):
            return inputs["a"] - inputs["b"]

    out = Diff()({"b": np.ones((1, 2), np.float32), "a": np.full((1, 2), 5.0, np.float32)})
    np.testing.assert_array_equal(out.numpy(), [[4.0, 4.0]])


def test_evaluate_list_follows_metrics_names():
    inp = keras.Input((1,))
    a = layers.Dense(1, name="a", kernel_initializer="ones")(inp)
    b = layers.Dense(1, name="b", kernel_initializer="zeros")(inp)
    model = keras.Model(inp, [a, b])
    model.compile("sgd", {"b": "mae", "a": "mse"}, run_eagerly=True)
    x = np.ones((2, 1), np.float32)
    values = model.evaluate(x, {"a": np.zeros((2, 1)), "b": np.full((2, 1), 3.0)}, verbose=0)
    assert model.metrics_names == ["loss", "a_loss", "b_loss"]
    assert values == [4.0, 1.0, 3.0]
