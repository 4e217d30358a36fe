"""Columns over every node kept per pod shape between decisions and brought up to date only where nodes changed."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Hashable

import numpy as np

from engine.cluster.model import Cluster

EVERY_NODE = slice(None)
SMALL = 4096  # below this many nodes a whole column costs about what finding the changed nodes does: not kept
# references to a kept column while :meth:`ShapeColumns.column` brings it up to date when nothing outside holds it: the
# entry's tuple, the local name and getrefcount's argument. More: a decision, or a view of the column, holds it.
_UNSHARED = 3


class ShapeColumns:
    """Per cluster and key (a pod's shape), a column over every node whose values depend only on that node's free
    resources and the key: kept between pods, recomputed when asked at the nodes :attr:`Cluster.changes` lists since.

    ``compute(cluster, key, nodes)`` gives the values at ``nodes`` (positions, or every node as a slice). A column
    handed out is never changed while anything holds it (an update writes a copy then; a column nothing outside
    holds any more, as when the last decision of that shape is gone, is updated in place: a 15,000-node column is
    120 KB to copy); the ``keep`` most recently used keys stay.
    Clusters of fewer than :data:`SMALL` nodes get a fresh column every time.
    """

    def __init__(self, compute: Callable[[Cluster, Hashable, np.ndarray | slice], np.ndarray], keep: int = 64):
        self._compute = compute
        # patch(cluster, key, column, nodes): the same values written at ``nodes`` (a list) in place, in one call (the
        # fused Skippy step's compiled twin sets it); None: ``compute`` at those nodes
        self.patch: Callable[[Cluster, Hashable, np.ndarray, list[int]], None] | None = None
        self._keep = keep
        self._kept: weakref.WeakKeyDictionary[Cluster, dict] = weakref.WeakKeyDictionary()

    def holds(self, cluster: Cluster, key: Hashable) -> bool:
        """Whether a column of ``key`` is kept for ``cluster`` (clusters of fewer than :data:`SMALL` nodes: never)."""
        entries = self._kept.get(cluster)
        return entries is not None and key in entries

    def seed(self, cluster: Cluster, key: Hashable, values: np.ndarray) -> None:
        """Keep ``values``, the column of ``key`` computed elsewhere as the cluster is now (``values`` is never changed
        while anything else holds it: an update writes a copy)."""
        if cluster.n < SMALL:
            return
        entries = self._kept.get(cluster)
        if entries is None:
            entries = self._kept[cluster] = {}
        entries.pop(key, None)
        entries[key] = (cluster.changes.mark, values)
        if len(entries) > self._keep:
            del entries[next(iter(entries))]

    def column(self, cluster: Cluster, key: Hashable) -> np.ndarray:
        """The column of ``key`` as the cluster is now."""
        if cluster.n < SMALL:
            return self._compute(cluster, key, EVERY_NODE)
        entries = self._kept.get(cluster)
        if entries is None:
            entries = self._kept[cluster] = {}
        entry = entries.pop(key, None)  # re-inserted last: the least recently used key is the first
        mark = cluster.changes.mark
        if entry is not None:
            seen, values = entry
            changed = cluster.changes.since(seen) if seen != mark else ()
            if changed is None or len(changed) > cluster.n // 4:
                entry = None
            elif changed:
                if sys.getrefcount(values) > _UNSHARED:  # a decision (or a view of it) holds the column: write a copy
                    values = values.copy()
                if self.patch is not None:
                    self.patch(cluster, key, values, changed)
                else:
                    nodes = np.array(changed)  # repeats write the same value
                    values[nodes] = self._compute(cluster, key, nodes)
        if entry is None:
            values = self._compute(cluster, key, EVERY_NODE)
        seen = mark
        entries[key] = (seen, values)
        if len(entries) > self._keep:
            del entries[next(iter(entries))]
        return values
