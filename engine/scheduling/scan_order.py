"""A decision's walk over the nodes: the first ``k`` passing nodes from the start index, the winner and the next start
of a walk over every passing node, and the scores in scan order (gathered when asked, if scored in cluster order)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from engine.scheduling.base import ScoringContext

if TYPE_CHECKING:
    from engine.cluster.model import Pod
    from engine.scheduling.base import ClusterAt, Priority


def all_pass(masks: list[tuple[str, np.ndarray]], n: int) -> np.ndarray:
    """Nodes passing every predicate: the one mask itself, or a new array (pairwise ands: ``logical_and.reduce`` over a
    list would first stack the masks into a matrix)."""
    if not masks:
        return np.ones(n, bool)
    passes = masks[0][1]
    if len(masks) > 1:
        passes = np.logical_and(passes, masks[1][1])
        for _, mask in masks[2:]:
            passes &= mask
    return passes


def last_in_scan(passes: np.ndarray, start: int) -> int:
    """The last passing node of a cyclic walk from ``start`` (at least one node passes)."""
    for node in range(start - 1, max(start - 9, -1), -1):  # most nodes pass: a few steps back usually find one
        if passes[node]:
            return node
    if start and passes[:start].any():
        return start - 1 - int(passes[start - 1 :: -1].argmax())  # methods: np.argmax's dispatch costs more than it does
    return len(passes) - 1 - int(passes[::-1].argmax())


HIDE = 4  # failing maxima hidden (set to -inf and restored) before the winner is found with a mask of every node


def first_best_from(total: np.ndarray, passes: np.ndarray, start: int) -> int:
    """Cluster position of the first maximum of ``total`` over the passing nodes of a cyclic walk from ``start``.

    When the overall maximum fails the filter (a storage node holding the pod's data, say) and ``total`` is a writable
    float array, up to :data:`HIDE` failing maxima are set to -inf while the next is looked for, and put back before
    returning (``total`` is as it was): an ``argmax`` pass each, instead of a masked copy of every node."""
    best = int(total.argmax())  # the first maximum over every node: if it passes, no mask is needed
    top = total[best]
    if passes[best] or not total.flags.writeable or total.dtype.kind != "f":
        return _first_best_from(total, passes, start, best, top)
    hidden = []
    try:
        while not passes[best] and top == top and len(hidden) < HIDE:
            hidden.append((best, top))
            total[best] = -np.inf
            best = int(total.argmax())
            top = total[best]
        return _first_best_from(total, passes, start, best, top)  # hidden nodes fail: a mask would hide them as well
    finally:
        for node, value in reversed(hidden):
            total[node] = value


def _first_best_from(total: np.ndarray, passes: np.ndarray, start: int, best: int, top: float) -> int:
    if passes[best] and top == top:  # (not NaN)
        if best >= start:  # every node before it holds less
            return best
        later = start + int(total[start:].argmax())
        if total[later] != top:  # no node from start on reaches the maximum: the walk meets ``best`` first
            return best
        if passes[later]:
            return later
    masked = np.where(passes, total, -np.inf)  # a new float array, whatever the scores' type
    pick = int(masked.argmax())
    if pick < start:  # a tie at or after start comes first in the walk
        later = start + int(masked[start:].argmax())
        if masked[later] == masked[pick]:
            pick = later
    return pick


def scan(passes: np.ndarray, start: int, k: int) -> tuple[np.ndarray, int]:
    """Walk the nodes cyclically from ``start``; return the first ``k`` that pass and how many nodes were visited."""
    n = len(passes)
    if start == 0:
        found = np.flatnonzero(passes)
    else:
        found = np.concatenate((np.flatnonzero(passes[start:]) + start, np.flatnonzero(passes[:start])))
    if len(found) > k:
        found = found[:k]
        return found, int((found[-1] - start) % n) + 1
    return found, n


@dataclass
class PriorityResult:
    """One priority's view of one decision: raw values and scores of the scored nodes, and its weight."""

    name: str
    weight: float
    raw: np.ndarray
    score: np.ndarray


@dataclass
class ScanScores:
    """The scored nodes in scan order, their weighted totals and each priority's result over them."""

    nodes: np.ndarray
    total: np.ndarray
    priorities: list[PriorityResult]

    @property
    def priority_count(self) -> int:
        return len(self.priorities)


Deferred = tuple["ClusterAt", "Pod", dict[int, "Priority"]]  # the cluster at the decision, the pod, priority by position


class EveryNodeScores:
    """:class:`ScanScores` of a decision that scored every feasible node in cluster order: the scan-order arrays are
    gathered when first asked for (a breakdown, an explanation), not for every pod.

    A priority given as ``(name, weight, None, None)`` is scored when first asked for, as a scan would have scored it
    (in scan order, Skippy mode), by ``deferred``'s priority at its position on ``deferred``'s copy of the cluster."""

    def __init__(
        self,
        passes: np.ndarray,
        start: int,
        total: np.ndarray,
        priorities: list[tuple[str, float, np.ndarray | None, np.ndarray | None]],
        deferred: Deferred | None = None,
    ):
        self._passes, self._start, self._total, self._priorities = passes, start, total, priorities  # (name, weight, raw, score)
        self._deferred = deferred

    @property
    def priority_count(self) -> int:
        """How many priorities :attr:`priorities` holds (without scoring the deferred ones)."""
        return len(self._priorities)

    def frozen(self) -> EveryNodeScores:
        """The same scores on copies of the arrays (a priority may hand out an array it keeps updating)."""
        priorities = []
        for name, weight, raw, score in self._priorities:
            if raw is not None:
                raw_copy = np.array(raw)
                score = raw_copy if score is raw else np.array(score)
                raw = raw_copy
            priorities.append((name, weight, raw, score))
        return EveryNodeScores(np.array(self._passes), self._start, np.array(self._total), priorities, self._deferred)

    @cached_property
    def nodes(self) -> np.ndarray:
        return scan(self._passes, self._start, len(self._passes))[0]

    @cached_property
    def total(self) -> np.ndarray:
        return self._total[self.nodes]

    @cached_property
    def priorities(self) -> list[PriorityResult]:
        nodes = self.nodes
        out = []
        for i, (name, weight, raw, score) in enumerate(self._priorities):
            if raw is None:
                cluster, pod, later = self._deferred  # type: ignore[misc]
                ctx = ScoringContext(cluster, pod, nodes, "skippy")  # type: ignore[arg-type]
                raw = later[i].raw(ctx)
                out.append(PriorityResult(name, weight, raw, later[i].normalize(ctx, raw)))
            else:
                out.append(PriorityResult(name, weight, raw[nodes], score[nodes]))  # type: ignore[index]
        return out
