"""``tf.variable_creator_scope``: intercept every ``tf.Variable(...)`` made inside the scope.

A creator is called as creator(next_creator, **kwargs) with the constructor's keyword
arguments; it may change them, call next_creator(**kwargs) (the next scope out, finally the
plain constructor) or return another object. The innermost scope runs first, as in TF.
Implemented as one entry of variable.creators, present only while a scope is open (other
threads' scopes: their own stacks)."""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow._api import export
from tapeflow.framework import variable as _variable

_local = threading.local()
_open = {"scopes": 0}  # open scopes in all threads
_lock = threading.Lock()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
        _local.plain = 0
    return _local.stack


def _plain(**kwargs: Any) -> Any:
    """The Variable the constructor makes, the scopes bypassed."""
    _local.plain += 1
    try:
        return _variable.Variable(**kwargs)
    finally:
        _local.plain -= 1


def _creator(args: tuple, kwargs: dict) -> Any:
    stack = _stack()
    if not stack or _local.plain:
        return None
    bound = inspect.signature(_variable.Variable.__init__).bind(None, *args, **kwargs)
    arguments = dict(bound.arguments)
    arguments.pop("self", None)

    def call(level: int, **kw: Any) -> Any:
        if level < 0:
            return _plain(**kw)
        return stack[level](lambda **inner: call(level - 1, **inner), **kw)

    made = call(len(stack) - 1, **arguments)
    if isinstance(made, _variable.Variable):
        made._made_by_creator = True  # Python calls __init__ again on what __new__ returns
    return made



@export("variable_creator_scope")
@contextlib.contextmanager
def variable_creator_scope(variable_creator: Callable) -> Iterator[None]:
    """Within the scope, tf.Variable(...) goes through variable_creator(next_creator,
    **kwargs)."""
    stack = _stack()
    stack.append(variable_creator)
    with _lock:
        _open["scopes"] += 1
        if _open["scopes"] == 1:  # registered only while some scope is open
            _variable.creators.append(_creator)
    try:
        yield
    finally:
        stack.pop()
        with _lock:
            _open["scopes"] -= 1
            if _open["scopes"] == 0:
                _variable.creators.remove(_creator)
