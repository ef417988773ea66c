"""tf.variable_creator_scope: creators see the constructor's arguments, innermost first, may
change them or return another object; outside the scopes nothing changes."""

import numpy as np

import tapeflow as tf


def test_nested_creators_change_arguments_innermost_first():
    seen = []

    def freeze(next_creator, **kwargs):
        seen.append(("freeze", kwargs["name"]))
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    def rename(next_creator, **kwargs):
        seen.append(("rename", kwargs["name"]))
        kwargs["name"] = "inner_" + kwargs["name"]
        return next_creator(**kwargs)

    with tf.variable_creator_scope(freeze):
        with tf.variable_creator_scope(rename):
            v = tf.Variable([1.0, 2.0], name="w")
        u = tf.Variable(3.0, name="u")
    assert seen == [("rename", "w"), ("freeze", "inner_w"), ("freeze", "u")]
    assert v.name == "inner_w:0" and not v.trainable and not u.trainable
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    with tf.GradientTape() as tape:
        y = v * 2.0
    assert tape.gradient(y, v) is None  # not trainable: not watched
    assert tf.Variable(1.0).trainable


def test_creator_may_return_another_object():
    with tf.variable_creator_scope(lambda next_creator, **kw: ("made", kw["initial_value"])):
        assert tf.Variable(5.0) == ("made", 5.0)
