"""tf.train.CheckpointManager: numbering, rotation, recovery from an earlier run."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.train import Checkpoint, CheckpointManager, latest_checkpoint


def _files(directory) -> list[str]:
    return sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))


def test_rotation_keeps_newest(tmp_path):
    step = tf.Variable(np.int64(0))
    ckpt = Checkpoint(step=step)
    manager = CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    paths = []
    for i in range(4):
        step.assign(np.int64(10 * i))
        paths.append(manager.save())
    assert paths == [str(tmp_path / f"ckpt-{n}") for n in (1, 2, 3, 4)]
    assert manager.checkpoints == paths[2:]
    assert _files(tmp_path) == ["ckpt-3.safetensors", "ckpt-4.safetensors"]
    assert manager.latest_checkpoint == paths[-1] == latest_checkpoint(str(tmp_path))
    step.assign(np.int64(-1))
    ckpt.restore(manager.latest_checkpoint).assert_consumed()
    assert int(step.numpy()) == 30


def test_new_manager_recovers_previous_run_and_keeps_rotating(tmp_path):
    ckpt = Checkpoint(v=tf.Variable(1.0))
    first = CheckpointManager(ckpt, str(tmp_path), max_to_keep=3, checkpoint_name="model")
    for _ in range(3):
        first.save()
    second = CheckpointManager(Checkpoint(v=tf.Variable(2.0)), str(tmp_path), max_to_keep=3,
                               checkpoint_name="model")
    assert second.checkpoints == first.checkpoints
    second.save(checkpoint_number=100)
    assert second.latest_checkpoint == str(tmp_path / "model-100")
    assert _files(tmp_path) == ["model-100.safetensors", "model-2.safetensors",
                                "model-3.safetensors"]


def test_max_to_keep_none_keeps_everything_and_validation(tmp_path):
    manager = CheckpointManager(Checkpoint(v=tf.Variable(1.0)), str(tmp_path), max_to_keep=None)
    for _ in range(4):
        manager.save()
    assert len(_files(tmp_path)) == 4
    with pytest.raises(ValueError, match="max_to_keep must be positive"):
        CheckpointManager(Checkpoint(), str(tmp_path), max_to_keep=0)


def test_checkpoint_interval(tmp_path):
    step = tf.Variable(np.int64(0))
    manager = CheckpointManager(Checkpoint(step=step), str(tmp_path), max_to_keep=5,
                                step_counter=step, checkpoint_interval=10)
    saved = []
    for s in range(0, 25, 5):
        step.assign(np.int64(s))
        saved.append(manager.save() is not None)
    assert saved == [True, False, True, False, True]


def test_restore_or_initialize(tmp_path):
    calls = []
    v = tf.Variable(5.0)
    manager = CheckpointManager(Checkpoint(v=v), str(tmp_path), max_to_keep=1,
                                init_fn=lambda: calls.append("init"))
    assert manager.restore_or_initialize() is None and calls == ["init"]
    path = manager.save()
    v.assign(0.0)
    assert manager.restore_or_initialize() == path
    assert float(v.numpy()) == 5.0 and calls == ["init"]
