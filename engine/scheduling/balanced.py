"""Kubernetes' BalancedAllocation, and the balance arithmetic Skippy's BalancedResource (balanced_resource.py) shares."""

from __future__ import annotations

import numpy as np

from engine.scheduling.base import Priority, ScoringContext, trunc


def _fraction(requested: np.ndarray | int, denominator: np.ndarray, may_be_zero: bool = True) -> np.ndarray:
    """requested / denominator with a zero denominator counted as 1 (Skippy and k8s 1.13)."""
    return requested / (np.where(denominator == 0, 1, denominator) if may_be_zero else denominator)


def _skippy_balance(cpu_fraction: np.ndarray, memory_fraction: np.ndarray) -> np.ndarray:
    """trunc((1 - |cf - mf|) * 10), and 0 where either fraction reaches 1."""
    score = trunc((1 - np.abs(cpu_fraction - memory_fraction)) * 10.0)
    score[np.maximum(cpu_fraction, memory_fraction) >= 1] = 0
    return score


def _kube_balance_score(used: np.ndarray, cpu_cap: np.ndarray, used_memory: np.ndarray, mem_cap: np.ndarray, max_score: int) -> np.ndarray:
    """One balance score, current kube: fractions of allocatable capped at 1, std = |f1 - f2| / 2 (0 when a resource
    has no allocatable, as one fraction has no spread), trunc((1 - std) * max_score): max_score/2 .. max_score."""
    cpu = np.minimum(used / np.where(cpu_cap == 0, 1, cpu_cap), 1.0)
    mem = np.minimum(used_memory / np.where(mem_cap == 0, 1, mem_cap), 1.0)
    std = np.where((cpu_cap == 0) | (mem_cap == 0), 0.0, np.abs((cpu - mem) / 2))
    return trunc((1 - std) * max_score)


def kube_balanced_allocation(ctx: ScoringContext) -> np.ndarray:
    """Current kube (kubernetes PR #135573, v1.36): the change in balance the pod causes. With the balance scores
    before (b) and after (a) placing the pod, each max/2..max, the score is max/2 + (max/2 + a - b) // 2 in integers:
    75 (of 100) when the balance stays, 50 from balanced to fully imbalanced, 100 the other way. A pod requesting no cpu
    and no memory is not scored (PreScore's Skip): 0 on every node."""
    c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
    if pod.cpu_millis == 0 and pod.memory == 0:
        return ctx.zeros().astype(np.int64)
    cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
    cpu_used, mem_used = cpu_cap - c.cpu_free[nodes], mem_cap - c.memory_free[nodes]
    half = ctx.max_score // 2
    after = _kube_balance_score(cpu_used + pod.cpu_millis, cpu_cap, mem_used + pod.memory, mem_cap, ctx.max_score)
    before = _kube_balance_score(cpu_used, cpu_cap, mem_used, mem_cap, ctx.max_score)
    return half + (half + after - before) // 2  # both in [half, max]: the sum is >= 0, so // is Go's truncation


class BalancedAllocation(Priority):
    """Kubernetes NodeResourcesBalancedAllocation.

    skippy mode: the k8s 1.13 formula Skippy started from, (used + pod) / capacity on 0-10;
    kube mode: the current plugin (the change in balance the pod causes, 50-100; :func:`kube_balanced_allocation`).
    """

    name = "BalancedAllocation"
    key = "balanced_allocation"
    reads = ("cpu_free", "memory_free")

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if not ctx.skippy:
            return kube_balanced_allocation(ctx)
        c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
        cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
        cpu = _fraction(cpu_cap - c.cpu_free[nodes] + pod.cpu_millis, cpu_cap)
        mem = _fraction(mem_cap - c.memory_free[nodes] + pod.memory, mem_cap)
        return _skippy_balance(cpu, mem)
