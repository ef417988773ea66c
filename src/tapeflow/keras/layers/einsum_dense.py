"""EinsumDense: a dense layer whose product is any einsum of the input with one kernel.

The equation names the input's axes, the kernel's and the output's (``'abc,cde->abde'``
projects [batch, time, d_model] to [batch, time, heads, key_dim]), so the kernel's shape
follows from the input shape and the requested output shape; nothing is reshaped. An ellipsis
on the left (``'...b,bc->...c'``) or right (``'ab...,bc->ac...'``) of the input and output
passes those axes through untouched, as in Keras.
"""

from __future__ import annotations

import re
from typing import Any

import tapeflow as tf
from tapeflow.keras import activations, initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.recurrent import _serialize
from tapeflow.keras.layers.utils import layer_error, static_shape
from tapeflow.keras.layers.weights import KernelAndBias

# (pattern, where the ellipsis is): the three equation forms Keras accepts
_FORMS = (
    (re.compile(r"^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$"), None),
    (re.compile(r"^\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)$"), "left"),
    (re.compile(r"^([a-zA-Z]{2,})\.\.\.,([a-zA-Z]+)->([a-zA-Z]{2,})\.\.\.$"), "right"),
)


def _split_equation(equation: str) -> tuple[str, str, str, str | None]:
    """(input, kernel, output subscripts, ellipsis side) of an EinsumDense equation."""
    for pattern, side in _FORMS:
        match = pattern.match(equation.replace(" ", ""))
        if match:
            return match.group(1), match.group(2), match.group(3), side
    raise layer_error(f"EinsumDense: invalid equation {equation!r}: expected 'ab,bc->ac', "
                     "'...b,bc->...c' or 'ab...,bc->ac...' (one input, one kernel)")


def analyze(equation: str, input_shape: list, output_shape: tuple,
            bias_axes: str | None, layer: str = "EinsumDense") -> tuple[list, list | None, list]:
    """(kernel shape, bias shape or None, full output shape) for inputs of `input_shape`.

    `output_shape` excludes the batch axis and the elided axes, as Keras's argument does.
    """
    inp, ker, out, side = _split_equation(equation)
    rank = len(input_shape)
    elided = rank - len(inp)
    if elided < 0 or (side is None and elided) or (side == "right" and elided == 0):
        raise layer_error(f"{layer}: equation {equation!r} names {len(inp)} input axes but the "
                         f"input has shape {tuple(input_shape)}")
    if side == "left":
        full = list(input_shape[:elided]) + list(output_shape)
        in_dims, out_offset = input_shape[elided:], elided
    elif side == "right":
        full = [input_shape[0]] + list(output_shape) + list(input_shape[rank - elided:])
        in_dims, out_offset = input_shape[:len(inp)], 0
    else:
        full = [input_shape[0]] + list(output_shape)
        in_dims, out_offset = input_shape, 0
    if len(full) - (elided if side else 0) != len(out):
        raise layer_error(f"{layer}: output_shape {tuple(output_shape)} does not fit the output "
                         f"subscripts {out!r} of {equation!r} (batch axis excluded)")
    in_size = dict(zip(inp, in_dims))
    out_size = {c: full[out_offset + i] for i, c in enumerate(out)}
    for c in out:
        if c not in inp and c not in ker:
            raise layer_error(f"{layer}: output axis {c!r} of {equation!r} is in neither the "
                             "input nor the kernel")
        if c in inp and None not in (in_size[c], out_size[c]) and in_size[c] != out_size[c]:
            raise layer_error(f"{layer}: axis {c!r} of {equation!r} is {in_size[c]} in the input "
                             f"{tuple(input_shape)} but {out_size[c]} in the output "
                             f"{tuple(full)}")
        if c in inp:
            out_size[c] = in_size[c]
    kernel = []
    for c in ker:
        size = in_size[c] if c in in_size else out_size.get(c)
        if c not in in_size and c not in out_size:
            raise layer_error(f"{layer}: kernel axis {c!r} of {equation!r} is in neither the "
                             "input nor the output")
        if size is None:
            raise layer_error(f"{layer}: kernel axis {c!r} of {equation!r} has an unknown size "
                             f"(input shape {tuple(input_shape)}, output {tuple(full)})")
        kernel.append(int(size))
    full = full[:out_offset] + [out_size[c] for c in out] + full[out_offset + len(out):]
    bias = None
    if bias_axes:
        missing = [c for c in bias_axes if c not in out]
        if missing:
            raise layer_error(f"{layer}: bias axes {missing} are not output axes of "
                             f"{equation!r}")
        first = min(out.index(c) for c in bias_axes)
        bias = [out_size[c] if c in bias_axes else 1 for c in out[first:]]
        bias += [1] * (elided if side == "right" else 0)
    return kernel, bias, full


class EinsumDense(KernelAndBias, Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``, bias over `bias_axes`.

    >>> layer = EinsumDense("abc,cde->abde", output_shape=(None, 2, 3), bias_axes="de")
    >>> layer(tf.zeros([1, 5, 4])).shape  # kernel (4, 2, 3), bias (2, 3)
    TensorShape([1, 5, 2, 3])
    """

    def __init__(self, equation: str, output_shape: Any, activation: Any = None,
                 bias_axes: str | None = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _split_equation(equation)
        self.equation = equation
        if isinstance(output_shape, int):
            output_shape = (output_shape,)
        self.partial_output_shape = tuple(None if d is None else int(d) for d in output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self._weight_arguments(kernel_initializer, bias_initializer, kernel_regularizer,
                               bias_regularizer, kernel_constraint, bias_constraint)

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape).as_list()
        kernel, bias, _ = analyze(self.equation, shape, self.partial_output_shape,
                                  self.bias_axes, f"EinsumDense {self.name!r}")
        self._add_kernel_and_bias(kernel, bias)
        self.built = True

    def _check_inputs(self, x: Any) -> None:
        """The input axes the kernel reads must have the sizes the kernel was built for."""
        inp, ker, _, side = _split_equation(self.equation)
        shape = static_shape(x)
        dims = shape[len(shape) - len(inp):] if side == "left" else shape[:len(inp)]
        kernel = dict(zip(ker, self.kernel.shape.as_list()))
        for c, d in zip(inp, dims):
            if c in kernel and d is not None and d != kernel[c]:
                raise layer_error(f"EinsumDense {self.name!r}: input axis {c!r} of "
                                 f"{self.equation!r} is {d} (input shape {tuple(shape)}), but "
                                 f"the kernel {tuple(self.kernel.shape.as_list())} was built "
                                 f"for {kernel[c]}")

    def call(self, inputs: Any):
        x = tf.convert_to_tensor(inputs)
        self._check_inputs(x)
        out = tf.einsum(self.equation, x, self.kernel)
        if self.bias is not None:
            out = out + self.bias
        return self.activation(out)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        shape = tf.TensorShape(input_shape).as_list()
        return tf.TensorShape(analyze(self.equation, shape, self.partial_output_shape,
                                      self.bias_axes, f"EinsumDense {self.name!r}")[2])

    def get_config(self) -> dict:
        return {**super().get_config(), "equation": self.equation,
                "output_shape": self.partial_output_shape, "bias_axes": self.bias_axes,
                "activation": activations.serialize(self.activation),
                "kernel_initializer": _serialize(self.kernel_initializer, initializers),
                "bias_initializer": _serialize(self.bias_initializer, initializers),
                "kernel_regularizer": _serialize(self.kernel_regularizer, regularizers),
                "bias_regularizer": _serialize(self.bias_regularizer, regularizers),
                "kernel_constraint": self.kernel_constraint,
                "bias_constraint": self.bias_constraint}
