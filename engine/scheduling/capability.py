"""Skippy's Capability priority: count the node's capability labels whose value the pod asks for."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import CAPABILITY
from engine.scheduling.base import Priority, ScoringContext, kube_default_normalize, skippy_min_max


class Capability(Priority):
    """Raw: matching ``capability.skippy.io*`` labels; skippy: min-max to 0-10; kube: DefaultNormalizeScore."""

    name = "Capability"
    key = "capability"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        count = ctx.zeros()
        for key, value in ctx.pod.labels.items():
            if CAPABILITY in key:
                count += ctx.cluster.label_equals(key, value)[ctx.nodes]
        return count

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        return skippy_min_max(raw) if ctx.skippy else kube_default_normalize(raw)
