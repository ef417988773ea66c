"""InputSpec and its enforcement on call; Identity; Wrapper; layers.serialize/deserialize;
AbstractRNNCell. Error messages are tf-keras 2.21's (recorded from tf_keras, quoted here)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers
from tapeflow.keras.engine.input_spec import assert_input_compatibility, to_tensor_shape

InputSpec = layers.InputSpec


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


class Checked(layers.Layer):
    def __init__(self, spec, **kwargs):
        super().__init__(**kwargs)
        self.input_spec = spec
        self.calls = 0

    def call(self, x):
        self.calls += 1
        return x


F32 = np.zeros((2, 3), np.float32)

# (spec, input, message tf-keras 2.21 gives for layer "m")
REFUSED = [
    (InputSpec(ndim=2), np.zeros((2, 3, 4), np.float32),
     'Input 0 of layer "m" is incompatible with the layer: expected ndim=2, found ndim=3. '
     "Full shape received: (2, 3, 4)"),
    (InputSpec(min_ndim=3), F32, "expected min_ndim=3, found ndim=2. Full shape received: (2, 3)"),
    (InputSpec(max_ndim=2), np.zeros((2, 3, 4), np.float32), "expected max_ndim=2, found ndim=3"),
    (InputSpec(axes={-1: 4}), F32,
     "expected axis -1 of input shape to have value 4, but received input with shape (2, 3)"),
    (InputSpec(shape=(None, 5)), F32, "expected shape=(None, 5), found shape=(2, 3)"),
    (InputSpec(dtype="float32"), np.zeros((2, 3)),
     "expected dtype=float32, found dtype=<dtype: 'float64'>"),
    (InputSpec(ndim=1), 3.0, "expected ndim=1, found ndim=0. Full shape received: ()"),
    ([InputSpec(), InputSpec()], F32, 'Layer "m" expects 2 input(s), but it received 1 input'),
]


@pytest.mark.parametrize("spec,x,message", REFUSED)
def test_input_spec_refuses_with_tf_keras_message(spec, x, message):
    layer = Checked(spec, name="m")
    with pytest.raises(ValueError) as info:
        layer(x)
    assert message in str(info.value)
    assert layer.calls == 0 and not layer.built  # checked before build and call


@pytest.mark.parametrize("spec,x", [
    (InputSpec(ndim=2, axes={1: 3}, dtype="float32"), F32),
    (InputSpec(shape=(None, 3, 1), allow_last_axis_squeeze=True), F32),
    (InputSpec(shape=(None, 3), allow_last_axis_squeeze=True), np.zeros((2, 3, 1), np.float32)),
    (InputSpec(min_ndim=2, max_ndim=2), F32),
    (None, np.zeros(5)),
])
def test_input_spec_accepts(spec, x):
    np.testing.assert_array_equal(Checked(spec)(x).numpy(), x)


def test_input_spec_checked_in_functional_and_traced_calls():
    layer = Checked(InputSpec(axes={-1: 4}), name="sym")
    with pytest.raises(ValueError, match=r"expected axis -1 .* value 4, but received input "
                                         r"with shape \(None, 3\)"):
        layer(tf.keras.Input((3,)))
    traced = tf.function(lambda x: Checked(InputSpec(ndim=3), name="t")(x))
    with pytest.raises(ValueError, match='layer "t" .* expected ndim=3, found ndim=2'):
        traced(tf.constant(F32))
    ok = Checked(InputSpec(shape=(None, 3)))
    np.testing.assert_array_equal(tf.function(ok)(tf.constant(F32)).numpy(), F32)


def test_input_spec_dict_inputs_by_name_and_type_errors():
    spec = [InputSpec(name="a", ndim=1), InputSpec(name="b", ndim=2)]
    with pytest.raises(ValueError, match=r'Missing data for input "b". You passed a data '
                                         r"dictionary with keys \['a', 'c'\]"):
        assert_input_compatibility(spec, {"a": np.zeros(2), "c": np.zeros(2)}, "m")
    with pytest.raises(ValueError, match=r"Input 1 of layer \"m\".*expected ndim=2, found ndim=1"):
        assert_input_compatibility(spec, {"b": np.zeros(2), "a": np.zeros(2)}, "m")
    assert_input_compatibility(spec, {"b": np.zeros((1, 2)), "a": np.zeros(2)}, "m")
    with pytest.raises(TypeError, match="Inputs to a layer should be tensors. Got 's'"):
        assert_input_compatibility(InputSpec(), "s", "m")
    assert_input_compatibility(InputSpec(ndim=2, optional=True), None, "m")
    with pytest.raises(TypeError, match="Layer input_spec must be an instance of InputSpec"):
        Checked("bad")


def test_input_spec_fields_config_and_errors():
    spec = InputSpec(shape=(None, 3), dtype=tf.float32)
    assert (spec.shape, spec.ndim, spec.dtype, spec.axes) == ((None, 3), 2, "float32", {})
    assert repr(spec) == "InputSpec(dtype=float32, shape=(None, 3), ndim=2)"
    assert spec.get_config() == {"dtype": "float32", "shape": (None, 3), "ndim": 2,
                                 "max_ndim": None, "min_ndim": None, "axes": {}}
    again = InputSpec.from_config(spec.get_config())
    assert again.get_config() == spec.get_config()
    assert InputSpec(max_ndim=3, axes={"2": 4}).axes == {2: 4}
    assert to_tensor_shape(InputSpec(ndim=3, axes={-1: 4})).as_list() == [None, None, 4]
    assert to_tensor_shape(InputSpec()).rank is None
    with pytest.raises(ValueError, match="Axis 3 is greater than the maximum allowed value: 1"):
        InputSpec(ndim=2, axes={3: 1})
    with pytest.raises(TypeError, match="`axes` must be a dict with integer keys"):
        InputSpec(axes={"a": 1})


def test_identity_eager_traced_nested_and_config():
    layer = layers.Identity(name="same")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(tf.function(layer)(tf.constant(x)).numpy(), x)
    out = layer({"a": tf.constant(x), "b": [tf.constant(1.0)]})
    assert set(out) == {"a", "b"} and float(out["b"][0]) == 1.0
    config = layer.get_config()
    assert config == {"name": "same", "trainable": True, "dtype": "float32"}
    assert layers.Identity.from_config(config).get_config() == config
    inputs = tf.keras.Input((3,))
    model = tf.keras.Model(inputs, layers.Identity()(inputs))
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)


def test_serialize_deserialize_layers():
    dense = layers.Dense(3, activation="relu", name="d")
    config = layers.serialize(dense)
    assert config["module"] == "keras.layers" and config["class_name"] == "Dense"
    assert config["registered_name"] is None and "build_config" not in config
    dense(np.zeros((2, 4), np.float32))
    config = layers.serialize(dense)
    assert config["build_config"] == {"input_shape": [2, 4]}
    again = layers.deserialize(config)
    assert isinstance(again, layers.Dense) and again.get_config() == dense.get_config()
    legacy = layers.serialize(layers.Identity(name="i"), use_legacy_format=True)
    assert legacy == {"class_name": "Identity",
                      "config": {"name": "i", "trainable": True, "dtype": "float32"}}
    assert isinstance(layers.deserialize(legacy), layers.Identity)
    assert layers.deserialize({"class_name": "Dense", "config": {"units": 2}}).units == 2

    class Custom(layers.Layer):
        pass

    got = layers.deserialize({"class_name": "Custom", "config": {}},
                             custom_objects={"Custom": Custom})
    assert isinstance(got, Custom)
    with pytest.raises(ValueError, match="Unknown layer: 'Nope'"):
        layers.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError, match="expected a Layer"):
        layers.serialize("relu")


def test_wrappers_subclass_wrapper_and_round_trip():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    td = layers.TimeDistributed(layers.Dense(2))
    bi = layers.Bidirectional(layers.LSTM(2))
    assert isinstance(td, layers.Wrapper) and isinstance(bi, layers.Wrapper)
    assert isinstance(bi.layer, layers.LSTM) and bi.layer not in bi.submodules
    want = td(x).numpy()
    np.testing.assert_allclose(tf.function(td)(tf.constant(x)).numpy(), want, rtol=1e-6)
    config = td.get_config()
    assert config["layer"]["module"] == "keras.layers"  # tf-keras 2.21's nested format
    again = layers.TimeDistributed.from_config(config)
    again(x)
    assert [w.name for w in again.weights] == [w.name for w in td.weights]
    bi(x)
    assert layers.Bidirectional.from_config(bi.get_config()).get_config() == bi.get_config()
    with pytest.raises(ValueError, match="supplied to wrapper is not a supported layer type"):
        layers.Wrapper("dense")


def test_custom_wrapper_builds_its_layer_and_saves_it():
    class Doubler(layers.Wrapper):
        def call(self, x):
            return 2.0 * self.layer(x)

    wrapper = Doubler(layers.Dense(2, kernel_initializer="ones"), name="doubler")
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(wrapper(x).numpy(), [[6.0, 6.0]])
    assert wrapper.layer.built and len(wrapper.trainable_weights) == 2
    config = wrapper.get_config()
    assert config["name"] == "doubler" and config["layer"]["class_name"] == "Dense"
    again = Doubler.from_config(config)
    np.testing.assert_allclose(again(x).numpy(), [[6.0, 6.0]])


class MinimalCell(layers.AbstractRNNCell):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=(input_shape[-1], self.units),
                                      initializer="ones")

    def call(self, inputs, states):
        h = tf.matmul(inputs, self.kernel) + states[0]
        return h, [h]


def test_abstract_rnn_cell_in_rnn_and_initial_state():
    x = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
    rnn = layers.RNN(MinimalCell(4))
    want = np.cumsum(x.sum(-1), axis=1)[:, -1:] * np.ones((1, 4))  # h_t = h_{t-1} + sum(x_t)
    np.testing.assert_allclose(rnn(x).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(tf.function(rnn)(tf.constant(x)).numpy(), want, rtol=1e-5)
    cell = MinimalCell(4)
    zeros = cell.get_initial_state(batch_size=2, dtype=tf.float32)
    assert zeros.shape == (2, 4) and zeros.dtype == tf.float32
    assert cell.get_initial_state(inputs=tf.ones((3, 7), tf.float64)).dtype == tf.float64

    class TwoStates(MinimalCell):
        state_size = property(lambda self: [self.units, tf.TensorShape([2, 2])])

    pair = TwoStates(4).get_initial_state(batch_size=3, dtype=tf.float32)
    assert [tuple(s.shape) for s in pair] == [(3, 4), (3, 2, 2)]
    with pytest.raises(ValueError, match="batch_size and dtype cannot be None"):
        cell.get_initial_state()
    with pytest.raises(NotImplementedError, match="state_size"):
        _ = layers.AbstractRNNCell().state_size


def test_built_in_convolutions_carry_tf_keras_specs_and_point_at_the_user_line():
    conv = layers.Conv2D(2, 3)
    assert repr(conv.input_spec) == "InputSpec(min_ndim=4)"
    conv(np.zeros((1, 5, 5, 3), np.float32))
    assert repr(conv.input_spec) == "InputSpec(min_ndim=4, axes={-1: 3})"
    assert repr(layers.Conv1DTranspose(2, 3).input_spec) == "InputSpec(min_ndim=3)"
    with pytest.raises(ValueError) as info:
        conv(np.zeros((1, 5, 5, 2), np.float32))
    first, *rest = str(info.value).splitlines()
    assert first == ('Input 0 of layer "conv2d" is incompatible with the layer: expected axis -1 '
                     "of input shape to have value 3, but received input with shape "
                     "(1, 5, 5, 2)")  # tf-keras 2.21's message, verbatim
    assert "test_layers_input_spec.py" in rest[0]  # then the user's line


def test_a_changed_spec_checks_shapes_again():
    layer = Checked(InputSpec(ndim=2), name="m")
    x = tf.constant(F32)
    layer(x)
    layer(x)  # the same shape again: remembered as passed
    layer.input_spec.ndim = 3  # changing the spec forgets what passed
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        layer(x)
