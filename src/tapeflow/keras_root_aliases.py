"""TensorFlow 2's root initializer names (`tf.constant_initializer`, `tf.random_normal_initializer`
...): the Keras initializer classes, which take (shape, dtype) the same way."""

from tapeflow._api import export_value
from tapeflow.keras import initializers

for _tf_name, _cls in (("constant_initializer", initializers.Constant),
                       ("ones_initializer", initializers.Ones),
                       ("zeros_initializer", initializers.Zeros),
                       ("random_normal_initializer", initializers.RandomNormal),
                       ("random_uniform_initializer", initializers.RandomUniform)):
    export_value(_tf_name, _cls)
