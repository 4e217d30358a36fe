"""Skippy's default configuration as one step per pod: the filter and the five scores of edgerun-skippy-core's
defaults, computed from the kept state the predicates and priorities hold, without a call per predicate or priority.

The scheduler takes it (:func:`fuses`, :meth:`Scheduler.skippy_step`) only when the configuration is exactly the default one:
Skippy mode, the weighted priorities, every feasible node scored, the default predicates with none added, the five
Skippy priorities at weight 1 and every other one at 0, no ``explain``. A pod or cluster the Kubernetes predicates
would act on (a node selector or affinity, label constraints, a GPU model list; taints or pod limits in the cluster)
takes the general path, as does any other configuration. Decisions, scores and breakdowns are the general path's,
array for array (``tests/engine/scheduling/test_skippy_step.py``).

The step has an optional compiled twin, :mod:`engine.scheduling._skippy_step` (Cython, built by ``make setup``): two
passes over the node columns with the same IEEE operations in the same order, so decisions are bit-identical. It is used
when built; ``SCALELAB_SKIPPY_STEP=python`` forces the Python step below, ``=compiled`` requires the compiled one. On
clusters of :data:`SMALL` nodes or more, where columns are kept between pods, :mod:`engine.scheduling._kept_step` filters,
sums and picks over them in two passes (and the twin keeps them up to date at the changed nodes).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from engine.cluster.model import ARCH, STORAGE, Cluster, Pod
from engine.core.compiled import chosen_module
from engine.scheduling.balanced_resource import BalancedResource
from engine.scheduling.base import SKIPPY_MAX, Predicate, Priority, skippy_min_max, zero_scores
from engine.scheduling.capability import Capability
from engine.scheduling.data_locality import DataLocality, data_seconds
from engine.scheduling.image_locality import LatencyAwareImageLocality, latency_scores, pod_seconds
from engine.scheduling.locality_type import LocalityType
from engine.scheduling.predicates import NodeLabelPresence, PodFitsResources
from engine.scheduling.scan_order import EveryNodeScores, all_pass, first_best_from, last_in_scan
from engine.scheduling.shape_columns import SMALL
from engine.scheduling.taint_toleration import TaintToleration

#: The priorities the step computes, in the weighted sum's order, each at weight 1.
FUSED = (BalancedResource, LatencyAwareImageLocality, LocalityType, DataLocality, Capability)
STEP_ENV = "SCALELAB_SKIPPY_STEP"  # "python": the step below; "compiled": the compiled twin or an error; unset/"auto": either
STEP_MODULE = "engine.scheduling._skippy_step"
KEPT_MODULE = "engine.scheduling._kept_step"  # its passes over kept columns (large clusters), taken with it
MAX_IMAGES = 8  # the compiled pull seconds take pods of up to this many images (_skippy_step.pyx)


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
        self._edge: np.ndarray | None = None  # LocalityType's scores of that cluster (None: no edge node)
        self.kernel = chosen_module(STEP_MODULE, STEP_ENV)  # the compiled twin (None: this module's numpy step)
        # the compiled passes over kept columns (None: the numpy step's calls)
        self.kept = None if self.kernel is None else chosen_module(KEPT_MODULE, STEP_ENV)
        if self.kernel is not None:  # the kept fit and BalancedResource columns patched where nodes changed, in C
            self.fit.columns.patch = self._patch_fits
            self.balance.columns.patch = self._patch_balance
        if self.kept is not None:
            self.images.patch_scores = self.kept.latency_at
            self.images.pull_at = self._pull_at
            self.images.bounds_over = self.kept.row_bounds
            self.data.pair = self.kept.static_extremes

    def _patch_fits(self, cluster: Cluster, shape: tuple[int, int], fits: np.ndarray, nodes: list[int]) -> None:
        self.kernel.shape_at(cluster.cpu_free, cluster.memory_free, *shape, nodes, fits, None)

    def _patch_balance(self, cluster: Cluster, shape: tuple[int, int], balance: np.ndarray, nodes: list[int]) -> None:
        self.kernel.shape_at(cluster.cpu_free, cluster.memory_free, *shape, nodes, None, balance)

    def _pull_at(self, cluster: Cluster, images: tuple[int, ...], row: np.ndarray, nodes: list[int]) -> bool:
        """An image tuple's kept pull seconds written at ``nodes`` in one compiled call (False: too many images)."""
        if len(images) > MAX_IMAGES:
            return False
        entries = [(cluster.image_cached[i], *cluster.image_size_table(i)) for i in images]
        self.kernel.pull_seconds(cluster.label_codes[ARCH], entries, cluster.registry_bandwidth, row, nodes)
        return True

    def prepare(self, cluster: Cluster) -> None:
        """Make, before the first pod, the columns a first use would otherwise make inside some pod's decision (a few
        passes over the nodes each: the p95): every image's pull seconds (and every pair's, for the numpy step), every
        stored data item's seconds each way, the counts of each capability a node offers, the edge scores. The
        scheduler calls it when it is built; later images, items and capability sets are made at their first use."""
        plain = not self.taints.groups(cluster) and not (cluster.pod_capacity > 0).any()
        # the NoStorageNode predicate's mask (a new array, as its own is per cluster too)
        self._no_storage = ~cluster.has_label(STORAGE) if plain else None
        self._cluster = weakref.ref(cluster)
        for image in cluster.registry.names:
            self.images.kept_image(cluster, cluster.image_index(image))
        numpy = self.kernel is None or cluster.n >= SMALL  # the numpy step decides (most) pods
        if numpy:  # what it keeps and the compiled pass does not read
            self.images.prepare_pairs(cluster)  # the rows of image pairs
            cluster.free_divisors()  # BalancedResource's divisors, then patched where nodes change
        self.data.prepare(cluster, extremes=numpy)
        self.capability.prepare(cluster, extremes=numpy)
        self._edge = self.locality.edge_scores(cluster, SKIPPY_MAX)

    def _plain(self, cluster: Cluster) -> np.ndarray | None:
        """The no-storage mask when no taint and no pod limit can reject a node of ``cluster`` (both are fixed once
        it is built), else None (:meth:`prepare` at the first pod on a cluster it was not prepared for)."""
        if self._cluster is None or self._cluster() is not cluster:
            self.prepare(cluster)
        return self._no_storage

    def decide(self, cluster: Cluster, pod: Pod, start: int) -> tuple | None:
        """(node, its total, feasible, scores, masks, next start) for ``pod`` with the walk starting at ``start``; node
        None when no node passes. None: the pod or the cluster needs the general path."""
        kept = self._cluster
        no_storage = self._no_storage if kept is not None and kept() is cluster else self._plain(cluster)
        if no_storage is None or pod.node_selector or pod.node_affinity or pod.node_labels_present or pod.node_labels_absent:
            return None
        if pod.gpu_models and pod.gpus > 0:
            return None
        if self.kernel is not None:
            # below SMALL nodes every column is computed per pod: one compiled pass does it all. Above, the kept columns'
            # numpy sums beat a scalar pass, but a new shape (no kept column yet) is one compiled pass that seeds them.
            if cluster.n < SMALL:
                decided = self._compiled(cluster, pod, start, no_storage, False)
                if decided is not None:
                    return decided
            elif not pod.gpus and not self.balance.columns.holds(cluster, shape := (pod.cpu_millis, pod.memory)):
                # a new shape's fit and BalancedResource columns in one compiled pass, then kept as any shape's
                fits, balance = np.empty(cluster.n, bool), np.empty(cluster.n)
                self.kernel.shape_column(cluster.cpu_free, cluster.memory_free, *shape, fits, balance)
                self.fit.columns.seed(cluster, shape, fits)
                self.balance.columns.seed(cluster, shape, balance)
        n = cluster.n
        kernel = self.kept
        masks = []
        schedulable = cluster.schedulable
        fits = self.fit.mask(cluster, pod)
        if kernel is not None:  # the filter in one compiled pass (the masks, the count, the next start)
            passes = np.empty(n, bool)
            feasible, following, cordoned = kernel.feasible_nodes(
                schedulable, fits, no_storage if self.avoid_storage else None, passes, start
            )
            if cordoned:
                masks.append(("NodeUnschedulable", schedulable.copy()))
            masks.append(("PodFitsResources", fits))
            if self.avoid_storage:
                masks.append(("NoStorageNode", no_storage))
        else:
            if not np.logical_and.reduce(schedulable):  # the ufunc itself: ndarray.all goes through a Python wrapper
                masks.append(("NodeUnschedulable", schedulable.copy()))
            masks.append(("PodFitsResources", fits))
            if self.avoid_storage:
                masks.append(("NoStorageNode", no_storage))
            passes = all_pass(masks, n)
            feasible = int(np.count_nonzero(passes))
            following = (last_in_scan(passes, start) + 1) % n if feasible else start
        if not feasible:
            return None, 0.0, 0, None, masks, start

        balance = self.balance.column(cluster, pod)  # map-only: raw and score are the same array
        image_raw, image_score = self.images.skippy_scores(cluster, pod, passes)
        edge = self.locality.edge_scores(cluster, SKIPPY_MAX)
        nothing = zero_scores(n)
        locality = nothing if edge is None else edge[:]  # the general path hands out a view
        data = self.data.column(cluster, pod)
        fill = None if kernel is None else kernel.min_max_scores
        data_raw, data_score = (nothing, nothing) if data is None else (data.values, data.skippy_scores(passes, True, fill))
        capability = self.capability.column(cluster, pod)
        capability_raw, capability_score = (
            (nothing, nothing) if capability is None else (capability.values, capability.skippy_scores(passes, False, fill))
        )
        results = [
            (BalancedResource.name, 1.0, balance, balance),
            (LatencyAwareImageLocality.name, 1.0, image_raw, image_score),
            (LocalityType.name, 1.0, locality, locality),
            (DataLocality.name, 1.0, data_raw, data_score),
            (Capability.name, 1.0, capability_raw, capability_score),
        ]
        if kernel is not None:  # the sum and the first best in one compiled pass; the totals made when a breakdown asks
            scores = [None if score is nothing else score for score in (image_score, edge, data_score, capability_score)]
            picked = kernel.first_best(passes, start, balance, *scores)
            if picked is not None:
                node, best = picked
                return node, best, feasible, SummedScores(passes, start, results), masks, following
        total = weighted_sum(balance, (image_score, locality, data_score, capability_score), nothing)
        node = first_best_from(total, passes, start)
        return node, float(total[node]), feasible, EveryNodeScores(passes, start, total, results), masks, following

    def _compiled(self, cluster: Cluster, pod: Pod, start: int, no_storage: np.ndarray, seed: bool) -> tuple | None:
        """:meth:`decide` by the compiled twin (None: a raw value is not finite, the numpy step decides). The scores
        that follow from kept raw values and the bounds are made when a breakdown asks (:class:`CompiledScores`).
        ``seed``: keep the pod's fit mask and BalancedResource column (computed at every node) for its shape."""
        n = cluster.n
        pod_images = pod.images
        kept = self.images.kept_image(cluster, cluster.image_index(pod_images[0])) if len(pod_images) == 1 else None
        if kept is not None:
            image_raw = kept.row
        elif len(pod_images) > MAX_IMAGES:
            image_raw = pod_seconds(cluster, pod_images, slice(None), skippy=True)
        else:  # several images: their pull seconds per pod (one image's are kept), in one compiled pass
            images = []
            for image in pod_images:
                idx = cluster.image_index(image)
                images.append((cluster.image_cached[idx], *cluster.image_size_table(idx)))
            image_raw = self.kernel.pull_seconds(cluster.label_codes[ARCH], images, cluster.registry_bandwidth, np.empty(n))
        edge = self._edge  # edge_scores of this cluster (its labels do not change), read at prepare
        # the data items' seconds as kept per item: a pair is summed in the pass (no column made for a new pair)
        data = data_seconds(cluster, pod, skippy=True) or None
        capability = self.capability.column(cluster, pod)
        fits, passes, balance = np.empty(n, bool), np.empty(n, bool), np.empty(n)
        decided = self.kernel.decide(
            cluster.cpu_free,
            cluster.memory_free,
            cluster.schedulable,
            cluster.gpu_fits(pod) if pod.gpu_devices[0] else None,
            no_storage if self.avoid_storage else None,
            pod.cpu_millis,
            pod.memory,
            image_raw,
            edge,
            None if data is None else data[0],
            None if capability is None else capability.values,
            start,
            fits,
            passes,
            balance,
            seed,
            None if data is None or len(data) == 1 else data[1],
        )
        if decided is None:
            return None
        if seed and decided[0]:
            shape = (pod.cpu_millis, pod.memory)
            self.fit.columns.seed(cluster, shape, fits)  # a pod without GPUs: its fit is the cpu/memory fit
            self.balance.columns.seed(cluster, shape, balance)
        feasible, node, best, following, cordoned, image_bounds, data_bounds, capability_bounds = decided
        masks = [("NodeUnschedulable", cluster.schedulable.copy())] if cordoned else []
        masks.append(("PodFitsResources", fits))
        if self.avoid_storage:
            masks.append(("NoStorageNode", no_storage))
        if not feasible:
            return None, 0.0, 0, None, masks, start
        scores = CompiledScores(
            passes, start, balance, (image_raw, image_bounds), edge, (data, data_bounds), (capability, capability_bounds)
        )
        return node, best, feasible, scores, masks, following


def weighted_sum(balance: np.ndarray, scores: Sequence[np.ndarray], nothing: np.ndarray) -> np.ndarray:
    """The general path's weighted sum at weight 1: the first scores as they are, then a new float array, then in place
    (``nothing``, every node 0, is skipped)."""
    total = balance
    owned = False
    for score in scores:
        if score is nothing:
            continue
        if owned:
            total += score
        else:
            total = score + total
            owned = True
    return total


class SummedScores(EveryNodeScores):
    """:class:`EveryNodeScores` whose totals are summed (:func:`weighted_sum`) when a breakdown first asks: the scores it
    holds are never changed while held, so the sum is the one the decision's compiled pass made node by node."""

    def __init__(self, passes, start, priorities):
        self._passes, self._start, self._priorities, self._deferred = passes, start, priorities, None

    @cached_property
    def _total(self) -> np.ndarray:
        (_, _, balance, _), *rest = self._priorities
        return weighted_sum(balance, [score for _, _, _, score in rest], zero_scores(len(balance)))


class CompiledScores(SummedScores):
    """:class:`EveryNodeScores` of a decision of the compiled step: the pull-seconds, data and capability scores and the
    totals are made from the raw values it holds (kept rows are never changed while held) and the bounds over the
    passing nodes when a breakdown first asks, with the numpy step's functions."""

    def __init__(self, passes, start, balance, image, edge, data, capability):
        self._passes, self._start, self._deferred = passes, start, None
        self._parts = (balance, image, edge, data, capability)

    @cached_property
    def _priorities(self) -> list[tuple[str, float, np.ndarray, np.ndarray]]:
        balance, (image_raw, (lo, hi)), edge, (data, data_bounds), (capability, capability_bounds) = self._parts
        n = len(balance)
        nothing = zero_scores(n)
        image_score = nothing if hi == 0 else latency_scores(image_raw, lo, hi)
        locality = nothing if edge is None else edge[:]
        if data is None:
            data_raw, data_score = nothing, nothing
        else:  # the items' seconds as DataLocality sums them (kept item columns are never changed)
            data_raw = data[0] if len(data) == 1 else sum(data)
            data_score = nothing if data_bounds[0] == data_bounds[1] else skippy_min_max(data_raw, True, data_bounds)
        capability_raw, capability_score = (
            (nothing, nothing) if capability is None else (capability.values, _min_max(capability, capability_bounds, False, nothing))
        )
        return [
            (BalancedResource.name, 1.0, balance, balance),
            (LatencyAwareImageLocality.name, 1.0, image_raw, image_score),
            (LocalityType.name, 1.0, locality, locality),
            (DataLocality.name, 1.0, data_raw, data_score),
            (Capability.name, 1.0, capability_raw, capability_score),
        ]


def _min_max(column, bounds: tuple, inverse: bool, nothing: np.ndarray) -> np.ndarray:
    """A :class:`StaticColumn`'s Skippy min-max scores with the ``bounds`` over the passing nodes."""
    lo, hi = bounds
    return nothing if lo == hi else column.min_max((lo, hi), inverse)
