"""Generated source is immune by construction (names checked, keys and attributes bound as
values, never spliced) and is released from linecache together with its function."""

from __future__ import annotations

import enum
import gc
import keyword
import linecache

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply, op
from tapeflow.graph import names


@pytest.mark.parametrize("name", ["return", "None", "x²", "class", "match", "print", "g0", "p0",
                                  "__name__", "1st", "a b-c", "", "λ"])
def test_any_function_name_compiles(name):
    f = tf.function(lambda x: x * 2.0 + 1.0, name=name)
    assert f(tf.constant(1.5)).numpy() == 4.0
    first = f.get_concrete_function(tf.constant(1.5)).code.splitlines()[0]
    fn_name = first[len("def "):first.index("(")]
    assert fn_name.isidentifier() and fn_name.isascii() and not keyword.iskeyword(fn_name)


def test_identifiers_are_checked():
    for hint in ["return", "None", "x²", "_x", "__class__", "0", "", "sum", "type"]:
        out = names.identifier(hint)
        assert out.isidentifier() and out.isascii() and not keyword.iskeyword(out)
        assert not keyword.issoftkeyword(out) and not out.startswith("_")
        assert out not in dir(__builtins__) if isinstance(__builtins__, dict) else True
    ns = names.Namespace()
    assert [ns.fresh("a"), ns.fresh("a"), ns.fresh("a_1")] == ["a", "a_1", "a_1_1"]


class Color(enum.IntEnum):
    RED = 1
    BLUE = 2


class Mode(str, enum.Enum):
    TRAIN = "train"


class Crafted(str):
    """A key whose repr is code: an eval of repr(key) would run it."""

    ran = []

    def __repr__(self) -> str:
        return "__import__('tests').__dict__.setdefault('pwned', Crafted.ran.append(1))"


@pytest.mark.parametrize("keys", [[Color.BLUE, Color.RED], [Mode.TRAIN, "eval"],
                                  [Crafted("k"), "z"], [3, 1]])
def test_dict_output_keys_are_values(keys):
    def f(x):
        return {k: x + float(i) for i, k in enumerate(keys)}

    out = tf.function(f)(tf.constant(1.0))
    assert list(out) == keys and [type(k) for k in out] == [type(k) for k in keys]
    np.testing.assert_array_equal([v.numpy() for v in out.values()],
                                  [v.numpy() for v in f(tf.constant(1.0)).values()])
    assert Crafted.ran == []


_SEEN: dict = {}


@op("_KeywordsForTest", shape=lambda x, **attrs: x)
def _record_attrs(x, **attrs):
    _SEEN.update(attrs)
    return x + 1.0


def test_attribute_names_are_bound_not_spliced():
    evil = "a=1) or __import__('os').getpid() or print(b"
    f = tf.function(lambda x: apply(_record_attrs, x, ok=2, **{evil: 3}))
    np.testing.assert_array_equal(f(tf.constant([1.0])).numpy(), [2.0])
    assert _SEEN == {"ok": 2, evil: 3}
    code = f.get_concrete_function(tf.constant([1.0])).code
    assert "getpid" not in code and "ok=" in code and "**" in code


def _generated_sources() -> int:
    return sum(1 for k in linecache.cache if k.startswith("<tapeflow-graph"))


def test_linecache_releases_sources_with_their_functions():
    gc.collect()
    before = _generated_sources()
    fns = [tf.function(lambda x, k=k: x * float(k)) for k in range(50)]
    for f in fns:
        f(tf.constant(1.0))
    assert _generated_sources() >= before + 50  # tracebacks can show the source meanwhile
    del fns, f
    gc.collect()
    assert _generated_sources() <= before + 2
