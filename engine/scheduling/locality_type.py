"""Skippy's LocalityType priority: edge nodes score the maximum, all others 0."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import LOCALITY, Cluster
from engine.scheduling.base import Priority, ScoringContext, zero_scores


class LocalityType(Priority):
    """Prefer nodes labelled ``locality.skippy.io/type=edge`` (10 in skippy mode, 100 in kube mode)."""

    name = "LocalityType"
    key = "locality_type"
    every_node = True

    def __init__(self) -> None:
        self._kept: tuple[np.ndarray, int, np.ndarray | None] | None = None  # (edge mask, scale, score per node; None: no edge node)

    def edge_scores(self, cluster: Cluster, top: int) -> np.ndarray | None:
        """``top`` at edge nodes, 0 elsewhere, over every node (None: no edge node); read it, do not change it."""
        edge = cluster.label_equals(LOCALITY, "edge")
        kept = self._kept
        if kept is None or kept[0] is not edge or kept[1] != top:  # the mask is cached per cluster: score it once
            kept = self._kept = (edge, top, edge * np.int64(top) if edge.any() else None)
        return kept[2]

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        scores = self.edge_scores(ctx.cluster, ctx.max_score)
        return zero_scores(ctx.size) if scores is None else scores[ctx.nodes]
