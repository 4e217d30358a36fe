"""Percentiles of a sample, the same numbers as ``numpy.percentile`` (method ``linear``) without its per-call overhead.

The VM world takes the wait percentiles of every sample interval; ``numpy.percentile`` spends tens of microseconds
per call in argument handling for a few hundred values. This sorts once and interpolates as numpy does, in the
same floating-point operations, so the results are identical bit for bit (``tests/engine/core/test_quantiles.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def linear_percentiles(values: np.ndarray, percents: Sequence[float]) -> list[float]:
    """``numpy.percentile(values, percents).tolist()`` for a non-empty array of finite numbers."""
    return sorted_linear_percentiles(np.sort(values).tolist(), percents)


def sorted_linear_percentiles(ordered: Sequence[float], percents: Sequence[float]) -> list[float]:
    """:func:`linear_percentiles` of values already in ascending order (non-empty, finite): a few values sorted in
    Python need no array at all."""
    n = len(ordered)
    out = []
    for p in percents:
        virtual = (n - 1) * (p / 100)
        if virtual >= n - 1:  # numpy takes the last value at and beyond the end
            out.append(float(ordered[n - 1]))
            continue
        below = math.floor(virtual)
        gamma = virtual - below
        low, high = float(ordered[below]), float(ordered[below + 1])
        diff = high - low
        # numpy's lerp: from below for weights under one half, from above for the rest
        out.append(high - diff * (1 - gamma) if gamma >= 0.5 else low + diff * gamma)
    return out
