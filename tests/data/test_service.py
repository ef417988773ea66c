"""tf.data.experimental.service on a local Ray cluster: a dispatcher and data workers as Ray
actors feeding this process (the trainer). One cluster per module (Ray takes seconds to
start); the kill test makes its own dispatcher and workers. Functions the pipelines call are
defined inside the tests, so Ray pickles them by value for the workers."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors

service = tf.data.experimental.service


# ---- argument checks (no Ray needed) ------------------------------------------------------
def test_processing_mode_and_unsupported_arguments_are_named():
    with pytest.raises(errors.InvalidArgumentError, match="processing_mode"):
        service.distribute("epochs", "grpc://localhost:1")
    with pytest.raises(ValueError, match="both consumer_index and num_consumers"):
        service.distribute("parallel_epochs", "grpc://localhost:1", consumer_index=0)
    with pytest.raises(ValueError, match="job_name must be set"):
        service.distribute("parallel_epochs", "grpc://localhost:1", consumer_index=0,
                           num_consumers=2)
    with pytest.raises(ValueError, match=r"consumer_index must be in \[0, num_consumers=2\)"):
        service.distribute("parallel_epochs", "localhost:1", job_name="j", consumer_index=2,
                           num_consumers=2)
    with pytest.raises(errors.InvalidArgumentError, match="must be infinite"):
        tf.data.Dataset.range(4).apply(service.distribute(
            "parallel_epochs", "localhost:1", job_name="j", consumer_index=0, num_consumers=2))
    cache = service.CrossTrainerCache(trainer_id="a")
    with pytest.raises(ValueError, match="trainer_id must not be empty"):
        service.CrossTrainerCache(trainer_id="")
    with pytest.raises(ValueError, match="needs a job_name"):
        service.distribute("parallel_epochs", "localhost:1", cross_trainer_cache=cache)
    with pytest.raises(errors.InvalidArgumentError, match="needs ShardingPolicy.OFF"):
        service.distribute("distributed_epoch", "localhost:1", job_name="j",
                           cross_trainer_cache=cache)
    for policy in service.ShardingPolicy:
        assert service.distribute(policy, "localhost:1") is not None
    with pytest.raises(ValueError, match="fault_tolerant_mode=True needs a work_dir"):
        service.DispatchServer(service.DispatcherConfig(fault_tolerant_mode=True))


def test_distributed_epoch_refuses_pipelines_it_cannot_split_or_replay():
    two_sources = tf.data.Dataset.zip((tf.data.Dataset.range(3), tf.data.Dataset.range(3)))
    with pytest.raises(errors.InvalidArgumentError, match="exactly one source.*found 2"):
        two_sources.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    gen = tf.data.Dataset.from_generator(lambda: iter([1, 2]), output_types=tf.int64)
    with pytest.raises(errors.InvalidArgumentError, match="GeneratorDataset"):
        gen.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    racy = tf.data.Dataset.range(3).map(lambda x: x, num_parallel_calls=2,
                                        deterministic=False)
    with pytest.raises(errors.InvalidArgumentError, match="deterministic=False"):
        racy.apply(service.distribute("distributed_epoch", "grpc://localhost:1"))
    # parallel_epochs splits nothing and replays nothing: both are fine there
    two_sources.apply(service.distribute("parallel_epochs", "grpc://localhost:1"))


def test_splits_cover_the_source_once_and_leave_probing_alone():
    from tapeflow.data.iterator import IterContext
    from tapeflow.data.service import splits

    ds = tf.data.Dataset.from_tensor_slices(np.arange(10)).map(lambda x: x * 10).batch(3)
    splits.install(ds)
    assert [int(v) for v in np.concatenate(list(ds.as_numpy_iterator()))] == \
        list(range(0, 100, 10))   # no provider: the whole source, as before

    class Provider:
        def __init__(self):
            self.passes = 0

        def next_pass(self):
            self.passes += 1
            return self.passes - 1

        def get(self, epoch, index):
            return [(7, 10), (0, 2)][index] if index < 2 else None

    ctx = IterContext(ds.options(), splits=Provider())
    got = [b.tolist() for b in ds._iterate(ctx)]
    assert got == [[70, 80, 90], [0, 10]]


# ---- on a Ray cluster ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address))
               for _ in range(2)]
    yield dispatcher, workers
    for w in workers:
        w.stop()
    dispatcher.stop()
    if ray.is_initialized():
        ray.shutdown()


def test_parallel_epochs_distributed_epoch_and_dataset_ids(cluster):
    dispatcher, workers = cluster
    assert dispatcher.target.startswith("grpc://localhost:")
    assert dispatcher._num_workers() == 2
    ds = tf.data.Dataset.range(40).map(lambda x: x * 3)
    whole = list(range(0, 120, 3))

    every = ds.apply(service.distribute("parallel_epochs", dispatcher.target))
    assert sorted(int(x) for x in every) == sorted(whole * 2)    # each worker: the whole set
    split = ds.apply(service.distribute("distributed_epoch", dispatcher.target))
    assert sorted(int(x) for x in split) == whole                 # once across the workers
    assert sorted(int(x) for x in split) == whole                 # a new job per iteration

    ds_id = service.register_dataset(dispatcher.target, ds)
    assert ds_id.dtype == tf.string
    assert service.register_dataset(dispatcher.target, ds).numpy() == ds_id.numpy()
    by_id = service.from_dataset_id("distributed_epoch", dispatcher.target, ds_id)
    assert by_id.element_spec == ds.element_spec                  # asked of the dispatcher
    assert sorted(int(x) for x in by_id) == whole

    # a repeat: each pass over the source is split anew (every element once per pass)
    twice = tf.data.Dataset.range(30).repeat(2).batch(4)
    got = np.concatenate(list(twice.apply(service.distribute(
        "distributed_epoch", dispatcher.target)).as_numpy_iterator()))
    assert sorted(got.tolist()) == sorted(list(range(30)) * 2)


def test_trainers_sharing_a_job_get_each_element_once(cluster):
    """Two trainers (two iterators here) name the same job: distributed_epoch splits the
    elements between them, each element to one of them, none lost."""
    dispatcher, _ = cluster
    ds = tf.data.Dataset.range(300).map(lambda x: x + 1000)
    shared = ds.apply(service.distribute("distributed_epoch", dispatcher.target,
                                         job_name="shared", max_outstanding_requests=4))
    first, second = iter(shared), iter(shared)
    got: list = [[], []]
    live = [first, second]
    while live:   # take turns, one element each, until both are done
        for k, it in enumerate((first, second)):
            if it in live:
                try:
                    got[k].append(int(next(it)))
                except StopIteration:
                    live.remove(it)
    assert sorted(got[0] + got[1]) == list(range(1000, 1300))
    assert got[0] and got[1]


def test_worker_errors_reach_the_trainer(cluster):
    dispatcher, _ = cluster

    def check(x):
        return tf.debugging.assert_less(x, tf.constant(5, tf.int64), message="too big") or x

    ds = tf.data.Dataset.range(8).map(check)
    with pytest.raises(errors.InvalidArgumentError, match="too big"):
        list(ds.apply(service.distribute("parallel_epochs", dispatcher.target)))


def test_sliding_window_of_a_cross_trainer_cache():
    """Trainers read every element of the window from their own position; one that falls
    behind the window continues at its oldest element; a trainer id's consumers share it."""
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    from tapeflow.data.service import worker

    ds = tf.data.Dataset.range(1000)
    run = worker._StreamRun(cloudpickle.dumps(ds), int(service.ShardingPolicy.OFF), 0, 0, None,
                            cache_bytes=40 * 8)          # forty int64 scalars
    try:
        def read(trainer, n):
            return [int(x) for x in run.fetch_shared(trainer, n)[0]]

        assert read("a", 4) == [0, 1, 2, 3]
        assert read("b", 3) == [0, 1, 2]                  # the same elements again
        assert read("a", 3) == [4, 5, 6]
        assert read("b", 2) == [3, 4]
        assert read("a", 100)[-1] == 106                  # the window slides past b
        late = read("b", 2)
        assert late[0] >= 107 - 40                        # b continues at the oldest kept
        assert read("c", 1)[0] >= late[0]                 # a new trainer starts there too
    finally:
        run.close()


def test_journal_ignores_a_torn_tail_and_names_damage(tmp_path):
    from tapeflow.data.service.journal import Journal

    journal = Journal(str(tmp_path))
    journal.append({"op": "worker", "id": 0, "address": "localhost:1"})
    journal.close()
    with open(journal.path, "ab") as f:
        f.write(b'{"op": "wor')                          # the writer died mid-record
    assert Journal(str(tmp_path)).records() == [{"op": "worker", "id": 0,
                                                 "address": "localhost:1"}]
    again = Journal(str(tmp_path))
    again.append({"op": "dead", "id": 0})                 # appends after cutting the tail
    again.close()
    assert [r["op"] for r in Journal(str(tmp_path)).records()] == ["worker", "dead"]
    with open(journal.path, "ab") as f:
        f.write(b"garbage\n")
    with pytest.raises(errors.DataLossError, match=r"dispatcher_journal.jsonl: line 3"):
        Journal(str(tmp_path)).records()


def test_journal_compaction_keeps_the_state(tmp_path):
    """Every `compact_every` records the journal becomes one `state` record (written to a
    temporary file and renamed over it); a dispatcher started on it has the same state."""
    from tapeflow.data.service.dispatcher import Dispatcher, _encode_state
    from tapeflow.data.service.journal import Journal

    work = str(tmp_path / "ft")
    d = Dispatcher("localhost:1", None, work, compact_every=10)
    d.register_dataset(b"", None, "fp", 100, None)
    for wid in range(2):
        d._log({"op": "worker", "id": wid, "address": f"localhost:{wid + 2}"})
    d._log({"op": "job", "key": "j", "dataset": "1000", "policy": 1, "seed": 5,
            "source_size": 100, "split_size": 4, "num_splits": 25, "num_consumers": None,
            "cache": False, "client": "c", "streams": [[0, 0], [1, 1]]})
    d._log({"op": "stream", "key": "j", "sid": 2, "worker": 1})
    d._log({"op": "opened", "key": "j", "sid": 2})
    for seq in range(1, 30):
        sid = seq % 3
        d._log({"op": "split", "key": "j", "sid": sid, "pass": 0, "split": seq - 1})
        d._log({"op": "claim", "key": "j", "sid": sid, "ack": None, "end": None,
                "start": 8 * seq, "count": 8, "client": "c", "seq": seq})
    d._log({"op": "dead", "id": 0})
    d._log({"op": "round", "key": "j", "consumer": 0, "done": 3})
    records = Journal(work).records()
    assert len(records) < 10 and records[0]["op"] == "state"    # 66 records written
    before = _encode_state(d)
    d._journal.close()
    again = Dispatcher("localhost:1", None, work)
    assert _encode_state(again) == before
    assert again._jobs["j"].requests[("c", 2)] == (29, 232, 8)   # (client, stream)
    assert [r["op"] for r in Journal(work).records()] == ["state"]   # compacted on start
    assert not os.path.exists(os.path.join(work, "dispatcher_journal.jsonl.tmp"))


def test_static_sharding_policies(cluster, tmp_path):
    """A dispatcher with a fixed worker list: worker i runs shard i of 2 under FILE, DATA,
    FILE_OR_DATA and HINT, so the trainer gets each element once (OFF: once per worker)."""
    from tapeflow.data.service.config import free_port

    ports = [f"localhost:{free_port()}" for _ in range(2)]
    dispatcher = service.DispatchServer(service.DispatcherConfig(worker_addresses=ports))
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address,
                                                         worker_address=port))
               for port in ports]
    try:
        files = []
        for k in range(4):
            path = str(tmp_path / f"{k}.tfrecord")
            with tf.io.TFRecordWriter(path) as w:
                for j in range(5):
                    w.write(f"{k}-{j}".encode())
            files.append(path)
        records = tf.data.TFRecordDataset(files).map(lambda r: r)
        everything = sorted(f"{k}-{j}" for k in range(4) for j in range(5))

        def run(ds, policy):
            return sorted(x.numpy().decode() if x.dtype == tf.string else int(x)
                          for x in ds.apply(service.distribute(policy, dispatcher.target)))

        policy = service.ShardingPolicy
        assert run(records, policy.FILE) == everything
        assert run(records, policy.FILE_OR_DATA) == everything
        assert run(records, policy.OFF) == sorted(everything * 2)
        numbers = tf.data.Dataset.range(30).map(lambda x: x * 2)
        assert run(numbers, policy.DATA) == list(range(0, 60, 2))
        assert run(numbers, policy.FILE_OR_DATA) == list(range(0, 60, 2))   # no files: DATA
        hinted = tf.data.Dataset.range(30).shard(tf.data.experimental.SHARD_HINT,
                                                 tf.data.experimental.SHARD_HINT)
        assert run(hinted, policy.HINT) == list(range(30))
        with pytest.raises(errors.InvalidArgumentError, match="placeholder"):
            list(hinted)
        with pytest.raises(errors.InvalidArgumentError, match="ShardingPolicy.FILE"):
            run(numbers, policy.FILE)
        with pytest.raises(errors.FailedPreconditionError, match="worker_addresses"):
            list(numbers.apply(service.distribute(policy.DATA, cluster[0].target)))
    finally:
        for w in workers:
            w.stop()
        dispatcher.stop()


def test_coordinated_reads_take_rounds_from_one_worker(cluster):
    """Two consumers with consumer_index 0 and 1: round r comes from worker r mod 2, and
    consumer c gets element c of the round's pair."""
    dispatcher, _ = cluster

    def worker_pid(x):
        return np.int64(os.getpid())

    ds = tf.data.Dataset.range(10**6).repeat().map(
        lambda x: (x, tf.numpy_function(worker_pid, [x], tf.int64)))
    readers = [iter(ds.apply(service.distribute(
        "parallel_epochs", dispatcher.target, job_name="coordinated", consumer_index=c,
        num_consumers=2, max_outstanding_requests=2))) for c in range(2)]
    got = [[tuple(int(v) for v in next(it)) for _ in range(8)] for it in readers]
    for c in range(2):
        assert [x for x, _ in got[c]] == [k // 2 * 2 + c for k in range(8)]
    pids = [[p for _, p in got[c]] for c in range(2)]
    assert pids[0] == pids[1]                                    # same worker each round
    assert pids[0][0] != pids[0][1] and pids[0][0] == pids[0][2]  # alternating workers


def test_coordinated_reads_survive_a_worker_death(cluster):
    """A worker dies between rounds: its stream resumes on the other worker at the lowest
    position a consumer still needs, and both consumers keep their sequences."""
    from tapeflow.data.service.config import free_port

    dispatcher = service.DispatchServer(service.DispatcherConfig(port=free_port()))
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address))
               for _ in range(2)]
    try:
        ds = tf.data.Dataset.range(10**6).repeat()
        readers = [iter(ds.apply(service.distribute(
            "parallel_epochs", dispatcher.target, job_name="coordinated-kill",
            consumer_index=c, num_consumers=2, max_outstanding_requests=2)))
            for c in range(2)]
        got = [[int(next(it)) for _ in range(6)] for it in readers]
        os.kill(workers[1]._pid(), signal.SIGKILL)
        for c, it in enumerate(readers):
            got[c] += [int(next(it)) for _ in range(10)]
        for c in range(2):
            assert got[c] == [k // 2 * 2 + c for k in range(16)]
    finally:
        for w in workers:
            w.stop()
        dispatcher.stop()


def test_cross_trainer_cache_shares_elements_between_trainers(cluster):
    """Trainers a and b share one job: b reads the elements a's reads made (same random
    draws), not a recomputation; a second consumer of trainer a splits with the first."""
    dispatcher, _ = cluster

    def worker_pid(x):
        return np.int64(os.getpid())

    ds = tf.data.Dataset.range(10**6).repeat().map(
        lambda x: (x, tf.numpy_function(worker_pid, [x], tf.int64), tf.random.uniform([])))

    def reader(trainer):
        return iter(ds.apply(service.distribute(
            "parallel_epochs", dispatcher.target, job_name="shared-cache",
            cross_trainer_cache=service.CrossTrainerCache(trainer), max_outstanding_requests=2)))

    a, b, a2 = reader("a"), reader("b"), reader("a")
    seen_a = {(int(x), int(p)): float(r) for x, p, r in (next(a) for _ in range(12))}
    seen_b = {(int(x), int(p)): float(r) for x, p, r in (next(b) for _ in range(12))}
    common = seen_a.keys() & seen_b.keys()
    assert len(common) >= 6
    assert all(seen_a[k] == seen_b[k] for k in common)
    seen_a2 = {(int(x), int(p)) for x, p, _ in (next(a2) for _ in range(6))}
    assert not seen_a2 & seen_a.keys()                 # same trainer id: split, not shared


def test_fault_tolerant_dispatcher_resumes_its_jobs(cluster, tmp_path, monkeypatch):
    """The dispatcher is killed mid-epoch and started again on the same work_dir: the
    trainer's job continues from the journal (compacted every 25 records) and every element
    arrives exactly once."""
    import time

    from tapeflow.data.service.config import free_port

    config = service.DispatcherConfig(port=free_port(), fault_tolerant_mode=True,
                                      work_dir=str(tmp_path / "ft"))
    monkeypatch.setattr(service.DispatchServer, "_compact_every", 25)  # many times per job
    dispatcher = service.DispatchServer(config)
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address))
               for _ in range(2)]
    restarted = None
    try:
        def slow(x):
            time.sleep(0.002)
            return x

        n = 400
        ds = (tf.data.Dataset.range(n).shuffle(32)
              .map(lambda x: tf.numpy_function(slow, [x], tf.int64)).batch(4))
        it = iter(ds.apply(service.distribute("distributed_epoch", dispatcher.target)))
        got = [next(it).numpy() for _ in range(15)]
        with open(tmp_path / "ft" / "dispatcher_journal.jsonl") as f:
            assert f.readline().startswith('{"op":"state"')
        os.kill(dispatcher._pid(), signal.SIGKILL)
        restarted = service.DispatchServer(config)      # takes over the dead one's address
        with pytest.raises(ValueError, match="already running"):
            service.DispatchServer(config)               # a live one keeps it
        got += [b.numpy() for b in it]
        values = np.concatenate(got)
        assert sorted(values.tolist()) == list(range(n))
        assert restarted._num_workers() == 2
    finally:
        for w in workers:
            w.stop()
        for d in (dispatcher, restarted):
            if d is not None:
                try:
                    d.stop()
                except Exception:  # noqa: BLE001 - already dead
                    pass


def test_a_worker_started_mid_job_takes_part(cluster):
    """A data worker registered while a distributed_epoch job runs gets a stream of it (the
    splits nobody has had yet); the trainer reads it from its next claim. Each element is
    tagged with the process that computed it."""
    import time

    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [service.WorkerServer(service.WorkerConfig(dispatcher_address=address))]
    try:
        def pid(x):
            time.sleep(0.002)
            return np.int64(os.getpid())

        n = 300
        ds = tf.data.Dataset.range(n).map(lambda x: (x, tf.numpy_function(pid, [x], tf.int64)))
        it = iter(ds.apply(service.distribute("distributed_epoch", dispatcher.target)))
        got = [next(it) for _ in range(10)]    # the one worker runs ahead by 16, then waits
        workers.append(service.WorkerServer(service.WorkerConfig(dispatcher_address=address)))
        got += list(it)
        assert sorted(int(x) for x, _ in got) == list(range(n))   # each element once
        by = {int(p) for _, p in got}
        assert workers[1]._pid() in by and workers[0]._pid() in by
    finally:
        for w in workers:
            w.stop()
        dispatcher.stop()


def test_distributed_epoch_exactly_once_when_a_worker_is_killed(cluster):
    """Two data workers feed one trainer; one is killed mid-epoch (SIGKILL). Its stream is
    replayed on the other worker: every element arrives exactly once. The pipeline shuffles
    without a seed and batches, so the replay must reproduce the lost worker's draws.
    (Last in the module: it leaves the cluster one worker short.)"""
    import time

    dispatcher, workers = cluster

    def slow(x):
        time.sleep(0.002)
        return x

    n = 1200
    ds = (tf.data.Dataset.range(n).shuffle(64)
          .map(lambda x: tf.py_function(slow, [x], tf.int64)).batch(4))
    it = iter(ds.apply(service.distribute("distributed_epoch", dispatcher.target)))
    got = [next(it).numpy() for _ in range(40)]
    victim = workers[1]._pid()
    os.kill(victim, signal.SIGKILL)
    got += [b.numpy() for b in it]
    values = np.concatenate(got)
    assert len(values) == n and sorted(values.tolist()) == list(range(n))
    assert dispatcher._num_workers() == 1    # the dispatcher saw the death and moved on
