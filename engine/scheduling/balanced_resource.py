"""Skippy's BalancedResource priority: the pod's shares of a node's remaining cpu and memory should be alike."""

from __future__ import annotations

import numpy as np

from engine.cluster.model import Cluster, Pod
from engine.scheduling.balanced import kube_balanced_allocation
from engine.scheduling.base import Priority, ScoringContext
from engine.scheduling.shape_columns import ShapeColumns


def skippy_balance(cpu_share: np.ndarray, memory_share: np.ndarray) -> np.ndarray:
    """Skippy's trunc((1 - |cf - mf|) * 10), 0 where either share reaches 1, as whole-valued floats (the float steps
    of ``_skippy_balance`` in :mod:`engine.scheduling.balanced`, in place, without its two casts); ``cpu_share`` is overwritten."""
    score = cpu_share - memory_share
    np.abs(score, out=score)
    np.subtract(1.0, score, out=score)
    score *= 10.0
    np.trunc(score, out=score)
    np.putmask(score, np.maximum(cpu_share, memory_share, out=cpu_share) >= 1, 0.0)  # the shares are ours: no new array
    return score


def _skippy_balanced(cluster: Cluster, shape: tuple[int, int], nodes: np.ndarray | slice) -> np.ndarray:
    """Skippy's score of a pod of ``shape`` (cpu, memory) at ``nodes``: its shares of the free cpu and memory, a zero
    free amount counted as 1 (:meth:`Cluster.free_divisors`; a positive request's share then reaches 1 and scores 0,
    as its infinite share did in Skippy), so nothing divides by zero."""
    cpu, memory = shape
    cpu_free, memory_free = cluster.free_divisors()
    return skippy_balance(cpu / cpu_free[nodes], memory / memory_free[nodes])


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

    @property
    def columns(self) -> ShapeColumns:
        """Skippy's scores kept per (cpu, memory) shape (the fused Skippy step seeds them)."""
        return self._columns

    def column(self, cluster: Cluster, pod: Pod) -> np.ndarray:
        """Skippy's scores of ``pod`` at every node (kept per shape on large clusters: read it, do not change it)."""
        return self._columns.column(cluster, (pod.cpu_millis, pod.memory))

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if not ctx.skippy:
            return kube_balanced_allocation(ctx)
        # nodes that fit have at least the request left, so a positive request never meets a zero denominator
        return self.column(ctx.cluster, ctx.pod)[ctx.nodes]
