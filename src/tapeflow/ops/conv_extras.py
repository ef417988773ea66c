"""``tf.nn`` convolution front ends composed from the Conv2D/Conv3D ops: convolution and
conv_transpose (by rank), conv1d_transpose, atrous (dilated) convolutions, depthwise and
separable 2-D convolutions. The depthwise one is a single Conv2D with a block-diagonal
filter (each input channel feeding only its own `multiplier` outputs), so it shares Conv2D's
kernel and gradients; it costs `channels` times the arithmetic of a dedicated kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.ops import array_ops, conv3d_ops, conv_ops, root_extras
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.linalg_ops import einsum


@export("nn.convolution")
def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",  # noqa: A002
                data_format: str | None = None, dilations: Any = None,
                name: str | None = None) -> Any:
    """conv1d / conv2d / conv3d by the input's rank (3, 4 or 5)."""
    x = _tensor(input)
    rank = x.shape.rank
    n = rank - 2
    strides = 1 if strides is None else strides
    if rank == 3:
        return conv_ops.conv1d(x, filters, strides, padding, dilations=dilations)
    if rank == 4:
        return conv_ops.conv2d(x, filters, strides, padding, dilations=dilations)
    if rank == 5:
        return conv3d_ops.conv3d(x, filters, [1] + [strides] * n + [1] if isinstance(
            strides, int) else strides, padding, dilations=dilations)
    raise ValueError(f"tf.nn.convolution: input must have rank 3, 4 or 5, got {rank}")


@export("nn.conv1d_transpose")
def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NWC", dilations: Any = None,
                     name: str | None = None) -> Any:
    """The adjoint of conv1d: a 1 x k conv2d_transpose on [N, 1, W, C]."""
    x = array_ops.expand_dims(_tensor(input), 1)
    w = array_ops.expand_dims(_tensor(filters), 0)
    shape = [int(d) for d in np.asarray(output_shape).reshape(-1)]
    stride = int(np.asarray(strides).reshape(-1)[0 if np.size(strides) == 1 else 1])
    out = conv_ops.conv2d_transpose(x, w, [shape[0], 1, shape[1], shape[2]], [1, stride],
                                    padding, dilations=None if dilations is None else
                                    [1, int(np.asarray(dilations).reshape(-1)[-1])])
    return array_ops.squeeze(out, [1])


@export("nn.conv_transpose")
def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                   padding: str = "SAME", data_format: str | None = None, dilations: Any = None,
                   name: str | None = None) -> Any:
    """conv1d_transpose / conv2d_transpose / conv3d_transpose by the input's rank."""
    rank = _tensor(input).shape.rank
    fn = {3: conv1d_transpose, 4: conv_ops.conv2d_transpose,
          5: conv3d_ops.conv3d_transpose}.get(rank)
    if fn is None:
        raise ValueError(f"tf.nn.conv_transpose: input must have rank 3, 4 or 5, got {rank}")
    return fn(input, filters, output_shape, strides, padding, dilations=dilations)


@export("nn.atrous_conv2d")
def atrous_conv2d(value: Any, filters: Any, rate: int, padding: str,
                  name: str | None = None) -> Any:
    """conv2d with the filter's taps `rate` apart (dilation)."""
    return conv_ops.conv2d(value, filters, 1, padding, dilations=int(rate))


@export("nn.atrous_conv2d_transpose")
def atrous_conv2d_transpose(value: Any, filters: Any, output_shape: Any, rate: int,
                            padding: str, name: str | None = None) -> Any:
    """The adjoint of atrous_conv2d."""
    return conv_ops.conv2d_transpose(value, filters, output_shape, 1, padding,
                                     dilations=int(rate))


@export("nn.depthwise_conv2d")
def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: str,  # noqa: A002
                     data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Any:
    """Each input channel convolved with its own `multiplier` filters [kh, kw, C, M]; output
    channel c * M + m (TensorFlow's order)."""
    x = _tensor(input)
    w = _tensor(filter, x.dtype)
    kh, kw, c, m = w.shape.as_list()
    eye = convert_to_tensor(np.eye(c, dtype=x.dtype._np))
    full = array_ops.reshape(einsum("hwcm,cd->hwcdm", w, eye), [kh, kw, c, c * m])
    stride = [int(s) for s in np.asarray(strides).reshape(-1)]
    stride = stride[1:3] if len(stride) == 4 else stride
    rate = None if dilations is None else [int(d) for d in np.asarray(dilations).reshape(-1)]
    return conv_ops.conv2d(x, full, stride, padding, dilations=rate)


@export("nn.separable_conv2d")
def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any,  # noqa: A002
                     strides: Any, padding: str, data_format: str | None = None,
                     dilations: Any = None, name: str | None = None) -> Any:
    """depthwise_conv2d followed by a 1x1 conv2d with pointwise_filter [1, 1, C*M, Cout]."""
    mid = depthwise_conv2d(input, depthwise_filter, strides, padding, dilations=dilations)
    return conv_ops.conv2d(mid, pointwise_filter, 1, "VALID")


export("nn.space_to_batch")(root_extras.space_to_batch_nd)
