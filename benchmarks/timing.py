"""Spreads of the benchmarks' timings: min / median / p90, not a median alone (issue 25: a
median hid steps that stalled for 10x as long, and a minimum hides a machine's noise).

    from timing import spread, spread_text, timed
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def spread(times: list[float]) -> tuple[float, float, float]:
    """(min, median, p90) of `times` (the nearest-rank 90th percentile)."""
    s = sorted(times)
    return s[0], statistics.median(s), s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]


def spread_text(times: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """'min/median/p90' of `times` multiplied by `scale` (1e3: seconds to ms)."""
    return "/".join(f"{v * scale:.{digits}f}" for v in spread(times))


def timed(fn: Callable[[], object], repeats: int, warmup: int = 0) -> list[float]:
    """Wall seconds of each of `repeats` calls of `fn`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times
