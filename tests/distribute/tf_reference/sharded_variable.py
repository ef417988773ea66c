"""Run with TensorFlow 2.21 + tf-keras (not in CI; TF_USE_LEGACY_KERAS=1): what a
ParameterServerStrategy with a partitioner makes of variables. An in-process cluster (1 worker,
2 ps) stands in for the servers. Recorded on 2026-11-24:

    ShardedVariable ['w/part_0:0', 'w/part_1:0', 'w/part_2:0'] [[4, 4], [3, 4], [3, 4]]
    ['embeddings/part_0:0', 'embeddings/part_1:0', 'embeddings/part_2:0']
    False                                   (a ShardedVariable is not a tf.Variable)
    ['IndexedSlices', 'IndexedSlices', 'IndexedSlices']   (embedding lookup: a gradient per shard)
    [... 'layer/embeddings/.ATTRIBUTES/VARIABLE_VALUE', ... 'v/.ATTRIBUTES/VARIABLE_VALUE']
                                            (one checkpoint entry per sharded variable)
    True [[5, 4], [5, 4]]                   (restored into 2 shards)
    True

tests/distribute/test_sharded_variable.py checks the same facts on tapeflow.
"""

import os
import socket

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.distribute import multi_worker_test_base as mwb  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


mwb.pick_unused_port = _port
cluster = mwb.create_in_process_cluster(num_workers=1, num_ps=2, rpc_layer="grpc")
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(cluster),
                                                                rpc_layer="grpc")


def strategy(shards: int):
    return tf.distribute.experimental.ParameterServerStrategy(
        resolver,
        variable_partitioner=tf.distribute.experimental.partitioners.FixedShardsPartitioner(
            shards))


with strategy(3).scope():
    v = tf.Variable(np.arange(40.0).reshape(10, 4), name="w")
    layer = tf.keras.layers.Embedding(10, 4)
    layer.build((None,))
    opt = tf.keras.optimizers.Adam(0.1)
print(type(v).__name__, [x.name for x in v.variables], [x.shape.as_list() for x in v.variables])
print([w.name for w in layer.trainable_weights])
print(isinstance(v, tf.Variable))
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.nn.embedding_lookup(layer.embeddings, [1, 9]))
grads = tape.gradient(loss, layer.trainable_weights)
print([type(g).__name__ for g in grads])
opt.apply_gradients(zip(grads, layer.trainable_weights))
path = tf.train.Checkpoint(v=v, layer=layer, opt=opt).save("/tmp/tf_sharded_ckpt/c")
print(sorted(name for name, _ in tf.train.list_variables(path)))
with strategy(2).scope():
    v2 = tf.Variable(np.zeros((10, 4)), name="w")
    layer2 = tf.keras.layers.Embedding(10, 4)
    layer2.build((None,))
    opt2 = tf.keras.optimizers.Adam(0.1)
tf.train.Checkpoint(v=v2, layer=layer2, opt=opt2).restore(path)
print(np.array_equal(tf.convert_to_tensor(v2).numpy(), np.arange(40.0).reshape(10, 4)),
      [x.shape.as_list() for x in v2.variables])
print(np.allclose(tf.convert_to_tensor(layer2.embeddings).numpy(),
                  tf.convert_to_tensor(layer.embeddings).numpy()))
