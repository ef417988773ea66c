"""Recurrent layers: LSTMCell/LSTM, GRUCell/GRU and SimpleRNNCell/SimpleRNN, run by ``RNN``.

A cell splits its step in two: ``project(x)`` (the input half, ``x @ kernel + bias``, applied
to the whole sequence at once by ``RNN`` as one big matmul) and ``step(projected_t, states)``
(the recurrent half). ``cell(x_t, states)`` runs both for one time step, as the seed's
``LSTMCell(10)(input, state)`` does. The time loop is unrolled in Python when the sequence
length is known (fastest for the short sequences seen); traced with an unknown length it is one
``tf.while_loop`` over a TensorArray of outputs.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error, static_shape
from tapeflow.ops import recurrent_ops


class _Cell(Layer):
    """Shared weights and arguments of the recurrent cells (``gates`` blocks of `units`)."""

    gates = 1

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise layer_error(f"{type(self).__name__}: `units` must be positive, got {units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = kernel_constraint
        self.recurrent_constraint = recurrent_constraint
        self.bias_constraint = bias_constraint

    def _bias_initializer(self) -> Any:
        return self.bias_initializer

    def _bias_shape(self) -> tuple[int, ...]:
        return (self.gates * self.units,)

    def _input_bias(self) -> Any:
        """The part of the bias that `project` adds (all of it, unless a cell splits it)."""
        return self.bias

    def build(self, input_shape: Any) -> None:
        last = tf.TensorShape(input_shape)[-1]
        if last is None:
            raise layer_error(f"{type(self).__name__} {self.name!r}: the feature dimension of "
                             f"the inputs must be known, got {tf.TensorShape(input_shape)}")
        width = self.gates * self.units
        self.kernel = self.add_weight("kernel", shape=(int(last), width),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", shape=(self.units, width),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=self._bias_shape(),
                                        initializer=self._bias_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def project(self, inputs: Any) -> Any:
        """The input half of every step, for [..., features] inputs -> [..., gates * units]."""
        x = tf.convert_to_tensor(inputs)
        shape = static_shape(x)
        if len(shape) == 2:
            out = tf.matmul(x, self.kernel)
        else:
            out = tf.matmul(tf.reshape(x, [-1, shape[-1]]), self.kernel)
            dims = [-1 if d is None else d for d in shape[:-1]] + [self.gates * self.units]
            if dims.count(-1) > 1:  # batch and time both unknown: the run-time shape
                dims = tf.concat([tf.shape(x)[:-1], [self.gates * self.units]], 0)
            out = tf.reshape(out, dims)
        if self.bias is not None:
            out = out + self._input_bias()
        return out

    def step(self, projected: Any, states: list) -> tuple[Any, list]:
        raise NotImplementedError(f"{type(self).__name__} must implement step(projected, states)")

    def call(self, inputs: Any, states: Any):
        nested = isinstance(states, (list, tuple))
        output, new_states = self.step(self.project(inputs), list(states) if nested else [states])
        if not nested and len(new_states) == 1:
            return output, new_states[0]  # a bare state in, a bare state out (as Keras)
        return output, new_states

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> list:
        """Zero states, one per entry of ``state_size``."""
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) \
            else [self.state_size]
        dtype = dtype or self.dtype
        return [tf.zeros([batch_size, s], dtype=dtype) for s in sizes]

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _serialize(self.kernel_initializer, initializers),
                "recurrent_initializer": _serialize(self.recurrent_initializer, initializers),
                "bias_initializer": _serialize(self.bias_initializer, initializers),
                "kernel_regularizer": _serialize(self.kernel_regularizer, regularizers),
                "recurrent_regularizer": _serialize(self.recurrent_regularizer, regularizers),
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers)}


def _serialize(value: Any, module: Any) -> Any:
    """Keras's config form of an initializer or regularizer; None and plain callables as is."""
    if value is None or type(value).__module__ != module.__name__:
        return value
    return module.serialize(value)


class SimpleRNNCell(_Cell):
    """h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)."""

    def step(self, projected: Any, states: list) -> tuple[Any, list]:
        h = self.activation(projected + tf.matmul(states[0], self.recurrent_kernel))
        return h, [h]


class LSTMCell(_Cell):
    """Long short-term memory step with Keras's gate order (input, forget, cell, output).

    ``unit_forget_bias`` starts the forget-gate bias at 1 so early training keeps memory.
    States are ``[h, c]``; the output is ``h``.
    """

    gates = 4

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, **kwargs: Any):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    def _bias_initializer(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = self.bias_initializer, self.units

        def forget_bias_one(shape: Any, dtype: Any = None, **kwargs: Any):
            return tf.concat([base((units,), dtype=dtype), tf.ones((units,), dtype=dtype),
                              base((2 * units,), dtype=dtype)], axis=0)

        return forget_bias_one

    @property
    def state_size(self) -> list[int]:
        return [self.units, self.units]

    def fused(self) -> bool:
        """Whether ``RNN`` may run the sequence as one ``_LSTMSequence`` op: Keras's default
        activations (sigmoid gates, tanh), as the fused kernel computes."""
        return (self.activation is activations.tanh
                and self.recurrent_activation is activations.sigmoid)

    def step(self, projected: Any, states: list) -> tuple[Any, list]:
        h, c = states
        z = projected + tf.matmul(h, self.recurrent_kernel)
        i, f, g, o = tf.split(z, 4, axis=-1)
        c = self.recurrent_activation(f) * c + self.recurrent_activation(i) * self.activation(g)
        h = self.recurrent_activation(o) * self.activation(c)
        return h, [h, c]

    def get_config(self) -> dict:
        return {**super().get_config(), "unit_forget_bias": self.unit_forget_bias,
                "recurrent_activation": activations.serialize(self.recurrent_activation)}


class GRUCell(_Cell):
    """Gated recurrent unit step with Keras's gate order (update z, reset r, candidate h).

    ``reset_after=True`` (Keras 2's default, the cuDNN/PyTorch form) applies the reset gate
    after the recurrent matmul, so the bias has two rows, ``[2, 3 units]``: row 0 is added to
    the input projection, row 1 to the recurrent one. ``reset_after=False`` resets h before
    its matmul and has a single bias row. State is ``[h]``; the output is ``h``.
    """

    gates = 3

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 reset_after: bool = True, **kwargs: Any):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> tuple[int, ...]:
        width = self.gates * self.units
        return (2, width) if self.reset_after else (width,)

    def _input_bias(self) -> Any:
        return self.bias[0] if self.reset_after else self.bias

    def step(self, projected: Any, states: list) -> tuple[Any, list]:
        h = states[0]
        x_z, x_r, x_h = tf.split(projected, 3, axis=-1)
        if self.reset_after:
            recurrent = tf.matmul(h, self.recurrent_kernel)
            if self.bias is not None:
                recurrent = recurrent + self.bias[1]
            h_z, h_r, h_h = tf.split(recurrent, 3, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + r * h_h)
        else:
            gates_kernel, candidate_kernel = tf.split(self.recurrent_kernel,
                                                      [2 * self.units, self.units], axis=-1)
            h_z, h_r = tf.split(tf.matmul(h, gates_kernel), 2, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + tf.matmul(r * h, candidate_kernel))
        h = z * h + (1 - z) * candidate
        return h, [h]

    def get_config(self) -> dict:
        return {**super().get_config(), "reset_after": self.reset_after,
                "recurrent_activation": activations.serialize(self.recurrent_activation)}


class RNN(Layer):
    """Run `cell` over the time axis of [batch, time, features] inputs.

    Returns the last output ([batch, units]), or every output ([batch, time, units]) with
    ``return_sequences``; with ``return_state`` the final states follow the output in a list.
    """

    def __init__(self, cell: _Cell, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(cell, _Cell):
            raise TypeError(f"RNN: `cell` must be a tapeflow recurrent cell (LSTMCell, "
                            f"GRUCell, SimpleRNNCell), got {cell!r}")
        self.cell = cell
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards

    @property
    def units(self) -> int:
        return self.cell.units

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 3:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                             f"[batch, time, features], got {shape}")
        if not self.cell.built:
            with tf.name_scope(self.cell.name):
                self.cell.build(tf.TensorShape([shape[0], shape[2]]))
            self.cell.built = True
        self.built = True

    def call(self, inputs: Any, initial_state: Any = None):
        x = tf.convert_to_tensor(inputs)
        batch, steps, _ = static_shape(x)
        if initial_state is None:
            states = self._zero_states(x, batch)
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
        if steps is None:
            result, states = self._loop(x, states)
            return [result] + list(states) if self.return_state else result
        if isinstance(self.cell, LSTMCell) and self.cell.fused():
            result, states = self._fused_lstm(x, states)
            return [result] + list(states) if self.return_state else result
        projected = tf.unstack(self.cell.project(x), num=steps, axis=1)
        if self.go_backwards:
            projected = projected[::-1]
        outputs = []
        for p in projected:
            out, states = self.cell.step(p, states)
            outputs.append(out)
        result = tf.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [result] + list(states)
        return result

    def _fused_lstm(self, x: Any, states: list) -> tuple[Any, list]:
        """The whole sequence as one op (``ops/recurrent_ops.py``): same results as the
        unrolled steps, in one compiled loop forward and one backward."""
        projected = self.cell.project(x)
        if self.go_backwards:
            projected = tf.reverse(projected, [1])
        dtype = projected.dtype
        h0, c0 = (tf.cast(s, dtype) for s in states)
        hs, h, c = recurrent_ops.lstm_sequence(projected, h0, c0, self.cell.recurrent_kernel)
        return (hs if self.return_sequences else h), [h, c]

    def _loop(self, x: Any, states: list) -> tuple[Any, list]:
        """The time loop as one ``tf.while_loop`` when the length is known only at run time
        (traced with ``input_signature`` [None, None, F], padded batches of varying length);
        a known length is unrolled instead, which runs faster for the short sequences seen."""
        if tf.executing_eagerly():
            raise layer_error(f"{type(self).__name__} {self.name!r}: the time dimension of "
                              f"{x.shape} is unknown")
        projected = self.cell.project(x)
        steps = tf.shape(x)[1]
        outputs = tf.TensorArray(x.dtype, size=steps)

        def body(t, last, outputs, *states):
            index = steps - 1 - t if self.go_backwards else t
            out, new_states = self.cell.step(projected[:, index, :], list(states))
            return (t + 1, out, outputs.write(t, out) if self.return_sequences else outputs,
                    *new_states)

        first = tf.zeros_like(states[0][:, :1]) * tf.zeros([1, self.cell.output_size],
                                                             x.dtype)
        _, last, outputs, *states = tf.while_loop(
            lambda t, *_: t < steps, body, [tf.constant(0), first, outputs, *states])
        if self.return_sequences:  # the stacked TensorArray's shape is not static
            sequence = tf.transpose(outputs.stack(), [1, 0, 2])
            sequence.set_shape([x.shape[0], None, self.cell.output_size])
            return sequence, states
        return last, states

    def _zero_states(self, x: Any, batch: int | None) -> list:
        if batch is not None:
            return self.cell.get_initial_state(batch_size=batch, dtype=x.dtype)
        # unknown batch (a symbolic build): zeros shaped like one time step of the inputs
        zeros = tf.matmul(tf.zeros_like(x[:, 0, :]),
                          tf.zeros([x.shape[-1], self.cell.units], dtype=x.dtype))
        count = len(self.cell.state_size) if isinstance(self.cell.state_size, list) else 1
        return [zeros] * count

    def get_config(self) -> dict:
        config = {**super().get_config(), "return_sequences": self.return_sequences,
                  "return_state": self.return_state, "go_backwards": self.go_backwards}
        if type(self) is RNN:
            from tapeflow.keras.saving.serialization import serialize_keras_object

            return {**config, "cell": serialize_keras_object(self.cell)}
        # LSTM/GRU/SimpleRNN make their own cell: its arguments are theirs (as in Keras)
        cell = {k: v for k, v in self.cell.get_config().items()
                if k not in ("name", "trainable", "dtype")}
        return {**config, **cell}

    @classmethod
    def from_config(cls, config: dict) -> RNN:
        if cls is RNN and isinstance(config.get("cell"), dict):
            from tapeflow.keras.saving.serialization import deserialize_keras_object

            config = {**config, "cell": deserialize_keras_object(config["cell"], kind="layers")}
        return cls(**config)


class SimpleRNN(RNN):
    """Fully connected recurrent layer: ``SimpleRNN(units)``; weights under simple_rnn/..."""

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, **kwargs: Any):
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _LAYER_KWARGS}
        cell = SimpleRNNCell(units, activation=activation, use_bias=use_bias,
                             kernel_initializer=kernel_initializer,
                             recurrent_initializer=recurrent_initializer,
                             bias_initializer=bias_initializer, name="simple_rnn_cell",
                             dtype=layer_kwargs.get("dtype"), **kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, **layer_kwargs)


class LSTM(RNN):
    """Long short-term memory layer: ``LSTM(units, return_sequences=..., return_state=...)``.

    Weights (Keras names): ``lstm/lstm_cell/kernel:0`` [features, 4 units],
    ``recurrent_kernel:0`` [units, 4 units] (orthogonal), ``bias:0`` [4 units].
    """

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, return_sequences: bool = False,
                 return_state: bool = False, go_backwards: bool = False, **kwargs: Any):
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _LAYER_KWARGS}
        cell = LSTMCell(units, activation=activation, recurrent_activation=recurrent_activation,
                        use_bias=use_bias, kernel_initializer=kernel_initializer,
                        recurrent_initializer=recurrent_initializer,
                        bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                        name="lstm_cell", dtype=layer_kwargs.get("dtype"), **kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, **layer_kwargs)


class GRU(RNN):
    """Gated recurrent unit layer: ``GRU(units, return_sequences=..., return_state=...)``.

    Keras 2 defaults (``reset_after=True``). Weights: ``gru/gru_cell/kernel:0``
    [features, 3 units], ``recurrent_kernel:0`` [units, 3 units] (orthogonal) and ``bias:0``
    [2, 3 units]; columns in gate order (z, r, h).
    """

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, reset_after: bool = True, **kwargs: Any):
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _LAYER_KWARGS}
        cell = GRUCell(units, activation=activation, recurrent_activation=recurrent_activation,
                       use_bias=use_bias, kernel_initializer=kernel_initializer,
                       recurrent_initializer=recurrent_initializer,
                       bias_initializer=bias_initializer, reset_after=reset_after,
                       name="gru_cell", dtype=layer_kwargs.get("dtype"), **kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, **layer_kwargs)


# arguments that belong to the wrapping layer rather than to its cell
_LAYER_KWARGS = frozenset({"name", "trainable", "dtype", "input_shape", "batch_input_shape",
                           "batch_size", "input_dim", "weights", "activity_regularizer"})
