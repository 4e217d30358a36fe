"""A priority's raw values that stay the same from pod to pod, with what makes their Skippy min-max scores cheap."""

from __future__ import annotations

import numpy as np

from engine.scheduling.base import ScoringContext, skippy_min_max

WALK = 16  # nodes tried from each end of the order before the bounds are taken over every scored node


class StaticColumn:
    """Values per node that do not change between pods (a data item's transfer seconds, capability label counts).

    The nodes are kept in ascending order of value, so the bounds over the scored nodes are usually read at the
    ends of the order rather than reduced over every node, and the min-max scores are kept per bounds. The values
    and scores handed out are never changed.
    """

    __slots__ = ("values", "_order", "_scores")

    def __init__(self, values: np.ndarray):
        self.values = values
        self._order = np.argsort(values, kind="stable")
        self._scores: dict[tuple, np.ndarray] = {}

    def bounds(self, ctx: ScoringContext) -> tuple:
        """(min, max) of the values over the scored nodes of ``ctx`` (every node scored in cluster order)."""
        scored, values, order = ctx.scored, self.values, self._order
        lo = next((values[i] for i in order[:WALK].tolist() if scored[i]), None)
        hi = next((values[i] for i in order[: -WALK - 1 : -1].tolist() if scored[i]), None)
        return ctx.bounds(values) if lo is None or hi is None else (lo, hi)

    def min_max(self, bounds: tuple, inverse: bool) -> np.ndarray:
        """:func:`skippy_min_max` of the values with these bounds (kept for the next pod with the same bounds)."""
        key = (*bounds, inverse)
        scores = self._scores.get(key)
        if scores is None:
            if len(self._scores) >= 8:
                self._scores.clear()
            scores = self._scores[key] = skippy_min_max(self.values, inverse, bounds)
            scores.flags.writeable = False
        return scores
