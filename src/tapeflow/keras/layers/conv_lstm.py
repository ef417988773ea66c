"""ConvLSTM1D/2D/3D: LSTMs whose input and recurrent transforms are convolutions
(Shi et al., 2015), over [batch, time, *spatial, channels] inputs, with Keras's weights.

The input convolution of every step runs at once (time folded into the batch); the recurrent
one ('same' padding, stride 1) runs per step. Gates in Keras's order (i, f, c, o).
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.convolutional import conv_output_length
from tapeflow.keras.layers.recurrent import _dropout_mask, _keep_masked
from tapeflow.keras.layers.utils import (
    check_data_format,
    layer_error,
    normalize_padding,
    normalize_tuple,
    static_shape,
)


class _ConvLSTM(Layer):
    """``ConvLSTM{rank}D(filters, kernel_size, ...)``. Weights: ``kernel`` [*kernel_size,
    channels, 4 filters], ``recurrent_kernel`` [*kernel_size, filters, 4 filters], ``bias``
    [4 filters] (forget-gate block starts at 1 with ``unit_forget_bias``). Output [batch,
    *spatial', filters], every step's with ``return_sequences``; ``return_state`` appends
    [h, c]. A [batch, time] mask skips steps; ``dropout``/``recurrent_dropout`` draw per-gate
    masks once per sequence while training, as Keras."""

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None,
                 recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        name, n = type(self).__name__, self.rank
        check_data_format(data_format, name)
        if stateful:
            raise layer_error(f"{name}: stateful=True is not supported")
        if int(filters) <= 0:
            raise layer_error(f"{name}: `filters` must be positive, got {filters}")
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size", name)
        self.strides = normalize_tuple(strides, n, "strides", name)
        self.padding = normalize_padding(padding, name)
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate", name)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.unit_forget_bias = unit_forget_bias
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = False
        for arg, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(rate) <= 1.0:
                raise layer_error(f"{name}: `{arg}` must be in [0, 1], got {rate}")
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != self.rank + 3 or None in shape.as_list()[2:]:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                              f"[batch, time, {self.rank} spatial dims, channels] with known "
                              f"spatial dims and channels, got {shape}")
        channels, width = int(shape[-1]), 4 * self.filters
        self.kernel = self.add_weight("kernel", shape=self.kernel_size + (channels, width),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", shape=self.kernel_size + (self.filters, width),
            initializer=self.recurrent_initializer, regularizer=self.recurrent_regularizer)
        self.bias = None
        if self.use_bias:
            init = self.bias_initializer
            if self.unit_forget_bias:
                base, f = self.bias_initializer, self.filters

                def init(shape: Any, dtype: Any = None, **kwargs: Any):
                    return tf.concat([base((f,), dtype=dtype), tf.ones((f,), dtype=dtype),
                                      base((2 * f,), dtype=dtype)], axis=0)

            self.bias = self.add_weight("bias", shape=(width,), initializer=init,
                                        regularizer=self.bias_regularizer)
        self.built = True

    def _conv(self, x: Any, kernel: Any, strides: Any, padding: str, dilations: Any) -> Any:
        if self.rank == 1:
            return tf.nn.conv1d(x, kernel, stride=strides[0], padding=padding,
                                dilations=dilations[0])
        if self.rank == 2:
            return tf.nn.conv2d(x, kernel, strides=strides, padding=padding,
                                dilations=dilations)
        return tf.nn.conv3d(x, kernel, strides=(1, *strides, 1), padding=padding,
                            dilations=dilations)

    def _input_conv(self, x: Any, masks: list | None) -> Any:
        """Every step's input convolution plus bias, [batch * time, *spatial', 4F]."""
        def conv(inputs: Any, kernel: Any) -> Any:
            return self._conv(inputs, kernel, self.strides, self.padding, self.dilation_rate)

        if masks is None:
            out = conv(x, self.kernel)
        else:
            out = tf.concat([conv(x * m, k) for m, k in
                             zip(masks, tf.split(self.kernel, 4, axis=-1))], axis=-1)
        return out + self.bias if self.bias is not None else out

    def _recurrent_conv(self, h: Any, masks: list | None) -> Any:
        ones = (1,) * self.rank

        def conv(inputs: Any, kernel: Any) -> Any:
            return self._conv(inputs, kernel, ones, "SAME", ones)

        if masks is None:
            return conv(h, self.recurrent_kernel)
        return tf.concat([conv(h * m, k) for m, k in
                          zip(masks, tf.split(self.recurrent_kernel, 4, axis=-1))], axis=-1)

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None):
        x = tf.convert_to_tensor(inputs)
        batch, steps, *spatial, channels = static_shape(x)
        if steps is None:
            raise layer_error(f"{type(self).__name__} {self.name!r}: the time dimension must "
                              f"be known, got inputs of shape {x.shape}")
        out_spatial = self._out_size(spatial)
        n = tf.shape(x)[0] if batch is None else batch
        input_masks = recurrent_masks = None
        if training and self.dropout > 0:
            input_masks = [tf.repeat(_dropout_mask([n, *spatial, channels], self.dropout,
                                                   x.dtype), steps, axis=0)
                           for _ in range(4)]
        if training and self.recurrent_dropout > 0:
            recurrent_masks = [_dropout_mask([n, *out_spatial, self.filters],
                                             self.recurrent_dropout, x.dtype)
                               for _ in range(4)]
        # time folded into the batch (batch-major), so the dropout masks repeat per step
        folded = tf.reshape(x, [-1, *spatial, channels])
        projected = tf.reshape(self._input_conv(folded, input_masks),
                               [-1, steps, *out_spatial, 4 * self.filters])
        if initial_state is not None:
            h, c = initial_state
        else:
            h = c = tf.zeros_like(projected[:, 0][..., :self.filters])
        keep = None
        if mask is not None:
            keep = tf.reshape(tf.cast(mask, tf.bool), [-1, steps] + [1] * (self.rank + 1))
        outputs, previous = [], None
        for t in (range(steps - 1, -1, -1) if self.go_backwards else range(steps)):
            z = projected[:, t] + self._recurrent_conv(h, recurrent_masks)
            i, f, g, o = tf.split(z, 4, axis=-1)
            new_c = self.recurrent_activation(f) * c + \
                self.recurrent_activation(i) * self.activation(g)
            new_h = self.recurrent_activation(o) * self.activation(new_c)
            out = new_h
            if keep is not None:
                previous = tf.zeros_like(out) if previous is None else previous
                out, (new_h, new_c) = _keep_masked(keep[:, t], out, previous, [new_h, new_c],
                                                   [h, c])
            h, c, previous = new_h, new_c, out
            outputs.append(out)
        result = tf.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        return [result, h, c] if self.return_state else result

    def _out_size(self, spatial: list) -> list:
        return [conv_output_length(d, k, self.padding, s, r) for d, k, s, r in
                zip(spatial, self.kernel_size, self.strides, self.dilation_rate)]

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        output_mask = mask if self.return_sequences else None
        return [output_mask, None, None] if self.return_state else output_mask

    def get_config(self) -> dict:
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding.lower(), "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "use_bias": self.use_bias, "unit_forget_bias": self.unit_forget_bias,
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": False,
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout}


class ConvLSTM1D(_ConvLSTM):
    """ConvLSTM over [batch, time, steps, channels] (1-D convolutions)."""

    rank = 1


class ConvLSTM2D(_ConvLSTM):
    """ConvLSTM over [batch, time, rows, cols, channels] (2-D convolutions)."""

    rank = 2


class ConvLSTM3D(_ConvLSTM):
    """ConvLSTM over [batch, time, depth, rows, cols, channels] (3-D convolutions)."""

    rank = 3
