"""tf.train.Checkpoint(iterator=it): a restored iterator gives exactly the elements the saved one
still had to give (shuffle buffers, parallel maps, interleave, repeat), even in a rebuilt
pipeline; pipelines whose order cannot be reproduced are refused by name."""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors


def records_file(tmp_path, n=120):
    path = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(n):
            w.write(str(i).encode())
    return path


def pipelines(tmp_path):
    path = records_file(tmp_path)
    return {
        "shuffle-map-batch-prefetch": lambda: tf.data.Dataset.range(200).shuffle(37)
        .map(lambda x: x * 3 + tf.random.uniform([], maxval=5, dtype=tf.int64),
             num_parallel_calls=3).batch(7).prefetch(2),
        "records-repeat-reshuffle": lambda: tf.data.TFRecordDataset(path).repeat(2)
        .shuffle(25).map(lambda r: tf.strings.to_number(r, tf.int64), num_parallel_calls=2),
        "interleave": lambda: tf.data.Dataset.range(6).interleave(
            lambda i: tf.data.Dataset.range(i * 100, i * 100 + 13).shuffle(5),
            cycle_length=3, num_parallel_calls=2).batch(4),
        "sample": lambda: tf.data.Dataset.sample_from_datasets(
            [tf.data.Dataset.range(50), tf.data.Dataset.range(100, 150)], weights=[0.3, 0.7]),
    }


def values(it):
    return [np.asarray(e).tolist() for e in it]


@pytest.mark.parametrize("name", ["shuffle-map-batch-prefetch", "records-repeat-reshuffle",
                                  "interleave", "sample"])
def test_restored_iterator_gives_exactly_the_remaining_elements(tmp_path, name):
    tf.random.set_seed(3)
    build = pipelines(tmp_path)[name]
    rng = np.random.default_rng(0)
    for k in sorted(rng.integers(1, 18, 3).tolist()) + [0]:
        it = iter(build())
        head = [np.asarray(next(it)).tolist() for _ in range(k)]
        path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / f"ck{k}"))
        rest = values(it)
        again = iter(build())              # a new pipeline, as after a restart
        next(again)                        # whatever it did before is replaced by the restore
        tf.train.Checkpoint(iterator=again).read(path)
        assert values(again) == rest, k
        assert len(head) + len(rest) > k


def test_unseeded_shuffle_keeps_its_order_across_restore(tmp_path):
    ds = tf.data.Dataset.range(1000).shuffle(1000)
    it = iter(ds)
    first = [int(next(it)) for _ in range(10)]
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "c"))
    rest = [int(x) for x in it]
    other = iter(tf.data.Dataset.range(1000).shuffle(1000))
    tf.train.Checkpoint(iterator=other).read(path)
    assert [int(x) for x in other] == rest
    assert sorted(first + rest) == list(range(1000))


def test_epochs_after_a_restore_reshuffle(tmp_path):
    ds = tf.data.Dataset.range(50).shuffle(50, seed=1)
    it = iter(ds)
    epoch0 = [int(next(it))]
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "c"))
    epoch0 += [int(x) for x in it]
    fresh = tf.data.Dataset.range(50).shuffle(50, seed=1)
    restored = iter(fresh)
    tf.train.Checkpoint(iterator=restored).read(path)
    assert [int(x) for x in restored] == epoch0[1:]
    epoch1 = [int(x) for x in fresh]          # the epoch after the restored one reshuffles
    assert epoch1 != epoch0 and sorted(epoch1) == list(range(50))
    assert epoch1 == [int(x) for x in ds]     # as the original dataset's next epoch does


def test_unrestorable_pipelines_are_refused_by_name(tmp_path):
    gen = tf.data.Dataset.from_generator(lambda: iter(range(3)),
                                         output_signature=tf.TensorSpec([], tf.int64))
    with pytest.raises(errors.FailedPreconditionError, match="from_generator"):
        tf.train.Checkpoint(iterator=iter(gen)).write(str(tmp_path / "a"))
    sloppy = tf.data.Dataset.range(9).map(lambda x: x, num_parallel_calls=2,
                                          deterministic=False)
    with pytest.raises(errors.FailedPreconditionError, match="deterministic=False"):
        tf.train.Checkpoint(iterator=iter(sloppy)).write(str(tmp_path / "b"))


def test_state_of_another_pipeline_or_corrupt_state_is_an_error(tmp_path):
    it = iter(tf.data.Dataset.range(9).batch(2))
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "a"))
    other = iter(tf.data.Dataset.range(9).shuffle(2))
    tf.train.Checkpoint(iterator=other).read(path)
    with pytest.raises(errors.InvalidArgumentError, match="different pipeline"):
        next(other)
    mine = iter(tf.data.Dataset.range(9).batch(2))
    ckpt = tf.train.Checkpoint(iterator=mine)
    ckpt.read(path)
    mine._state_var.assign(np.zeros_like(mine._state_var.numpy()))
    with pytest.raises(errors.DataLossError, match="corrupt"):
        next(mine)


WORKER = textwrap.dedent("""
    import os, sys, time
    import tapeflow as tf
    work, records = sys.argv[1], sys.argv[2]
    ds = (tf.data.TFRecordDataset(records).shuffle(40)
          .map(lambda r: tf.strings.to_number(r, tf.int64), num_parallel_calls=2)
          .batch(3).prefetch(2))
    it = iter(ds)
    logged = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(iterator=it, logged=logged)
    prefix = os.path.join(work, "ckpt")
    if os.path.exists(prefix + ".safetensors"):   # the checkpoint's one file (written atomically)
        ckpt.read(prefix)
    log = os.path.join(work, "log.txt")
    lines = open(log).read().split() if os.path.exists(log) else []
    lines = lines[:int(logged.numpy())]          # what was logged after the checkpoint is redone
    with open(os.path.join(work, "starts.txt"), "a") as f:
        f.write(f"{int(logged.numpy())}\\n")
    with open(log, "w") as f:
        f.write("".join(v + "\\n" for v in lines))
    with open(log, "a") as f:
        for batch in it:
            f.write("".join(f"{v}\\n" for v in batch.numpy().tolist()))
            f.flush()
            logged.assign_add(int(batch.shape[0]))
            ckpt.write(prefix)
            time.sleep(0.01)
    open(os.path.join(work, "done"), "w").close()
""")


def logged_count(path) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_killed_reader_resumes_without_losing_or_repeating(tmp_path):
    """SIGKILL the reader at random points mid-epoch: once the log holds a random number of
    elements (and a random few milliseconds later, so the kill lands anywhere: mapping, writing
    the log, writing the checkpoint), then restart it from its checkpoint."""
    records = records_file(tmp_path, 400)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    rng = np.random.default_rng(7)
    # five kill points in 20..380, at least 20 elements apart (a restarted reader's log still
    # holds the last run's lines until it truncates them to its checkpoint)
    slots = rng.choice(np.arange(20, 360, 40), 5, replace=False)
    targets = sorted((slots + rng.integers(0, 20, 5)).tolist())
    log_path = tmp_path / "log.txt"
    kills = starts = 0
    while not (tmp_path / "done").exists():
        assert starts <= len(targets), "the reader did not finish after the planned kills"
        proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), records], env=env)
        starts += 1
        target = targets[kills] if kills < len(targets) else None
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if target is not None and logged_count(log_path) >= target:
                time.sleep(float(rng.uniform(0.0, 0.02)))
                proc.kill()
                proc.wait()
                kills += 1
                break
            time.sleep(0.002)
        else:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                pytest.fail("the reader hung")
    log = log_path.read_text().split()
    assert kills == len(targets)                 # every kill hit the reader mid-epoch
    assert sorted(int(v) for v in log) == list(range(400))
    # each restart resumed from its checkpoint, taken at most two batches before the kill
    # (the kill may land while the last one is written), not from the start
    starts = [int(v) for v in (tmp_path / "starts.txt").read_text().split()]
    assert len(starts) == kills + 1 and starts[0] == 0
    for start, target in zip(starts[1:], targets):
        assert target - 6 <= start < 400, (starts, targets)
