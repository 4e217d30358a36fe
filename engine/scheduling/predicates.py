"""Filter predicates: each returns a pass mask over all nodes (None when every node passes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.cluster.model import GPU_MODEL, STORAGE, Cluster, Pod
from engine.scheduling.base import Predicate
from engine.scheduling.node_affinity import NodeAffinity
from engine.scheduling.shape_columns import ShapeColumns
from engine.scheduling.taint_toleration import TaintToleration


class NodeUnschedulable(Predicate):
    """Cordoned or failed nodes take no pods."""

    name = "NodeUnschedulable"

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        return None if cluster.schedulable.all() else cluster.schedulable.copy()


def _fits(cluster: Cluster, shape: tuple[int, int], nodes: np.ndarray | slice) -> np.ndarray:
    cpu, memory = shape
    return (cluster.memory_free[nodes] >= memory) & (cluster.cpu_free[nodes] >= cpu)


class PodFitsResources(Predicate):
    """The pod's summed cpu and memory requests fit what is left on the node, and its GPU request fits device by
    device: a share on one device with that much free, k whole GPUs on k fully free devices.

    The cpu/memory mask is kept per (cpu, memory) shape and updated at the nodes that changed since it was asked."""

    name = "PodFitsResources"

    def __init__(self) -> None:
        self._columns = ShapeColumns(_fits)

    @property
    def columns(self) -> ShapeColumns:
        """The cpu/memory masks kept per (cpu, memory) shape (the fused Skippy step seeds them)."""
        return self._columns

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        fits = self._columns.column(cluster, (pod.cpu_millis, pod.memory))
        gpus = cluster.gpu_fits(pod)
        return fits if gpus is None else fits & gpus


class PodCapacity(Predicate):
    """kube's "Too many pods": a node with a pod limit (``status.allocatable.pods``) takes no more pods than that.

    Only imported Kubernetes nodes have a limit; without any the predicate passes every node.
    """

    name = "PodCapacity"

    def __init__(self) -> None:
        self._kept: tuple[np.ndarray, np.ndarray | None] | None = None  # (pod_capacity array, nodes with a limit or None)

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        kept = self._kept
        if kept is None or kept[0] is not cluster.pod_capacity:  # the limits are set when the cluster is built
            limited = cluster.pod_capacity > 0
            kept = self._kept = (cluster.pod_capacity, limited if limited.any() else None)
        limited = kept[1]
        if limited is None:
            return None
        return ~limited | (cluster.pods < cluster.pod_capacity)


class GpuModel(Predicate):
    """A pod that lists acceptable GPU models only goes to nodes with one of them."""

    name = "GpuModel"

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        if pod.gpus <= 0 or not pod.gpu_models:
            return None
        return np.logical_or.reduce([cluster.label_equals(GPU_MODEL, m) for m in pod.gpu_models])


class NodeLabelPresence(Predicate):
    """Every key present (``present=True``) or none of them present (``present=False``); values are not checked."""

    name = "NodeLabelPresence"

    def __init__(self, keys: Sequence[str], present: bool = True, name: str | None = None):
        self.name = name or self.name
        self.keys = tuple(keys)
        self.present = present
        self._cache: dict[int, np.ndarray] = {}

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        if not self.keys:
            return None
        cached = self._cache.get(id(cluster))
        if cached is None:
            has = [cluster.has_label(k) for k in self.keys]
            cached = np.logical_and.reduce(has) if self.present else ~np.logical_or.reduce(has)
            self._cache = {id(cluster): cached}
        return cached


class PodNodeLabels(Predicate):
    """The pod's own label constraints: ``node_labels_present`` and ``node_labels_absent``."""

    name = "PodNodeLabels"

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        if not pod.node_labels_present and not pod.node_labels_absent:
            return None
        ok = np.ones(cluster.n, dtype=bool)
        for key in pod.node_labels_present:
            ok &= cluster.has_label(key)
        for key in pod.node_labels_absent:
            ok &= ~cluster.has_label(key)
        return ok


def default_predicates(avoid_storage_nodes: bool = True) -> list[Predicate]:
    """Skippy's defaults (fit, then no storage nodes) with kube's unschedulable, taint, node-affinity and pod-count
    checks (in kube-scheduler's filter order) and the GPU/label filters.

    The Kubernetes checks pass every node of a cluster without taints, pod limits or pods with selectors (every
    synthesized one), so Skippy mode keeps edgerun-skippy-core's placements there.
    """
    predicates: list[Predicate] = [NodeUnschedulable(), TaintToleration(), NodeAffinity(), PodFitsResources(), PodCapacity()]
    if avoid_storage_nodes:
        predicates.append(NodeLabelPresence([STORAGE], present=False, name="NoStorageNode"))
    return [*predicates, GpuModel(), PodNodeLabels()]
