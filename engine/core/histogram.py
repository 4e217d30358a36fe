"""A fixed log-spaced histogram for whole-run percentiles in bounded memory."""

from __future__ import annotations

import numpy as np

# bin 0 holds values below 1 ms, then 0.1 % wide bins up to ~1e7 s (23,000 bins, 180 kB; coarser bins
# made different settings report identical percentiles)
_HIST_MIN = 1e-3
_HIST_STEP = np.log(1.001)
_HIST_BINS = int(np.log(1e10) / _HIST_STEP) + 2


class LogHistogram:
    """Counts of non-negative values (seconds) in 0.1 % wide bins; percentiles to 0.1 %."""

    def __init__(self) -> None:
        self.counts = np.zeros(_HIST_BINS, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        if len(values):
            idx = np.where(values < _HIST_MIN, 0, np.log(np.maximum(values, _HIST_MIN) / _HIST_MIN) / _HIST_STEP + 1).astype(np.int64)
            np.add.at(self.counts, np.minimum(idx, _HIST_BINS - 1), 1)

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
        return float(_HIST_MIN * np.exp((k - 0.5) * _HIST_STEP))
