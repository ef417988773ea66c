"""The Layer base: deferred build, naming, weight tracking, training flag, losses."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend
from tapeflow.keras.engine.base_layer import Layer


class Linear(Layer):
    def __init__(self, units, kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.kernel_regularizer = kernel_regularizer

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=(input_shape[-1], self.units),
                                      initializer="ones", regularizer=self.kernel_regularizer)
        self.bias = self.add_weight("bias", shape=(self.units,), initializer="zeros")

    def call(self, x):
        return x @ self.kernel + self.bias


class RecordTraining(Layer):
    """Remembers the training flag it was called with."""

    def call(self, x, training=None):
        self.seen = training
        return x


class NoTrainingArg(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = RecordTraining()

    def call(self, x):
        return self.inner(x)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_deferred_build_names_weights_in_layer_scope():
    layer = Linear(2)
    assert not layer.built and layer.weights == []
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_mean(y * y)
    grads = tape.gradient(loss, layer.trainable_variables)
    assert layer.built
    assert [v.name for v in layer.trainable_variables] == ["linear/kernel:0", "linear/bias:0"]
    assert [tuple(g.shape) for g in grads] == [(3, 2), (2,)]
    np.testing.assert_allclose(y.numpy(), [[6.0, 6.0]])
    np.testing.assert_allclose(grads[1].numpy(), [6.0, 6.0])


def test_unique_names_per_class_reset_by_clear_session():
    assert [Linear(1).name for _ in range(3)] == ["linear", "linear_1", "linear_2"]
    assert RecordTraining().name == "record_training"
    backend.clear_session()
    assert Linear(1).name == "linear"
    assert Linear(1, name="custom").name == "custom"


def test_snake_case_names():
    assert backend.to_snake_case("Conv2D") == "conv2d"
    assert backend.to_snake_case("BatchNormalization") == "batch_normalization"
    assert backend.to_snake_case("LSTM") == "lstm"
    assert backend.to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d"
    assert backend.to_snake_case("SequentialModel") == "sequential_model"


class Block(Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.layers_list = [Linear(3), Linear(2)]
        self.by_name = {"head": Linear(1)}
        self.frozen = tf.Variable(np.zeros(2, np.float32), trainable=False, name="frozen")

    def call(self, x):
        for layer in self.layers_list:
            x = layer(x)
        return self.by_name["head"](x)


def test_weights_gathered_recursively_from_containers_and_scoped():
    block = Block()
    out = block(np.ones((4, 5), np.float32))
    assert tuple(out.shape) == (4, 1)
    names = [v.name for v in block.trainable_weights]
    assert names == ["block/linear/kernel:0", "block/linear/bias:0",
                     "block/linear_1/kernel:0", "block/linear_1/bias:0",
                     "block/linear_2/kernel:0", "block/linear_2/bias:0"]
    assert [v.name for v in block.non_trainable_weights] == ["frozen:0"]
    assert len(block.weights) == 7 and block.variables == block.weights
    assert block.count_params() == 5 * 3 + 3 + 3 * 2 + 2 + 2 + 1 + 2
    assert [s.name for s in block.submodules] == ["linear", "linear_1", "linear_2"]


def test_trainable_false_moves_weights_to_non_trainable():
    block = Block()
    block(np.ones((1, 5), np.float32))
    block.layers_list[0].trainable = False
    assert len(block.trainable_weights) == 4
    assert len(block.non_trainable_weights) == 3
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 7
    assert not block.layers_list[1].trainable


def test_training_flag_propagates_through_call_without_training_param():
    outer = NoTrainingArg()
    outer(tf.constant([1.0]), training=True)
    assert outer.inner.seen is True
    outer(tf.constant([1.0]), training=False)
    assert outer.inner.seen is False
    outer(tf.constant([1.0]))
    assert outer.inner.seen is None


def test_explicit_training_on_inner_layer_wins():
    class Forcing(Layer):
        def __init__(self):
            super().__init__()
            self.inner = RecordTraining()

        def call(self, x, training=None):
            return self.inner(x, training=False)

    layer = Forcing()
    layer(tf.constant([1.0]), training=True)
    assert layer.inner.seen is False


def test_regularization_losses_computed_fresh():
    layer = Linear(2, kernel_regularizer=tf.keras.regularizers.L2(0.04))
    layer(tf.constant([[1.0, 1.0]]))
    np.testing.assert_allclose(float(layer.losses[0]), 0.04 * 4, rtol=1e-6)
    layer.kernel.assign(np.full((2, 2), 2.0, np.float32))
    np.testing.assert_allclose(float(layer.losses[0]), 0.04 * 16, rtol=1e-6)


def test_add_loss_resets_on_each_outer_call():
    class WithLoss(Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    class Outer(Layer):
        def __init__(self):
            super().__init__()
            self.a = WithLoss()

        def call(self, x):
            return self.a(x)

    outer = Outer()
    outer(tf.constant([1.0, 2.0]))
    outer(tf.constant([3.0]))
    assert [float(v) for v in outer.losses] == [3.0]


def test_get_set_weights_roundtrip_and_errors():
    layer = Linear(2)
    layer(tf.constant([[1.0, 1.0, 1.0]]))
    values = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1.0, -1.0], np.float32)]
    layer.set_weights(values)
    for got, want in zip(layer.get_weights(), values):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="expecting 2 weights"):
        layer.set_weights(values[:1])
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(4, 2\)"):
        layer.set_weights([np.zeros((4, 2)), values[1]])


def test_count_params_before_build_is_a_clear_error():
    with pytest.raises(ValueError, match="isn't built"):
        Linear(2).count_params()


def test_input_shape_kwarg_and_config():
    layer = Linear(2, input_shape=(3,))
    assert layer.get_config()["batch_input_shape"] == (None, 3)
    with pytest.raises(TypeError, match="not understood"):
        Linear(2, bogus=1)


def test_numpy_inputs_are_converted_and_autocast():
    layer = Linear(2)
    out = layer(np.ones((2, 3)))
    assert out.dtype == tf.float32


def test_layer_works_under_tf_function():
    fn = getattr(tf, "function", None)
    if fn is None:
        pytest.skip("tapeflow.function not available yet")
    layer = Linear(2)
    traced = fn(layer)
    x = tf.constant([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(traced(x).numpy(), layer(x).numpy())
