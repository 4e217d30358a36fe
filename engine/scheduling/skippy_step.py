"""Skippy's default configuration as one step per pod: the filter and the five scores of edgerun-skippy-core's
defaults, computed from the kept state the predicates and priorities hold, without a call per predicate or priority.

The scheduler takes it (:func:`fuses`, :meth:`Scheduler.skippy_step`) only when the configuration is exactly the default one:
Skippy mode, the weighted priorities, every feasible node scored, the default predicates with none added, the five
Skippy priorities at weight 1 and every other one at 0, no ``explain``. A pod or cluster the Kubernetes predicates
would act on (a node selector or affinity, label constraints, a GPU model list; taints or pod limits in the cluster)
takes the general path, as does any other configuration. Decisions, scores and breakdowns are the general path's,
array for array (``tests/engine/scheduling/test_skippy_step.py``).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from engine.cluster.model import STORAGE, Cluster, Pod
from engine.scheduling.balanced_resource import BalancedResource
from engine.scheduling.base import SKIPPY_MAX, Predicate, Priority, zero_scores
from engine.scheduling.capability import Capability
from engine.scheduling.data_locality import DataLocality
from engine.scheduling.image_locality import LatencyAwareImageLocality
from engine.scheduling.locality_type import LocalityType
from engine.scheduling.predicates import NodeLabelPresence, PodFitsResources
from engine.scheduling.scan_order import EveryNodeScores, all_pass, first_best_from, last_in_scan
from engine.scheduling.taint_toleration import TaintToleration

#: The priorities the step computes, in the weighted sum's order, each at weight 1.
FUSED = (BalancedResource, LatencyAwareImageLocality, LocalityType, DataLocality, Capability)


def fuses(weighted: Sequence[tuple[Priority, float]]) -> bool:
    """Whether ``weighted`` (the scheduler's priorities and weights in sum order) is exactly the five Skippy priorities
    at weight 1, in order: the configuration :class:`SkippyStep` computes."""
    return len(weighted) == len(FUSED) and all(type(p) is k and w == 1.0 for (p, w), k in zip(weighted, FUSED, strict=True))


class SkippyStep:
    """The default predicates' and Skippy priorities' work for one pod in one call (:meth:`decide`).

    It holds the scheduler's own predicate and priority objects (their kept columns are shared with the general
    path) and, per cluster, whether the Kubernetes predicates can reject any node (:meth:`_plain`).
    """

    def __init__(self, predicates: Sequence[Predicate], priorities: Sequence[Priority]):
        self.fit = next(p for p in predicates if isinstance(p, PodFitsResources))
        self.avoid_storage = any(isinstance(p, NodeLabelPresence) for p in predicates)
        self.taints = next(p for p in predicates if isinstance(p, TaintToleration))
        self.balance, self.images, self.locality, self.data, self.capability = priorities
        self._cluster: weakref.ref | None = None
        self._no_storage: np.ndarray | None = None  # the NoStorageNode mask of that cluster; None: a predicate may act

    def _plain(self, cluster: Cluster) -> np.ndarray | None:
        """The no-storage mask when no taint and no pod limit can reject a node of ``cluster`` (both are fixed once
        it is built), else None. At the first pod on a cluster, the pull seconds of every image are made (first uses
        of an image would otherwise cost a pod a few passes over the nodes: the p95)."""
        if self._cluster is None or self._cluster() is not cluster:
            plain = not self.taints.groups(cluster) and not (cluster.pod_capacity > 0).any()
            # the NoStorageNode predicate's mask (a new array, as its own is per cluster too)
            self._no_storage = ~cluster.has_label(STORAGE) if plain else None
            self._cluster = weakref.ref(cluster)
            for image in cluster.registry.names:
                self.images.kept_image(cluster, cluster.image_index(image))
        return self._no_storage

    def decide(self, cluster: Cluster, pod: Pod, start: int) -> tuple | None:
        """(node, its total, feasible, scores, masks, next start) for ``pod`` with the walk starting at ``start``; node
        None when no node passes. None: the pod or the cluster needs the general path."""
        no_storage = self._plain(cluster)
        if no_storage is None or pod.node_selector or pod.node_affinity or pod.node_labels_present or pod.node_labels_absent:
            return None
        if pod.gpu_models and pod.gpus > 0:
            return None
        n = cluster.n
        masks = []
        schedulable = cluster.schedulable
        if not np.logical_and.reduce(schedulable):  # the ufunc itself: ndarray.all goes through a Python wrapper
            masks.append(("NodeUnschedulable", schedulable.copy()))
        masks.append(("PodFitsResources", self.fit.mask(cluster, pod)))
        if self.avoid_storage:
            masks.append(("NoStorageNode", no_storage))
        passes = all_pass(masks, n)
        feasible = int(np.count_nonzero(passes))
        if not feasible:
            return None, 0.0, 0, None, masks, start
        following = (last_in_scan(passes, start) + 1) % n

        balance = self.balance.column(cluster, pod)  # map-only: raw and score are the same array
        image_raw, image_score = self.images.skippy_scores(cluster, pod, passes)
        edge = self.locality.edge_scores(cluster, SKIPPY_MAX)
        nothing = zero_scores(n)
        locality = nothing if edge is None else edge[:]  # the general path hands out a view
        data = self.data.column(cluster, pod)
        data_raw, data_score = (nothing, nothing) if data is None else (data.values, data.skippy_scores(passes, inverse=True))
        capability = self.capability.column(cluster, pod)
        capability_raw, capability_score = (
            (nothing, nothing) if capability is None else (capability.values, capability.skippy_scores(passes, inverse=False))
        )
        # the weighted sum of the general path at weight 1: the first scores as they are, then a new float array, then in place
        total = balance
        owned = False
        for score in (image_score, locality, data_score, capability_score):
            if score is nothing:
                continue
            if owned:
                total += score
            else:
                total = score + total
                owned = True
        results = [
            (BalancedResource.name, 1.0, balance, balance),
            (LatencyAwareImageLocality.name, 1.0, image_raw, image_score),
            (LocalityType.name, 1.0, locality, locality),
            (DataLocality.name, 1.0, data_raw, data_score),
            (Capability.name, 1.0, capability_raw, capability_score),
        ]
        node = first_best_from(total, passes, start)
        return node, float(total[node]), feasible, EveryNodeScores(passes, start, total, results), masks, following
