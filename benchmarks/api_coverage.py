"""Count the TensorFlow 2.21 public API names tapeflow has, namespace by namespace.

    python benchmarks/api_coverage.py            # compare with the recorded TF 2.21 names
    /work/tfenv/bin/python benchmarks/api_coverage.py --record   # re-record them from TF

The recorded names (``dir()`` of each namespace, public names only) live in
benchmarks/data/tf221_api_names.json, so counting needs no TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

NAMES = pathlib.Path(__file__).parent / "data" / "tf221_api_names.json"
NAMESPACES = ["", "math", "nn", "linalg", "random", "random.experimental", "strings", "ragged",
              "sparse", "data", "io", "image", "signal", "config", "config.threading",
              "config.experimental", "config.optimizer", "debugging", "test", "experimental",
              "experimental.numpy", "dtypes", "errors", "train", "autograph", "bitwise",
              "compat.v1.train", "saved_model", "summary", "distribute", "lookup", "sets",
              "nest", "audio"]


def _lookup(root, ns: str):
    obj = root
    for part in filter(None, ns.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def record() -> None:
    import tensorflow as tf

    names = {ns: sorted(n for n in dir(_lookup(tf, ns)) if not n.startswith("_"))
             for ns in NAMESPACES if _lookup(tf, ns) is not None}
    NAMES.write_text(json.dumps({"tensorflow": tf.__version__, "namespaces": names},
                                indent=1, sort_keys=True) + "\n")


def count(verbose: bool = False) -> tuple[int, int]:
    import tapeflow as tf

    recorded = json.loads(NAMES.read_text())["namespaces"]
    have_all = total_all = 0
    for ns in NAMESPACES:
        names = recorded.get(ns, [])
        obj = _lookup(tf, ns)
        have = [n for n in names if obj is not None and hasattr(obj, n)]
        have_all += len(have)
        total_all += len(names)
        print(f"tf.{ns or '<root>':24s} {len(have):4d} / {len(names):4d}")
        if verbose:
            missing = sorted(set(names) - set(have))
            print("    missing:", " ".join(missing))
    print(f"{'total':27s} {have_all:4d} / {total_all:4d}")
    return have_all, total_all


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="re-record names from TensorFlow")
    parser.add_argument("-v", "--verbose", action="store_true", help="list missing names")
    args = parser.parse_args()
    record() if args.record else count(args.verbose)
    sys.exit(0)
