"""Random (the FGD paper's baseline): a uniformly random feasible node, and a random fitting device for a share.

The artifact's ``random_score.go`` picks the node in PreScore and scores it 100, every other node 0; its
device selector for sharing pods is ``random`` (``allocateGpuIdBasedOnRandomFit``).
"""

from __future__ import annotations

import numpy as np

from engine.scheduling.gpu_policy import MAX_SCORE, GpuContext, GpuPolicy


class RandomPolicy(GpuPolicy):
    """A uniformly random feasible node (score 100, the others 0); a uniformly random fitting device for a share."""

    name = "Random"
    share_device = "random"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        score = np.zeros(len(ctx.nodes))
        score[int(ctx.rng.integers(len(ctx.nodes)))] = MAX_SCORE
        return score, score
