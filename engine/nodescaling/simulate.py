"""Scheduling simulations the node autoscaler runs before it acts: would these pods fit there?

Two questions, both answered by packing pods (largest first) onto copies of nodes' free resources, never
touching the cluster: how many new nodes of a group the pending pods need (cluster-autoscaler's binpacking
estimate against a template node), and whether a node's pods fit on the other nodes (scale-down and
consolidation). A pod may go to a node only where the scheduler's constraint predicates pass (taints, affinity,
node selectors, GPU model, labels); resources are checked on the copies, device by device for GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.cluster.model import GPU_MILLI, Cluster, Pod

#: Predicates that read the cluster's changing state: the simulations check these on their own copies.
STATEFUL = ("NodeUnschedulable", "PodFitsResources", "PodCapacity")


def pod_key(pod: Pod) -> tuple:
    """What decides where a pod may go, without its name (pods of one spec share a constraint mask)."""
    return (
        pod.containers,
        tuple(sorted(pod.labels.items())),
        pod.gpus,
        pod.gpu_milli,
        pod.gpu_models,
        pod.node_labels_present,
        pod.node_labels_absent,
        pod.tolerations,
        tuple(sorted(pod.node_selector.items())),
        pod.node_affinity,
    )


class Constraints:
    """Per pod spec, the nodes its constraint predicates allow (state-free, so cached for the run)."""

    def __init__(self, cluster: Cluster, predicates: Sequence):
        self.cluster = cluster
        self.predicates = [p for p in predicates if p.name not in STATEFUL]
        self._cache: dict[tuple, np.ndarray] = {}

    def allowed(self, pod: Pod) -> np.ndarray:
        key = pod_key(pod)
        mask = self._cache.get(key)
        if mask is None:
            mask = np.ones(self.cluster.n, dtype=bool)
            for predicate in self.predicates:
                m = predicate.mask(self.cluster, pod)
                if m is not None:
                    mask &= m
            self._cache[key] = mask
        return mask


def size_order(pods: Sequence[Pod], cpu: float, memory: float) -> list[int]:
    """Pod indices, largest request first (cpu and memory shares of a reference node summed; stable)."""
    return sorted(range(len(pods)), key=lambda i: -(pods[i].cpu_millis / cpu + pods[i].memory / memory + pods[i].gpus))


@dataclass
class Bins:
    """Free resources of some nodes (copies), with the cluster positions they stand for."""

    nodes: np.ndarray  # cluster position of each bin (a fresh template bin repeats its template's position)
    cpu: np.ndarray
    memory: np.ndarray
    gpu: np.ndarray  # bins x devices, milli-GPU free

    @classmethod
    def free(cls, cluster: Cluster, nodes: np.ndarray) -> Bins:
        """The nodes as they are now."""
        return cls(nodes.copy(), cluster.cpu_free[nodes].copy(), cluster.memory_free[nodes].copy(), cluster.gpu_milli_free[nodes].copy())

    @classmethod
    def empty(cls, cluster: Cluster, node: int, count: int = 0) -> Bins:
        """``count`` empty nodes shaped like ``node`` (a template)."""
        devices = np.where(np.arange(cluster.gpu_devices_max) < cluster.gpu_count[node], GPU_MILLI, 0)
        return cls(
            np.full(count, node, dtype=np.int64),
            np.full(count, cluster.cpu_capacity[node], dtype=np.int64),
            np.full(count, cluster.memory_capacity[node], dtype=np.int64),
            np.tile(devices, (count, 1)).astype(np.int64),
        )

    def __len__(self) -> int:
        return len(self.nodes)

    def append(self, other: Bins) -> None:
        self.nodes = np.concatenate([self.nodes, other.nodes])
        self.cpu = np.concatenate([self.cpu, other.cpu])
        self.memory = np.concatenate([self.memory, other.memory])
        self.gpu = np.concatenate([self.gpu, other.gpu])

    def block(self, node: int) -> None:
        """The bins of cluster position ``node`` take nothing more."""
        hit = self.nodes == node
        self.cpu[hit] = -1
        self.memory[hit] = -1

    def fits(self, pod: Pod) -> np.ndarray:
        ok = (self.cpu >= pod.cpu_millis) & (self.memory >= pod.memory)
        count, milli = pod.gpu_devices
        if count:
            ok &= (self.gpu >= milli).sum(axis=1) >= count
        return ok

    def take(self, pod: Pod, i: int) -> None:
        self.cpu[i] -= pod.cpu_millis
        self.memory[i] -= pod.memory
        count, milli = pod.gpu_devices
        if count:
            free = self.gpu[i]
            fitting = np.flatnonzero(free >= milli)
            if milli < GPU_MILLI:  # a share goes to the fullest device it fits (the default devices' rule)
                fitting = fitting[np.argsort(free[fitting], kind="stable")]
            free[fitting[:count]] -= milli


def fit_all(pods: Sequence[Pod], bins: Bins, constraints: Constraints, cpu: float, memory: float) -> bool:
    """Whether every pod fits on ``bins`` (first fit, largest pod first); ``bins`` keep what was taken."""
    for i in size_order(pods, cpu, memory):
        pod = pods[i]
        ok = bins.fits(pod) & constraints.allowed(pod)[bins.nodes]
        hit = np.flatnonzero(ok)
        if not len(hit):
            return False
        bins.take(pod, int(hit[0]))
    return True


@dataclass(frozen=True)
class Estimate:
    """What ``count`` new nodes of a group would do for the pending pods."""

    count: int
    helped: tuple[int, ...]  # indices of the pending pods they would take
    cpu_waste: float  # share of the new nodes' cpu left unrequested
    memory_waste: float


def estimate_nodes(pods: Sequence[Pod], template: int, cluster: Cluster, constraints: Constraints, limit: int) -> Estimate:
    """New nodes like ``template`` the pods need (at most ``limit``): binpacking, largest pod first, first fit."""
    cpu, memory = float(cluster.cpu_capacity[template]), float(cluster.memory_capacity[template])
    bins = Bins.empty(cluster, template)
    fresh = Bins.empty(cluster, template, 1)
    helped = []
    for i in size_order(pods, cpu, memory):
        pod = pods[i]
        if not constraints.allowed(pod)[template] or not fresh.fits(pod)[0]:
            continue  # this group's nodes can never take it
        hit = np.flatnonzero(bins.fits(pod))
        if len(hit):
            bins.take(pod, int(hit[0]))
        elif len(bins) < limit:
            bins.append(Bins.empty(cluster, template, 1))
            bins.take(pod, len(bins) - 1)
        else:
            continue
        helped.append(i)
    n = len(bins)
    if n == 0:
        return Estimate(0, (), 0.0, 0.0)
    return Estimate(n, tuple(sorted(helped)), float(bins.cpu.sum() / (cpu * n)), float(bins.memory.sum() / (memory * n)))
