"""tf.train.load_checkpoint / get_checkpoint_state / checkpoints_iterator / Coordinator."""

import threading

import numpy as np
import pytest

import tapeflow as tf


def test_reader_state_and_iterator(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]), step=tf.Variable(3, dtype=tf.int64))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)
    first = manager.save()
    ckpt.v.assign([5.0, 6.0])
    second = manager.save()
    reader = tf.train.load_checkpoint(str(tmp_path))
    assert reader.get_variable_to_shape_map()["v"] == [2]
    assert reader.get_variable_to_dtype_map()["step"] == tf.int64
    np.testing.assert_array_equal(reader.get_tensor("v"), [5.0, 6.0])
    assert not reader.has_tensor("w")
    with pytest.raises(tf.errors.NotFoundError):
        reader.get_tensor("w")
    np.testing.assert_array_equal(tf.train.load_checkpoint(first).get_tensor("v"), [1.0, 2.0])
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [first, second]
    assert tf.train.get_checkpoint_state(str(tmp_path / "none")) is None
    seen = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0.1))
    assert seen == [second]
    with pytest.raises(ValueError):
        tf.train.load_checkpoint(str(tmp_path / "missing"))


def test_coordinator_stops_threads_and_reraises():
    coord = tf.train.Coordinator()
    counts = []

    def work(k):
        with coord.stop_on_exception():
            n = 0
            while not coord.should_stop():
                n += 1
                if k == 2 and n == 5:
                    raise ValueError("worker 2 failed")
                coord.wait_for_stop(0.001)
            counts.append(n)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="worker 2 failed"):
        coord.join(threads)
    assert coord.should_stop() and len(counts) == 2
    clean = tf.train.Coordinator()
    clean.request_stop(tf.errors.OutOfRangeError(None, None, "end of data"))
    clean.join([])
    assert tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True).enable_async
