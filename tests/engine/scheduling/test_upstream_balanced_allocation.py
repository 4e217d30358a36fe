"""Kube mode's NodeResourcesBalancedAllocation against kubernetes' own test table after PR #135573 (v1.36): the score is
the change in balance placing the pod causes, 75 when it stays, 50..100.

Ported from kubernetes ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go``,
``TestNodeResourcesBalancedAllocation``: every case with the default resources (cpu and memory), by its upstream name.
Left out: the two cases that configure ``nvidia.com/gpu`` as a third balanced resource (not in the default profile,
which kube mode models). "nothing scheduled, nothing requested" is PreScore's Skip upstream; here the plugin gives every
node 0, which adds nothing to any total, as a skipped plugin does.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.model import ARCH, Cluster, Container, ContainerRegistry, NodeSpec, Pod
from engine.scheduling.balanced import BalancedAllocation
from engine.scheduling.balanced_resource import BalancedResource
from engine.scheduling.base import ScoringContext


def _pod(name: str, *containers: tuple[int, int]) -> Pod:
    """A pod whose containers request (cpu millis, memory bytes) each."""
    return Pod(name, tuple(Container("app", cpu, memory) for cpu, memory in containers))


def _cluster(nodes: list[tuple[int, int]], existing: dict[int, Pod]) -> Cluster:
    specs = [NodeSpec(f"node{i + 1}", cpu, memory, {ARCH: "amd64"}) for i, (cpu, memory) in enumerate(nodes)]
    cluster = Cluster(specs, ContainerRegistry({"app": {"amd64": 1}}))
    for node, pod in existing.items():
        cluster.place(pod, node)
    return cluster


CPU_AND_MEMORY = _pod("cpu-and-memory", (1000, 2000), (2000, 3000))
CPU_ONLY = _pod("cpu-only", (1000, 0), (2000, 0))

#: upstream test name -> (nodes (cpu millis, memory), pods already on node index, the pod, expected scores)
CASES = {
    "nothing scheduled, resources requested, differently sized nodes": ([(4000, 10000), (6000, 10000)], {}, CPU_AND_MEMORY, [68, 75]),
    "resources requested, pods scheduled with resources": (
        [(10000, 20000), (10000, 20000)],
        {0: CPU_ONLY, 1: CPU_AND_MEMORY},
        CPU_AND_MEMORY,
        [73, 74],
    ),
    "resources requested, pods scheduled with resources, differently sized nodes": (
        [(10000, 20000), (10000, 50000)],
        {0: CPU_ONLY, 1: CPU_AND_MEMORY},
        CPU_AND_MEMORY,
        [73, 70],
    ),
    "resources requested, pods scheduled with resources, nodes to reach min/max score": (
        [(3000, 5000), (3000, 5000)],
        {0: CPU_ONLY},
        _pod("memory-only", (0, 2000), (0, 3000)),
        [100, 50],
    ),
    "requested resources at node capacity": ([(6000, 10000), (6000, 10000)], {0: CPU_ONLY, 1: CPU_AND_MEMORY}, CPU_ONLY, [62, 62]),
    "nothing scheduled, nothing requested, skip in PreScore": ([(4000, 10000), (4000, 10000)], {}, _pod("best-effort", (0, 0)), [0, 0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_balanced_allocation_scores_the_change_in_balance_as_upstream(name):
    nodes, existing, pod, expected = CASES[name]
    cluster = _cluster(nodes, existing)
    ctx = ScoringContext(cluster, pod, np.arange(cluster.n), "kube")
    assert BalancedAllocation().raw(ctx).tolist() == expected
    # Skippy's BalancedResource has no kube counterpart: kube mode scores it as BalancedAllocation
    assert BalancedResource().raw(ctx).tolist() == expected


def test_no_change_in_balance_scores_three_quarters_and_skippy_mode_keeps_its_formula():
    cluster = _cluster([(4000, 4000)], {})
    even = _pod("even", (1000, 1000))  # 0% -> 25% of both: balance 100 before and after
    assert BalancedAllocation().raw(ScoringContext(cluster, even, np.arange(1), "kube")).tolist() == [75]
    # skippy mode (k8s 1.13's formula on 0-10) is untouched: 1 - |0.25 - 0.25| -> 10
    assert BalancedAllocation().raw(ScoringContext(cluster, even, np.arange(1), "skippy")).tolist() == [10]
