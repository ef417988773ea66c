"""ShardedVariable: what a ParameterServerStrategy with a partitioner makes of tf.Variable and of
Keras weights (no Ray needed: the strategy starts its servers only with a coordinator).
Semantics recorded from TensorFlow 2.21 by tests/distribute/tf_reference/sharded_variable.py."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

ShardedVariable = tf.distribute.experimental.ShardedVariable


def _strategy(shards: int):
    spec = tf.train.ClusterSpec({"chief": ["localhost:2222"], "worker": ["localhost:3000"],
                                 "ps": ["localhost:4000", "localhost:4001"]})
    return tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec),
        variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner(
            shards))


def _embedding_model(shards: int, seed: int = 0):
    with _strategy(shards).scope():
        tf.random.set_seed(seed)
        model = tf.keras.Sequential([tf.keras.layers.Embedding(10, 4, input_length=3),
                                     tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
        model.build((None, 3))
        optimizer = tf.keras.optimizers.Adam(0.1)
    return model, optimizer


def test_partitioned_variable_is_a_sharded_variable_as_in_tf():
    strategy = _strategy(3)
    with strategy.scope():
        v = tf.Variable(np.arange(40.0).reshape(10, 4), name="w")
        scalar = tf.Variable(1.0, name="s")
        small = tf.Variable([1.0, 2.0], name="small")  # 3 shards of 2 rows: 2 shards
    assert isinstance(v, ShardedVariable) and not isinstance(v, tf.Variable)
    assert isinstance(scalar, tf.Variable) and isinstance(small, ShardedVariable)
    assert [x.name for x in v.variables] == ["w/part_0:0", "w/part_1:0", "w/part_2:0"]
    assert [x.shape.as_list() for x in v.variables] == [[4, 4], [3, 4], [3, 4]]  # TF's [4,3,3]
    assert len(small.variables) == 2 and v.shape.as_list() == [10, 4]
    np.testing.assert_array_equal(tf.convert_to_tensor(v).numpy(), np.arange(40.0).reshape(10, 4))
    # the shards are spread over the two servers, round-robin
    assert [ps for ps, _, _ in strategy.variable_layout["w"]] == [0, 1, 0]
    assert [(a, b) for _, a, b in strategy.variable_layout["w"]] == [(0, 4), (4, 7), (7, 10)]
    v.assign(np.ones((10, 4)))
    v.assign_add(np.full((10, 4), 2.0))
    np.testing.assert_array_equal(v.numpy(), np.full((10, 4), 3.0))
    np.testing.assert_array_equal((v * 2).numpy()[9], [6.0] * 4)
    assert v[2:5].shape.as_list() == [3, 4]
    with pytest.raises(ValueError, match="cannot assign a value of shape"):
        v.assign(np.ones((9, 4)))
    with pytest.raises(TypeError, match="non-empty list"):
        ShardedVariable([])

    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = v

    assert [x.name for x in Holder().trainable_variables] == [x.name for x in v.variables]


def test_embedding_lookup_reads_each_row_from_its_shard():
    table = np.random.default_rng(1).normal(size=(10, 3))
    shards = [tf.Variable(table[a:b]) for a, b in [(0, 4), (4, 7), (7, 10)]]
    sv = ShardedVariable(shards, name="table")
    whole = tf.Variable(table)
    ids = tf.constant([[9, 0, 4], [3, 3, 7]])

    def loss(params):
        rows = tf.nn.embedding_lookup(params, ids)
        return tf.reduce_sum(rows * rows * tf.constant([1.0, 2.0, 3.0], tf.float64)), rows

    with tf.GradientTape() as tape:
        value, rows = loss(sv)
    grads = tape.gradient(value, sv.variables)
    with tf.GradientTape() as tape:
        expected_value, expected_rows = loss(whole)
    expected = tf.convert_to_tensor(tape.gradient(expected_value, whole)).numpy()
    np.testing.assert_allclose(rows.numpy(), expected_rows.numpy(), rtol=0, atol=0)
    # each shard's gradient is sparse and holds only its rows
    assert all(isinstance(g, tf.IndexedSlices) for g in grads)
    dense = np.concatenate([tf.convert_to_tensor(g).numpy() for g in grads], 0)
    np.testing.assert_allclose(dense, expected, rtol=1e-12)
    assert sorted(grads[1].indices.numpy().tolist()) == [0]  # row 4 = shard 1's row 0
    traced = tf.function(lambda i: tf.nn.embedding_lookup(sv, i))
    np.testing.assert_array_equal(traced(ids).numpy(), expected_rows.numpy())

    numeric = np.zeros_like(table)  # central differences through the sharded lookup, float64
    for i, j in np.ndindex(*table.shape):
        k = next(k for k, b in enumerate([4, 7, 10]) if i < b)
        row = i - [0, 4, 7][k]
        for sign in (1, -1):
            bumped = shards[k].numpy()
            bumped[row, j] += sign * 1e-6
            original = shards[k].numpy()
            shards[k].assign(bumped)
            numeric[i, j] += sign * float(loss(sv)[0].numpy()) / 2e-6
            shards[k].assign(original)
    np.testing.assert_allclose(dense, numeric, rtol=1e-6, atol=1e-6)

def test_keras_embedding_trains_on_shards_like_one_variable():
    ids = tf.constant(np.random.default_rng(2).integers(0, 10, size=(8, 3)))
    y = tf.constant(np.random.default_rng(3).normal(size=(8, 1)).astype(np.float32))
    sharded, opt_s = _embedding_model(3)
    plain = tf.keras.Sequential([tf.keras.layers.Embedding(10, 4, input_length=3),
                                 tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
    plain.build((None, 3))
    opt_p = tf.keras.optimizers.Adam(0.1)
    emb = sharded.layers[0].embeddings
    assert isinstance(emb, ShardedVariable)
    # Keras lists the shards as the layer's weights (what the optimizer updates)
    assert [w.name for w in sharded.layers[0].trainable_weights] == [
        v.name for v in emb.variables]
    dense = sharded.layers[2]
    assert isinstance(dense.kernel, ShardedVariable)  # (12, 1): three shards too, as in TF
    plain.set_weights([emb.numpy(), np.asarray(dense.kernel), dense.bias.numpy()])
    dense_before = np.asarray(dense.kernel)
    for model, opt in [(sharded, opt_s), (plain, opt_p)]:
        def step(model=model, opt=opt):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(ids) - y))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))

        traced = tf.function(step)
        for _ in range(2):  # eager and traced steps alike
            step()
            traced()
    np.testing.assert_allclose(emb.numpy(), plain.layers[0].embeddings.numpy(), atol=1e-6)
    np.testing.assert_allclose(np.asarray(dense.kernel), plain.layers[2].kernel.numpy(),
                               atol=1e-6)
    assert np.abs(np.asarray(dense.kernel) - dense_before).max() > 0.1  # it did train


@pytest.mark.parametrize("shards", [2, 1])
def test_checkpoint_holds_the_whole_variable_and_reshards_on_restore(tmp_path, shards):
    ids = tf.constant([[1, 9, 4]])
    model, optimizer = _embedding_model(3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(ids))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "c"))
    names = dict(tf.train.list_variables(path))
    emb_keys = [k for k in names if "embeddings" in k]
    # one entry for the table, one per Adam slot: whole shapes, whatever the shard count
    assert len(emb_keys) == 3 and all(names[k] == [10, 4] for k in emb_keys)
    if shards == 1:  # a plain model (no strategy) restores it too
        other = tf.keras.Sequential([tf.keras.layers.Embedding(10, 4, input_length=3),
                                     tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
        other.build((None, 3))
        other_opt = tf.keras.optimizers.Adam(0.1)
    else:
        other, other_opt = _embedding_model(shards, seed=5)
        assert len(other.layers[0].embeddings.variables) == shards
    tf.train.Checkpoint(model=other, optimizer=other_opt).restore(path)
    np.testing.assert_array_equal(np.asarray(other.layers[0].embeddings),
                                  model.layers[0].embeddings.numpy())
    for m in [model, other]:  # the next step, slots restored too, is the same everywhere
        opt = optimizer if m is model else other_opt
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(m(ids))
        opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables),
                                m.trainable_variables))
    np.testing.assert_allclose(np.asarray(other.layers[0].embeddings),
                               model.layers[0].embeddings.numpy(), atol=1e-6)
