"""Core layers: Dense, Activation, Identity, Flatten, Reshape, Dropout, SpatialDropout2D, Lambda."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tapeflow as tf
from tapeflow.framework.tensor import EagerTensor
from tapeflow.keras import activations
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers import ragged_inputs
from tapeflow.keras.layers.utils import check_data_format, layer_error, static_shape
from tapeflow.keras.layers.weights import KernelAndBias
from tapeflow.ops import fused_matmul


class Dense(KernelAndBias, Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis; leading axes are kept.

    Weights: ``kernel`` [in, units] (glorot_uniform) and ``bias`` [units] (zeros), named
    ``dense/kernel:0`` and ``dense/bias:0`` as in Keras.
    """

    _passes_mask = True

    _cast_integer_inputs = True

    _width: int | None = None  # the kernel's input width once built (the eager fast path's check)

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        units = int(units) if not isinstance(units, int) else units
        if units <= 0:
            raise layer_error(f"Dense: `units` must be a positive integer, got {units}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self._weight_arguments(kernel_initializer, bias_initializer, kernel_regularizer,
                               bias_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape: Any) -> None:
        last = tf.TensorShape(input_shape)[-1]
        if last is None:
            raise layer_error(f"Dense {self.name!r}: the last dimension of the inputs must be "
                             f"known, got input shape {tf.TensorShape(input_shape)}")
        self._add_kernel_and_bias((int(last), self.units),
                                  (self.units,) if self.use_bias else None)
        self._width = int(last)
        self.built = True

    def call(self, inputs: Any):
        if type(inputs) is EagerTensor and inputs._value.ndim == 2 and self.use_bias and \
                inputs._value.dtype.char in "fd" and inputs._value.shape[1] == self._width and \
                (self.activation is activations.relu or self.activation is activations.linear):
            # eager: one fused op (ops/fused_matmul.py)
            return fused_matmul.dense(inputs, self.kernel, self.bias,
                                      fused_matmul.RELU if self.activation is activations.relu
                                      else None)
        if isinstance(inputs, tf.RaggedTensor):  # the uniform last axis of the flat values
            if inputs.flat_values.shape.rank == 1 or inputs.shape[-1] is None:
                raise layer_error(f"Dense layer only supports RaggedTensors when the innermost "
                                  f"dimension is non-ragged. Received: inputs.shape="
                                  f"{inputs.shape}.")
            return inputs.with_flat_values(self.call(inputs.flat_values))
        if isinstance(inputs, tf.SparseTensor):  # a sparse batch times the kernel, as Keras
            out = tf.sparse.sparse_dense_matmul(inputs, self.kernel)
            return self.activation(out + self.bias if self.use_bias else out)
        x = tf.convert_to_tensor(inputs)
        shape = static_shape(x)
        width = self.kernel.shape[0]
        if shape and shape[-1] is not None and shape[-1] != width:
            raise layer_error(
                f"Input 0 of layer {self.name!r} (Dense) is incompatible with the layer: "
                f"expected axis -1 of input shape to have value {width}, but received input "
                f"with shape {tuple(shape)} (width {shape[-1]}, {x.dtype.name})")
        if len(shape) == 2:
            out = tf.matmul(x, self.kernel)
        else:  # [..., in] -> [N, in] @ kernel -> [..., units]
            lead = [-1 if d is None else d for d in shape[:-1]]
            if lead.count(-1) > 1:
                raise layer_error(f"Dense {self.name!r}: inputs of shape {shape} have more than "
                                 "one unknown leading dimension")
            rows = tf.reshape(x, [-1, shape[-1]])
            if self.activation is activations.relu or self.activation is activations.linear:
                # bias and activation on the [N, units] product, then the reshape: the same
                # values, and the graph fuses them into the product (MatMul -> AddV2 -> Relu
                # becomes one _FusedMatMul); eagerly it is that op already
                return tf.reshape(self.call(rows), lead + [self.units])
            out = tf.reshape(tf.matmul(rows, self.kernel), lead + [self.units])
        if self.use_bias:
            out = out + self.bias
        return self.activation(out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(list(tf.TensorShape(input_shape).as_list()[:-1]) + [self.units])

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias}


class Activation(Layer):
    """Applies an activation function given by name or callable."""

    _passes_mask = True

    def __init__(self, activation: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Identity(Layer):
    """Returns its inputs unchanged (a placeholder layer); every tensor passes through
    ``tf.identity``, nested structures keep their structure."""

    def call(self, inputs: Any):
        return tf.nest.map_structure(tf.identity, inputs)


class Flatten(Layer):
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""

    def __init__(self, data_format: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise layer_error(f"Flatten: data_format={data_format!r} is not supported "
                             "(channels_last only)")

    def call(self, inputs: Any):
        if type(inputs) is EagerTensor and inputs._value.ndim >= 2:  # every dim known
            return tf.reshape(inputs, [-1, math.prod(inputs._value.shape[1:])])
        x = tf.convert_to_tensor(inputs)
        shape = static_shape(x)
        if len(shape) < 2:
            return tf.reshape(x, [-1, 1])
        rest = shape[1:]
        if any(d is None for d in rest):
            if shape[0] is None:
                raise layer_error(f"Flatten {self.name!r}: cannot flatten shape {shape}: only the "
                                 "batch dimension may be unknown")
            return tf.reshape(x, [shape[0], -1])
        return tf.reshape(x, [-1, math.prod(rest)])

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        rest = dims[1:]
        flat = None if any(d is None for d in rest) else math.prod(rest)
        return tf.TensorShape([dims[0], flat])


class Reshape(Layer):
    """Reshape everything but the batch dimension to `target_shape` (one entry may be -1)."""

    def __init__(self, target_shape: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise layer_error(f"Reshape: at most one dimension of target_shape may be -1, got "
                             f"{self.target_shape}")

    def _resolved(self, input_shape: list) -> list:
        """target_shape with its -1 filled in from the (known) non-batch input dims."""
        target = list(self.target_shape)
        rest = input_shape[1:]
        if -1 not in target or any(d is None for d in rest):
            return target
        total, known = math.prod(rest), math.prod(d for d in target if d != -1)
        if known == 0 or total % known:
            raise layer_error(f"Reshape {self.name!r}: total size of the input {rest} is not "
                             f"compatible with target_shape {self.target_shape}")
        return [total // known if d == -1 else d for d in target]

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        shape = static_shape(x)
        target = self._resolved(shape)
        if -1 in target:
            if shape[0] is None:
                raise layer_error(f"Reshape {self.name!r}: cannot infer the -1 of "
                                 f"{self.target_shape} from input shape {shape}")
            return tf.reshape(x, [shape[0]] + target)
        rest = shape[1:]
        if all(d is not None for d in rest) and math.prod(rest) != math.prod(target):
            raise layer_error(f"Reshape {self.name!r}: cannot reshape inputs of shape {shape} "
                             f"to target_shape {self.target_shape}: sizes differ")
        return tf.reshape(x, [-1] + target)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        dims = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape([dims[0]] + [None if d == -1 else d
                                           for d in self._resolved(dims)])

    def get_config(self) -> dict:
        return {**super().get_config(), "target_shape": self.target_shape}


class Dropout(Layer):
    """Inverted dropout: in training zero a `rate` fraction and scale the rest by 1/(1-rate).

    At inference (``training=False``, the default outside ``fit``) it is the identity.
    """

    _passes_mask = True

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        rate = float(rate)
        if not 0.0 <= rate < 1.0:
            raise layer_error(f"Dropout: `rate` must be in [0, 1), got {rate}")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def _noise_shape(self, x: Any) -> Any:
        if self.noise_shape is None:
            return None
        shape = static_shape(x)
        return [shape[i] if d is None else d for i, d in enumerate(self.noise_shape)]

    @ragged_inputs.on_flat_values
    def call(self, inputs: Any, training: Any = None):
        if not training or self.rate == 0.0:
            return inputs
        x = tf.convert_to_tensor(inputs)
        return tf.nn.dropout(x, rate=self.rate, noise_shape=self._noise_shape(x), seed=self.seed)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class SpatialDropout2D(Dropout):
    """Dropout of whole feature maps: one keep/drop draw per (sample, channel) of [b, h, w, c].

    Neighbouring pixels of a conv feature map are strongly correlated, so dropping single
    pixels barely regularizes; dropping the channel does (Tompson et al., 2015).
    """

    rank = 2
    _axes = "batch, height, width, channels"

    def __init__(self, rate: float, data_format: str | None = None, **kwargs: Any):
        check_data_format(data_format, type(self).__name__)
        super().__init__(rate, noise_shape=(None,) + (1,) * self.rank + (None,), **kwargs)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != self.rank + 2:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                              f"[{self._axes}], got {shape}")
        self.built = True

    def get_config(self) -> dict:
        config = super().get_config()
        del config["noise_shape"]
        return config


class SpatialDropout1D(SpatialDropout2D):
    """Dropout of whole channels of [batch, steps, channels] (one draw per sample and
    channel)."""

    rank = 1
    _axes = "batch, steps, channels"


class SpatialDropout3D(SpatialDropout2D):
    """Dropout of whole channels of [batch, depth, height, width, channels]."""

    rank = 3
    _axes = "batch, depth, height, width, channels"


class Lambda(Layer):
    """Wrap an arbitrary function of tensors as a layer (no weights of its own)."""

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None,
                 arguments: dict | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable, got {function!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape
        self.mask = mask
        self.supports_masking = mask is not None

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """`mask` given to the constructor: a function of (inputs, mask), or a fixed mask."""
        return self.mask(inputs, mask) if callable(self.mask) else self.mask

    def call(self, inputs: Any):
        return self.function(inputs, **self.arguments)

    def get_config(self) -> dict:
        """The function goes by its registered name: a file never holds code to run."""
        from tapeflow.keras.saving import object_registration

        name = object_registration._GLOBAL_CUSTOM_NAMES.get(self.function)
        if name is None:
            raise ValueError(f"Lambda layer {self.name!r}: its function {self.function!r} is "
                             "not registered, so the layer cannot be saved (tapeflow never "
                             "stores Python code). Register it with "
                             "@tf.keras.utils.register_keras_serializable() or use a layer.")
        return {**super().get_config(), "function": name, "arguments": self.arguments}

    @classmethod
    def from_config(cls, config: dict) -> Lambda:
        from tapeflow.keras.saving import object_registration

        config = dict(config)
        name = config.pop("function", None)
        function = object_registration.get_registered_object(name) \
            if isinstance(name, str) else None
        if function is None:
            kind = "Python bytecode" if isinstance(name, dict) else repr(name)
            raise ValueError(f"Lambda layer {config.get('name')!r}: the saved function is "
                             f"{kind}, which tapeflow does not run; register the function "
                             "(register_keras_serializable) or pass it in custom_objects "
                             "under its name.")
        for key in ("output_shape_type", "function_type", "module", "output_shape_module"):
            config.pop(key, None)
        return cls(function, **config)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        if self._output_shape is None:
            raise NotImplementedError(f"Lambda {self.name!r}: pass output_shape= to compute "
                                      "the output shape without running the function")
        if callable(self._output_shape):
            return tf.TensorShape(self._output_shape(input_shape))
        batch = tf.TensorShape(input_shape).as_list()[0]
        return tf.TensorShape([batch] + list(self._output_shape))
