"""Skippy's LocalityType priority: edge nodes score the maximum, all others 0."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import LOCALITY
from engine.scheduling.base import Priority, ScoringContext


class LocalityType(Priority):
    """Prefer nodes labelled ``locality.skippy.io/type=edge`` (10 in skippy mode, 100 in kube mode)."""

    name = "LocalityType"
    key = "locality_type"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        return ctx.cluster.label_equals(LOCALITY, "edge")[ctx.nodes] * np.int64(ctx.max_score)
