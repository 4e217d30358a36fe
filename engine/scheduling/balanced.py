"""Balanced cpu/memory priorities: Skippy's BalancedResource and Kubernetes' BalancedAllocation."""

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


def kube_balanced_allocation(ctx: ScoringContext) -> np.ndarray:
    """Current kube: fractions of capacity used incl. the pod, capped at 1; score = trunc((1 - |f1 - f2| / 2) * 100)."""
    c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
    cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
    cpu = np.minimum((cpu_cap - c.cpu_free[nodes] + pod.cpu_millis) / np.where(cpu_cap == 0, 1, cpu_cap), 1.0)
    mem = np.minimum((mem_cap - c.memory_free[nodes] + pod.memory) / np.where(mem_cap == 0, 1, mem_cap), 1.0)
    std = np.where((cpu_cap == 0) | (mem_cap == 0), 0.0, np.abs((cpu - mem) / 2))  # one resource only: no spread
    return trunc((1 - std) * ctx.max_score)


class BalancedResource(Priority):
    """Skippy: the pod's share of the node's *remaining* cpu and memory should be alike.

    kube mode has no such plugin; it scores like BalancedAllocation (capacity-based fractions, 0-100).
    """

    name = "BalancedResource"
    key = "balanced_resource"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if not ctx.skippy:
            return kube_balanced_allocation(ctx)
        c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
        # scored nodes have at least the request left, so a positive request never meets a zero denominator
        cpu = _fraction(pod.cpu_millis, c.cpu_free[nodes], may_be_zero=pod.cpu_millis <= 0)
        return _skippy_balance(cpu, _fraction(pod.memory, c.memory_free[nodes], may_be_zero=pod.memory <= 0))


class BalancedAllocation(Priority):
    """Kubernetes NodeResourcesBalancedAllocation.

    skippy mode: the k8s 1.13 formula Skippy started from, (used + pod) / capacity on 0-10;
    kube mode: the current plugin (fractions capped at 1, std = |f1 - f2| / 2, 0-100).
    """

    name = "BalancedAllocation"
    key = "balanced_allocation"

    def raw(self, ctx: ScoringContext) -> np.ndarray:
        if not ctx.skippy:
            return kube_balanced_allocation(ctx)
        c, nodes, pod = ctx.cluster, ctx.nodes, ctx.pod
        cpu_cap, mem_cap = c.cpu_capacity[nodes], c.memory_capacity[nodes]
        cpu = _fraction(cpu_cap - c.cpu_free[nodes] + pod.cpu_millis, cpu_cap)
        mem = _fraction(mem_cap - c.memory_free[nodes] + pod.memory, mem_cap)
        return _skippy_balance(cpu, mem)
