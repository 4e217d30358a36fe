"""Skippy's pull seconds of a pod of several images, kept per image tuple between pods (the fused Skippy step's numpy
path: a pod of two images otherwise costs ~10 passes over the nodes for its pull bytes, 2-6x a pod of one image)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from engine.cluster.model import Cluster
from engine.scheduling.base import EVERY_NODE

# references to a kept row while it is patched when nothing outside holds it: the slot and getrefcount's argument
_UNSHARED = 2
_UNSHARED_SCORES = 3  # a kept score array's: the slot's tuple, the local name and getrefcount's argument


class ImageSetSeconds:
    """Whole seconds to pull images (a tuple of registry indices, in the pod's order: Skippy's arch fallback carries
    from one image to the next) at every node, patched at the nodes that pulled any of them since the last pod (a pull
    can change a node's value either way, so no order of nodes is kept: bounds are found per pod), with the last
    scores kept per bounds. Rows and scores handed out are never changed (a held row is copied before a patch)."""

    __slots__ = ("images", "row", "_compute", "_cached", "_columns", "_seen", "_version", "_scores", "_before", "_new")

    def __init__(self, images: tuple[int, ...], compute: Callable[[Cluster, np.ndarray | slice], np.ndarray]):
        self.images, self._compute = images, compute  # compute(cluster, nodes): the seconds at those nodes
        self.row: np.ndarray | None = None
        self._cached: np.ndarray | None = None  # the cluster's image_cached matrix the row was made from
        self._columns: tuple = ()  # the images' size columns it was made from (a registry change makes new ones)
        self._seen: tuple[int, ...] = ()  # pulls of each image written into the row
        self._version = 0
        self._scores: tuple | None = None  # (version, bounds, scores)
        self._before: int | None = None  # the row's version before the newest patch ...
        self._new: list[int] = []  # ... and the nodes it changed

    def current(self, cluster: Cluster, pull_at: Callable | None = None) -> np.ndarray:
        """The row as the image cache is now. ``pull_at(cluster, images, row, nodes)``: the seconds written at ``nodes``
        (a list) in one call (the fused step's compiled twin; False: not for these images), else ``compute`` at those
        nodes with numpy."""
        columns = tuple(cluster.image_size_column(i) for i in self.images)
        pulls = [cluster.image_pulls.get(i, ()) for i in self.images]
        seen = tuple(map(len, pulls))
        if (
            self.row is None
            or self._cached is not cluster.image_cached
            or any(a is not b for a, b in zip(columns, self._columns, strict=True))
        ):
            self.row = self._compute(cluster, EVERY_NODE)
            self._cached, self._columns, self._seen, self._before = cluster.image_cached, columns, seen, None
            self._version += 1
        elif seen != self._seen:
            nodes = [node for p, s in zip(pulls, self._seen, strict=True) for node in p[s:]]  # repeats: the same value
            if sys.getrefcount(self.row) > _UNSHARED:  # a decision holds the row: patch a copy
                self.row = self.row.copy()
            if pull_at is None or not pull_at(cluster, self.images, self.row, nodes):
                at = np.array(nodes)
                self.row[at] = self._compute(cluster, at)
            self._seen, self._before, self._new = seen, self._version, nodes
            self._version += 1
        return self.row

    def bounds(self, scored: np.ndarray, over: Callable | None = None) -> tuple[float, float]:
        """(min, max) of the row over the ``scored`` nodes: ``over(row, scored)`` (the fused step's compiled pass; None
        from it: a NaN, numpy's way below), else the whole row's when a node holding each passes, else over the scored
        nodes."""
        row = self.row
        if over is not None:
            bounds = over(row, scored)
            if bounds is not None:
                return bounds
        lo, hi = int(row.argmin()), int(row.argmax())
        if scored[lo] and scored[hi]:
            return row[lo], row[hi]
        values = row[scored]
        return values.min(), values.max()

    def scores(self, bounds: tuple, make, patch=None) -> np.ndarray:
        """``make(row, lo, hi)``'s scores, kept while the bounds stay: patched at the newest patch's nodes if only those
        changed (``patch(row, lo, hi, nodes, scores)`` in one call, else ``make`` at those nodes; a held copy first).
        With ``patch``, new scores are ``patch(row, lo, hi, None, out)``'s (every node, in one call)."""
        kept = self._scores
        if kept is not None and kept[1] == bounds:
            if kept[0] == self._version:
                return kept[2]
            if kept[0] == self._before:
                scores, new = kept[2], self._new
                if sys.getrefcount(scores) > _UNSHARED_SCORES:
                    scores = scores.copy()
                else:
                    scores.flags.writeable = True
                if patch is not None:
                    patch(self.row, *bounds, new, scores)
                else:
                    scores[new] = make(self.row[new], *bounds)
                scores.flags.writeable = False
                self._scores = (self._version, bounds, scores)
                return scores
        row = self.row
        scores = make(row, *bounds) if patch is None else patch(row, *bounds, None, np.empty(len(row)))
        scores.flags.writeable = False
        self._scores = (self._version, bounds, scores)
        return scores
