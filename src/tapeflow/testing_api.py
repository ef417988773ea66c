"""``tf.test``: TensorFlow's unittest helpers (``tf.test.TestCase``, ``tf.test.main`` ...).

Test files written for TensorFlow run unchanged: values are compared as NumPy arrays (tensors,
ragged and sparse tensors, nested structures), ``evaluate`` turns tensors into NumPy, and
``session()`` / ``cached_session()`` are no-op contexts (everything runs eagerly).
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import unittest
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors, nest


def _np(x: Any) -> Any:
    from tapeflow.framework.composite import CompositeTensor

    if isinstance(x, CompositeTensor):
        if hasattr(x, "to_list"):
            return x.to_list()
        from tapeflow.sparse.ops import to_dense

        return to_dense(x).numpy()
    if hasattr(x, "numpy"):
        return x.numpy()
    if hasattr(x, "_as_tensor"):
        return x._as_tensor().numpy()
    return x


@export("test.TestCase")
class TestCase(unittest.TestCase):
    """unittest.TestCase with TensorFlow's array assertions."""

    def evaluate(self, tensors: Any) -> Any:
        """Tensors (in any nesting) as NumPy values."""
        return nest.map_structure(_np, tensors)

    @contextlib.contextmanager
    def session(self, graph: Any = None, config: Any = None) -> Iterator[None]:
        yield None

    cached_session = session
    test_session = session

    def get_temp_dir(self) -> str:
        if not hasattr(self, "_tempdir"):
            self._tempdir = tempfile.mkdtemp(prefix="tf_test_")
        return self._tempdir

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                       msg: str | None = None) -> None:
        a, b = self.evaluate(a), self.evaluate(b)
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertEqual(sorted(a), sorted(b), msg)
            for k in a:
                self.assertAllClose(a[k], b[k], rtol, atol, msg)
            return
        if isinstance(a, (list, tuple)) and _ragged_or_nested(a, b):
            self.assertEqual(len(a), len(b), msg)
            for x, y in zip(a, b):
                self.assertAllClose(x, y, rtol, atol, msg)
            return
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol,
                                   err_msg=msg or "", equal_nan=True)

    def assertAllCloseAccordingToType(self, a: Any, b: Any, rtol: float = 1e-6,  # noqa: N802
                                      atol: float = 1e-6, float_rtol: float = 1e-6,
                                      float_atol: float = 1e-6, half_rtol: float = 1e-3,
                                      half_atol: float = 1e-3, **kwargs: Any) -> None:
        a = np.asarray(self.evaluate(a))
        if a.dtype == np.float16:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        elif a.dtype == np.float32:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        self.assertAllClose(a, b, rtol, atol)

    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        a, b = self.evaluate(a), self.evaluate(b)
        if isinstance(a, (list, tuple)) and _ragged_or_nested(a, b):
            self.assertEqual(_tolist(a), _tolist(b), msg)
            return
        a, b = np.asarray(a), np.asarray(b)
        self.assertEqual(a.shape, b.shape, msg or f"shape {a.shape} != {b.shape}")
        np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        self.assertFalse(np.array_equal(np.asarray(self.evaluate(a)),
                                        np.asarray(self.evaluate(b))), msg)

    def assertNotAllClose(self, a: Any, b: Any, **kwargs: Any) -> None:  # noqa: N802
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(np.asarray(self.evaluate(a)) > comparison_target))

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(np.asarray(self.evaluate(a)) >= comparison_target))

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(np.asarray(self.evaluate(a)) < comparison_target))

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        self.assertTrue(np.all(np.asarray(self.evaluate(a)) <= comparison_target))

    def assertAllInRange(self, target: Any, lower_bound: Any, upper_bound: Any,  # noqa: N802
                         open_lower_bound: bool = False, open_upper_bound: bool = False) -> None:
        t = np.asarray(self.evaluate(target))
        low = t > lower_bound if open_lower_bound else t >= lower_bound
        high = t < upper_bound if open_upper_bound else t <= upper_bound
        self.assertTrue(np.all(low & high), f"{t} not in range [{lower_bound}, {upper_bound}]")

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:  # noqa: N802
        values = set(np.asarray(self.evaluate(target)).reshape(-1).tolist())
        self.assertTrue(values <= set(expected_set), f"{values} not a subset of {expected_set}")

    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:  # noqa: N802
        self.assertTrue(abs(float(f1) - float(f2)) <= err, msg or f"{f1} != {f2} +/- {err}")

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float,  # noqa: N802
                        msg: str | None = None) -> None:
        for a, b in zip(farray1, farray2):
            self.assertNear(a, b, err, msg)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:  # noqa: N802
        from tapeflow.framework import dtypes

        got = getattr(target, "dtype", np.asarray(target).dtype)
        self.assertEqual(dtypes.as_dtype(got), dtypes.as_dtype(expected_dtype))

    def assertShapeEqual(self, input_a: Any, input_b: Any, msg: str | None = None) -> None:  # noqa: N802
        self.assertEqual(tuple(np.shape(self.evaluate(input_a))),
                         tuple(getattr(input_b, "shape", np.shape(input_b))), msg)

    def assertRaisesWithPredicateMatch(self, exception_type: type,  # noqa: N802
                                       expected_err_re_or_predicate: Any) -> Any:
        predicate = expected_err_re_or_predicate
        if isinstance(predicate, str):
            pattern = predicate

            def predicate(e: Exception) -> bool:
                return re.search(pattern, str(e)) is not None

        return _RaisesContext(self, exception_type, predicate)

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any) -> Any:  # noqa: N802
        return self.assertRaisesWithPredicateMatch(errors.OpError, expected_err_re_or_predicate)

    assertRaisesRegexp = unittest.TestCase.assertRaisesRegex  # noqa: N815 - TF1 spelling


class _RaisesContext:
    def __init__(self, case: TestCase, kind: type, predicate: Callable):
        self.case, self.kind, self.predicate = case, kind, predicate

    def __enter__(self) -> _RaisesContext:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if value is None:
            raise AssertionError(f"{self.kind.__name__} not raised")
        if not isinstance(value, self.kind) or not self.predicate(value):
            raise AssertionError(f"Exception of type {type(value).__name__}: {value}")
        return True


def _ragged_or_nested(a: Any, b: Any) -> bool:
    try:
        np.asarray(a, dtype=float)
        np.asarray(b, dtype=float)
        return False
    except (ValueError, TypeError):
        return True


def _tolist(x: Any) -> Any:
    return x.tolist() if isinstance(x, np.ndarray) else (
        [_tolist(e) for e in x] if isinstance(x, (list, tuple)) else x)


@export("test.main")
def main(argv: Any = None) -> None:
    """Run the TestCases of the calling module (``unittest.main``)."""
    unittest.main(argv=argv)


@export("test.is_gpu_available")
def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    return False


@export("test.gpu_device_name")
def gpu_device_name() -> str:
    return ""


@export("test.is_built_with_cuda")
def is_built_with_cuda() -> bool:
    return False


@export("test.is_built_with_gpu_support")
def is_built_with_gpu_support() -> bool:
    return False


@export("test.is_built_with_rocm")
def is_built_with_rocm() -> bool:
    return False


@export("test.is_built_with_xla")
def is_built_with_xla() -> bool:
    return False


@export("test.is_cpu_target_available")
def is_cpu_target_available(target: str) -> bool:
    return target.lower() in ("x86", "x86_64", "aarch64", "arm")


@export("test.compute_gradient")
def compute_gradient(f: Callable, x: Any, delta: float | None = None) -> tuple:
    """(theoretical, numerical) Jacobians of `f` at the list `x`, one pair of lists per input
    ([output size, input size] matrices, as TensorFlow's gradient_checker_v2 returns)."""
    from tapeflow.framework.constant import convert_to_tensor
    from tapeflow.framework.tape import GradientTape

    xs = [np.asarray(_np(v), dtype=np.float64) for v in x]
    dtypes_in = [np.asarray(_np(v)).dtype for v in x]
    delta = delta or (1e-3 if dtypes_in[0] == np.float32 else 1e-6)

    def call(values: list) -> np.ndarray:
        args = [convert_to_tensor(v.astype(d)) for v, d in zip(values, dtypes_in)]
        return np.asarray(_np(f(*args)), dtype=np.float64).reshape(-1)

    y0 = call(xs)
    theoretical, numerical = [], []
    for i, xi in enumerate(xs):
        jac_t = np.zeros((y0.size, xi.size))
        for k in range(y0.size):
            args = [convert_to_tensor(v.astype(d)) for v, d in zip(xs, dtypes_in)]
            with GradientTape() as tape:
                tape.watch(args[i])
                y = f(*args)
                from tapeflow.ops import array_ops

                yk = array_ops.reshape(y, [-1])[k]
            g = tape.gradient(yk, args[i])
            jac_t[k] = 0 if g is None else np.asarray(_np(g), np.float64).reshape(-1)
        jac_n = np.zeros((y0.size, xi.size))
        for j in range(xi.size):
            plus, minus = [v.copy() for v in xs], [v.copy() for v in xs]
            plus[i].reshape(-1)[j] += delta
            minus[i].reshape(-1)[j] -= delta
            jac_n[:, j] = (call(plus) - call(minus)) / (2 * delta)
        theoretical.append(jac_t.astype(dtypes_in[i]))
        numerical.append(jac_n.astype(dtypes_in[i]))
    return theoretical, numerical


@export("test.Benchmark")
class Benchmark:
    """Minimal ``tf.test.Benchmark``: ``report_benchmark`` collects results."""

    def __init__(self) -> None:
        self.results: list = []

    def report_benchmark(self, **kwargs: Any) -> None:
        self.results.append(kwargs)


@export("test.benchmark_config")
def benchmark_config() -> dict:
    return {}


@export("test.with_eager_op_as_function")
def with_eager_op_as_function(cls: Any = None, only_as_function: bool = False) -> Any:
    return cls if cls is not None else (lambda c: c)


@export("test.disable_with_predicate")
def disable_with_predicate(pred: Callable, skip_message: str) -> Callable:
    def decorate(fn: Callable) -> Callable:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if pred():
                self.skipTest(skip_message)
            return fn(self, *args, **kwargs)
        return wrapper
    return decorate



@export("test.assert_equal_graph_def")
def assert_equal_graph_def(expected: Any, actual: Any) -> None:
    """Raise AssertionError unless two GraphDefs hold the same nodes (compared by name, in any
    order: op, inputs, device and attributes) and the same function library."""
    from tapeflow.summary.graph_def import as_graph_def

    expected, actual = as_graph_def(expected), as_graph_def(actual)
    want = {n.name: n for n in expected.node}
    got = {n.name: n for n in actual.node}
    problems = []
    if set(want) != set(got):
        problems.append(f"only expected: {sorted(set(want) - set(got))}; "
                        f"only actual: {sorted(set(got) - set(want))}")
    for name in sorted(set(want) & set(got)):
        if want[name] != got[name]:
            problems.append(f"node {name!r} differs:\nexpected:\n{want[name]}actual:\n{got[name]}")
    if expected.library != actual.library:
        problems.append("the function libraries differ")
    if problems:
        raise AssertionError("GraphDefs differ: " + "\n".join(problems))


@export("test.experimental.sync_devices")
def sync_devices() -> None:
    """Wait for every device's pending work: tapeflow's ops run synchronously on the CPU, so
    there is none when this is called (TF: a no-op without GPUs)."""
