"""A priority's raw values that stay the same from pod to pod, with what makes their Skippy min-max scores cheap."""

from __future__ import annotations

import numpy as np

from engine.scheduling.base import skippy_min_max, zero_scores

_FILLED = (np.dtype(np.float64), np.dtype(np.int64))  # the values a compiled ``fill`` takes
WALK = 16  # nodes holding the extreme values tried before the bounds are taken over every scored node


class StaticColumn:
    """Values per node that do not change between pods (a data item's transfer seconds, capability label counts).

    The first nodes holding the smallest and the largest value are kept: when one of each is scored, those are the
    bounds over the scored nodes, read without a pass over every node; the min-max scores are kept per bounds.
    The values and scores handed out are never changed.
    """

    __slots__ = ("values", "_lowest", "_highest", "_scores")

    def __init__(self, values: np.ndarray, extremes: tuple[list[int], list[int]] | None = None):
        self.values = values
        # the first nodes holding the smallest and the largest value: given (the compiled pass that made the values
        # found them), else found at the first bounds asked (the compiled step finds its own)
        self._lowest, self._highest = extremes if extremes is not None else (None, [])
        self._scores: dict[tuple, np.ndarray] = {}

    def find_extremes(self) -> None:
        """Find the first nodes holding the smallest and the largest value (at the first bounds asked, or ahead)."""
        if self._lowest is None:
            values = self.values
            self._lowest = np.flatnonzero(values == values.min())[:WALK].tolist()
            self._highest = np.flatnonzero(values == values.max())[:WALK].tolist()

    def bounds(self, scored: np.ndarray) -> tuple:
        """(min, max) of the values over the ``scored`` nodes (a mask over every node, at least one set)."""
        values = self.values
        if self._lowest is None:
            self.find_extremes()
        lo = next((values[i] for i in self._lowest if scored[i]), None)
        hi = next((values[i] for i in self._highest if scored[i]), None)
        if lo is None or hi is None:
            values = values[scored]
            return values.min(), values.max()
        return lo, hi

    def min_max(self, bounds: tuple, inverse: bool, fill=None) -> np.ndarray:
        """:func:`skippy_min_max` of the values with these bounds (kept for the next pod with the same bounds);
        ``fill(values, lo, hi, inverse, out)``: the same scores of float or int64 values in one compiled pass."""
        key = (*bounds, inverse)
        scores = self._scores.get(key)
        if scores is None:
            if len(self._scores) >= 8:
                self._scores.clear()
            values = self.values
            if fill is not None and values.dtype in _FILLED:
                scores = fill(values, *bounds, inverse, np.empty(len(values)))
            else:
                scores = skippy_min_max(values, inverse, bounds)
            self._scores[key] = scores
            scores.flags.writeable = False
        return scores

    def skippy_scores(self, scored: np.ndarray, inverse: bool, fill=None) -> np.ndarray:
        """Skippy's min-max scores (inverse: the largest value scores 0) with the bounds over the ``scored`` nodes
        (``fill``: as :meth:`min_max` takes it)."""
        lo, hi = self.bounds(scored)
        if lo == hi:
            return zero_scores(len(self.values))
        return self.min_max((lo, hi), inverse, fill)
