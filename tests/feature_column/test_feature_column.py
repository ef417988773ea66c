"""tf.feature_column + tf.keras.layers.DenseFeatures against recorded TF 2.21 values
(record_tf_feature_columns.py), inside Keras models, tf.data and tf.function."""

import json
import logging
import os

import fc_cases  # tests/feature_column is on sys.path (pytest puts it there)
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.feature_column import deprecation

fc = tf.feature_column
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "expected_tf.json")) as _f:
    EXPECTED = json.load(_f)


def _layer():
    layer = tf.keras.layers.DenseFeatures(
        fc_cases.columns(fc, tf.keras.initializers, tf.int64))
    layer(fc_cases.FEATURES)
    for weight in layer.weights:
        weight.assign(fc_cases.table_values(weight.shape))
    return layer


def test_matches_tf_values_eager_and_in_tf_function():
    layer = _layer()
    assert [c.name for c in layer.feature_columns] == EXPECTED["names"]
    assert [w.name for w in layer.weights] == EXPECTED["weights"]
    out = layer(fc_cases.FEATURES).numpy()
    np.testing.assert_allclose(out, EXPECTED["output"], atol=1e-5)
    traced = tf.function(lambda feats: layer(feats))
    feats = {k: tf.constant(v) for k, v in fc_cases.FEATURES.items()}
    np.testing.assert_allclose(traced(feats).numpy(), out, atol=1e-6)


def test_each_constructor_logs_tf_deprecation_once(caplog):
    deprecation._warned.clear()
    with caplog.at_level(logging.WARNING, logger="tapeflow"):
        fc.numeric_column("a")
        fc.numeric_column("b")
        fc.crossed_column(["a", "b"], 3)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "numeric_column (from tensorflow.python.feature_column.feature_column_v2) is " \
           "deprecated" in messages[0] and __file__ in messages[0]
    assert "HashedCrossing" in messages[1]


def test_embedding_gradient_is_the_mean_combiner():
    thal = fc.categorical_column_with_vocabulary_list("t", ["a", "b", "c"])
    layer = tf.keras.layers.DenseFeatures([fc.embedding_column(thal, 2)])
    feats = {"t": tf.constant([["a", "b"], ["c", ""], ["a", "a"]])}
    upstream = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with tf.GradientTape() as tape:
        out = layer(feats)
        loss = tf.reduce_sum(out * upstream)
    table = layer.weights[0]
    assert table.trainable and table.shape == (3, 2)
    expected_out = np.stack([(table.numpy()[0] + table.numpy()[1]) / 2, table.numpy()[2],
                             table.numpy()[0]])
    np.testing.assert_allclose(out.numpy(), expected_out, rtol=1e-6)
    grad = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()
    u = upstream.numpy()
    np.testing.assert_allclose(grad, [u[0] / 2 + u[2], u[0] / 2, u[1]], rtol=1e-6)


def _data(n=64):
    rng = np.random.default_rng(0)
    age = rng.uniform(20, 70, n).astype(np.float32)
    thal = rng.choice(np.array(["fixed", "normal", "reversible"]), n)
    y = ((age > 45) ^ (thal == "normal")).astype(np.float32)
    return {"age": age, "thal": thal}, y


def _columns():
    age = fc.numeric_column("age", normalizer_fn=lambda x: (x - 45.0) / 15.0)
    thal = fc.categorical_column_with_vocabulary_list("thal", ["fixed", "normal", "reversible"])
    age_b = fc.bucketized_column(fc.numeric_column("age"), [30, 45, 60])
    return [age, age_b, fc.indicator_column(thal), fc.embedding_column(thal, 4),
            fc.indicator_column(fc.crossed_column([age_b, "thal"], 16))]


def test_sequential_fits_on_a_dataset_of_dicts():
    tf.keras.utils.set_random_seed(1)
    x, y = _data()
    model = tf.keras.Sequential([tf.keras.layers.DenseFeatures(_columns()),
                                 tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(tf.keras.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = model.fit(ds, epochs=15, verbose=0)
    loss = history.history["loss"]
    assert loss[-1] < 0.6 * loss[0]
    table = model.layers[0].weights[0]
    assert "thal_embedding/embedding_weights" in table.name
    assert model.predict(x, verbose=0).shape == (64, 1)


def test_functional_model_with_an_input_per_feature():
    tf.keras.utils.set_random_seed(2)
    x, y = _data()
    inputs = {"age": tf.keras.Input((1,), name="age"),
              "thal": tf.keras.Input((1,), name="thal", dtype=tf.string)}
    h = tf.keras.layers.DenseFeatures(_columns())(inputs)
    out = tf.keras.layers.Dense(1, activation="sigmoid")(tf.keras.layers.Dense(8, "relu")(h))
    model = tf.keras.Model(inputs, out)
    model.compile(tf.keras.optimizers.Adam(0.05), "binary_crossentropy")
    history = model.fit({k: v[:, None] for k, v in x.items()}, y, batch_size=16, epochs=15,
                        verbose=0)
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0]


def test_config_round_trip_keeps_outputs():
    cols = [c for c in fc_cases.columns(fc, tf.keras.initializers, tf.int64) if c.name != "xy"]
    layer = tf.keras.layers.DenseFeatures(cols)
    out = layer(fc_cases.FEATURES)
    again = tf.keras.layers.DenseFeatures.from_config(json.loads(json.dumps(layer.get_config())))
    again(fc_cases.FEATURES)
    for src, dst in zip(layer.weights, again.weights):
        dst.assign(src)
    np.testing.assert_array_equal(again(fc_cases.FEATURES).numpy(), out.numpy())
    with pytest.raises(ValueError, match="cannot hold normalizer_fn"):
        tf.keras.layers.DenseFeatures(fc_cases.columns(fc, tf.keras.initializers,
                                                       tf.int64)).get_config()


def test_bad_inputs_are_named():
    age = fc.numeric_column("age")
    with pytest.raises(ValueError, match="no feature 'age'"):
        tf.keras.layers.DenseFeatures([age])({"other": [[1.0]]})
    with pytest.raises(ValueError, match="indicator_column or embedding_column"):
        tf.keras.layers.DenseFeatures([fc.categorical_column_with_identity("n", 3)])
    ident = fc.indicator_column(fc.categorical_column_with_identity("n", 3))
    with pytest.raises(ValueError, match=r"ids must be in \[0, 3\)"):
        tf.keras.layers.DenseFeatures([ident])({"n": np.array([1, 5])})
    with pytest.raises(ValueError, match="not supported for crossing|unsupported key"):
        fc.crossed_column([fc.categorical_column_with_hash_bucket("c", 3), "d"], 4)
    with pytest.raises(ValueError, match="sorted"):
        fc.bucketized_column(age, [3, 1])
