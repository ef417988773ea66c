"""The custom classes of tests/fixtures/make_keras_fixtures.py, written for tapeflow and
registered under the same names (``fixtures>Scaled``, ``fixtures>TwoLayer``)."""

import tapeflow as tf


@tf.keras.utils.register_keras_serializable(package="fixtures")
class Scaled(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
        self.scale = self.add_weight("scale", (self.units,), initializer="ones")

    def call(self, x):
        return tf.matmul(x, self.kernel) * self.scale

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@tf.keras.utils.register_keras_serializable(package="fixtures")
class TwoLayer(tf.keras.Model):
    def __init__(self, hidden=8, classes=3, **kwargs):
        super().__init__(**kwargs)
        self.hidden, self.classes = hidden, classes
        self.d1 = tf.keras.layers.Dense(hidden, activation="tanh")
        self.d2 = tf.keras.layers.Dense(classes)

    def call(self, x):
        return self.d2(self.d1(x))

    def get_config(self):
        return {"hidden": self.hidden, "classes": self.classes, "name": self.name}


@tf.keras.utils.register_keras_serializable(package="fixtures")
class AutoConfig(tf.keras.Model):
    """No get_config: saved with its constructor's arguments, as tf-keras does."""

    def __init__(self, units, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.d = tf.keras.layers.Dense(units)

    def call(self, x):
        return self.d(x) * self.scale
