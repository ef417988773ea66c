"""Seeds for shuffling: TF's rules (global seed + op seed) and a fresh stream per epoch."""

from __future__ import annotations

from typing import Any

import numpy as np


def global_and_op_seed(op_seed: int | None) -> tuple[Any, Any]:
    """(global_seed, op_seed) from `tf.random.set_seed` state; both None when unseeded.

    Reads `tapeflow.framework.random_seed.get_seed` (TF's `get_seed` contract) when the random
    module provides it.
    """
    try:
        from tapeflow.framework import random_seed
    except ImportError:
        return None, op_seed
    return random_seed.get_seed(op_seed)


def epoch_rng(op_seed: int | None, epoch: int,
              unseeded: int | None = None) -> np.random.Generator:
    """A generator for one epoch: reproducible when any seed is set, else from `unseeded`."""
    global_seed, op = global_and_op_seed(op_seed)
    if global_seed is None and op is None:
        return np.random.default_rng(unseeded)
    entropy = [int(global_seed or 0) & 0xFFFFFFFF, int(op or 0) & 0xFFFFFFFF, epoch]
    return np.random.default_rng(np.random.SeedSequence(entropy))
