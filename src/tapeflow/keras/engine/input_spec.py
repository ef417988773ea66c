"""``tf.keras.layers.InputSpec``: what a layer accepts (rank, dtype, shape, fixed axes).

A layer that sets ``self.input_spec`` has every call checked against it before it builds or
runs, in eager calls, traced calls and functional construction alike, with tf-keras 2's
messages: ``Input 0 of layer "dense" is incompatible with the layer: expected axis -1 of input
shape to have value 4, but received input with shape (2, 3)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import nest
from tapeflow.framework.shapes import TensorShape


class InputSpec:
    """The rank, dtype and shape every input of a layer must have.

    ``shape`` includes the batch axis and may hold None for unchecked axes (it fixes
    ``ndim``); ``axes`` maps axes (negative ones count from the end) to required sizes;
    ``allow_last_axis_squeeze`` also accepts a trailing axis of size 1 on either side;
    ``name`` picks the input out of a dict of inputs; ``optional`` lets the input be None.

    >>> spec = InputSpec(shape=(None, 28, 28, 1), allow_last_axis_squeeze=True)
    """

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None, optional: bool = False):
        self.dtype = _dtypes.as_dtype(dtype).name if dtype is not None else None
        shape = TensorShape(shape)
        if shape.rank is None:
            self.shape = None
            self.ndim = ndim
        else:
            self.shape = tuple(shape.as_list())
            self.ndim = len(self.shape)
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.optional = optional
        # eager (shape, dtype)s already checked against this spec (emptied by __setattr__)
        self._passed: set = set()
        try:
            axes = axes or {}
            self.axes = {int(k): axes[k] for k in axes}
        except (ValueError, TypeError):
            raise TypeError("Argument `axes` must be a dict with integer keys. "
                            f"Received: axes={axes}") from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim else self.max_ndim) - 1
            max_axis = max(self.axes)
            if max_axis > max_dim:
                raise ValueError(f"Axis {max_axis} is greater than the maximum allowed value: "
                                 f"{max_dim}")

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name != "_passed":  # a changed spec checks every shape again
            object.__setattr__(self, "_passed", set())

    def __repr__(self) -> str:
        parts = [f"dtype={self.dtype}" if self.dtype else "",
                 f"shape={self.shape}" if self.shape else "",
                 f"ndim={self.ndim}" if self.ndim else "",
                 f"max_ndim={self.max_ndim}" if self.max_ndim else "",
                 f"min_ndim={self.min_ndim}" if self.min_ndim else "",
                 f"axes={self.axes}" if self.axes else ""]
        return f"InputSpec({', '.join(p for p in parts if p)})"

    def get_config(self) -> dict:
        """tf-keras's config: dtype, shape, ndim, max_ndim, min_ndim and axes."""
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config: dict) -> InputSpec:
        return cls(**config)


def to_tensor_shape(spec: InputSpec) -> TensorShape:
    """The (partially known) shape `spec` allows; unknown rank when it fixes none."""
    if spec.shape is not None:
        return TensorShape(spec.shape)
    if spec.ndim is None:
        return TensorShape(None)
    shape: list = [None] * spec.ndim
    for axis, size in spec.axes.items():
        shape[axis] = size
    return TensorShape(shape)


def display_shape(shape: TensorShape) -> str:
    return str(tuple(shape.as_list()))


def _as_checked(x: Any) -> Any:
    """Python numbers are checked as the tensors Keras converts them to."""
    if isinstance(x, (int, float, bool)):
        from tapeflow.framework.constant import convert_to_tensor

        return convert_to_tensor(x)
    return x


def _dtype_name(x: Any) -> str:
    dtype = x.dtype
    return dtype.name if not isinstance(dtype, np.dtype) else _dtypes.as_dtype(dtype).name


def _error(message: str) -> ValueError:
    """tf-keras's message, then the user's source line (as every tapeflow layer error)."""
    from tapeflow.framework import errors

    where = errors.user_line()
    return ValueError(f"{message}\n{where}" if where else message)


def _flat_inputs(input_spec: list, inputs: Any) -> list:
    if isinstance(inputs, dict):  # a dict of inputs is read in the specs' name order
        names = [spec.name for spec in input_spec]
        if all(names):
            for name in names:
                if name not in inputs:
                    raise _error(f'Missing data for input "{name}". You passed a data '
                                     f"dictionary with keys {list(inputs.keys())}. Expected "
                                     f"the following keys: {names}")
            inputs = [inputs[name] for name in names]
    return nest.flatten(inputs)


def assert_input_compatibility(input_spec: Any, inputs: Any, layer_name: str) -> None:
    """Raise ValueError (TypeError for a non-tensor) naming the layer, the input's index, the
    spec it breaks and the shape received, if `inputs` do not meet `input_spec`."""
    if not input_spec:
        return
    if type(input_spec) is InputSpec and hasattr(inputs, "dtype") and \
            not isinstance(inputs, (list, tuple, dict)):
        # one spec and one tensor (every built-in layer's case): no flattening, and an eager
        # tensor of a shape and dtype this spec already passed is not checked again
        value = getattr(inputs, "_value", None)
        seen = input_spec._passed
        key = (value.shape, value.dtype) if isinstance(value, np.ndarray) else None
        if key is not None and key in seen:
            return
        shape = inputs.shape if isinstance(inputs.shape, TensorShape) else \
            TensorShape(inputs.shape)
        if shape.rank is not None:
            _check_one(input_spec, inputs, shape, 0, layer_name)
        if key is not None:
            if len(seen) > 64:  # many shapes (variable-length inputs): start over
                seen.clear()
            seen.add(key)
        return
    input_spec = nest.flatten(input_spec)
    inputs = _flat_inputs(input_spec, inputs)
    for x, spec in zip(inputs, input_spec):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(_as_checked(x), "shape"):
            raise TypeError(f"Inputs to a layer should be tensors. Got '{x}' (of type "
                            f"{type(x)}) as input for layer '{layer_name}'.")
    if len(inputs) != len(input_spec):
        raise _error(f'Layer "{layer_name}" expects {len(input_spec)} input(s), but it '
                         f"received {len(inputs)} input tensors. Inputs received: {inputs}")
    for index, (x, spec) in enumerate(zip(inputs, input_spec)):
        if spec is None or (x is None and spec.optional):
            continue
        x = _as_checked(x)
        shape = TensorShape(x.shape)
        if shape.rank is None:
            return
        _check_one(spec, x, shape, index, layer_name)


def _check_one(spec: InputSpec, x: Any, shape: TensorShape, index: int,
               layer_name: str) -> None:
    ndim = shape.rank
    prefix = f'Input {index} of layer "{layer_name}" is incompatible with the layer: '
    if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
        raise _error(f"{prefix}expected ndim={spec.ndim}, found ndim={ndim}. "
                         f"Full shape received: {tuple(shape)}")
    if spec.max_ndim is not None and ndim > spec.max_ndim:
        raise _error(f"{prefix}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
    if spec.min_ndim is not None and ndim < spec.min_ndim:
        raise _error(f"{prefix}expected min_ndim={spec.min_ndim}, found ndim={ndim}. "
                         f"Full shape received: {tuple(shape)}")
    if spec.dtype is not None and _dtype_name(x) != spec.dtype:
        raise _error(f"{prefix}expected dtype={spec.dtype}, found dtype="
                         f"<dtype: '{_dtype_name(x)}'>")  # TF's str of a DType
    if spec.axes:
        dims = shape.as_list()
        for axis, value in spec.axes.items():
            value = getattr(value, "value", value)
            if value is not None and dims[int(axis)] not in {value, None}:
                raise _error(f"{prefix}expected axis {axis} of input shape to have value "
                                 f"{value}, but received input with shape "
                                 f"{display_shape(shape)}")
    if spec.shape is not None:
        dims = shape.as_list()
        spec_shape = spec.shape
        if spec.allow_last_axis_squeeze:
            if dims and dims[-1] == 1:
                dims = dims[:-1]
            if spec_shape and spec_shape[-1] == 1:
                spec_shape = spec_shape[:-1]
        for spec_dim, dim in zip(spec_shape, dims):
            if spec_dim is not None and dim is not None and spec_dim != dim:
                raise _error(f"{prefix}expected shape={spec.shape}, found shape="
                                 f"{display_shape(shape)}")
