"""GpuClustering (the FGD paper's baseline): keep GPU pods of one kind together, on nodes that are already used.

As the artifact's ``gpu_clustering_score.go``: a pod's kind is "sharing" or "k whole GPUs"; a node scores
``floor(25 * (8 GPUs - gpu_left) / 8 GPUs)`` plus 75 if it runs only pods of this kind, 50 if it runs several
kinds including this one, 25 if it runs no GPU pod, 0 otherwise. CPU-only pods score 0 everywhere.
"""

from __future__ import annotations

import numpy as np

from engine.scheduling.gpu_policy import MAX_SPEC_GPU, GpuContext, GpuPolicy


class GpuClusteringPolicy(GpuPolicy):
    """Prefer nodes running only this kind of GPU pod, then mixed nodes with it, then unused nodes; fuller first."""

    name = "GpuClustering"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        if ctx.devices == 0:
            zero = np.zeros(len(ctx.nodes))
            return zero, zero
        kinds = ctx.cluster.gpu_pods_by_kind[ctx.nodes]
        same = kinds[:, 0 if ctx.sharing else ctx.devices] > 0
        running = (kinds > 0).sum(axis=1)
        fill = (25 * (MAX_SPEC_GPU - ctx.gpu_left())) // MAX_SPEC_GPU
        tier = np.where(same, np.where(running == 1, 75, 50), np.where(running == 0, 25, 0))
        score = (fill + tier).astype(np.float64)
        return score, score
