"""A Dense layer whose kernel is split along its output features over a mesh axis
(``kernel_layout=Layout([UNSHARDED, "model"], mesh)``), for ``tf.experimental.dtensor``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.distribute import mesh as mesh_mod
from tapeflow.framework.context import eager_scope
from tapeflow.framework.dtypes import as_dtype
from tapeflow.keras import activations, initializers
from tapeflow.keras.engine.base_layer import Layer


class Dense(Layer):
    """``activation(x @ kernel + bias)`` with this rank's kernel columns; the output is
    all-gathered along the kernel's mesh axis, so every rank sees whole rows of its batch."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_layout: mesh_mod.Layout | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        if kernel_layout is None or kernel_layout.rank != 2 or \
                kernel_layout.sharding_specs[0] != mesh_mod.UNSHARDED:
            raise ValueError("dtensor Dense: kernel_layout must be a rank-2 Layout "
                             "[UNSHARDED, axis] (the output features split along `axis`, or "
                             "UNSHARDED)")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_layout = kernel_layout
        axis = kernel_layout.sharding_specs[1]
        self._comm = None if axis == mesh_mod.UNSHARDED else kernel_layout.mesh.comm(axis)

    def build(self, input_shape: Any) -> None:
        d = int(input_shape[-1])
        mesh = self.kernel_layout.mesh
        dtype = as_dtype(self._dtype or "float32")
        with eager_scope():  # built on first call, which may be while tracing
            full = np.asarray(self.kernel_initializer(shape=(d, self.units), dtype=dtype))
            bias = np.asarray(self.bias_initializer(shape=(self.units,), dtype=dtype))
        full = mesh.broadcast(full)  # every rank starts from rank 0's draw
        local = self.kernel_layout.local(full)
        self.kernel = self.add_weight("kernel", shape=local.shape,
                                      initializer=lambda shape, dtype=None: local)
        if self.use_bias:
            bias = mesh.broadcast(bias)
            local_bias = bias[self.kernel_layout.local_slice(1, self.units)]
            self.bias = self.add_weight("bias", shape=local_bias.shape,
                                        initializer=lambda shape, dtype=None: local_bias)
        else:
            self.bias = None
        self.built = True

    def call(self, inputs: Any) -> Any:
        import tapeflow as tf

        x = mesh_mod.sum_gradient(tf.convert_to_tensor(inputs), self._comm)
        y = tf.matmul(x, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return mesh_mod.all_gather(y, self._comm, axis=-1)

    def full_weights(self) -> list[np.ndarray]:
        """[kernel, bias] as one process would hold them (gathered over the mesh axis)."""
        out = []
        for w, axis in ((self.kernel, 1), (self.bias, 0)):
            if w is None:
                continue
            value = w.numpy()
            if self._comm is not None:
                value = np.concatenate(list(self._comm.allgather(value, "gather weights")),
                                       axis=axis)
            out.append(value)
        return out
