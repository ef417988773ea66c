"""``tf.py_function`` and ``tf.numpy_function``: arbitrary Python as one stateful op.

The function runs when the op runs: now when eager, at every call of a traced function (not at
trace time), and per element in ``tf.data`` maps. ``py_function`` hands the function eager
tensors and is differentiable (its gradient re-runs the function under a tape, as TensorFlow's
EagerPyFunc does); ``numpy_function`` hands it NumPy arrays and has no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import nest
from tapeflow.framework.context import eager_scope
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import wrap


def _result_arrays(result: Any, tout: tuple, name: str) -> tuple:
    if not isinstance(result, (list, tuple)):
        result = [] if result is None and not tout else [result]
    if len(result) != len(tout):
        raise ValueError(f"{name} returned {len(result)} values, Tout declares {len(tout)}")
    out = []
    for r, d in zip(result, tout):
        value = r.numpy() if hasattr(r, "numpy") else r
        arr = np.asarray(value, dtype=object if d is _dtypes.string else d._np)
        out.append(arr)
    return tuple(out)


def _out_specs(*specs, func, tout, eager_args, name):
    return [(None, d) for d in tout]


@op("EagerPyFunc", multi_output=True, stateful=True, shape=_out_specs)
def _py_func(*arrays, func, tout, eager_args, name):
    with eager_scope():  # the user's code runs eagerly, unseen by the caller's tapes
        args = [wrap(a) for a in arrays] if eager_args else list(arrays)
        return _result_arrays(func(*args), tout, name)


@op("EagerPyFuncGrad", multi_output=True, stateful=True,
    shape=lambda *specs, func, n_in, name: [s for s in specs[:n_in]])
def _py_func_grad(*arrays, func, n_in, name):
    from tapeflow.framework.tape import GradientTape

    with eager_scope():
        xs = [wrap(a) for a in arrays[:n_in]]
        gs = [wrap(g) for g in arrays[n_in:]]
        with GradientTape() as tape:
            for x in xs:
                tape.watch(x)
            ys = nest.flatten(func(*xs))
        grads = tape.gradient(ys, xs, output_gradients=gs)
        return tuple(np.zeros_like(x._value) if g is None else g.numpy()
                     for x, g in zip(xs, grads))


@_py_func.def_grad
def _(g, out, *inputs, func, tout, eager_args, name):
    if not eager_args or not inputs:
        return [None] * len(inputs)
    float_in = all(x.dtype.is_floating for x in inputs)
    if not float_in or not all(d.is_floating for d in tout):
        return [None] * len(inputs)
    return list(apply(_py_func_grad, *inputs, *g, func=func, n_in=len(inputs), name=name))


def _call(func: Callable, inp: Any, Tout: Any, eager_args: bool, name: str):  # noqa: N803
    single = not isinstance(Tout, (list, tuple))
    tout = () if Tout is None else tuple(_dtypes.as_dtype(t) for t in
                                         ([Tout] if single else Tout))
    label = f"{name}: {getattr(func, '__name__', func)}"
    outs = apply(_py_func, *(inp or []), func=func, tout=tout, eager_args=eager_args,
                 name=label)
    if Tout is None:
        return None
    return outs[0] if single else list(outs)


@export("py_function")
def py_function(func: Callable, inp: Any, Tout: Any, name: str | None = None) -> Any:  # noqa: N803
    """Run `func(*inp)` on eager tensors whenever the op runs; results get the dtypes `Tout`."""
    return _call(func, inp, Tout, True, "py_function")


@export("numpy_function")
def numpy_function(func: Callable, inp: Any, Tout: Any, stateful: bool = True,  # noqa: N803
                   name: str | None = None) -> Any:
    """Run `func(*inp)` on NumPy arrays whenever the op runs (no gradient)."""
    return _call(func, inp, Tout, False, "numpy_function")
