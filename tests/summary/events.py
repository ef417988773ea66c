"""Read event files back with TensorBoard's own loader (tensor and simple-value summaries)."""

from __future__ import annotations

import glob
import os

import numpy as np


def load(run_dir) -> list:
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    events = []
    for path in sorted(glob.glob(os.path.join(str(run_dir), "events.out.tfevents.*"))):
        events.extend(LegacyEventFileLoader(path).Load())
    return events


def values(run_dir) -> dict:
    """{tag: [(step, value as an ndarray)]} of every summary value."""
    from tensorboard.util import tensor_util

    out: dict = {}
    for event in load(run_dir):
        for v in event.summary.value:
            value = tensor_util.make_ndarray(v.tensor) if v.HasField("tensor") else \
                np.asarray(v.simple_value)
            out.setdefault(v.tag, []).append((event.step, value))
    return out
