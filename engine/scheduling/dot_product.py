"""DotProd (the FGD paper's Tetris-like baseline): the dot product of the node's free and the pod's requested (cpu, GPU).

As the artifact's ``dot_product_score.go`` with ``-dimext merge -norm max``: node free ``[cpu_left, gpu_left]``
and pod request ``[cpu, devices x share]``, both divided by ``[128 CPUs, 8 GPUs]``; score
``int(100 * (1 - dot / 2))``. The *smallest* dot product wins (the artifact scores a larger product lower, on
purpose by its comments), the reverse of Tetris's alignment; reproduced as the artifact has it.
"""

from __future__ import annotations

import numpy as np

from engine.scheduling.gpu_policy import MAX_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU, GpuContext, GpuPolicy


class DotProductPolicy(GpuPolicy):
    """Score ``int(100 * (1 - (free . request) / 2))`` on normalised (cpu, GPU) vectors; a share takes the best-fit device."""

    name = "DotProd"

    def score(self, ctx: GpuContext) -> tuple[np.ndarray, np.ndarray]:
        cpu = (ctx.cluster.cpu_free[ctx.nodes] / MAX_SPEC_CPU) * (ctx.cpu / MAX_SPEC_CPU)
        gpu = (ctx.gpu_left() / MAX_SPEC_GPU) * (ctx.gpu_milli / MAX_SPEC_GPU)
        dot = (0.0 + cpu) + gpu  # the artifact's summation order
        return dot, np.trunc(MAX_SCORE * (1.0 - dot / 2.0))
