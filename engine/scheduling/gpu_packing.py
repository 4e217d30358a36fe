"""GpuPacking (the FGD paper's baseline): fill partly used devices first, then free devices of used nodes, then empty nodes.

As the artifact's ``gpu_packing_score.go``: a node whose GPUs are all free scores ``max(33 - gpus, gpus)``
(its fully free devices); otherwise a sharing pod whose best-fitting device is partly used scores
``max(100 - floor(floor(free * 100 / 1000) / 10), 50)`` (the tighter the better), and a pod that needs fully free
devices on a used node ``max(50 - devices, 33)``. CPU-only pods score 0 everywhere.
"""

from __future__ import annotations

import numpy as np

from engine.cluster.model import GPU_MILLI
from engine.scheduling.gpu_policy import MAX_SCORE, GpuContext, GpuPolicy


class GpuPackingPolicy(GpuPolicy):
    """Tiers: share a used device (50-100), take free devices of a used node (33-49), open an unused node (<= 33)."""

    name = "GpuPacking"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        if ctx.devices == 0:
            zero = np.zeros(len(ctx.nodes))
            return zero, zero
        free = ctx.cluster.gpu_milli_free[ctx.nodes]
        fully_free = (free == GPU_MILLI).sum(axis=1)
        unused = fully_free == ctx.cluster.gpu_count[ctx.nodes]
        opening = np.maximum(MAX_SCORE // 3 - fully_free, fully_free)
        if ctx.sharing:
            tightest = np.where(free >= ctx.milli, free, np.iinfo(np.int64).max).min(axis=1)
            on_used_device = np.maximum(MAX_SCORE - ((tightest * 100) // GPU_MILLI) // 10, MAX_SCORE // 2)
            used_node = np.where(tightest == GPU_MILLI, max(MAX_SCORE // 2 - 1, MAX_SCORE // 3), on_used_device)
        else:
            used_node = np.full(len(ctx.nodes), max(MAX_SCORE // 2 - ctx.devices, MAX_SCORE // 3))
        score = np.where(unused, opening, used_node).astype(np.float64)
        return score, score
