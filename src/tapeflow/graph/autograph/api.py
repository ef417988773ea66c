"""AutoGraph entry points (`convert`, ``tf.autograph.to_code``) and the runtime helpers the
converted code calls (``ag__.if_stmt`` ...), which choose Python or graph control flow per call.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import warnings
from collections.abc import Callable
from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.graph.autograph.transformer import RETVAL, Converter

_PACKAGE = "tapeflow."


class Undefined:
    """The value of a variable not (yet) assigned on this path; any use raises a clear error."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _fail(self, *args, **kwargs):
        raise NameError(
            f"'{self.name}' is used but is not defined on every path: it is assigned in only one "
            f"branch of an `if`, or only inside a loop whose condition is a tensor. Assign it "
            f"before the `if`/loop.\n{errors.user_line()}")

    __getattr__ = __call__ = __bool__ = __add__ = __radd__ = __mul__ = __getitem__ = _fail
    __sub__ = __truediv__ = __iter__ = __len__ = __float__ = __int__ = __index__ = _fail

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"


UNDEFINED_RETURN = Undefined(RETVAL)


def _symbolic(x: Any) -> bool:
    from tapeflow.graph.ir import SymbolicTensor

    return isinstance(x, SymbolicTensor)


def ld(local_vars: dict, name: str) -> Any:
    """The current value of local `name`, or an Undefined marker."""
    return local_vars.get(name, Undefined(name))


def retval(value: Any) -> Any:
    return None if isinstance(value, Undefined) else value


def len_(x: Any) -> Any:
    """``len``: the static first dimension of a symbolic tensor, else its runtime size."""
    if not _symbolic(x):
        return len(x)
    if x.shape.rank == 0:
        raise errors.OperatorNotAllowedInGraphError(
            f"len() of a scalar tensor ({x.name}) is undefined\n{errors.user_line()}")
    if x.shape.rank is not None and x.shape[0] is not None:
        return x.shape[0]
    from tapeflow.ops import array_ops

    return array_ops.shape(x)[0]


def not_(x: Any) -> Any:
    if _symbolic(x):
        from tapeflow.ops import math_ops

        return math_ops.logical_not(x)
    return not x


def and_(a: Callable, b: Callable) -> Any:
    x = a()
    if _symbolic(x):
        from tapeflow.ops import math_ops

        return math_ops.logical_and(x, b())
    return x and b()


def or_(a: Callable, b: Callable) -> Any:
    x = a()
    if _symbolic(x):
        from tapeflow.ops import math_ops

        return math_ops.logical_or(x, b())
    return x or b()


def if_exp(test: Any, body: Callable, orelse: Callable) -> Any:
    """``body() if test else orelse()``; tf.cond when `test` is symbolic."""
    if not _symbolic(test):
        return body() if test else orelse()
    from tapeflow.graph.control_flow import cond

    return cond(test, body, orelse)


def if_stmt(test: Any, body: Callable, orelse: Callable, init: tuple, names: tuple) -> tuple:
    """`if`: Python when `test` is a Python value or eager tensor, tf.cond when symbolic."""
    if not _symbolic(test):
        return body(*init) if test else orelse(*init)
    from tapeflow.graph.control_flow import cond

    return tuple(cond(test, _fill_undefined(body, init, names),
                      _fill_undefined(orelse, init, names)))


def _fill_undefined(fn: Callable, init: tuple, names: tuple) -> Callable:
    def branch():
        return _Outputs(fn(*init), names)
    return branch


class _Outputs(tuple):
    """A branch's results, tagged with variable names (for undefined-value handling in cond)."""

    def __new__(cls, values, names):
        out = super().__new__(cls, values)
        out.names = names
        return out


def while_stmt(test: Callable, body: Callable, init: tuple, names: tuple) -> tuple:
    """`while`: a Python loop until the test turns out symbolic, then tf.while_loop."""
    values = tuple(init)
    while True:
        t = test(*values)
        if _symbolic(t):
            return _graph_loop(test, body, values, names)
        if not t:
            return values
        values = tuple(body(*values))


def _with_return_value(values: tuple, names: tuple, run_body: Callable) -> tuple:
    """A `return` inside a tensor loop: give the return value a typed initial value (zeros).

    Its dtype and shape come from tracing the body once into a scratch graph (Python side
    effects of the body therefore run one extra time while tracing).
    """
    if RETVAL not in names or not isinstance(values[names.index(RETVAL)], Undefined):
        return values
    graph = _state.graph  # numbers become tensors first, as the loop will make them
    values = tuple(graph.convert(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                   or _symbolic(v) else v for v in values)
    from tapeflow.framework.context import graph_scope
    from tapeflow.graph.ir import SubGraph
    from tapeflow.ops import array_ops

    scratch = SubGraph("return_probe", parent=graph)
    with graph_scope(scratch):
        result = run_body(values)[names.index(RETVAL)]
        if isinstance(result, Undefined):
            return values
        probe = scratch.convert(result)
    if not probe.shape.is_fully_defined():
        raise ValueError(f"a `return` inside a loop over tensors returns a value of unknown "
                         f"shape {probe.shape}; return from outside the loop instead.\n"
                         f"{errors.user_line()}")
    merged = list(values)
    merged[names.index(RETVAL)] = array_ops.zeros(probe.shape.as_list(), dtype=probe.dtype)
    return tuple(merged)


def _graph_loop(test: Callable, body: Callable, values: tuple, names: tuple,
                maximum_iterations: Any = None) -> tuple:
    from tapeflow.graph.control_flow import while_loop

    values = _with_return_value(values, names, lambda vals: body(*vals))
    live = [i for i, v in enumerate(values) if not isinstance(v, Undefined)]

    def full(loop_values):
        merged = list(values)
        for i, v in zip(live, loop_values):
            merged[i] = v
        return merged

    def cond_fn(*loop_values):
        return test(*full(loop_values))

    def body_fn(*loop_values):
        out = body(*full(loop_values))
        return [out[i] for i in live]

    for i in live:
        if values[i] is None:
            raise ValueError(f"'{names[i]}' is None before a loop whose condition is a tensor; "
                             f"loop variables must be tensors: initialize it with a value.\n"
                             f"{errors.user_line()}")
    result = while_loop(cond_fn, body_fn, [values[i] for i in live],
                        maximum_iterations=maximum_iterations)
    merged = list(values)
    for i, v in zip(live, result):
        merged[i] = v
    return tuple(merged)


def for_stmt(iterable: Any, extra_test: Callable | None, body: Callable, init: tuple,
             names: tuple) -> tuple:
    """`for`: over a symbolic tensor -> tf.while_loop over its first axis; else Python."""
    values = tuple(init)
    if _symbolic(iterable):
        return _tensor_for(iterable, extra_test, body, values, names)
    for item in iterable:
        if extra_test is not None:
            ok = extra_test(*values)
            if _symbolic(ok):
                raise errors.OperatorNotAllowedInGraphError(
                    f"a `break`/`return` that depends on a tensor inside a Python `for` loop over"
                    f" {type(iterable).__name__} cannot be converted; iterate over tf.range(...) "
                    f"instead.\n{errors.user_line()}")
            if not ok:
                break
        values = tuple(body(item, *values))
    return values


def _tensor_for(iterable, extra_test, body, values: tuple, names: tuple) -> tuple:
    from tapeflow.graph.control_flow import while_loop
    from tapeflow.ops import array_ops, gather_ops, math_ops

    n = iterable.shape[0] if iterable.shape.rank else None
    length = n if n is not None else array_ops.shape(iterable)[0]
    values = _with_return_value(values, names,
                                lambda vals: body(gather_ops.gather(iterable, 0), *vals))
    live = [i for i, v in enumerate(values) if not isinstance(v, Undefined)]

    def full(loop_values):
        merged = list(values)
        for i, v in zip(live, loop_values):
            merged[i] = v
        return merged

    def cond_fn(i, *loop_values):
        more = math_ops.less(i, length)
        if extra_test is None:
            return more
        return math_ops.logical_and(more, extra_test(*full(loop_values)))

    def body_fn(i, *loop_values):
        item = gather_ops.gather(iterable, i)
        out = body(item, *full(loop_values))
        return [i + 1] + [out[k] for k in live]

    result = while_loop(cond_fn, body_fn, [0] + [values[k] for k in live])
    merged = list(values)
    for k, v in zip(live, result[1:]):
        merged[k] = v
    return tuple(merged)


# --- conversion -----------------------------------------------------------------------------


_cache: dict[Any, Any] = {}


def _parse(fn: Callable) -> ast.FunctionDef:
    source = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(source)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise ValueError("not a def")
    node.decorator_list = []
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    return node


def _convertible(fn: Any) -> bool:
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    module = getattr(fn, "__module__", "") or ""
    return (not module.startswith(_PACKAGE) and "super" not in fn.__code__.co_names
            and not fn.__code__.co_flags & _NOT_CONVERTED and module != "builtins")


def _converted_def(fn: Callable) -> tuple[ast.FunctionDef, bool]:
    node = _parse(fn)
    modules = {k for k, v in fn.__globals__.items() if isinstance(v, types.ModuleType)}
    conv = Converter(modules)
    node = conv.convert(node)
    return node, conv.changed


_NOT_CONVERTED = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def call(f: Any, *args: Any, **kwargs: Any) -> Any:
    """Call `f`, converting it first when it is a user function and a graph is being traced."""
    if _state.graph is not None and isinstance(f, (types.FunctionType, types.MethodType)):
        f = convert(f, quiet=True)
    return f(*args, **kwargs)


def convert(fn: Any, quiet: bool = False) -> Any:
    """The AutoGraph version of `fn` (itself when nothing needs converting or it cannot be)."""
    if isinstance(fn, types.MethodType):
        conv = convert(fn.__func__, quiet)
        return fn if conv is fn.__func__ else types.MethodType(conv, fn.__self__)
    if not _convertible(fn):
        return fn
    key = fn.__code__
    hit = _cache.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    try:
        node, changed = _converted_def(fn)
        result = _build(fn, node) if changed else fn
    except (OSError, TypeError, SyntaxError, ValueError) as e:
        if not quiet:
            warnings.warn(f"AutoGraph could not convert {fn.__name__} ({e}); it runs as "
                          f"written, so Python control flow on tensors will fail.", stacklevel=3)
        result = fn
    _cache[key] = (fn, result)
    return result


def _build(fn: types.FunctionType, node: ast.FunctionDef) -> Callable:
    freevars = fn.__code__.co_freevars
    factory = ast.FunctionDef(
        name="_ag_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in ("ag__", *freevars)],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))],
        decorator_list=[], returns=None)
    if "type_params" in ast.FunctionDef._fields:
        factory.type_params = []
    ast.copy_location(factory, node)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, fn.__code__.co_filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == node.name)
    # the user's own closure cells (not copies): later rebinding and `nonlocal` writes are shared
    from tapeflow.graph.autograph import api

    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(types.CellType(api) if name == "ag__" else cells[name]
                    for name in inner.co_freevars)
    converted = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__,
                                   closure)
    converted.__kwdefaults__ = fn.__kwdefaults__
    converted.__wrapped__ = fn
    return converted


@export("autograph.to_code")
def to_code(entity: Any, recursive: bool = True, experimental_optional_features: Any = None) -> str:
    """The Python source AutoGraph generates for `entity` (a function or tf.function)."""
    fn = getattr(entity, "python_function", entity)
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    node, _ = _converted_def(fn)
    return ast.unparse(node) + "\n"


@export("autograph.experimental.do_not_convert")
def do_not_convert(func: Callable | None = None) -> Any:
    """Mark `func` so AutoGraph leaves it as written."""
    if func is None:
        return do_not_convert
    _cache[func.__code__] = (func, func)
    return func


@export("autograph.to_graph")
def to_graph(entity: Any, recursive: bool = True, experimental_optional_features: Any = None
             ) -> Any:
    """The AutoGraph-converted Python function (graph control flow for tensor conditions)."""
    return convert(entity)
