"""A fixed log-spaced histogram for whole-run percentiles in bounded memory."""

from __future__ import annotations

import math

import numpy as np

# bin 0 holds values below 1 ms, then 0.1 % wide bins up to ~1e7 s (23,000 bins, 180 kB; coarser bins
# made different settings report identical percentiles)
_HIST_MIN = 1e-3
_HIST_STEP = math.log(1.001)
_HIST_BINS = int(math.log(1e10) / _HIST_STEP) + 2
_edges: np.ndarray | None = None


def edges() -> np.ndarray:
    """The bins' lower edges ``_HIST_MIN * exp(i * _HIST_STEP)``, from the C library's exp: a value's bin is found by
    comparisons, and a percentile is read back with the same exp. numpy's vectorised exp and log pick a SIMD kernel by
    CPU (AVX-512 or not), and those kernels may differ in the last bit: the golden digests changed with the machine.
    Comparisons and libm's scalar exp do not. Built when the first value is added (23,000 exps, ~3 ms: a short run
    may add none); ``i * _HIST_STEP`` and the product are single IEEE multiplications, as in Python."""
    global _edges
    if _edges is None:
        exponents = (np.arange(_HIST_BINS - 1, dtype=np.float64) * _HIST_STEP).tolist()
        _edges = _HIST_MIN * np.array(list(map(math.exp, exponents)))
    return _edges


class LogHistogram:
    """Counts of non-negative values (seconds) in 0.1 % wide bins; percentiles to 0.1 %."""

    def __init__(self) -> None:
        self.counts = np.zeros(_HIST_BINS, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        if len(values):
            np.add.at(self.counts, np.searchsorted(edges(), values, side="right"), 1)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def percentile(self, q: float) -> float:
        total = self.total
        if total == 0:
            return float("nan")
        k = int(np.searchsorted(np.cumsum(self.counts), np.ceil(q / 100.0 * total)))
        if k == 0:
            return 0.0
        return _HIST_MIN * math.exp((k - 0.5) * _HIST_STEP)
