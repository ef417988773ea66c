"""Recurrent layers: LSTMCell/LSTM, GRUCell/GRU and SimpleRNNCell/SimpleRNN, run by ``RNN``.

A cell splits its step in two: ``project(x)`` (the input half, ``x @ kernel + bias``, applied
to the whole sequence at once by ``RNN`` as one big matmul) and ``step(projected_t, states)``
(the recurrent half). ``cell(x_t, states)`` runs both for one time step, as the seed's
``LSTMCell(10)(input, state)`` does. The time loop is unrolled in Python when the sequence
length is known (fastest for the short sequences seen); traced with an unknown length it is one
``tf.while_loop`` over a TensorArray of outputs.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers import ragged_inputs
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
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, **kwargs: Any):
        kwargs.pop("implementation", None)  # one implementation here (Keras's results)
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise layer_error(f"{type(self).__name__}: `units` must be positive, got {units}")
        for arg, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0.0 <= float(rate) <= 1.0:
                raise layer_error(f"{type(self).__name__}: `{arg}` must be in [0, 1], got "
                                  f"{rate}")
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
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

    def project(self, inputs: Any, dropout_masks: list | None = None) -> Any:
        """The input half of every step, for [..., features] inputs -> [..., gates * units].

        `dropout_masks` ([batch, features] each, from ``dropout_masks``): one for all gates,
        or one per gate (Keras's implementation 1, used with recurrent dropout)."""
        x = tf.convert_to_tensor(inputs)
        if dropout_masks is not None and len(dropout_masks) > 1:
            kernels = tf.split(self.kernel, self.gates, axis=-1)
            out = tf.concat([self._matmul(_apply_mask(x, m), k)
                             for m, k in zip(dropout_masks, kernels)], axis=-1)
        else:
            if dropout_masks is not None:
                x = _apply_mask(x, dropout_masks[0])
            out = self._matmul(x, self.kernel)
        if self.bias is not None:
            out = out + self._input_bias()
        return out

    @staticmethod
    def _matmul(x: Any, kernel: Any) -> Any:
        """[..., features] @ [features, width] for inputs of any rank."""
        shape = static_shape(x)
        if len(shape) == 2:
            return tf.matmul(x, kernel)
        width = static_shape(kernel)[-1]
        out = tf.matmul(tf.reshape(x, [-1, shape[-1]]), kernel)
        dims = [-1 if d is None else d for d in shape[:-1]] + [width]
        if dims.count(-1) > 1:  # batch and time both unknown: the run-time shape
            dims = tf.concat([tf.shape(x)[:-1], [width]], 0)
        return tf.reshape(out, dims)

    def _recurrent(self, h: Any, masks: list | None, kernel: Any = None) -> Any:
        """h @ recurrent kernel; with recurrent dropout each gate's block sees its own
        dropped copy of h (Keras's implementation 1)."""
        kernel = self.recurrent_kernel if kernel is None else kernel
        if masks is None:
            return tf.matmul(h, kernel)
        blocks = tf.split(kernel, len(masks), axis=-1)
        return tf.concat([tf.matmul(h * m, k) for m, k in zip(masks, blocks)], axis=-1)

    def dropout_masks(self, inputs: Any, training: Any) -> tuple[Any, Any]:
        """(input masks, recurrent masks) for one sequence, each None or a list of scaled
        0/(1/(1-rate)) masks drawn once and reused at every step, as Keras does; only while
        training. With recurrent dropout every gate gets its own masks."""
        if not training or not (self.dropout or self.recurrent_dropout):
            return None, None
        count = self.gates if self.recurrent_dropout > 0 else 1
        batch, features = static_shape(inputs)[0], static_shape(inputs)[-1]
        batch = tf.shape(inputs)[0] if batch is None else batch
        dtype = tf.convert_to_tensor(inputs).dtype
        input_masks = recurrent_masks = None
        if self.dropout > 0:
            input_masks = [_dropout_mask([batch, features], self.dropout, dtype)
                           for _ in range(count)]
        if self.recurrent_dropout > 0:
            recurrent_masks = [_dropout_mask([batch, self.units], self.recurrent_dropout,
                                             dtype) for _ in range(self.gates)]
        return input_masks, recurrent_masks

    def step(self, projected: Any, states: list,
             recurrent_masks: list | None = None) -> tuple[Any, list]:
        raise NotImplementedError(f"{type(self).__name__} must implement step(projected, states)")

    def call(self, inputs: Any, states: Any, training: Any = None):
        nested = isinstance(states, (list, tuple))
        x = tf.convert_to_tensor(inputs)
        input_masks, recurrent_masks = self.dropout_masks(x, training)
        output, new_states = self.step(self.project(x, input_masks),
                                       list(states) if nested else [states], recurrent_masks)
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
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout}


def _dropout_mask(shape: list, rate: float, dtype: Any) -> Any:
    return tf.nn.dropout(tf.ones(shape, dtype=dtype), rate=rate)


def _apply_mask(x: Any, mask: Any) -> Any:
    """[batch, features] mask on [batch, features] or [batch, time, features] inputs."""
    return x * (tf.expand_dims(mask, 1) if len(static_shape(x)) == 3 else mask)


def _serialize(value: Any, module: Any) -> Any:
    """Keras's config form of an initializer or regularizer; None and plain callables as is."""
    if value is None or type(value).__module__ != module.__name__:
        return value
    return module.serialize(value)


class SimpleRNNCell(_Cell):
    """h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)."""

    def step(self, projected: Any, states: list,
             recurrent_masks: list | None = None) -> tuple[Any, list]:
        h = self.activation(projected + self._recurrent(states[0], recurrent_masks))
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

    def step(self, projected: Any, states: list,
             recurrent_masks: list | None = None) -> tuple[Any, list]:
        h, c = states
        z = projected + self._recurrent(h, recurrent_masks)
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

    def step(self, projected: Any, states: list,
             recurrent_masks: list | None = None) -> tuple[Any, list]:
        h = states[0]
        x_z, x_r, x_h = tf.split(projected, 3, axis=-1)
        if self.reset_after:
            recurrent = self._recurrent(h, recurrent_masks)
            if self.bias is not None:
                recurrent = recurrent + self.bias[1]
            h_z, h_r, h_h = tf.split(recurrent, 3, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            candidate = self.activation(x_h + r * h_h)
        else:
            gates_kernel, candidate_kernel = tf.split(self.recurrent_kernel,
                                                      [2 * self.units, self.units], axis=-1)
            masks = recurrent_masks or [None] * 3
            h_z, h_r = tf.split(self._recurrent(h, recurrent_masks and masks[:2],
                                                gates_kernel), 2, axis=-1)
            z = self.recurrent_activation(x_z + h_z)
            r = self.recurrent_activation(x_r + h_r)
            h_h = h if masks[2] is None else h * masks[2]
            candidate = self.activation(x_h + tf.matmul(r * h_h, candidate_kernel))
        h = z * h + (1 - z) * candidate
        return h, [h]

    def get_config(self) -> dict:
        return {**super().get_config(), "reset_after": self.reset_after,
                "recurrent_activation": activations.serialize(self.recurrent_activation)}


class RNN(Layer):
    """Run `cell` over the time axis of [batch, time, features] inputs.

    Returns the last output ([batch, units]), or every output ([batch, time, units]) with
    ``return_sequences``; with ``return_state`` the final states follow the output in a list.
    A ``mask`` ([batch, time], from ``Embedding(mask_zero=True)`` or ``Masking``) skips
    steps: a masked step carries the previous state and output through, as Keras's
    ``backend.rnn`` does. ``stateful=True`` starts each batch from the last batch's final
    states (``reset_states()`` zeroes them); ``unroll`` is accepted for Keras compatibility
    (a known length is always unrolled here).
    """

    def __init__(self, cell: _Cell, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, zero_output_for_mask: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not isinstance(cell, Layer) or not hasattr(cell, "state_size"):
            raise TypeError(f"RNN: `cell` must be a recurrent cell (a layer with `state_size` "
                            f"whose call(inputs, states) returns (output, new_states)), or a "
                            f"list of them, got {cell!r}")
        if time_major:
            raise layer_error(f"{type(self).__name__}: time_major=True is not supported; "
                              "pass [batch, time, features] inputs")
        self.cell = cell
        # a user's cell runs through an adapter (not a Layer: no second tracked path to it)
        self._generic = None if isinstance(cell, _Cell) else _GenericCell(cell)
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        # masked steps output zeros instead of the previous output (Bidirectional sets it)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        self._state_store: _StateStore | None = None

    @property
    def units(self) -> int:
        return self.cell.units

    @property
    def _runner(self) -> Any:
        """What the time loop calls: a built-in cell itself, or the adapter of a user's."""
        return self.cell if self._generic is None else self._generic

    @property
    def _state_sizes(self) -> list[int]:
        return _state_sizes(self.cell)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 3:
            raise layer_error(f"{type(self).__name__} {self.name!r}: expected inputs of shape "
                             f"[batch, time, features], got {shape}")
        if not self.cell.built:
            with tf.name_scope(self.cell.name):
                self.cell.build(tf.TensorShape([shape[0], shape[2]]))
            self.cell.built = True
        if self.stateful:
            if shape[0] is None:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: if a RNN is stateful, it needs to "
                    "know its batch size. Specify the batch size of your input tensors: pass "
                    "`batch_input_shape` (or `batch_size`) to the first layer of a Sequential "
                    "model, or `batch_size` to tf.keras.Input.")
            self._state_store = _StateStore(self.cell, int(shape[0]))
        self.built = True

    @property
    def states(self) -> list | None:
        """The variables holding a stateful layer's states (None for a stateless one)."""
        return None if self._state_store is None else list(self._state_store.variables)

    def reset_states(self, states: Any = None) -> None:
        """Zero a stateful layer's states, or set them to `states` (arrays, in state order)."""
        if self._state_store is None:
            raise AttributeError(f"{type(self).__name__} {self.name!r}: reset_states() needs "
                                 "a built layer with stateful=True")
        self._state_store.reset(states)

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None):
        if isinstance(inputs, tf.RaggedTensor):
            return self._call_ragged(inputs, mask, training, initial_state)
        x = tf.convert_to_tensor(inputs)
        batch, steps, _ = static_shape(x)
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
        elif self._state_store is not None:
            states = [v.read_value() for v in self._state_store.variables]
        else:
            states = self._zero_states(x, batch)
        input_masks, recurrent_masks = self._runner.dropout_masks(x, training)
        if mask is not None:
            mask = tf.expand_dims(tf.cast(mask, tf.bool), -1)  # [batch, time, 1]
        if steps is None:
            if self.unroll:
                raise layer_error(f"{type(self).__name__} {self.name!r}: cannot unroll a RNN "
                                  f"if the time dimension is undefined (inputs {x.shape})")
            result, states = self._loop(x, states, mask, input_masks, recurrent_masks)
        elif (isinstance(self.cell, LSTMCell) and self.cell.fused() and mask is None
              and input_masks is None and recurrent_masks is None):
            result, states = self._fused_lstm(x, states)
        else:
            result, states = self._unrolled(x, steps, states, mask, input_masks,
                                            recurrent_masks)
        if self._state_store is not None:
            self._state_store.assign(states)
        return [result] + list(states) if self.return_state else result

    def _call_ragged(self, inputs: Any, mask: Any, training: Any, initial_state: Any) -> Any:
        """Padded inputs with the row lengths as the mask; sequences come back ragged."""
        x, mask, lengths = ragged_inputs.padded(self, inputs, mask)
        out = self.call(x, mask=mask, training=training, initial_state=initial_state)
        if not self.return_sequences:
            return out
        if self.return_state:
            return [ragged_inputs.to_ragged(out[0], lengths, self.go_backwards)] + out[1:]
        return ragged_inputs.to_ragged(out, lengths, self.go_backwards)

    def _unrolled(self, x: Any, steps: int, states: list, mask: Any, input_masks: Any,
                  recurrent_masks: Any) -> tuple[Any, list]:
        """The time loop unrolled in Python (a known length)."""
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        projected = tf.unstack(self._runner.project(x, input_masks), num=steps, axis=1)
        masks = tf.unstack(mask, num=steps, axis=1) if mask is not None else None
        outputs: list = []
        previous = None
        for t in order:
            out, new_states = self._runner.step(projected[t], states, recurrent_masks)
            if masks is not None:
                if previous is None or self.zero_output_for_mask:
                    previous = tf.zeros_like(out)
                out, new_states = _keep_masked(masks[t], out, previous, new_states, states)
            previous, states = out, new_states
            outputs.append(out)
        result = tf.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        return result, states

    def _fused_lstm(self, x: Any, states: list) -> tuple[Any, list]:
        """The whole sequence as one op (``ops/recurrent_ops.py``): same results as the
        unrolled steps, in one compiled loop forward and one backward. The op is time-major
        (each step's rows one contiguous block), so the inputs are transposed, not the
        4x wider projection; the op adds the bias in its step pass."""
        cell = self.cell
        x = tf.transpose(x, [1, 0, 2])
        if self.go_backwards:
            x = tf.reverse(x, [0])
        projected = cell._matmul(x, cell.kernel)
        dtype = projected.dtype
        bias = cell.bias if cell.bias is not None else tf.zeros([4 * cell.units], dtype)
        h0, c0 = (tf.cast(s, dtype) for s in states)
        hs, h, c = recurrent_ops.lstm_sequence(projected, h0, c0, cell.recurrent_kernel, bias)
        return (tf.transpose(hs, [1, 0, 2]) if self.return_sequences else h), [h, c]

    def _loop(self, x: Any, states: list, mask: Any, input_masks: Any,
              recurrent_masks: Any) -> tuple[Any, list]:
        """The time loop as one ``tf.while_loop`` when the length is known only at run time
        (traced with ``input_signature`` [None, None, F], padded batches of varying length);
        a known length is unrolled instead, which runs faster for the short sequences seen."""
        if tf.executing_eagerly():
            raise layer_error(f"{type(self).__name__} {self.name!r}: the time dimension of "
                              f"{x.shape} is unknown")
        projected = self._runner.project(x, input_masks)
        steps = tf.shape(x)[1]
        outputs = tf.TensorArray(x.dtype, size=steps)

        def body(t, last, outputs, *states):
            index = steps - 1 - t if self.go_backwards else t
            out, new_states = self._runner.step(projected[:, index, :], list(states),
                                                recurrent_masks)
            if mask is not None:
                previous = tf.zeros_like(out) if self.zero_output_for_mask else last
                out, new_states = _keep_masked(mask[:, index, :], out, previous, new_states,
                                               list(states))
            return (t + 1, out, outputs.write(t, out) if self.return_sequences else outputs,
                    *new_states)

        size = _output_size(self.cell)
        first = tf.zeros_like(states[0][:, :1]) * tf.zeros([1, size], x.dtype)
        _, last, outputs, *states = tf.while_loop(
            lambda t, *_: t < steps, body, [tf.constant(0), first, outputs, *states])
        if self.return_sequences:  # the stacked TensorArray's shape is not static
            sequence = tf.transpose(outputs.stack(), [1, 0, 2])
            sequence.set_shape([x.shape[0], None, size])
            return sequence, states
        return last, states

    def _zero_states(self, x: Any, batch: int | None) -> list:
        if batch is not None:
            return [tf.zeros([batch, size], dtype=x.dtype) for size in self._state_sizes]
        # unknown batch (a symbolic build): zeros shaped like one time step of the inputs
        return [tf.matmul(tf.zeros_like(x[:, 0, :]), tf.zeros([x.shape[-1], size], x.dtype))
                for size in self._state_sizes]

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for the sequence output (None for the last output); states have
        none."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self._state_sizes)
        return output_mask

    def get_config(self) -> dict:
        config = {**super().get_config(), "return_sequences": self.return_sequences,
                  "return_state": self.return_state, "go_backwards": self.go_backwards,
                  "stateful": self.stateful, "unroll": self.unroll}
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
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


def _keep_masked(keep: Any, out: Any, previous: Any, new_states: list,
                 states: list) -> tuple[Any, list]:
    """Where `keep` ([batch, 1]) is false the step is skipped: the previous output and
    states go on unchanged."""
    return (tf.where(keep, out, previous),
            [tf.where(keep, n, s) for n, s in zip(new_states, states)])


class AbstractRNNCell(Layer):
    """The base of a user's recurrent cell: subclasses give ``state_size``, ``output_size``
    and ``call(inputs, states) -> (output, new_states)``; ``RNN(cell)`` runs it over time.

    >>> class MinimalRNNCell(AbstractRNNCell):
    ...     def __init__(self, units, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.units = units
    ...     state_size = property(lambda self: self.units)
    ...     output_size = property(lambda self: self.units)
    """

    def call(self, inputs: Any, states: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  "define call(inputs, states)")

    @property
    def state_size(self) -> Any:
        """The size of the state(s): an int, a TensorShape, or a list/tuple of them."""
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  "define state_size")

    @property
    def output_size(self) -> Any:
        """The size of the output (an int or a TensorShape)."""
        raise NotImplementedError(f"{type(self).__name__}: an AbstractRNNCell subclass must "
                                  "define output_size")

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:
        """Zero states shaped [batch] + each state size, in ``state_size``'s structure (one
        tensor for a single size); the batch and dtype come from `inputs` when given."""
        if inputs is not None:
            batch_size = tf.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError("batch_size and dtype cannot be None while constructing initial "
                             f"state. Received: batch_size={batch_size}, dtype={dtype}")

        def zeros(size: Any) -> Any:
            dims = tf.TensorShape(size).as_list()
            if isinstance(batch_size, int):
                return tf.zeros([batch_size] + dims, dtype=dtype)
            return tf.zeros(tf.concat([tf.reshape(batch_size, [1]),
                                       tf.constant(dims, tf.int32)], 0), dtype=dtype)

        size = self.state_size
        if tf.nest.is_nested(size) and not isinstance(size, tf.TensorShape):
            return tf.nest.map_structure(zeros, size)
        return zeros(size)


def _state_sizes(cell: Any) -> list[int]:
    """A cell's state sizes as a flat list of ints (Keras allows an int or a list)."""
    sizes = cell.state_size
    sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]
    return [int(tf.TensorShape(s)[-1]) if not isinstance(s, int) else s for s in sizes]


def _output_size(cell: Any) -> int:
    size = getattr(cell, "output_size", None)
    return int(size) if size is not None else _state_sizes(cell)[0]


class _GenericCell:
    """Runs a user's cell (any layer whose call(inputs, states) returns (output, states)) in
    the loop of ``RNN``: no input projection, no dropout masks of its own."""

    def __init__(self, cell: Layer):
        self.cell = cell
        self._training = "training" in inspect.signature(cell.call).parameters
        self._step_training = None

    def project(self, inputs: Any, dropout_masks: Any = None) -> Any:
        return inputs

    def dropout_masks(self, inputs: Any, training: Any) -> tuple[None, None]:
        self._step_training = training
        return None, None

    def step(self, inputs: Any, states: list, recurrent_masks: Any = None) -> tuple[Any, list]:
        kwargs = {"training": self._step_training} if self._training else {}
        out, new_states = self.cell(inputs, list(states), **kwargs)
        return out, list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]


class StackedRNNCells(Layer):
    """Several cells run as one: each step feeds the output of one cell to the next; the
    states are all the cells' states in order."""

    def __init__(self, cells: list, **kwargs: Any):
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "state_size"):
                raise TypeError(f"StackedRNNCells: every cell needs a `state_size`, got "
                                f"{cell!r}")
        self.cells = list(cells)

    @property
    def state_size(self) -> list[int]:
        return [size for cell in self.cells for size in _state_sizes(cell)]

    @property
    def output_size(self) -> int:
        return _output_size(self.cells[-1])

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        for cell in self.cells:
            if not cell.built:
                with tf.name_scope(cell.name):
                    cell.build(shape)
                cell.built = True
            shape = tf.TensorShape([shape[0], _output_size(cell)])
        self.built = True

    def get_config(self) -> dict:
        from tapeflow.keras.saving.serialization import serialize_keras_object

        return {**super().get_config(),
                "cells": [serialize_keras_object(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config: dict) -> StackedRNNCells:
        from tapeflow.keras.saving.serialization import deserialize_keras_object

        cells = [deserialize_keras_object(c, kind="layers") for c in config["cells"]]
        return cls(cells, **{k: v for k, v in config.items() if k != "cells"})

    def call(self, inputs: Any, states: Any, training: Any = None):
        states = list(states)
        new_states: list = []
        x = inputs
        for cell in self.cells:
            count = len(_state_sizes(cell))
            own, states = states[:count], states[count:]
            kwargs = {"training": training} if "training" in inspect.signature(
                cell.call).parameters else {}
            x, own = cell(x, own, **kwargs)
            new_states.extend(own if isinstance(own, (list, tuple)) else [own])
        return x, new_states


class _StateStore:
    """A stateful RNN's states: variables of the fixed batch size, kept out of the layer's
    weights (as in Keras, they are not saved with them)."""

    def __init__(self, cell: Any, batch: int):
        self.shapes = [(batch, s) for s in _state_sizes(cell)]
        self.variables = [tf.Variable(np.zeros(s, dtype=cell._dtype._np), trainable=False,
                                      name=f"state_{i}") for i, s in enumerate(self.shapes)]

    def assign(self, states: list) -> None:
        for v, s in zip(self.variables, states):
            v.assign(tf.cast(s, v.dtype))

    def reset(self, states: Any = None) -> None:
        if states is None:
            values = [np.zeros(s) for s in self.shapes]
        else:
            values = [np.asarray(s) for s in (states if isinstance(states, (list, tuple))
                                              else [states])]
            if len(values) != len(self.shapes) or any(
                    v.shape != s for v, s in zip(values, self.shapes)):
                raise ValueError(f"reset_states: expected states of shapes {self.shapes}, "
                                 f"got {[v.shape for v in values]}")
        for v, value in zip(self.variables, values):
            v.assign(value.astype(v.dtype.as_numpy_dtype))


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
                           "batch_size", "input_dim", "weights", "activity_regularizer",
                           "stateful", "unroll", "time_major", "zero_output_for_mask"})
