"""Skippy's Capability priority: count the node's capability labels whose value the pod asks for."""

from __future__ import annotations

import weakref

import numpy as np

from engine.cluster.model import CAPABILITY, Cluster, Pod
from engine.scheduling.base import Priority, ScoringContext, kube_default_normalize, skippy_min_max, zero_scores
from engine.scheduling.static_column import StaticColumn


class Capability(Priority):
    """Raw: matching ``capability.skippy.io*`` labels; skippy: min-max to 0-10; kube: DefaultNormalizeScore.

    When every node is scored, the counts of each set of asked capabilities are a :class:`StaticColumn` kept per
    cluster (labels do not change).
    """

    name = "Capability"
    key = "capability"
    every_node = True

    def __init__(self) -> None:
        self._columns: weakref.WeakKeyDictionary[Cluster, dict] = weakref.WeakKeyDictionary()
        self._last: StaticColumn | None = None  # the column the last raw values came from
        self._recent: tuple[weakref.ref, dict] | None = None  # (the cluster _counts served last, its columns)

    def column(self, cluster: Cluster, pod: Pod) -> StaticColumn | None:
        """The counts at every node of the capabilities ``pod`` asks for, kept per set asked (None: it asks for none)."""
        labels = pod.labels
        if not labels:
            return None
        asked = tuple([(key, value) for key, value in labels.items() if CAPABILITY in key])
        if not asked:
            return None
        last = self._recent  # the columns of the cluster asked last: no weak dictionary look-up per pod
        if last is not None and last[0]() is cluster:
            column = last[1].get(asked)
            if column is not None:
                return column
        return self._counts(cluster, asked)

    def prepare(self, cluster: Cluster, extremes: bool) -> None:
        """Make the counts for a pod asking one capability, for every capability value a node of ``cluster`` offers
        (:meth:`column` makes another set's at its first use); ``extremes``: their extreme nodes too."""
        for key, values in cluster.label_values.items():
            if CAPABILITY in key:
                for value in values:
                    column = self._counts(cluster, ((key, value),))
                    if extremes:
                        column.find_extremes()

    def _counts(self, cluster: Cluster, asked: tuple) -> StaticColumn:
        columns = self._columns.get(cluster)
        if columns is None:
            columns = self._columns[cluster] = {}
        self._recent = (weakref.ref(cluster), columns)
        column = columns.get(asked)
        if column is None:
            count = np.zeros(cluster.n, dtype=np.int64)
            for key, value in asked:
                count += cluster.label_equals(key, value)
            column = columns[asked] = StaticColumn(count)
        return column

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if ctx.scored is None:
            asked = [(key, value) for key, value in ctx.pod.labels.items() if CAPABILITY in key]
            if not asked:
                return zero_scores(ctx.size)
            count = ctx.zeros()
            for key, value in asked:
                count += ctx.cluster.label_equals(key, value)[ctx.nodes]
            return count
        column = self._last = self.column(ctx.cluster, ctx.pod)
        return zero_scores(ctx.size) if column is None else column.values

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        if not ctx.skippy:
            return kube_default_normalize(raw)
        if raw is zero_scores(ctx.size):  # the pod asks for no capability
            return raw
        if self._last is not None and raw is self._last.values and ctx.scored is not None:
            return self._last.skippy_scores(ctx.scored, inverse=False)
        lo, hi = ctx.bounds(raw)
        if lo == hi:
            return zero_scores(ctx.size)
        return skippy_min_max(raw, inverse=False, bounds=(lo, hi))
