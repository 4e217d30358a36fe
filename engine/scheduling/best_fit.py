"""BestFit (the FGD paper's baseline): the node left with the least (cpu, GPU) after the pod, equally weighted.

As the artifact's ``best_fit_score.go``: ``int(100 * (1 - [0.5 (cpu_left - cpu) / 128 CPUs + 0.5 (gpu_left - gpu)
/ 8 GPUs]))``. The artifact then min-max normalises the scores to 0-100, which keeps the set of best nodes,
so it is left out here.
"""

from __future__ import annotations

import numpy as np

from engine.scheduling.gpu_policy import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, GpuContext, GpuPolicy


class BestFitPolicy(GpuPolicy):
    """Score ``int(100 * (1 - leftover))``, leftover the mean of the cpu and GPU left after the pod, normalised."""

    name = "BestFit"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        cpu = (ctx.cluster.cpu_free[ctx.nodes] - ctx.cpu) / MAX_SPEC_CPU * 0.5
        gpu = (ctx.gpu_left() - ctx.gpu_milli) / MAX_SPEC_GPU * 0.5
        leftover = (0.0 + cpu) + gpu  # the artifact's summation order
        return leftover, np.trunc((1.0 - leftover) * MAX_SCORE)
