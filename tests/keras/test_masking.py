"""Masking end to end: Embedding(mask_zero=True) and Masking make a `_keras_mask` that flows
through the layers that pass masks, and the recurrent layers, attention, pooling and the
compiled loss and metrics honour it. Numbers are recorded from tf-keras 2.21 on the same
models (reference/make_masking_values.py); eager and tf.function must agree."""

import importlib.util
import os

import numpy as np
import pytest

import tapeflow as tf

_spec = importlib.util.spec_from_file_location(
    "make_masking_values", os.path.join(os.path.dirname(__file__), "reference",
                                        "make_masking_values.py"))
_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref)
REF = np.load(_ref.PATH)
L = tf.keras.layers


def _model(name):
    model = _ref.CASES[name](tf.keras)
    model.set_weights([REF[f"{name}/w/{_ref.key(w)}"] for w in model.weights])
    return model


@pytest.mark.parametrize("name", sorted(_ref.CASES))
def test_masked_models_match_tf_keras(name):
    model = _model(name)
    x = tf.constant(_ref.inputs(name))
    with tf.GradientTape() as tape:
        y = model(x)
        s = tf.reduce_sum(y * tf.constant(REF[f"{name}/cot"]))
    grads = tape.gradient(s, model.trainable_weights)
    np.testing.assert_allclose(y.numpy(), REF[f"{name}/y"], rtol=1e-4, atol=1e-5)
    mask = getattr(y, "_keras_mask", None)
    if REF[f"{name}/mask"].size:
        np.testing.assert_array_equal(mask.numpy(), REF[f"{name}/mask"])
    else:
        assert mask is None
    assert len(grads) == len([k for k in REF.files if k.startswith(f"{name}/dw/")])
    for w, g in zip(model.trainable_weights, grads):
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), REF[f"{name}/dw/{_ref.key(w)}"],
                                   rtol=1e-4, atol=1e-5, err_msg=f"{name} {w.name}")
    traced = tf.function(lambda t: model(t))(x)
    np.testing.assert_allclose(traced.numpy(), y.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(_ref.LOSS_CASES))
def test_masked_timesteps_do_not_count_in_loss_and_metrics(name):
    model = _model(name)
    loss, metrics = _ref.LOSS_CASES[name]
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=loss, metrics=metrics)
    x, target = _ref.inputs(name), REF[f"{name}/target"]
    np.testing.assert_allclose(model.evaluate(x, target, verbose=0), REF[f"{name}/evaluate"],
                               rtol=1e-5)
    np.testing.assert_allclose(
        model.evaluate(x, target, sample_weight=_ref.SAMPLE_WEIGHT, verbose=0),
        REF[f"{name}/evaluate_sw"], rtol=1e-5)
    model.fit(x, target, batch_size=_ref.BATCH, epochs=1, shuffle=False, verbose=0)
    for w in model.weights:
        np.testing.assert_allclose(w.numpy(), REF[f"{name}/fit_w/{_ref.key(w)}"], rtol=1e-4,
                                   atol=1e-5, err_msg=w.name)


def test_symbolic_outputs_carry_masks():
    x = tf.keras.Input(shape=(None,), dtype="int32")
    h = L.Embedding(5, 3, mask_zero=True)(x)
    assert h._keras_mask.shape.as_list() == [None, None]
    assert L.Dense(2)(h)._keras_mask is not None
    assert getattr(L.Flatten()(h), "_keras_mask", None) is None  # Flatten drops it
    assert getattr(L.LSTM(2)(h), "_keras_mask", None) is None
    assert L.LSTM(2, return_sequences=True)(h)._keras_mask is not None


def test_compute_mask_and_supports_masking():
    emb = L.Embedding(5, 3, mask_zero=True)
    ids = tf.constant([[1, 0, 2]])
    np.testing.assert_array_equal(emb.compute_mask(ids).numpy(), [[True, False, True]])
    assert L.Embedding(5, 3).compute_mask(ids) is None
    assert L.Dense(2).supports_masking and L.Dropout(0.1).supports_masking
    assert not L.Conv1D(2, 2).supports_masking
    with pytest.raises(TypeError, match="does not support masking"):
        L.Conv1D(2, 2).compute_mask(ids, tf.constant([[True]]))
    lam = L.Lambda(lambda t: t * 2, mask=lambda t, m: tf.not_equal(t[..., 0], 0.0))
    out = lam(tf.constant([[[1.0], [0.0]]]))
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[True, False]])
    assert L.Embedding(5, 3, mask_zero=True).get_config()["mask_zero"] is True


def test_explicit_mask_wins_and_sequential_propagates():
    model = tf.keras.Sequential([L.Embedding(6, 3, mask_zero=True, input_length=4),
                                 L.SimpleRNN(2, return_sequences=True)])
    ids = np.array([[1, 2, 0, 0]])
    out = model(ids)
    np.testing.assert_allclose(out.numpy()[0, 2], out.numpy()[0, 1])  # carried through
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[True, True, False, False]])
    rnn = model.layers[1]
    h = model.layers[0](ids)
    unmasked = rnn(h, mask=tf.ones([1, 4], tf.bool))
    assert not np.allclose(unmasked.numpy()[0, 2], unmasked.numpy()[0, 1])


def test_masking_layer_zeroes_and_masks_steps():
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [3.0, 0.0]]], np.float32)
    out = L.Masking(0.0)(x)
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[True, False, True]])
    np.testing.assert_array_equal(out.numpy(), x)
    out = L.Masking(3.0)(tf.constant(x))
    np.testing.assert_array_equal(out._keras_mask.numpy(), [[True, True, True]])
    assert L.Masking.from_config(L.Masking(2.0).get_config()).mask_value == 2.0


def test_masked_rnn_while_loop_matches_unrolled():
    """An unknown time dimension runs the tf.while_loop path; masks skip steps there too."""
    layer = L.GRU(3, return_sequences=True, go_backwards=True)
    x = tf.constant(np.random.default_rng(2).standard_normal((2, 4, 2)).astype(np.float32))
    mask = tf.constant([[True, False, True, False], [False, True, True, True]])
    expected = layer(x, mask=mask)
    fn = tf.function(lambda t, m: layer(t, mask=m),
                     input_signature=[tf.TensorSpec([None, None, 2]),
                                      tf.TensorSpec([None, None], tf.bool)])
    np.testing.assert_allclose(fn(x, mask).numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
