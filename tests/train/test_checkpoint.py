"""tf.train.Checkpoint: round trips, errors that lose nothing, atomic writes, deferred restore."""

from __future__ import annotations

import gc
import os
import pickle
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.keras import optimizers
from tapeflow.train import Checkpoint, checkpoint_io, latest_checkpoint, list_variables
from tapeflow.train.checkpoint import load_weights, restore_on_create, save_weights


class Net:
    """A plain object holding variables (no Keras needed)."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.kernel = tf.Variable(rng.normal(size=(3, 2)).astype(np.float32), name="kernel")
        self.blocks = [{"scale": tf.Variable(rng.normal(size=(2,)).astype(np.float32))},
                       tf.Variable(np.int64(seed))]
        self._private = tf.Variable(np.float64(seed))


def _values(net: Net) -> list[np.ndarray]:
    return [net.kernel.numpy(), net.blocks[0]["scale"].numpy(), net.blocks[1].numpy(),
            net._private.numpy()]


def _train(net: Net, opt, steps: int = 2) -> None:
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(net.kernel * net.kernel) + tf.reduce_sum(net.blocks[0]["scale"])
        grads = tape.gradient(loss, [net.kernel, net.blocks[0]["scale"]])
        opt.apply_gradients(zip(grads, [net.kernel, net.blocks[0]["scale"]]))


def test_round_trip_with_optimizer_slots(tmp_path):
    net, opt = Net(1), optimizers.Adam(0.1)
    _train(net, opt)
    ckpt = Checkpoint(model=net, optimizer=opt)
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-1")
    saved, saved_m = _values(net), opt.get_slot(net.kernel, "m").numpy()

    net2, opt2 = Net(2), optimizers.Adam(0.1)
    _train(net2, opt2, steps=1)
    status = Checkpoint(model=net2, optimizer=opt2).restore(path)
    status.assert_consumed()
    for a, b in zip(_values(net2), saved):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(opt2.get_slot(net2.kernel, "m").numpy(), saved_m)
    assert int(opt2.iterations.numpy()) == 2
    keys = dict(list_variables(path))
    assert keys["model/kernel"] == [3, 2]
    assert "model/blocks/0/scale" in keys and "model/_private" in keys
    assert "model/kernel/.OPTIMIZER_SLOT/optimizer/m" in keys


def test_save_numbers_and_index(tmp_path):
    ckpt = Checkpoint(model=Net())
    prefix = str(tmp_path / "run" / "model.ckpt")
    assert ckpt.save(prefix) == prefix + "-1"
    assert ckpt.save(prefix) == prefix + "-2"
    assert latest_checkpoint(str(tmp_path / "run")) == prefix + "-2"
    assert int(ckpt.save_counter.numpy()) == 2
    assert ckpt.write(str(tmp_path / "exact")) == str(tmp_path / "exact")
    assert os.path.isfile(str(tmp_path / "exact.safetensors"))
    assert latest_checkpoint(str(tmp_path / "run")) == prefix + "-2"
    assert latest_checkpoint(str(tmp_path / "empty")) is None


def test_restore_none_restores_nothing():
    status = Checkpoint(model=Net()).restore(None)
    with pytest.raises(AssertionError, match="No checkpoint was restored"):
        status.assert_consumed()


def test_non_trackable_dependency_is_refused():
    with pytest.raises(ValueError, match="`learning_rate` is a float.*tf.Variable"):
        Checkpoint(learning_rate=0.1)


def test_missing_file_raises_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError, match="Checkpoint not found"):
        Checkpoint(model=Net()).restore(str(tmp_path / "nope-3"))
    with pytest.raises(errors.NotFoundError, match="it is a directory.*latest_checkpoint"):
        Checkpoint(model=Net()).restore(str(tmp_path))


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "pickle"])
def test_corrupt_file_raises_and_leaves_variables_untouched(tmp_path, damage):
    path = Checkpoint(model=Net(1)).save(str(tmp_path / "ckpt"))
    data_file = checkpoint_io.data_path(path)
    raw = bytearray(open(data_file, "rb").read())
    if damage == "truncate":
        raw = raw[: len(raw) - 7]
    elif damage == "flip":
        raw[-3] ^= 0xFF  # inside the tensor data: the file still parses
    elif damage == "garbage":
        raw = bytearray(b"\x00" * 4 + b"not a checkpoint")
    else:
        raw = bytearray(pickle.dumps({"model/kernel": np.zeros((3, 2))}))
    open(data_file, "wb").write(bytes(raw))
    net = Net(5)
    before = _values(net)
    with pytest.raises(errors.DataLossError, match="corrupt"):
        Checkpoint(model=net).restore(path)
    for a, b in zip(_values(net), before):
        np.testing.assert_array_equal(a, b)


def test_shape_mismatch_lists_names_and_changes_nothing(tmp_path):
    path = Checkpoint(model=Net(1)).save(str(tmp_path / "ckpt"))
    net = Net(3)
    net.kernel = tf.Variable(np.zeros((4, 2), np.float32))
    before = _values(net)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"mismatched: model/kernel \(checkpoint float32\[3, 2\] vs "
                             r"variable float32\[4, 2\]\)"):
        Checkpoint(model=net).restore(path)
    for a, b in zip(_values(net), before):
        np.testing.assert_array_equal(a, b)


def test_partial_matches_and_assertions(tmp_path):
    net = Net(1)
    path = Checkpoint(model=net, extra=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    late = Checkpoint(model=Net(2))
    status = late.restore(path)
    status.assert_existing_objects_matched().assert_nontrivial_match()
    with pytest.raises(AssertionError, match="waiting for variables not created yet.*: extra"):
        status.assert_consumed()
    late.extra = tf.Variable(0.0)  # attached later: restored on assignment
    assert float(late.extra.numpy()) == 1.0
    status.assert_consumed()

    other = Checkpoint(model=[Net(2)])
    status = other.restore(path)
    with pytest.raises(AssertionError, match="values matching no object: .*model/kernel"):
        status.assert_consumed()
    status.expect_partial()

    holder = Checkpoint(model=Net(2), more=tf.Variable(2.0))
    status = holder.restore(path)
    with pytest.raises(AssertionError, match="no value for existing variables: more"):
        status.assert_existing_objects_matched()
    status.expect_partial()


@pytest.mark.parametrize("silenced", [False, True])
def test_unused_values_warn_unless_expect_partial(tmp_path, silenced):
    path = Checkpoint(model=Net(1)).save(str(tmp_path / "ckpt"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = Checkpoint(model=[Net(2)]).restore(path)
        if silenced:
            status.expect_partial()
        del status
        gc.collect()
    warned = any("only partly used" in str(w.message) for w in caught)
    assert warned is not silenced


class Lazy:
    """Creates its variable later, the way an unbuilt Keras layer does in add_weight."""

    def __init__(self):
        self.w = None

    def build(self):
        self.w = tf.Variable(np.zeros((2, 2), np.float32))
        restore_on_create(self, "w", self.w)


def test_deferred_restoration_applies_on_creation(tmp_path):
    built = Lazy()
    built.build()
    built.w.assign(np.arange(4, dtype=np.float32).reshape(2, 2))
    path = Checkpoint(layer=built).save(str(tmp_path / "ckpt"))

    fresh = Lazy()
    status = Checkpoint(layer=fresh).restore(path)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="waiting for variables not created yet"):
        status.assert_consumed()
    fresh.build()
    np.testing.assert_array_equal(fresh.w.numpy(), np.arange(4).reshape(2, 2))
    status.assert_consumed()


def test_deferred_slots_restore_when_optimizer_creates_them(tmp_path):
    net, opt = Net(1), optimizers.RMSprop(0.1, momentum=0.9)
    _train(net, opt)
    path = Checkpoint(model=net, optimizer=opt).save(str(tmp_path / "ckpt"))
    net2, opt2 = Net(1), optimizers.RMSprop(0.1, momentum=0.9)
    status = Checkpoint(model=net2, optimizer=opt2).restore(path)
    _train(net2, opt2, steps=1)
    _train(net, opt, steps=1)
    status.assert_consumed()
    np.testing.assert_allclose(net2.kernel.numpy(), net.kernel.numpy(), rtol=1e-6)
    np.testing.assert_allclose(opt2.get_slot(net2.kernel, "momentum").numpy(),
                               opt.get_slot(net.kernel, "momentum").numpy(), rtol=1e-6)


def test_crash_mid_write_keeps_previous_checkpoint(tmp_path, monkeypatch):
    net = Net(1)
    ckpt = Checkpoint(model=net)
    first = ckpt.save(str(tmp_path / "ckpt"))
    good = _values(net)
    path = str(tmp_path / "ckpt-1")
    net.kernel.assign(np.full((3, 2), 9.0, np.float32))

    real_fdopen = os.fdopen

    class Torn:
        """A file that writes half of what it is given, then the machine 'crashes'."""

        def __init__(self, f):
            self._f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

        def write(self, data):
            self._f.write(data[: len(data) // 2])
            raise OSError("simulated crash mid-write")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Torn(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="simulated crash"):
        ckpt.write(path)  # overwrite the same file
    with pytest.raises(OSError, match="simulated crash"):
        ckpt.save(str(tmp_path / "ckpt"))
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1.safetensors"]
    assert latest_checkpoint(str(tmp_path)) == first
    restored = Net(4)
    Checkpoint(model=restored).restore(first).assert_existing_objects_matched()
    for a, b in zip(_values(restored), good):
        np.testing.assert_array_equal(a, b)


def test_fsync_failure_leaves_old_file(tmp_path, monkeypatch):
    net = Net(1)
    path = Checkpoint(model=net).write(str(tmp_path / "w"))
    good = _values(net)
    net.kernel.assign(np.ones((3, 2), np.float32))

    def failing_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk full"):
        Checkpoint(model=net).write(path)
    monkeypatch.undo()
    restored = Net(7)
    Checkpoint(model=restored).restore(path)
    for a, b in zip(_values(restored), good):
        np.testing.assert_array_equal(a, b)


def test_save_and_load_weights_strict(tmp_path):
    net, opt = Net(1), optimizers.SGD(0.1, momentum=0.5)
    net.optimizer = opt  # a compiled model holds its optimizer: not part of the weights
    _train(net, opt)
    path = save_weights(net, str(tmp_path / "weights"))
    assert not any("OPTIMIZER_SLOT" in k or "optimizer" in k for k, _ in list_variables(path))
    other = Net(2)
    load_weights(other, path).assert_consumed()
    for a, b in zip(_values(other), _values(net)):
        np.testing.assert_array_equal(a, b)

    wrong = Net(3)
    wrong.kernel = tf.Variable(np.zeros((2, 2), np.float32))
    wrong.bias = tf.Variable(np.zeros(2, np.float32))
    del wrong._private
    before = _values(Net(3))[1:3]
    with pytest.raises(errors.InvalidArgumentError) as info:
        load_weights(wrong, path)
    msg = str(info.value)
    assert "mismatched: kernel" in msg
    assert "missing (no value in the checkpoint): bias" in msg
    assert "unexpected (in the checkpoint, matching nothing): _private" in msg
    np.testing.assert_array_equal(wrong.blocks[0]["scale"].numpy(), before[0])


def test_module_subclass_round_trip(tmp_path):
    class Dense(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.ones((2, 2), np.float32))

    a, b = Dense(), Dense()
    a.w.assign(np.eye(2, dtype=np.float32))
    path = Checkpoint(net=a).save(str(tmp_path / "m"))
    Checkpoint(net=b).restore(path).assert_consumed()
    np.testing.assert_array_equal(b.w.numpy(), np.eye(2))
