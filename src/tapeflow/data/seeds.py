"""Seeds for shuffling and sampling: TF's rules (global + op seed), a fresh stream per epoch.

The seed is resolved when the dataset is built, as TF draws a shuffle op's seed when the op is
created: after `tf.random.set_seed(s)`, an unseeded `shuffle()` is still reproducible.
"""

from __future__ import annotations

import numpy as np

from tapeflow.ops import random_ops


def resolve(op_seed: int | None) -> int | None:
    """One integer from the global and op seeds; None when neither is set (an error under
    ``enable_op_determinism``, as in TensorFlow)."""
    random_ops.require_seed(op_seed)
    return random_ops.next_seed(None if op_seed is None else int(op_seed))


def epoch_rng(seed: int | None, epoch: int) -> np.random.Generator:
    """The generator of one epoch: reproducible from `seed`, fresh entropy when None."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence([seed % 2**63, epoch]))
