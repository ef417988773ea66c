"""Inputs, targets, losses, weights and metrics paired with a model's inputs and outputs by name
(dicts) or position (lists), never re-paired silently (issue 24).

The two-input, two-output model below has inputs named so that sorted-key order is the reverse
of ``model.inputs`` (``zeta`` first, ``alpha`` second) and outputs ``reg``, ``cls`` (sorted:
``cls``, ``reg``), and every weight is distinct: any pairing by sorted key, or any swap, changes
the numbers. Expected values are computed with NumPy from the same weights.
"""

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers

N = 6
RNG = np.random.default_rng(3)
XZ = RNG.normal(size=(N, 3)).astype(np.float32)
XA = RNG.normal(size=(N, 3)).astype(np.float32)
Y_REG = RNG.normal(size=(N,)).astype(np.float32) * 3
Y_CLS = np.array([0, 1, 2, 2, 1, 0])
SW_REG = np.array([1.0, 0.0, 2.0, 1.0, 0.5, 3.0], np.float32)
SW_CLS = np.array([0.0, 1.0, 1.0, 2.0, 4.0, 1.0], np.float32)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _two_by_two(run_eagerly=True, **compile_kwargs):
    zeta = keras.Input((3,), name="zeta")
    alpha = keras.Input((3,), name="alpha")
    h = layers.Concatenate()([zeta, alpha])
    reg = layers.Dense(1, name="reg")(h)
    cls = layers.Dense(3, name="cls", activation="softmax")(h)
    model = keras.Model([zeta, alpha], [reg, cls])
    rng = np.random.default_rng(7)
    model.set_weights([rng.normal(size=w.shape).astype(np.float32) for w in model.get_weights()])
    if compile_kwargs:
        model.compile(optimizer=keras.optimizers.SGD(0.0), run_eagerly=run_eagerly,
                      **compile_kwargs)
    return model


def _forward(model, xz=XZ, xa=XA):
    w = {v.name: v.numpy() for v in model.weights}
    h = np.concatenate([xz, xa], 1)
    reg = h @ w["reg/kernel:0"] + w["reg/bias:0"]
    logits = h @ w["cls/kernel:0"] + w["cls/bias:0"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    return reg, e / e.sum(1, keepdims=True)


def _mse(reg, sw=None):
    per = (reg[:, 0] - Y_REG) ** 2
    return float(np.mean(per if sw is None else per * sw))


def _sce(probs, sw=None):
    per = -np.log(probs[np.arange(N), Y_CLS])
    return float(np.mean(per if sw is None else per * sw))


def _evaluate(model, x, y, **kwargs):
    return model.evaluate(x, y, batch_size=N, verbose=0, return_dict=True, **kwargs)


LOSSES = {"list": ["mse", "sparse_categorical_crossentropy"],
          "dict": {"cls": "sparse_categorical_crossentropy", "reg": "mse"},
          "tuple": ("mse", "sparse_categorical_crossentropy")}
X_FORMS = {"list": lambda: [XZ, XA], "tuple": lambda: (XZ, XA),
           "dict": lambda: {"alpha": XA, "zeta": XZ}}
Y_FORMS = {"list": lambda: [Y_REG, Y_CLS], "tuple": lambda: (Y_REG, Y_CLS),
           "dict": lambda: {"cls": Y_CLS, "reg": Y_REG}}


@pytest.mark.parametrize("loss_form", sorted(LOSSES))
@pytest.mark.parametrize("x_form", sorted(X_FORMS))
@pytest.mark.parametrize("y_form", sorted(Y_FORMS))
def test_every_form_of_x_y_and_loss_pairs_by_name_or_position(loss_form, x_form, y_form):
    model = _two_by_two(loss=LOSSES[loss_form])
    reg, probs = _forward(model)
    logs = _evaluate(model, X_FORMS[x_form](), Y_FORMS[y_form]())
    assert logs["reg_loss"] == pytest.approx(_mse(reg), rel=1e-5)
    assert logs["cls_loss"] == pytest.approx(_sce(probs), rel=1e-5)
    assert logs["loss"] == pytest.approx(_mse(reg) + _sce(probs), rel=1e-5)


def test_issue_example_dict_losses_give_ln3_and_the_true_mse():
    rng = np.random.RandomState(0)
    x = rng.rand(16, 8).astype("float32")
    y_cls = rng.randint(0, 3, 16)
    y_reg = (rng.rand(16) * 10).astype("float32")
    inp = keras.Input((8,), name="x")
    h = layers.Dense(4, name="h", kernel_initializer="ones")(inp)
    reg = layers.Dense(1, name="reg", kernel_initializer="ones")(h)
    cls = layers.Dense(3, name="cls", activation="softmax", kernel_initializer="ones")(h)
    m = keras.Model(inp, [reg, cls])
    m.compile(optimizer=keras.optimizers.SGD(0.0),
              loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"})
    logs = m.evaluate(x, {"cls": y_cls, "reg": y_reg}, return_dict=True, verbose=0)
    true_mse = np.mean((4 * x.sum(1) - y_reg) ** 2)
    assert logs["cls_loss"] == pytest.approx(math.log(3), rel=1e-6)
    # recorded with TensorFlow 2.21 + tf-keras on this data: reg_loss 126.60450744628906
    assert logs["reg_loss"] == pytest.approx(true_mse, rel=1e-5)
    assert logs["reg_loss"] == pytest.approx(126.60450744628906, rel=1e-5)


@pytest.mark.parametrize("form", ["list", "dict", "scalar"])
def test_loss_weights_forms(form):
    weights = {"list": [0.5, 2.0], "dict": {"cls": 2.0, "reg": 0.5}, "scalar": 3.0}[form]
    model = _two_by_two(loss=LOSSES["list"], loss_weights=weights)
    reg, probs = _forward(model)
    w_reg, w_cls = (3.0, 3.0) if form == "scalar" else (0.5, 2.0)
    logs = _evaluate(model, [XZ, XA], [Y_REG, Y_CLS])
    assert logs["loss"] == pytest.approx(w_reg * _mse(reg) + w_cls * _sce(probs), rel=1e-5)
    assert logs["reg_loss"] == pytest.approx(_mse(reg), rel=1e-5)  # unweighted, as Keras logs


def test_one_loss_applies_to_every_output():
    model = _two_by_two(loss="mse")
    reg, probs = _forward(model)
    logs = _evaluate(model, [XZ, XA], {"reg": Y_REG, "cls": Y_CLS})
    cls_mse = float(np.mean(np.mean((Y_CLS[:, None] - probs) ** 2, axis=1)))
    assert logs["cls_loss"] == pytest.approx(cls_mse, rel=1e-5)
    assert logs["reg_loss"] == pytest.approx(_mse(reg), rel=1e-5)


@pytest.mark.parametrize("form", ["list", "dict", "nested"])
def test_metrics_forms(form):
    metrics = {"list": ["mae"],
               "dict": {"reg": "mae", "cls": ["sparse_categorical_accuracy"]},
               "nested": [["mae"], ["sparse_categorical_accuracy"]]}[form]
    model = _two_by_two(loss=LOSSES["dict"], metrics=metrics)
    reg, probs = _forward(model)
    logs = _evaluate(model, {"zeta": XZ, "alpha": XA}, {"reg": Y_REG, "cls": Y_CLS})
    assert logs["reg_mae"] == pytest.approx(np.mean(np.abs(reg[:, 0] - Y_REG)), rel=1e-5)
    if form == "list":
        cls_mae = np.mean(np.abs(Y_CLS[:, None] - probs))
        assert logs["cls_mae"] == pytest.approx(cls_mae, rel=1e-5)
    else:
        acc = np.mean(probs.argmax(1) == Y_CLS)
        assert logs["cls_sparse_categorical_accuracy"] == pytest.approx(acc)
        assert "cls_mae" not in logs and "reg_sparse_categorical_accuracy" not in logs


def test_a_metric_object_given_once_is_copied_per_output():
    metric = keras.metrics.MeanAbsoluteError()
    model = _two_by_two(loss="mse", metrics=[metric])
    logs = _evaluate(model, [XZ, XA], [Y_REG, Y_CLS])
    assert logs["reg_mean_absolute_error"] != logs["cls_mean_absolute_error"]


@pytest.mark.parametrize("form", ["single", "list", "dict", "dict_partial"])
def test_sample_weight_forms(form):
    sw = {"single": SW_REG, "list": [SW_REG, SW_CLS], "dict": {"cls": SW_CLS, "reg": SW_REG},
          "dict_partial": {"cls": SW_CLS}}[form]
    model = _two_by_two(loss=LOSSES["list"], metrics={"reg": "mae"}, weighted_metrics=["mae"])
    reg, probs = _forward(model)
    logs = _evaluate(model, [XZ, XA], [Y_REG, Y_CLS], sample_weight=sw)
    sw_reg = None if form == "dict_partial" else SW_REG
    sw_cls = SW_REG if form == "single" else SW_CLS
    assert logs["reg_loss"] == pytest.approx(_mse(reg, sw_reg), rel=1e-5)
    assert logs["cls_loss"] == pytest.approx(_sce(probs, sw_cls), rel=1e-5)
    # `metrics` ignore sample weights, `weighted_metrics` use them (Keras's rule)
    err = np.abs(reg[:, 0] - Y_REG)
    assert logs["reg_mae"] == pytest.approx(np.mean(err), rel=1e-5)
    weighted = np.mean(err) if sw_reg is None else np.sum(err * sw_reg) / np.sum(sw_reg)
    assert logs["reg_weighted_mae"] == pytest.approx(weighted, rel=1e-5)


def test_missing_target_means_no_loss_for_that_output():
    model = _two_by_two(loss=LOSSES["list"])
    reg, _ = _forward(model)
    logs = _evaluate(model, [XZ, XA], {"reg": Y_REG})
    assert logs["loss"] == pytest.approx(_mse(reg), rel=1e-5)


@pytest.mark.parametrize("element", ["dict", "tuple", "dict_with_weights"])
def test_datasets_yielding_each_form_train_like_arrays(element):
    model = _two_by_two(run_eagerly=False, loss=LOSSES["dict"], metrics={"reg": "mae"})
    reg, probs = _forward(model)
    if element == "dict":
        data = ({"alpha": XA, "zeta": XZ}, {"cls": Y_CLS, "reg": Y_REG})
    elif element == "tuple":
        data = ((XZ, XA), (Y_REG, Y_CLS))
    else:
        data = ({"alpha": XA, "zeta": XZ}, {"cls": Y_CLS, "reg": Y_REG}, {"reg": SW_REG})
    ds = tf.data.Dataset.from_tensor_slices(data).batch(4)
    logs = model.evaluate(ds, verbose=0, return_dict=True)
    sw = SW_REG if element == "dict_with_weights" else None
    assert logs["reg_loss"] == pytest.approx(_mse(reg, sw), rel=1e-5)
    assert logs["cls_loss"] == pytest.approx(_sce(probs), rel=1e-5)
    assert logs["reg_mae"] == pytest.approx(np.mean(np.abs(reg[:, 0] - Y_REG)), rel=1e-5)
    model.fit(ds, epochs=1, verbose=0)  # and the traced train step takes the same element


def test_predict_and_batch_methods_take_every_x_form():
    model = _two_by_two(loss=LOSSES["list"])
    reg, probs = _forward(model)
    for x in (X_FORMS["list"](), X_FORMS["tuple"](), X_FORMS["dict"]()):
        out = model.predict(x, batch_size=4, verbose=0)
        np.testing.assert_allclose(out[0], reg, rtol=1e-5)
        np.testing.assert_allclose(out[1], probs, rtol=1e-5)
        np.testing.assert_allclose(model.predict_on_batch(x)[0], reg, rtol=1e-5)
        loss = model.test_on_batch(x, {"cls": Y_CLS, "reg": Y_REG}, return_dict=True)
        assert loss["reg_loss"] == pytest.approx(_mse(reg), rel=1e-5)
    np.testing.assert_allclose(model([XZ, XA])[0].numpy(), reg, rtol=1e-5)
    np.testing.assert_allclose(model({"alpha": XA, "zeta": XZ})[1].numpy(), probs, rtol=1e-5)


def test_train_on_batch_with_dicts_is_one_sgd_step_on_the_right_targets():
    model = _two_by_two(loss=LOSSES["dict"], loss_weights={"cls": 0.0, "reg": 1.0})
    model.optimizer.learning_rate.assign(0.1)
    reg, _ = _forward(model)
    h = np.concatenate([XZ, XA], 1)
    kernel = model.get_layer("reg").kernel.numpy()
    grad = h.T @ (2 * (reg[:, 0] - Y_REG) / N)[:, None]
    model.train_on_batch({"zeta": XZ, "alpha": XA}, {"cls": Y_CLS, "reg": Y_REG})
    np.testing.assert_allclose(model.get_layer("reg").kernel.numpy(), kernel - 0.1 * grad,
                               rtol=1e-4, atol=1e-6)


def test_mismatched_keys_and_lengths_are_errors_naming_both_sides():
    model = _two_by_two(loss=LOSSES["list"])
    with pytest.raises(ValueError, match=r"match no model output.*\['reg', 'cls'\].*'rg'"):
        _evaluate(model, [XZ, XA], {"cls": Y_CLS, "rg": Y_REG})
    with pytest.raises(ValueError, match=r"3 entries.*2 output\(s\) \['reg', 'cls'\]"):
        _evaluate(model, [XZ, XA], [Y_REG, Y_CLS, Y_CLS])
    with pytest.raises(ValueError, match=r"no entry for input\(s\) \['alpha'\].*'alfa'"):
        _evaluate(model, {"zeta": XZ, "alfa": XA}, [Y_REG, Y_CLS])
    with pytest.raises(ValueError, match=r"expects 2 input\(s\) \['zeta', 'alpha'\].*3"):
        model.predict([XZ, XA, XA], verbose=0)
    with pytest.raises(ValueError, match=r"sample_weight.*'regg'"):
        _evaluate(model, [XZ, XA], [Y_REG, Y_CLS], sample_weight={"regg": SW_REG})
    bad = _two_by_two(loss={"reg": "mse", "klass": "mse"})
    with pytest.raises(ValueError, match=r"`loss` has key\(s\) \['klass'\]"):
        _evaluate(bad, [XZ, XA], [Y_REG, Y_CLS])
    bad = _two_by_two(loss="mse", metrics={"reg": "mae", "klass": "mae"})
    with pytest.raises(ValueError, match=r"`metrics` has key\(s\) \['klass'\]"):
        _evaluate(bad, [XZ, XA], [Y_REG, Y_CLS])
    bad = _two_by_two(loss=["mse"])
    with pytest.raises(ValueError, match=r"`loss` is a list of 1 entries"):
        _evaluate(bad, [XZ, XA], [Y_REG, Y_CLS])


def test_extra_input_keys_warn_and_are_ignored_as_in_keras():
    model = _two_by_two(loss=LOSSES["list"])
    reg, _ = _forward(model)
    with pytest.warns(UserWarning, match="match no model input"):
        out = model.predict({"zeta": XZ, "alpha": XA, "extra": XA}, verbose=0)
    np.testing.assert_allclose(out[0], reg, rtol=1e-5)


def test_class_weight_single_output_and_per_output_by_name():
    inp = keras.Input((3,), name="x")
    out = layers.Dense(3, activation="softmax", name="probs")(inp)
    model = keras.Model(inp, out)
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy",
                  run_eagerly=True)
    probs = model.predict(XZ, verbose=0)
    cw = {0: 1.0, 1: 2.0, 2: 0.5}
    per = -np.log(probs[np.arange(N), Y_CLS]) * np.array([cw[c] for c in Y_CLS])
    logs = model.fit(XZ, Y_CLS, batch_size=N, class_weight=cw, verbose=0, shuffle=False)
    assert logs.history["loss"][0] == pytest.approx(np.mean(per), rel=1e-5)
    with pytest.raises(ValueError, match="keys from 0 to one less"):
        model.fit(XZ, Y_CLS, class_weight={0: 1.0, 2: 1.0}, verbose=0)

    two = _two_by_two(loss=LOSSES["list"])
    reg, probs = _forward(two)
    logs = two.fit([XZ, XA], {"reg": Y_REG, "cls": Y_CLS}, batch_size=N, verbose=0,
                   class_weight={"cls": cw}, sample_weight={"cls": SW_CLS})
    cls_w = np.array([cw[c] for c in Y_CLS]) * SW_CLS
    assert logs.history["cls_loss"][0] == pytest.approx(_sce(probs, cls_w), rel=1e-5)
    assert logs.history["reg_loss"][0] == pytest.approx(_mse(reg), rel=1e-5)
    with pytest.raises(ValueError, match="single output.*'reg', 'cls'"):
        two.fit([XZ, XA], [Y_REG, Y_CLS], class_weight=cw, verbose=0)
    with pytest.raises(ValueError, match=r"`class_weight` has key\(s\) \['klass'\]"):
        two.fit([XZ, XA], [Y_REG, Y_CLS], class_weight={"klass": cw}, verbose=0)


def test_dict_outputs_pair_by_their_keys_and_log_layer_names():
    inp = keras.Input((2,))
    first = layers.Dense(1, name="zzz", kernel_initializer="ones")(inp)
    second = layers.Dense(1, name="aaa", kernel_initializer="zeros")(inp)
    model = keras.Model(inp, {"first": first, "second": second})
    model.compile("sgd", {"first": "mse", "second": "mae"}, metrics={"first": "mae"},
                  run_eagerly=True)
    x = np.ones((2, 2), np.float32)
    y = {"first": np.zeros((2, 1)), "second": np.full((2, 1), 3.0)}
    # recorded with TensorFlow 2.21 + tf-keras: {'loss': 7.0, 'zzz_loss': 4.0, 'aaa_loss': 3.0,
    # 'zzz_mae': 2.0} (per-output names are the output layers', pairing is by dict key)
    assert model.evaluate(x, y, verbose=0, return_dict=True) == {
        "loss": 7.0, "zzz_loss": 4.0, "aaa_loss": 3.0, "zzz_mae": 2.0}
    out = model.predict(x, verbose=0)
    assert set(out) == {"first", "second"} and out["first"][0, 0] == 2.0


def test_dict_inputs_model_pairs_by_its_keys():
    a = keras.Input((1,), name="a_in")
    b = keras.Input((1,), name="b_in")
    model = keras.Model({"zeta": a, "alpha": b}, layers.Subtract()([a, b]))
    out = model.predict({"alpha": np.zeros((1, 1)), "zeta": np.ones((1, 1))}, verbose=0)
    assert out[0, 0] == 1.0
    with pytest.raises(ValueError, match=r"no entry for input\(s\) \['zeta'\]"):
        model.predict({"alpha": np.zeros((1, 1)), "a_in": np.ones((1, 1))}, verbose=0)


class _TwoHeads(keras.Model):
    def __init__(self):
        super().__init__()
        self.reg = layers.Dense(1, kernel_initializer="ones")
        self.cls = layers.Dense(3, kernel_initializer="zeros", activation="softmax")

    def call(self, x):
        return {"reg": self.reg(x), "cls": self.cls(x)}


def test_subclassed_dict_outputs_pair_by_key_and_list_targets_by_sorted_key():
    model = _TwoHeads()
    model.compile(keras.optimizers.SGD(0.0), loss={"reg": "mse", "cls": "sparse_categorical_"
                                                   "crossentropy"}, run_eagerly=True)
    reg = XZ.sum(1)
    expected = {"loss": pytest.approx(_mse(reg[:, None]) + math.log(3), rel=1e-5),
                "reg_loss": pytest.approx(_mse(reg[:, None]), rel=1e-5),
                "cls_loss": pytest.approx(math.log(3), rel=1e-5)}
    assert _evaluate(model, XZ, {"cls": Y_CLS, "reg": Y_REG}) == expected
    assert _evaluate(model, XZ, [Y_CLS, Y_REG]) == expected  # flattened order: cls, reg


def test_single_output_models_accept_dict_targets_by_output_name():
    seq = keras.Sequential([layers.Dense(1, input_shape=(3,), name="only",
                                         kernel_initializer="ones")])
    seq.compile(keras.optimizers.SGD(0.0), {"only": "mse"}, run_eagerly=True)
    expected = _mse(XZ.sum(1, keepdims=True))
    assert seq.evaluate(XZ, {"only": Y_REG}, verbose=0) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match=r"\['other'\].*\['only'\]"):
        seq.evaluate(XZ, {"other": Y_REG}, verbose=0)


def test_validation_split_and_validation_data_keep_dict_pairing():
    model = _two_by_two(loss=LOSSES["dict"])
    reg, probs = _forward(model)
    y = {"cls": Y_CLS, "reg": Y_REG}
    hist = model.fit({"zeta": XZ, "alpha": XA}, y, validation_split=0.5, batch_size=N,
                     shuffle=False, verbose=0)
    half = N // 2
    val_mse = float(np.mean((reg[half:, 0] - Y_REG[half:]) ** 2))
    assert hist.history["val_reg_loss"][0] == pytest.approx(val_mse, rel=1e-5)
    hist = model.fit([XZ, XA], [Y_REG, Y_CLS], batch_size=N, verbose=0,
                     validation_data=({"alpha": XA, "zeta": XZ}, y))
    assert hist.history["val_cls_loss"][0] == pytest.approx(_sce(probs), rel=1e-5)


def test_nested_outputs_flatten_as_keras_does():
    inp = keras.Input((2,))
    a = layers.Dense(1, name="a", kernel_initializer="ones")(inp)
    b = layers.Dense(1, name="b", kernel_initializer="zeros")(inp)
    c = layers.Dense(1, name="c", kernel_initializer=keras.initializers.Constant(2.0))(inp)
    model = keras.Model(inp, [a, [b, c]])
    model.compile("sgd", ["mse", "mae", "mse"], run_eagerly=True)
    x = np.ones((2, 2), np.float32)
    ya, yb, yc = np.zeros((2, 1)), np.full((2, 1), 3.0), np.full((2, 1), 1.0)
    # recorded with TensorFlow 2.21 + tf-keras for both target forms
    expected = {"loss": 16.0, "a_loss": 4.0, "b_loss": 3.0, "c_loss": 9.0}
    assert _evaluate(model, x, [ya, [yb, yc]]) == expected
    assert _evaluate(model, x, {"a": ya, "b": yb, "c": yc}) == expected
    out = model.predict(x, verbose=0)
    assert out[1][1][0, 0] == 4.0 and out[1][0][0, 0] == 0.0
