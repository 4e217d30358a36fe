"""TaintToleration: a node's NoSchedule and NoExecute taints keep off every pod that does not tolerate them.

Both modes, as kube-scheduler's TaintToleration filter: a taint is tolerated by a toleration whose effect
(when set) and key (when set) match and whose operator is ``Exists`` or whose value is equal. The
PreferNoSchedule effect only scores in Kubernetes; it is not modelled (no score). Nodes without hard taints
(every synthesized node) always pass, and with none in the cluster the predicate passes every node, so
Skippy mode stays identical to edgerun-skippy-core.
"""

from __future__ import annotations

import weakref

import numpy as np

from engine.cluster.constraints import Taint, taint_groups, untolerated
from engine.cluster.model import Cluster, Pod
from engine.scheduling.base import Predicate


class TaintToleration(Predicate):
    """Pass mask: no hard taint of the node is left untolerated by the pod (None when no node has one)."""

    name = "TaintToleration"

    def __init__(self) -> None:
        self._cluster: weakref.ref | None = None
        self._groups: list[tuple[tuple[Taint, ...], np.ndarray]] = []

    def groups(self, cluster: Cluster) -> list[tuple[tuple[Taint, ...], np.ndarray]]:
        """The cluster's nodes grouped by their hard taints (taints are fixed once a cluster is built)."""
        if self._cluster is None or self._cluster() is not cluster:
            self._groups = taint_groups(cluster.taints) if any(cluster.taints) else []  # any(): no Python loop per node
            self._cluster = weakref.ref(cluster)
        return self._groups

    def mask(self, cluster: Cluster, pod: Pod) -> np.ndarray | None:
        groups = self.groups(cluster)
        if not groups:
            return None
        ok = np.ones(cluster.n, dtype=bool)
        for taints, nodes in groups:
            if untolerated(taints, pod.tolerations):
                ok[nodes] = False
        return ok
