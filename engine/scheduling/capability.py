"""Skippy's Capability priority: count the node's capability labels whose value the pod asks for."""

from __future__ import annotations

import weakref

import numpy as np

from engine.cluster.model import CAPABILITY, Cluster
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

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        asked = tuple((key, value) for key, value in ctx.pod.labels.items() if CAPABILITY in key)
        if not asked:
            return zero_scores(ctx.size)
        if ctx.scored is None:
            count = ctx.zeros()
            for key, value in asked:
                count += ctx.cluster.label_equals(key, value)[ctx.nodes]
            return count
        columns = self._columns.setdefault(ctx.cluster, {})
        column = columns.get(asked)
        if column is None:
            count = ctx.zeros()
            for key, value in asked:
                count += ctx.cluster.label_equals(key, value)
            column = columns[asked] = StaticColumn(count)
        self._last = column
        return column.values

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        if not ctx.skippy:
            return kube_default_normalize(raw)
        if raw is zero_scores(ctx.size):  # the pod asks for no capability
            return raw
        column = self._last if self._last is not None and raw is self._last.values and ctx.scored is not None else None
        lo, hi = column.bounds(ctx) if column is not None else ctx.bounds(raw)
        if lo == hi:
            return zero_scores(ctx.size)
        return column.min_max((lo, hi), inverse=False) if column is not None else skippy_min_max(raw, bounds=(lo, hi))
