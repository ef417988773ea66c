"""CheckpointManager survives ``kill -9`` at any instant of a save.

A child process saves in a loop (``max_to_keep=1``, a checkpoint of a few MB so a save takes a
while) and prints each step once ``save()`` has returned; the parent kills it at a random moment.
Afterwards a fresh manager must find a complete checkpoint at least as new as the last confirmed
one, restore it, and its next save must leave no temporaries behind.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.train import Checkpoint, CheckpointManager

_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import tapeflow as tf
    step = tf.Variable(np.int64(0))
    weights = tf.Variable(np.zeros((512, 1024), np.float32))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step, w=weights),
                                         sys.argv[1], max_to_keep=1)
    manager.restore_or_initialize()
    print("ready", int(step.numpy()), flush=True)
    while True:
        step.assign_add(np.int64(1))
        weights.assign(np.full((512, 1024), float(step.numpy()), np.float32))
        manager.save()
        print("saved", int(step.numpy()), flush=True)
""")


def _kill_during_saves(directory: str, rng: random.Random) -> tuple[int, str]:
    """Run the saving child, kill it after a random delay; (last confirmed step, its output)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, directory], stdout=subprocess.PIPE,
                             text=True, env=env)
    first = child.stdout.readline()
    assert first.startswith("ready"), first
    time.sleep(rng.uniform(0.0, 0.4))
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    whole = out.split("\n")[:-1]  # a line cut by the kill has no newline yet
    confirmed = [int(line.split()[1]) for line in whole if line.startswith("saved ")]
    start = int(first.split()[1])
    return (confirmed[-1] if confirmed else start), out


def _check_recovery(directory: str, confirmed: int) -> None:
    step = tf.Variable(np.int64(-1))
    weights = tf.Variable(np.zeros((512, 1024), np.float32))
    manager = CheckpointManager(Checkpoint(step=step, w=weights), directory, max_to_keep=1)
    if confirmed == 0:
        return
    latest = manager.restore_or_initialize()
    assert latest is not None, f"no checkpoint found though step {confirmed} was saved"
    assert int(step.numpy()) >= confirmed
    np.testing.assert_array_equal(weights.numpy(), float(step.numpy()))


def _stale(directory: str) -> list[str]:
    return [f for f in os.listdir(directory) if f.endswith(".tmp")]


def _trials(tmp_path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    directory = str(tmp_path / "ckpts")
    for _ in range(n):
        confirmed, _out = _kill_during_saves(directory, rng)
        _check_recovery(directory, confirmed)
    # a save after the last kill removes the temporaries killed saves left
    step = tf.Variable(np.int64(0))
    weights = tf.Variable(np.zeros((512, 1024), np.float32))
    manager = CheckpointManager(Checkpoint(step=step, w=weights), directory, max_to_keep=1)
    manager.restore_or_initialize()
    manager.save()
    assert _stale(directory) == []
    kept = sorted(f for f in os.listdir(directory) if f.endswith(".safetensors"))
    assert len(kept) == 1, kept


def test_kill_during_save_loses_nothing(tmp_path):
    _trials(tmp_path, 3, seed=0)


@pytest.mark.slow
def test_kill_during_save_loses_nothing_many_trials(tmp_path):
    _trials(tmp_path, 60, seed=1)


def test_each_step_of_a_save_leaves_the_newest_complete_checkpoint(tmp_path, monkeypatch):
    """Stop a save after each of its steps (as a kill would) and look at what is findable."""
    from tapeflow.train import checkpoint_manager

    step = tf.Variable(np.int64(1))
    manager = CheckpointManager(Checkpoint(step=step), str(tmp_path), max_to_keep=1)
    manager.save()

    class Killed(BaseException):
        pass

    def die(*args):
        raise Killed

    step.assign(np.int64(2))
    monkeypatch.setattr(checkpoint_manager, "_remove", die)  # index written, old file not gone
    with pytest.raises(Killed):
        manager.save()
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-1.safetensors",
                                            "ckpt-2.safetensors"]
    open(tmp_path / ".ckpt-3.safetensors.0123abcd.tmp", "wb").write(b"half a file")
    restored = tf.Variable(np.int64(0))
    again = CheckpointManager(Checkpoint(step=restored), str(tmp_path), max_to_keep=1)
    assert again.restore_or_initialize() == str(tmp_path / "ckpt-2")
    assert int(restored.numpy()) == 2
    assert sorted(os.listdir(tmp_path)) == [".ckpt-3.safetensors.0123abcd.tmp", "checkpoint",
                                            "ckpt-2.safetensors"]  # interrupted deletion done
    again.save()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-3.safetensors"]
