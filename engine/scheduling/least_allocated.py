"""Kubernetes NodeResourcesFit with the LeastAllocated strategy (k8s 1.13 LeastRequested in skippy mode)."""

from __future__ import annotations

import numpy as np

from engine.scheduling.base import Priority, ScoringContext


def _least_requested(requested: np.ndarray, capacity: np.ndarray, max_score: int) -> np.ndarray:
    """(capacity - requested) * max / capacity in integers; 0 when nothing is left or there is no capacity."""
    safe = np.where(capacity == 0, 1, capacity)
    score = ((capacity - requested) * max_score) // safe
    score[(capacity == 0) | (requested > capacity)] = 0
    return score


class LeastAllocated(Priority):
    """Prefer the emptiest nodes: mean over cpu and memory of the share left free after placing the pod."""

    name = "LeastAllocated"
    key = "least_allocated"
    reads = ("cpu_free", "memory_free")

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
        cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
        cpu = _least_requested(cpu_cap - c.cpu_free[nodes] + pod.cpu_millis, cpu_cap, ctx.max_score)
        mem = _least_requested(mem_cap - c.memory_free[nodes] + pod.memory, mem_cap, ctx.max_score)
        return (cpu + mem) // 2
