"""Skippy's DataLocality priority: time to move the pod's data between its node and the storage nodes."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import RECEIVES_FROM, SENDS_TO
from engine.scheduling.base import Priority, ScoringContext, kube_default_normalize, skippy_min_max


class DataLocality(Priority):
    """Raw: receive + send time of the pod's data item (labels ``data.skippy.io/*-storage/path``).

    0 when the label or the item is missing, or when the node hosts the bucket. skippy mode: seconds
    truncated, over the *slowest* link to a bucket node (as skippy-core does), inverse min-max to 0-10.
    kube mode: seconds over the fastest link, DefaultNormalizeScore reversed (0-100).
    """

    name = "DataLocality"
    key = "data_locality"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        total = ctx.zeros() if ctx.skippy else np.zeros(len(ctx.nodes))
        for label, down in ((RECEIVES_FROM, True), (SENDS_TO, False)):
            path = ctx.pod.labels.get(label)
            item = ctx.cluster.storage.stat(path) if path else None
            if item is None:
                continue
            bucket, size = item
            # per node as computed over the scored nodes alone (elementwise), kept per item between pods
            total += ctx.cluster.bucket_seconds(bucket, size, down, slowest=ctx.skippy, truncate=ctx.skippy)[ctx.nodes]
        return total

    def normalize(self, ctx: ScoringContext, raw: np.ndarray) -> np.ndarray:
        return skippy_min_max(raw, inverse=True) if ctx.skippy else kube_default_normalize(raw, reverse=True)
