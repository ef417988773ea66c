"""Layer wrappers: the ``Wrapper`` base, TimeDistributed (one layer applied to every time
step) and Bidirectional (a recurrent layer run forwards and backwards, outputs merged).

Weights are named as in Keras 2: TimeDistributed builds its layer in its own scope
(``time_distributed/kernel:0``); Bidirectional builds two copies of its layer, named
``forward_<name>`` and ``backward_<name>`` (``bidirectional/forward_lstm/lstm_cell/kernel:0``).
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.recurrent import RNN
from tapeflow.keras.layers.utils import layer_error, static_shape


class Wrapper(Layer):
    """The base of layers that take another layer and augment it (TimeDistributed,
    Bidirectional): holds it as ``self.layer``, builds it on the wrapper's input shape, and
    saves it in its config (``{"layer": <the layer's serialized config>, ...}``)."""

    def __init__(self, layer: Layer, **kwargs: Any):
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer} supplied to wrapper is not a supported layer "
                             "type. Please ensure wrapped layer is a valid TF-Keras layer.")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any = None) -> None:
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
        self.built = True

    def get_config(self) -> dict:
        from tapeflow.keras.saving.serialization import serialize_keras_object

        return {**super().get_config(), "layer": serialize_keras_object(self.layer)}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Wrapper:
        config = dict(config)
        return cls(_deserialize_layer(config.pop("layer"), custom_objects), **config)


def _deserialize_layer(config: dict, custom_objects: dict | None = None) -> Layer:
    """The wrapped layer of a wrapper's config, unbuilt: the wrapper builds it in its own
    scope, so its weights keep the wrapper's names."""
    from tapeflow.keras.saving.serialization import deserialize_keras_object

    config = {k: v for k, v in config.items() if k != "build_config"}
    layer = deserialize_keras_object(config, custom_objects, kind="layers")
    if not isinstance(layer, Layer):
        raise ValueError(f"A wrapper's 'layer' must describe a layer, got {config!r}")
    return layer


class TimeDistributed(Wrapper):
    """Apply `layer` to every slice ``inputs[:, t]`` of [batch, time, ...] inputs.

    The time axis is folded into the batch (one call of `layer` on [batch * time, ...]), so
    the weights are shared across steps and the layer runs once, not once per step. A
    [batch, time] mask passes through to the output.
    """

    _passes_mask = True

    def __init__(self, layer: Layer, **kwargs: Any):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        kwargs.setdefault("dtype", layer.dtype_policy)  # so inputs are not cast away from its dtype
        super().__init__(layer, **kwargs)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank is None or shape.rank < 3:
            raise layer_error(f"TimeDistributed {self.name!r}: expected inputs of shape "
                             f"[batch, time, ...] (rank 3 or more), got {shape}")
        if not self.layer.built:
            self.layer.build(tf.TensorShape([None] + shape.as_list()[2:]))
            self.layer.built = True
        self.built = True

    def call(self, inputs: Any):
        if isinstance(inputs, tf.RaggedTensor) and inputs.ragged_rank == 1:
            return inputs.with_values(self.layer(inputs.values))  # the steps of every row
        x = tf.convert_to_tensor(inputs)
        dims = static_shape(x)
        if any(d is None for d in dims[2:]):
            raise layer_error(f"TimeDistributed {self.name!r}: the dims after the time axis "
                             f"must be known, got inputs of shape {x.shape}")
        y = self.layer(tf.reshape(x, [-1] + dims[2:]))
        inner = static_shape(y)[1:]
        if dims[:2].count(None) <= 1:
            return tf.reshape(y, [-1 if d is None else d for d in dims[:2]] + inner)
        return tf.reshape(y, tf.concat([tf.shape(x)[:2], tf.shape(y)[1:]], 0))



_MERGES = {
    "concat": lambda f, b: tf.concat([f, b], axis=-1),
    "sum": lambda f, b: f + b,
    "mul": lambda f, b: f * b,
    "ave": lambda f, b: (f + b) / 2,
}


def _copy_rnn(layer: RNN, name: str, go_backwards: bool) -> RNN:
    """A fresh, unbuilt copy of a recurrent layer (with a fresh copy of its cell)."""
    config = {**layer.get_config(), "name": name, "go_backwards": go_backwards}
    return type(layer).from_config(config)  # a plain RNN's config holds its cell's config


class Bidirectional(Wrapper):
    """Run a recurrent layer over the sequence forwards and backwards and merge the outputs.

    ``merge_mode``: 'concat' (default, 2 * units features), 'sum', 'mul', 'ave', or None (a
    list [forward, backward]). With ``return_sequences`` the backward outputs are reversed
    back into input order before merging. With ``return_state`` the forward states follow
    the output, then the backward ones; ``initial_state`` takes them in the same order.
    """

    def __init__(self, layer: RNN, merge_mode: str | None = "concat", weights: Any = None,
                 backward_layer: RNN | None = None, **kwargs: Any):
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `Bidirectional` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        if not isinstance(layer, RNN):
            raise TypeError(f"Bidirectional: `layer` must be a recurrent layer (LSTM, GRU, "
                            f"SimpleRNN, RNN), got {layer!r}")
        if merge_mode not in (*_MERGES, None):
            raise layer_error(f"Bidirectional: `merge_mode` must be one of 'concat', 'sum', "
                             f"'mul', 'ave' or None, got {merge_mode!r}")
        kwargs.setdefault("dtype", layer.dtype_policy)
        super().__init__(layer, **kwargs)
        self.forward_layer = _copy_rnn(layer, f"forward_{layer.name}", layer.go_backwards)
        if backward_layer is None:
            self.backward_layer = _copy_rnn(layer, f"backward_{layer.name}",
                                            not layer.go_backwards)
        else:
            if not isinstance(backward_layer, RNN) or \
                    backward_layer.go_backwards == layer.go_backwards or \
                    backward_layer.return_sequences != layer.return_sequences or \
                    backward_layer.return_state != layer.return_state:
                raise layer_error("Bidirectional: `backward_layer` must be a recurrent layer "
                                 "with the opposite go_backwards and the same return_sequences "
                                 "and return_state as `layer`")
            self.backward_layer = backward_layer
        for sub in (self.forward_layer, self.backward_layer):  # as Keras's Bidirectional
            sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self._initial_weights = weights

    @property
    def layer(self) -> RNN:
        """The layer given (never built or run: its two copies are, as in Keras)."""
        return self._unowned_layer

    @layer.setter
    def layer(self, value: RNN) -> None:
        self._unowned_layer = value

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 3:
            raise layer_error(f"Bidirectional {self.name!r}: expected inputs of shape "
                             f"[batch, time, features], got {shape}")
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                with tf.name_scope(layer.name):
                    layer.build(shape)
                layer.built = True
        self.built = True

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None):
        forward_state = backward_state = None
        if initial_state is not None:
            states = list(initial_state)
            half = len(states) // 2
            forward_state, backward_state = states[:half], states[half:]
        forward = self.forward_layer(inputs, mask=mask, training=training,
                                     initial_state=forward_state)
        backward = self.backward_layer(inputs, mask=mask, training=training,
                                       initial_state=backward_state)
        states: list = []
        if self.return_state:
            states = list(forward[1:]) + list(backward[1:])
            forward, backward = forward[0], backward[0]
        if self.return_sequences:
            backward = tf.reverse(backward, [1])
        if self.merge_mode is None:
            output: Any = [forward, backward]
        else:
            output = _MERGES[self.merge_mode](forward, backward)
        if self.return_state:
            return (output if isinstance(output, list) else [output]) + states
        return output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The sequence mask for sequence outputs (one per output with merge_mode None);
        none for the last output and the states, as Keras's Bidirectional."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        one = mask if self.return_sequences else None
        output_mask: Any = [one, one] if self.merge_mode is None else one
        if not self.return_state:
            return output_mask
        states = len(self.forward_layer.cell.state_size) \
            if isinstance(self.forward_layer.cell.state_size, list) else 1
        head = output_mask if isinstance(output_mask, list) else [output_mask]
        return head + [None] * (2 * states)

    @property
    def stateful(self) -> bool:
        return self.forward_layer.stateful

    def reset_states(self, states: Any = None) -> None:
        """Reset both directions' states (`states`: forward's, then backward's)."""
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        half = len(states) // 2
        self.forward_layer.reset_states(states[:half])
        self.backward_layer.reset_states(states[half:])

    def get_config(self) -> dict:
        from tapeflow.keras.saving.serialization import serialize_keras_object

        config = {**Layer.get_config(self), "merge_mode": self.merge_mode,
                  "layer": serialize_keras_object(self.forward_layer)}
        config["layer"]["config"]["name"] = self.forward_layer.name[len("forward_"):]
        return config
