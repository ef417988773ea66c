"""A layer's weight lists are walked once and reused until the layer tree changes: every way
of changing it (attributes, in-place list/dict edits, trainable flags, new weights) is seen."""

from __future__ import annotations

import tapeflow as tf


class Block(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.parts = [tf.keras.layers.Dense(2)]
        self.named = {}

    def call(self, x):
        for layer in self.parts + list(self.named.values()):
            x = layer(x)
        return x


def _names(variables):
    return [v.name for v in variables]


def _built():
    block = Block()
    block(tf.ones([1, 2]))
    assert len(block.trainable_weights) == 2
    return block


def test_repeated_reads_are_equal_lists_not_the_same_object():
    block = _built()
    first, second = block.trainable_weights, block.trainable_weights
    assert first == second and first is not second
    first.append("junk")  # a caller's edit never reaches the cache
    assert len(block.trainable_weights) == 2


def test_append_to_a_tracked_list_is_seen():
    block = _built()
    dense = tf.keras.layers.Dense(2)
    dense.build((None, 2))
    block.parts.append(dense)
    assert len(block.trainable_weights) == 4


def test_replacing_a_list_item_in_place_is_seen():
    block = _built()
    dense = tf.keras.layers.Dense(2)
    dense.build((None, 2))
    block.parts[0] = dense
    assert _names(block.trainable_weights) == _names(dense.trainable_weights)


def test_dict_entry_is_seen():
    block = _built()
    dense = tf.keras.layers.Dense(2)
    dense.build((None, 2))
    block.named["extra"] = dense
    assert len(block.trainable_weights) == 4
    del block.named["extra"]
    assert len(block.trainable_weights) == 2


def test_trainable_flag_of_a_sub_layer_is_seen():
    block = _built()
    block.parts[0].trainable = False
    assert block.trainable_weights == []
    assert len(block.non_trainable_weights) == 2
    block.parts[0].trainable = True
    assert len(block.trainable_weights) == 2


def test_attribute_set_and_deleted_is_seen():
    block = _built()
    block.scale = tf.Variable(1.0)
    assert len(block.trainable_weights) == 3
    del block.scale
    assert len(block.trainable_weights) == 2


def test_weight_added_later_is_seen():
    block = _built()
    block.add_weight("late", shape=(3,))
    assert len(block.trainable_weights) == 3


def test_sequential_add_after_reading_weights():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,))])
    assert len(model.trainable_variables) == 2
    model.add(tf.keras.layers.Dense(1))
    assert len(model.trainable_variables) == 4
    model.pop()
    assert len(model.trainable_variables) == 2
