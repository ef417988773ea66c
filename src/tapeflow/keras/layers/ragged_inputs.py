"""RaggedTensor inputs of Keras layers, as tf-keras takes them.

- Layers that act on each position's last axis (Dense, Dropout, LayerNormalization, lookups,
  TimeDistributed) run on the flat values and keep the row partition (``on_flat_values``).
- Recurrent layers pad the batch, use the row lengths as the mask, and cut sequence outputs
  back to the rows' lengths (a backward layer's outputs are in processing order: each row's
  last steps) (``padded``, ``to_ragged``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tapeflow as tf
from tapeflow.ragged.nn_dispatch import reverse_rows
from tapeflow.ragged.tensor import RaggedTensor


def on_flat_values(call: Callable) -> Callable:
    """Decorate a layer's ``call``: a RaggedTensor input runs through it as its flat values."""
    @functools.wraps(call)
    def call_on_ragged(self: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, RaggedTensor):
            return inputs.with_flat_values(call(self, inputs.flat_values, *args, **kwargs))
        return call(self, inputs, *args, **kwargs)

    return call_on_ragged


def padded(layer: Any, inputs: Any, mask: Any) -> tuple[Any, Any, Any]:
    """(dense inputs, [batch, time] mask, row lengths) of a ragged batch of sequences."""
    if mask is not None:
        raise ValueError(f"The mask that was passed in was {mask}, which cannot be applied to "
                         "RaggedTensor inputs. Please make sure that there is no mask injected "
                         f"by upstream layers (layer {layer.name!r}).")
    if getattr(layer, "unroll", False):
        raise ValueError(f"The input received contains RaggedTensors and does not support "
                         f"unrolling. Disable unrolling by passing `unroll=False` in the RNN "
                         f"Layer constructor (layer {layer.name!r}).")
    lengths = inputs.row_lengths()
    x = inputs.to_tensor()
    return x, tf.sequence_mask(lengths, maxlen=tf.shape(x)[1]), lengths


def to_ragged(sequences: Any, lengths: Any, go_backwards: bool) -> Any:
    """[batch, time, ...] outputs back to ragged rows of `lengths` steps."""
    if not go_backwards:
        return tf.RaggedTensor.from_tensor(sequences, lengths=lengths)
    return reverse_rows(tf.RaggedTensor.from_tensor(tf.reverse(sequences, [1]),
                                                    lengths=lengths))
