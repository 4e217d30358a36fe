"""Skippy's BalancedResource priority: the pod's shares of a node's remaining cpu and memory should be alike."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import Cluster
from engine.scheduling.balanced import _fraction, _skippy_balance, kube_balanced_allocation
from engine.scheduling.base import Priority, ScoringContext
from engine.scheduling.shape_columns import ShapeColumns


def _skippy_balanced(cluster: Cluster, shape: tuple[int, int], nodes: np.ndarray | slice) -> np.ndarray:
    """Skippy's score of a pod of ``shape`` (cpu, memory) at ``nodes``, as whole-valued floats."""
    cpu, memory = shape
    with np.errstate(divide="ignore", invalid="ignore"):  # a full node (no pod fits it) divides by zero
        cpu_share = _fraction(cpu, cluster.cpu_free[nodes], may_be_zero=cpu <= 0)
        score = _skippy_balance(cpu_share, _fraction(memory, cluster.memory_free[nodes], may_be_zero=memory <= 0))
    return score.astype(np.float64)


class BalancedResource(Priority):
    """Skippy: the pod's share of the node's *remaining* cpu and memory should be alike.

    kube mode has no such plugin; it scores like BalancedAllocation (capacity-based fractions, 0-100). Skippy's
    scores are kept per pod shape between decisions (:class:`ShapeColumns`): a node's changes only when it does.
    """

    name = "BalancedResource"
    key = "balanced_resource"
    every_node = True

    def __init__(self) -> None:
        self._columns = ShapeColumns(_skippy_balanced)

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if not ctx.skippy:
            return kube_balanced_allocation(ctx)
        # nodes that fit have at least the request left, so a positive request never meets a zero denominator
        return self._columns.column(ctx.cluster, (ctx.pod.cpu_millis, ctx.pod.memory))[ctx.nodes]
