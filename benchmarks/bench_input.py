"""Input pipelines on real formats, tapeflow and TensorFlow side by side (items/s, higher: better).

Rows: issue 23's table (TFRecord of tf.train.Example parsed per example and per batch, CsvDataset,
make_csv_dataset, 96x96 JPEG files read+decode+resize) plus TextLineDataset + a string split,
from_generator and from_tensor_slices over a 1 GiB array with shuffle(10_000).batch(256).

Each framework runs in its own long-lived worker process; the parent asks the two workers for one
timed epoch of a row in turn, alternating which goes first, so both see the same machine load.
The ratio column is tapeflow / TensorFlow of the per-round medians.

Run: python benchmarks/bench_input.py [--tf-python /work/tfenv/bin/python] [--rounds 3]
         [--rows tfrecord_single,csv] [--dir /tmp/bench_input] [--big-gib 1.0]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from timing import spread

N_REC, N_CSV, N_IMG, N_TEXT, N_GEN = 20000, 50000, 2000, 50000, 20000
BIG_BATCHES = 400          # batches of 256 read from the 1 GiB array per timed epoch
ROWS = ["tfrecord_single", "tfrecord_batch", "csv_dataset", "make_csv", "jpeg", "text_split",
        "generator", "slices_1gib"]
TITLES = {
    "tfrecord_single": "TFRecord Example: map(parse_single_example, AUTOTUNE).batch(256)",
    "tfrecord_batch": "TFRecord Example: batch(256).map(parse_example, AUTOTUNE)",
    "csv_dataset": "CsvDataset(5 columns).batch(256)",
    "make_csv": "make_csv_dataset(batch_size=256)",
    "jpeg": "JPEG 96x96: list_files/read/decode/resize(64)/batch(64), AUTOTUNE",
    "text_split": "TextLineDataset + strings.split, AUTOTUNE",
    "generator": "from_generator (784 floats + label).batch(256)",
    "slices_1gib": "from_tensor_slices(1 GiB).shuffle(10_000).batch(256)",
}


# ---- test files (written once, through tapeflow's own writers) ------------------------------
def make_files(d: str) -> None:
    import tapeflow as tf

    def example(image: bytes, label: int) -> bytes:
        feature = tf.train.Feature
        return tf.train.Example(features=tf.train.Features(feature={
            "image": feature(bytes_list=tf.train.BytesList(value=[image])),
            "label": feature(int64_list=tf.train.Int64List(value=[label]))})).SerializeToString()

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    if not os.path.exists(f"{d}/mnist_like.tfrecord"):
        with tf.io.TFRecordWriter(f"{d}/mnist_like.tfrecord.tmp") as w:
            for i in range(N_REC):
                w.write(example(rng.integers(0, 255, 784, np.uint8).tobytes(), i % 10))
        os.replace(f"{d}/mnist_like.tfrecord.tmp", f"{d}/mnist_like.tfrecord")
    if not os.path.exists(f"{d}/data.csv"):
        with open(f"{d}/data.csv.tmp", "w") as f:
            f.write("a,b,c,d,label\n")
            for i in range(N_CSV):
                f.write(f"{i * 0.5},{i % 7},{(i * 3) % 11 * 0.1},{i % 13},{i % 2}\n")
        os.replace(f"{d}/data.csv.tmp", f"{d}/data.csv")
    if not os.path.exists(f"{d}/text.txt"):
        words = [f"w{k}" for k in range(1000)]
        with open(f"{d}/text.txt.tmp", "w") as f:
            for _ in range(N_TEXT):
                f.write(" ".join(words[k] for k in rng.integers(0, 1000, 12)) + "\n")
        os.replace(f"{d}/text.txt.tmp", f"{d}/text.txt")
    if len(glob.glob(f"{d}/imgs/*.jpg")) < N_IMG:
        os.makedirs(f"{d}/imgs", exist_ok=True)
        for i in range(N_IMG):
            img = rng.integers(0, 255, (96, 96, 3), dtype=np.uint8)
            tf.io.write_file(f"{d}/imgs/{i:05d}.jpg", tf.io.encode_jpeg(img, quality=90))


# ---- the pipelines, written as TensorFlow users write them ----------------------------------
def pipelines(tf, d: str, big_gib: float) -> dict:
    """{row: (items per epoch, dataset factory)} for the framework module `tf`."""
    spec = {"image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    auto = tf.data.AUTOTUNE

    def parse_one(r):
        x = tf.io.parse_single_example(r, spec)
        return tf.cast(tf.io.decode_raw(x["image"], tf.uint8), tf.float32) / 255.0, x["label"]

    def parse_many(r):
        x = tf.io.parse_example(r, spec)
        return tf.cast(tf.io.decode_raw(x["image"], tf.uint8), tf.float32) / 255.0, x["label"]

    def load_jpeg(p):
        return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3), [64, 64]) / 255.0

    if hasattr(tf, "strings") and hasattr(tf.strings, "split"):
        split = tf.strings.split
    else:  # tapeflow before tf.strings exists: a split-like map through py_function
        def split(line):
            return tf.py_function(lambda s: np.array(s.numpy().split(), dtype=object), [line],
                                  tf.string)

    def gen():
        rng = np.random.default_rng(0)
        for i in range(N_GEN):
            yield rng.random(784, dtype=np.float32), i % 10

    gen_sig = (tf.TensorSpec([784], tf.float32), tf.TensorSpec([], tf.int64))
    big = {}

    def slices():
        if "a" not in big:
            rows = int(big_gib * 2**30) // (256 * 4)
            big["a"] = np.random.default_rng(0).random((rows, 256), dtype=np.float32)
        return (tf.data.Dataset.from_tensor_slices(big["a"]).shuffle(10_000).batch(256)
                .take(BIG_BATCHES))

    rec = f"{d}/mnist_like.tfrecord"
    return {
        "tfrecord_single": (N_REC, lambda: tf.data.TFRecordDataset(rec)
                            .map(parse_one, num_parallel_calls=auto).batch(256).prefetch(auto)),
        "tfrecord_batch": (N_REC, lambda: tf.data.TFRecordDataset(rec).batch(256)
                           .map(parse_many, num_parallel_calls=auto).prefetch(auto)),
        "csv_dataset": (N_CSV, lambda: tf.data.experimental.CsvDataset(
            f"{d}/data.csv", [tf.float32] * 4 + [tf.int32], header=True).batch(256)),
        "make_csv": (N_CSV, lambda: tf.data.experimental.make_csv_dataset(
            f"{d}/data.csv", batch_size=256, label_name="label", num_epochs=1, shuffle=False)),
        "jpeg": (N_IMG, lambda: tf.data.Dataset.list_files(f"{d}/imgs/*.jpg", shuffle=False)
                 .map(load_jpeg, num_parallel_calls=auto).batch(64).prefetch(auto)),
        "text_split": (N_TEXT, lambda: tf.data.TextLineDataset(f"{d}/text.txt")
                       .map(split, num_parallel_calls=auto).prefetch(auto)),
        "generator": (N_GEN, lambda: tf.data.Dataset.from_generator(gen, output_signature=gen_sig)
                      .batch(256).prefetch(auto)),
        "slices_1gib": (BIG_BATCHES * 256, slices),
    }


def _count(element) -> int:
    """Items in one batched element: its batch size."""
    x = element[0] if isinstance(element, tuple) else element
    if isinstance(x, dict):
        x = next(iter(x.values()))
    return int(x.shape[0])


def _epoch(make, batched: bool) -> tuple[int, float]:
    t0, n = time.perf_counter(), 0
    for element in make():
        n += _count(element) if batched else 1
    return n, time.perf_counter() - t0


def worker(framework: str, d: str, big_gib: float) -> None:
    """Answer 'row' lines on stdin with one timed epoch each, as JSON on stdout."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if framework == "tensorflow":
        import tensorflow as tf
    else:
        import tapeflow as tf
    rows = pipelines(tf, d, big_gib)
    print(json.dumps({"ready": framework}), flush=True)
    for line in sys.stdin:
        row = line.strip()
        try:
            expected, make = rows[row]
            n, seconds = _epoch(make, row != "text_split")
            if n != expected:
                raise AssertionError(f"{n} items, expected {expected}")
            print(json.dumps({"rate": n / seconds}), flush=True)
        except Exception as e:  # noqa: BLE001 - reported as the row's result
            print(json.dumps({"error": f"{type(e).__name__}: {str(e)[:160]}"}), flush=True)


class _Worker:
    def __init__(self, python: str, framework: str, args: argparse.Namespace):
        env = dict(os.environ)
        if framework == "tapeflow":
            src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
            env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", framework, "--dir", args.dir,
             "--big-gib", str(args.big_gib)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, env=env)
        self.ask(None)

    def ask(self, row: str | None) -> dict:
        if row is not None:
            self.proc.stdin.write(row + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("benchmark worker exited")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tf-python", default=None, help="interpreter with TensorFlow installed")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--dir", default=os.path.join("/tmp", "tapeflow_bench_input"))
    p.add_argument("--big-gib", type=float, default=1.0)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.dir, args.big_gib)
        return
    make_files(args.dir)
    workers = {"tapeflow": _Worker(sys.executable, "tapeflow", args)}
    if args.tf_python:
        workers["tensorflow"] = _Worker(args.tf_python, "tensorflow", args)
    names = list(workers)
    print(f"{'pipeline':<68}" + "".join(f"{n:>14}" for n in names) + ("   ratio" if len(names) > 1
                                                                       else ""))
    for row in args.rows.split(","):
        rates: dict = {n: [] for n in names}
        errors: dict = {}
        for n in names:  # warm-up epoch (first call of a function, file cache)
            r = workers[n].ask(row)
            if "error" in r:
                errors[n] = r["error"]
        for k in range(args.rounds):
            for n in (names if k % 2 == 0 else names[::-1]):
                if n not in errors:
                    r = workers[n].ask(row)
                    rates[n].append(r.get("rate", 0.0))
                    if "error" in r:
                        errors[n] = r["error"]
        med = {n: statistics.median(v) if v and n not in errors else None
               for n, v in rates.items()}
        cells = "".join(f"{med[n]:>14,.0f}" if med[n] else f"{'error':>14}" for n in names)
        ratio = ""
        if len(names) > 1 and all(med.values()):
            ratio = f"  {med['tapeflow'] / med['tensorflow']:.2f}x"
        print(f"{TITLES[row]:<68}{cells}{ratio}", flush=True)
        for n in names:  # the spread over rounds, not only the median (issue 25)
            if rates[n] and n not in errors:
                low, mid, high = spread(rates[n])
                print(f"    {n} items/s min / median / p90: {low:,.0f} / {mid:,.0f} / {high:,.0f}",
                      flush=True)
        if len(names) > 1 and all(rates[n] for n in names) and not errors:
            low, mid, high = spread([a / b for a, b in zip(rates["tapeflow"],
                                                           rates["tensorflow"])])
            print(f"    paired rounds' ratio min / median / p90: {low:.2f} / {mid:.2f} / "
                  f"{high:.2f}", flush=True)
        for n, e in errors.items():
            print(f"    {n}: {e}", flush=True)
    for w in workers.values():
        w.close()


if __name__ == "__main__":
    main()
