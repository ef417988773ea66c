"""RaggedTensor inputs in Keras: ``keras.Input(ragged=True)``, Embedding, the recurrent layers,
pooling, lookups, and fit/predict/evaluate on ragged data give tf-keras 2.21's numbers
(ragged_cases.py, recorded in reference/ragged_keras.json)."""

import json
from pathlib import Path

import numpy as np
import pytest
from ragged_cases import CASES, IDS, SEQ, ids_model

import tapeflow as tf
from tapeflow import keras

REF = json.loads((Path(__file__).parent / "reference" / "ragged_keras.json").read_text())


def _close(got, want, path="result"):
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{path}: expected a RaggedTensor, got {got!r}"
        assert got["splits"] == want["splits"], f"{path}: row splits differ"
        _close(got["values"], want["values"], path + ".values")
    elif isinstance(want, list) and want and isinstance(want[0], (dict, list)) and (
            isinstance(want[0], dict) or len({np.shape(w) for w in want}) > 1):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=2e-5, atol=2e-6, err_msg=path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    keras.backend.clear_session()
    tf.random.set_seed(0)
    got = CASES[name](tf, keras)
    want = REF[name]
    if isinstance(want, dict) and "splits" not in want:
        assert sorted(got) == sorted(want)
        for key in want:
            _close(got[key], want[key], key)
    else:
        _close(got, want, name)


def test_input_is_a_ragged_keras_tensor():
    x = keras.Input(shape=(None, 4), ragged=True)
    assert x.type_spec == tf.RaggedTensorSpec([None, None, 4], tf.float32, 1, tf.int64)
    assert keras.Input(shape=(None, None), ragged=True).ragged_rank == 2
    spec = tf.RaggedTensorSpec([None, None], tf.int32, 1)
    assert keras.Input(type_spec=spec).type_spec == spec
    emb = keras.layers.Embedding(5, 3)(keras.Input(shape=(None,), ragged=True, dtype="int32"))
    assert emb.shape.as_list() == [None, None, 3] and emb.ragged_rank == 1
    pooled = keras.layers.GlobalAveragePooling1D()(emb)
    assert not hasattr(pooled, "ragged_rank") and pooled.shape.as_list() == [None, 3]


def _padded(rt):
    return rt.to_tensor(), tf.sequence_mask(rt.row_lengths())


@pytest.mark.parametrize("make", [lambda: keras.layers.LSTM(3, return_sequences=True),
                                  lambda: keras.layers.GRU(2, go_backwards=True)])
def test_ragged_rnn_equals_padded_and_masked_in_a_traced_function(make):
    layer = make()
    rt = tf.ragged.constant(SEQ, ragged_rank=1)
    eager = layer(rt)
    traced = tf.function(lambda x: layer(x))(rt)
    dense, mask = _padded(rt)
    masked = layer(dense, mask=mask)
    if isinstance(eager, tf.RaggedTensor):
        np.testing.assert_allclose(traced.flat_values.numpy(), eager.flat_values.numpy(),
                                   rtol=1e-6)
        np.testing.assert_allclose(eager.flat_values.numpy(),
                                   tf.boolean_mask(masked, mask).numpy(), rtol=1e-6)
    else:
        np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-6)
        np.testing.assert_allclose(eager.numpy(), masked.numpy(), rtol=1e-6)


def test_ragged_lstm_gradient_equals_masked_gradient():
    layer = keras.layers.LSTM(2)
    rt = tf.ragged.constant(SEQ, ragged_rank=1)
    layer(rt)
    dense, mask = _padded(rt)
    with tf.GradientTape(persistent=True) as tape:
        a = tf.reduce_sum(layer(rt) ** 2)
        b = tf.reduce_sum(layer(dense, mask=mask) ** 2)
    for ga, gb in zip(tape.gradient(a, layer.trainable_weights),
                      tape.gradient(b, layer.trainable_weights)):
        np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-5, atol=1e-7)


def test_errors_name_the_layer():
    rt = tf.ragged.constant(SEQ, ragged_rank=1)
    with pytest.raises(ValueError, match="cannot be applied to RaggedTensor"):
        keras.layers.LSTM(2)(rt, mask=tf.ones([3, 3], tf.bool))
    with pytest.raises(ValueError, match="unrolling"):
        keras.layers.SimpleRNN(2, unroll=True)(rt)
    dense = keras.layers.Dense(2)
    dense.build((None, 1))
    with pytest.raises(ValueError, match="innermost dimension is non-ragged"):
        dense(tf.ragged.constant([[1.0, 2.0], [3.0]]))


def test_ragged_model_saves_and_loads(tmp_path):
    keras.backend.clear_session()
    model = ids_model(keras, tf)
    x = tf.ragged.constant(IDS, dtype=tf.int64)
    path = str(tmp_path / "ragged.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.inputs[0].ragged_rank == 1
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_shuffled_fit_on_ragged_arrays_runs():
    keras.backend.clear_session()
    model = ids_model(keras, tf)
    model.compile("adam", "mse")
    x = tf.ragged.constant(IDS * 3, dtype=tf.int64)
    history = model.fit(x, np.ones((9, 1), np.float32), batch_size=4, epochs=2, verbose=0,
                        validation_split=0.25)
    assert len(history.history["val_loss"]) == 2


def test_sparse_input_model_saves_and_loads(tmp_path):
    x = keras.Input(shape=(5,), sparse=True)
    assert x.type_spec == tf.SparseTensorSpec([None, 5], tf.float32)
    model = keras.Model(x, keras.layers.Dense(2)(x))
    st = tf.SparseTensor([[0, 1], [2, 0]], [1.0, 3.0], [3, 5])
    path = str(tmp_path / "sparse.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded.inputs[0].type_spec, tf.SparseTensorSpec)
    np.testing.assert_allclose(loaded.predict(st, verbose=0), model.predict(st, verbose=0))
    with pytest.raises(ValueError, match="both sparse and ragged"):
        keras.Input(shape=(5,), sparse=True, ragged=True)
