"""Skippy's DataLocality priority: time to move the pod's data between its node and the storage nodes."""

from __future__ import annotations

import weakref

import numpy as np

from engine.cluster.model import RECEIVES_FROM, SENDS_TO, Cluster, Pod
from engine.scheduling.base import Priority, ScoringContext, kube_default_normalize, skippy_min_max, zero_scores
from engine.scheduling.static_column import WALK, StaticColumn


def data_seconds(cluster: Cluster, pod: Pod, skippy: bool) -> list[np.ndarray]:
    """Per data item the pod receives or sends, its seconds at every node (Skippy: whole seconds over the slowest link
    to a bucket node; kube: over the fastest), kept per item by the cluster."""
    found = []
    labels = pod.labels
    if not labels:
        return found
    path = labels.get(RECEIVES_FROM)
    if path and (seconds := cluster.item_seconds(path, True, skippy)) is not None:
        found.append(seconds)
    path = labels.get(SENDS_TO)
    if path and (seconds := cluster.item_seconds(path, False, skippy)) is not None:
        found.append(seconds)
    return found


class DataLocality(Priority):
    """Raw: receive + send time of the pod's data item (labels ``data.skippy.io/*-storage/path``).

    0 when the label or the item is missing, or when the node hosts the bucket. skippy mode: seconds
    truncated, over the *slowest* link to a bucket node (as skippy-core does), inverse min-max to 0-10.
    kube mode: seconds over the fastest link, DefaultNormalizeScore reversed (0-100). When every node is scored,
    the seconds of each pair of items are a :class:`StaticColumn` kept per cluster.
    """

    name = "DataLocality"
    key = "data_locality"
    every_node = True

    def __init__(self) -> None:
        self._columns: weakref.WeakKeyDictionary[Cluster, dict] = weakref.WeakKeyDictionary()
        self._last: StaticColumn | None = None  # the column the last raw values came from
        # pair(first, walk, second, out): a pair's sum and its extreme nodes in one compiled call (the fused Skippy
        # step's compiled twin sets it; None: numpy, the extremes found when first asked)
        self.pair = None

    def prepare(self, cluster: Cluster, extremes: bool) -> None:
        """Make Skippy's seconds of every data item stored in ``cluster``, each way, and their columns for a pod that
        moves one item (:meth:`column` makes a pair's sum at its first use); ``extremes``: their extreme nodes too."""
        for (bucket, _), size in cluster.storage.items.items():
            for down in (True, False):
                column = self._kept(cluster, [cluster.bucket_seconds(bucket, size, down, slowest=True, truncate=True)])
                if extremes:
                    column.find_extremes()

    def column(self, cluster: Cluster, pod: Pod) -> StaticColumn | None:
        """Skippy's seconds at every node for ``pod``'s data items, kept per pair of items (None: no data to move)."""
        seconds = data_seconds(cluster, pod, skippy=True)
        if not seconds:
            return None
        return self._kept(cluster, seconds)

    def _kept(self, cluster: Cluster, seconds: list[np.ndarray]) -> StaticColumn:
        columns = self._columns.get(cluster)
        if columns is None:
            columns = self._columns[cluster] = {}
        key = tuple(map(id, seconds))
        kept = columns.get(key)
        if kept is None or any(a is not b for a, b in zip(kept[0], seconds, strict=True)):  # ids alone may be reused
            if len(columns) >= 64:
                columns.clear()
            kept = columns[key] = (seconds, self._column(seconds))
        return kept[1]

    def _column(self, seconds: list[np.ndarray]) -> StaticColumn:
        if len(seconds) == 1:
            return StaticColumn(seconds[0])
        first, second = seconds
        if self.pair is None or first.dtype != np.float64 or second.dtype != np.float64:
            return StaticColumn(sum(seconds))
        values = np.empty(len(first))
        return StaticColumn(values, self.pair(first, WALK, second, values))  # Python's sum of the two, the same steps

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if ctx.scored is not None and ctx.skippy:
            column = self._last = self.column(ctx.cluster, ctx.pod)
            return zero_scores(ctx.size) if column is None else column.values
        seconds = data_seconds(ctx.cluster, ctx.pod, ctx.skippy)
        if not seconds:
            return zero_scores(ctx.size) if ctx.skippy else np.zeros(ctx.size)
        return seconds[0][ctx.nodes] if len(seconds) == 1 else sum(s[ctx.nodes] for s in seconds)

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        if not ctx.skippy:
            return kube_default_normalize(raw, reverse=True)
        if raw is zero_scores(ctx.size):  # no data to move
            return raw
        if self._last is not None and raw is self._last.values and ctx.scored is not None:
            return self._last.skippy_scores(ctx.scored, inverse=True)
        lo, hi = ctx.bounds(raw)
        if lo == hi:
            return zero_scores(ctx.size)
        return skippy_min_max(raw, inverse=True, bounds=(lo, hi))
