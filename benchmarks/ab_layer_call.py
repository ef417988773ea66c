"""CPU time of one eager Keras layer call (a small Conv2D by default) under a given tree, to
A/B the per-call cost of the layer engine (e.g. InputSpec checks) between two checkouts.

    for i in 1 2 3; do
        python benchmarks/ab_layer_call.py /work/main/src
        python benchmarks/ab_layer_call.py $PWD/src
    done

Prints microseconds of process CPU time per call (median of 5 rounds of 2000 calls, after
200 warm-up calls); alternate the trees in fresh processes on a shared machine.
"""

import statistics
import sys
import time

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "src")

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402


def main() -> None:
    x = tf.constant(np.ones((8, 16, 16, 3), np.float32))
    layer = tf.keras.layers.Conv2D(4, 3)
    for _ in range(200):
        layer(x)
    rounds = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(2000):
            layer(x)
        rounds.append((time.process_time() - start) / 2000 * 1e6)
    print(f"{tf.__file__}: {statistics.median(rounds):.1f} us per Conv2D call (CPU)")


if __name__ == "__main__":
    main()
