"""The scheduling loop: filter (with percentage_of_nodes_to_score and a round-robin start), weighted scoring, pick, bind.

Two modes, set by ``SchedulerParams.mode``. ``skippy`` reproduces edgerun-skippy-core 0.1.1 placement for
placement (tests/engine/test_skippy_parity.py); ``kube`` follows current kube-scheduler. What differs:

=========================  ==============================================  ==============================================
aspect                     skippy                                          kube
=========================  ==============================================  ==============================================
scale                      0-10, Python ``int()`` truncations              0-100, Go integer arithmetic
BalancedResource           pod request / *remaining* capacity,             same as BalancedAllocation (no such plugin)
                           trunc((1 - |cf - mf|) * 10)
BalancedAllocation         k8s 1.13: (used + pod) / capacity, >= 1 -> 0    current: the change in balance (50-100, 75 none)
LeastAllocated             k8s 1.13 LeastRequested, 0-10                   NodeResourcesFit LeastAllocated, 0-100
ImageLocality              sum clamped to [23 MiB, 1000 MiB]               upper clamp 1000 MiB x containers
LatencyAwareImageLocality  trunc(s); 10 (max - t + min) / max (the         seconds; DefaultNormalizeScore reversed
                           slowest keeps 10 min/max, not 0)
DataLocality               trunc(s) over the *slowest* bucket replica;     seconds over the fastest replica;
                           inverse min-max                                 DefaultNormalizeScore reversed
Capability                 min-max                                         DefaultNormalizeScore
ties                       first maximum in scan order                     uniform among maxima (seeded rng), else first
next scan start            after the last feasible node found (drifts      after the nodes visited
                           back past infeasible nodes at 100%)
sampling cut-off           all nodes below 5 nodes; float percentage       all nodes below 100; integer percentage
=========================  ==============================================  ==============================================

Both modes share the predicates (unschedulable, NoSchedule/NoExecute taints against the pod's tolerations,
nodeSelector and required node affinity, cpu/memory/GPU fit device by device, the pod limit, no storage nodes, GPU
model, the pod's label presence/absence) and the weighted sum, added priority by priority in :data:`PRIORITIES` order.
The Kubernetes predicates pass every node of a synthesized cluster (no taints, no selectors, no pod limits).
With ``SchedulerParams.gpu_policy`` set, one policy of the FGD paper's family (:data:`GPU_POLICIES`,
:mod:`engine.scheduling.gpu_policy`) scores the feasible nodes instead of the weighted priorities, breaks ties
by ``tie_break`` and picks the GPU devices; the predicates stay the same.
Not modelled in kube mode: zone interleaving of the node list, parallel filtering, pod (anti-)affinity and
topology spread, the TaintToleration and NodeAffinity scores (PreferNoSchedule, preferred affinity).

Scoring all feasible nodes for a pod is a few numpy operations per priority; binding updates the columns
of one node. In Skippy mode, when every feasible node is scored, the priorities see every node in cluster order
(:data:`~engine.scheduling.base.EVERY_NODE`, no gathers) and the scan order is built only for a breakdown
(:mod:`.scan_order`). Every decision can hand out its breakdown as a DataFrame.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.cluster.fragmentation import FragmentationTracker, TargetWorkload, target_workload
from engine.cluster.model import Cluster, Pod
from engine.core.params import tunable_names
from engine.scheduling.base import EVERY_NODE, ClusterAt, Predicate, Priority, ScoringContext, zero_scores
from engine.scheduling.fgd import FgdPolicy
from engine.scheduling.gpu_policy import GpuContext, GpuPolicy, pick_best
from engine.scheduling.kube_profiles import profile_scoring
from engine.scheduling.params import SchedulerParams, weight_name
from engine.scheduling.predicates import default_predicates
from engine.scheduling.pretouch import pretouch
from engine.scheduling.priorities import GPU_POLICIES, PREDICATE_TABLE, PRIORITIES, PRIORITY_TABLE, all_priorities
from engine.scheduling.scan_order import EveryNodeScores, PriorityResult, ScanScores, all_pass, first_best_from, last_in_scan, scan
from engine.scheduling.scoring import add_weighted, first_best
from engine.scheduling.shape_columns import SMALL
from engine.scheduling.skippy_step import SkippyStep, fuses

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GPU_POLICIES", "PRIORITIES", "PlacementDecision", "PriorityResult", "Scheduler", "SchedulerSettings", "scan"]


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """The scheduler's params as read once per change (:meth:`Scheduler.settings`)."""

    mode: str
    percentage_of_nodes_to_score: int
    avoid_storage_nodes: bool
    weights: tuple[float, ...]  # one per priority scored with (:attr:`Scheduler.scoring`)
    gpu_policy: str
    tie_break: str
    exact_fgd: bool
    schedule_fixed_cost: float
    schedule_cost_per_node: float
    extra_predicates: tuple[str, ...] = ()  # plugin predicates in force, after the built-in ones


_BUILTIN = frozenset(PRIORITIES)  # the built-in priority objects (a plugin's or a caller's own are not)
SNAPSHOT_BYTES = 1 << 18  # columns copied for the deferred priorities of an explained decision, at most (~10 us)


class _Weighted:
    """The priorities scored with and their weights (:meth:`Scheduler.weighted`), and how a decision may score them:
    ``later``, the zero-weight priorities an explained decision defers (position -> priority: :attr:`Priority.reads`
    set), ``reads`` the columns they read, ``every_node`` whether all the others take :data:`EVERY_NODE`."""

    __slots__ = ("settings", "explain", "pairs", "later", "reads", "every_node")

    def __init__(self, settings: SchedulerSettings, explain: bool, pairs: tuple[tuple[Priority, float], ...]):
        self.settings, self.explain, self.pairs = settings, explain, pairs
        self.later = {i: p for i, (p, weight) in enumerate(pairs) if explain and weight == 0 and p.reads is not None}
        self.reads = tuple(dict.fromkeys(name for p in self.later.values() for name in p.reads or ()))
        self.every_node = all(p.every_node for i, (p, _) in enumerate(pairs) if i not in self.later)


def feasible_nodes_to_find(n: int, percentage: int, mode: str) -> int:
    """How many feasible nodes the filter looks for (Skippy's and kube's numFeasibleNodesToFind)."""
    cutoff = 5 if mode == "skippy" else 100
    if n < cutoff or percentage >= 100:
        return n
    if mode == "skippy":
        p: float = percentage if percentage > 0 else max(50 - n / 125, 5)
        return max(int(n * p / 100), 100)
    p_int = percentage if percentage > 0 else max(50 - n // 125, 5)
    return max(n * p_int // 100, 100)


@dataclass
class PlacementDecision:
    """The outcome of scheduling one pod, with what is needed to explain it."""

    pod: Pod
    node: int | None
    node_name: str | None
    feasible: int
    score: float
    needed_images: list[str] | None
    scores: ScanScores | EveryNodeScores = field(repr=False)
    predicate_masks: list[tuple[str, np.ndarray]]
    node_names: Sequence[str] = field(repr=False)
    start_index: int = 0
    devices: tuple[int, ...] = ()  # the GPU devices of the chosen node the pod takes

    @property
    def nodes(self) -> np.ndarray:
        """The scored nodes, in scan order."""
        return self.scores.nodes

    @property
    def total(self) -> np.ndarray:
        """Weighted total of each scored node (as :attr:`nodes`)."""
        return self.scores.total

    @property
    def priorities(self) -> list[PriorityResult]:
        """Each priority's raw values and scores over the scored nodes (as :attr:`nodes`)."""
        return self.scores.priorities

    def reasons(self) -> tuple[np.ndarray, np.ndarray]:
        """Per node (in cluster order): whether it passed every predicate, and why it was not chosen from.

        The reason is the first predicate that rejected the node, "not scored" for feasible nodes beyond
        percentage_of_nodes_to_score, and "" for scored nodes.
        """
        n = len(self.node_names)
        passes = np.ones(n, dtype=bool)
        reason = np.full(n, "", dtype=object)
        for name, mask in reversed(self.predicate_masks):  # reversed: the first failing predicate wins
            reason[~mask] = name
            passes &= mask
        scored = np.zeros(n, dtype=bool)
        scored[self.nodes] = True
        reason[passes & ~scored] = "not scored"
        return passes, reason

    def breakdown_columns(self) -> dict[str, np.ndarray]:
        """The breakdown as columns (one row per node x priority), for the recorder's ``breakdowns`` table.

        ``reason`` is as :meth:`reasons` gives it. Scores of unscored nodes are NaN.
        """
        n = len(self.node_names)
        passes, reason = self.reasons()
        nodes = self.nodes
        total = np.full(n, np.nan)
        total[nodes] = self.total
        scan_position = np.full(n, -1)
        scan_position[nodes] = np.arange(len(nodes))
        winner = np.zeros(n, dtype=bool)
        if self.node is not None:
            winner[self.node] = True
        priorities = self.priorities or [PriorityResult("", 0.0, np.zeros(0), np.zeros(0))]
        k = len(priorities)
        raw, score = np.full((k, n), np.nan), np.full((k, n), np.nan)
        for i, p in enumerate(priorities):
            raw[i, nodes], score[i, nodes] = p.raw, p.score
        weight = np.repeat(np.array([p.weight for p in priorities], dtype=float), n)
        score = score.ravel()
        return {  # k copies of a node column one after the other: concatenate, not np.tile (its Python costs ~5 us a call)
            "node": np.concatenate((np.asarray(self.node_names, dtype=object),) * k),
            "node_index": np.concatenate((np.arange(n),) * k),
            "scan_position": np.concatenate((scan_position,) * k),
            "priority": np.repeat(np.array([p.name for p in priorities], dtype=object), n),
            "raw": raw.ravel(),
            "score": score,
            "weight": weight,
            "weighted": score * weight,
            "total": np.concatenate((total,) * k),
            "feasible": np.concatenate((passes,) * k),
            "reason": np.concatenate((reason,) * k),
            "winner": np.concatenate((winner,) * k),
        }

    def breakdown(self) -> pd.DataFrame:
        """Long table, one row per node x priority: raw, score, weight, weighted, total, feasible, reason, winner."""
        import pandas as pd

        return pd.DataFrame(self.breakdown_columns())


class Scheduler:
    """Places pods on a :class:`Cluster`; weights and mode are read from ``params`` at every decision.

    ``explain=True`` also computes zero-weight priorities so that breakdowns show every priority (it does
    not change placements). ``rng`` breaks kube-mode ties at random; without it the first maximum wins. The GPU
    policies draw from two generators spawned from ``rng`` (a fixed node order for ties, their own draws),
    which leaves ``rng``'s own draws as they were.
    """

    def __init__(
        self,
        cluster: Cluster,
        params: SchedulerParams | None = None,
        rng: np.random.Generator | None = None,
        predicates: Sequence[Predicate] | None = None,
        priorities: Sequence[Priority] | None = None,
        explain: bool = False,
    ):
        self.cluster = cluster
        self.params = params if params is not None else SchedulerParams()
        self.rng = rng
        self.priorities = tuple(priorities) if priorities is not None else all_priorities()  # the built-ins and plugins
        # explain computes zero-weight priorities too, but a plugin's only once weighted (installing one moves nothing)
        self._silent = frozenset() if priorities is not None else frozenset(PRIORITY_TABLE) - set(PRIORITY_TABLE.builtins)
        self.scoring: tuple[Priority, ...] = self.priorities  # the priorities scored with (kube mode: its version's profile)
        self.explain = explain
        self.start_index = 0
        self._predicates = list(predicates) if predicates is not None else None
        self._default_predicates = {flag: default_predicates(flag) for flag in (True, False)}
        self._extra_predicates: dict[str, Predicate] = {}  # plugin predicates, one instance each
        self._settings: SchedulerSettings | None = None  # snapshot of params, refreshed when any of them changes
        self._weighted: _Weighted | None = None  # weighted(), read once per params snapshot
        self._step: tuple = (None, False, None)  # (settings, explain, the fused Skippy step or None)
        self._steps: dict[bool, SkippyStep] = {}  # per avoid_storage_nodes: the step over those default predicates
        order_rng, self.policy_rng = (rng or np.random.default_rng(0)).spawn(2)
        self.node_rank = order_rng.permutation(cluster.n)  # GPU policies' ties: the lowest rank wins (tie_break node_order)
        self._gpu_policies: dict[str, GpuPolicy] = {}
        self.target: TargetWorkload | None = None
        self._trackers: dict[tuple, FragmentationTracker] = {}
        me = weakref.ref(self)  # the watcher must not keep a discarded scheduler (and its cluster) alive

        def params_changed(*events: object) -> None:
            scheduler = me()
            if scheduler is not None:
                scheduler._settings = None

        self.params.param.watch(params_changed, tunable_names(self.params))
        step = self.skippy_step()
        if step is not None:  # its columns made now, not inside the first pods' decisions (set-up, not per-pod cost)
            step.prepare(cluster)
        # the heap the kept columns will fill, touched now (large clusters keep columns between pods)
        self._touched = pretouch(cluster.n) if cluster.n >= SMALL else None

    def settings(self) -> SchedulerSettings:
        """The params as one :class:`SchedulerSettings`, read once per change."""
        if self._settings is None:
            p = self.params
            weights = [getattr(p, weight_name(priority.key)) for priority in self.priorities]
            if p.mode == "kube":
                self.scoring, weights = profile_scoring(p.kube_version, self.priorities, weights)
            else:
                self.scoring = self.priorities
            self._settings = SchedulerSettings(
                p.mode,
                p.percentage_of_nodes_to_score,
                bool(p.avoid_storage_nodes),
                tuple(weights),
                p.gpu_policy,
                p.tie_break,
                p.fgd_score == "exact",
                p.schedule_fixed_cost,
                p.schedule_cost_per_node,
                tuple(p.extra_predicates),
            )
        return self._settings

    # -- the FGD paper's policies ------------------------------------------------------------------------
    def set_target(self, target: TargetWorkload | None) -> None:
        """The target workload fragmentation is measured against (FGD's score, :attr:`fragmentation`); None: each pod's own shape."""
        self.target = target
        self._trackers.clear()
        for policy in self._gpu_policies.values():
            policy.reset()

    @property
    def fragmentation(self) -> FragmentationTracker | None:
        """The fragmentation of every node for the target workload (None without one)."""
        if self.target is None:
            return None
        return self._tracker(self.target, ())

    def _tracker(self, target: TargetWorkload, key: tuple) -> FragmentationTracker:
        tracker = self._trackers.get(key)
        if tracker is None:
            tracker = self._trackers[key] = FragmentationTracker(self.cluster, target)
        return tracker

    def _pod_tracker(self, pod: Pod) -> FragmentationTracker:
        if self.target is not None:
            return self._tracker(self.target, ())
        devices, milli = pod.gpu_devices
        shape = (pod.cpu_millis, milli, devices, "|".join(pod.gpu_models))
        return self._tracker(target_workload(*([v] for v in shape)), shape)

    def gpu_policy(self, name: str) -> GpuPolicy:
        """The scheduler's instance of a GPU policy (policies may keep caches between decisions)."""
        policy = self._gpu_policies.get(name)
        if policy is None:
            policy = self._gpu_policies[name] = GPU_POLICIES[name]()
        return policy

    def predicates(self) -> list[Predicate]:
        """The predicates in force (the defaults follow ``params.avoid_storage_nodes``)."""
        if self._predicates is not None:
            return self._predicates
        settings = self.settings()
        defaults = self._default_predicates[settings.avoid_storage_nodes]
        if not settings.extra_predicates:
            return defaults
        extra = self._extra_predicates
        for name in settings.extra_predicates:
            if name not in extra:
                extra[name] = PREDICATE_TABLE[name]()
        return [*defaults, *(extra[name] for name in settings.extra_predicates)]

    def deterministic(self) -> bool:
        """Is a decision now a function of the pod, the cluster's columns and the scan start alone (Skippy mode, no GPU
        policy, built-in predicates and priorities only)? :mod:`.decision_cache` reuses such decisions."""
        s = self.settings()
        builtin = self._predicates is None and not s.extra_predicates and all(p in _BUILTIN for p, _ in self.weighted())
        return s.mode == "skippy" and s.gpu_policy == "weighted" and builtin

    def weighted(self) -> tuple[tuple[Priority, float], ...]:
        """The priorities scored with and their weights, in the order the sum adds them (zero weights left out unless
        ``explain``, which computes a built-in's scores too)."""
        settings = self.settings()
        if self._weighted is None or self._weighted.settings is not settings or self._weighted.explain != self.explain:
            pairs = tuple(
                (priority, weight)
                for priority, weight in zip(self.scoring, settings.weights, strict=True)
                if weight != 0 or (self.explain and priority.key not in self._silent)
            )
            self._weighted = _Weighted(settings, self.explain, pairs)
        return self._weighted.pairs

    def skippy_step(self) -> SkippyStep | None:
        """The fused step (:mod:`.skippy_step`) when the configuration is exactly Skippy's default, else None (read
        once per params snapshot)."""
        settings = self.settings()
        if self._step[0] is not settings or self._step[1] != self.explain:
            step = None
            n = self.cluster.n
            if (
                settings.mode == "skippy"
                and settings.gpu_policy == "weighted"
                and not self.explain
                and self._predicates is None
                and not settings.extra_predicates
                and feasible_nodes_to_find(n, settings.percentage_of_nodes_to_score, "skippy") >= n
            ):
                weighted = self.weighted()
                if fuses(weighted):
                    flag = settings.avoid_storage_nodes
                    if flag not in self._steps:
                        self._steps[flag] = SkippyStep(self._default_predicates[flag], [priority for priority, _ in weighted])
                    step = self._steps[flag]
            self._step = (settings, self.explain, step)
        return self._step[2]

    def schedule(self, pod: Pod, bind: bool = True) -> PlacementDecision:
        """Choose a node for ``pod`` (None if none fits) and, if ``bind``, place it there."""
        cluster = self.cluster
        settings = self.settings()
        step = self._step[2] if self._step[0] is settings and self._step[1] == self.explain else self.skippy_step()
        if step is not None:
            fused = step.decide(cluster, pod, self.start_index)
            if fused is not None:
                node, best, feasible, scores, masks, following = fused
                start, self.start_index = self.start_index, following
                if node is None:
                    scores = ScanScores(np.zeros(0, np.int64), np.zeros(0), [])
                    return self._decision(pod, bind, None, 0.0, (), 0, scores, masks, start)
                return self._decision(pod, bind, node, best, cluster.default_devices(pod, node), feasible, scores, masks, start)
        mode, n = settings.mode, cluster.n
        masks = []
        for predicate in self.predicates():
            mask = predicate.mask(cluster, pod)
            if mask is not None:
                masks.append((predicate.name, mask))
        passes = all_pass(masks, n)
        start = self.start_index
        wanted = feasible_nodes_to_find(n, settings.percentage_of_nodes_to_score, mode)
        weighted = self.weighted()
        if mode == "skippy" and settings.gpu_policy == "weighted" and self._weighted.every_node and self._may_defer():
            feasible = int(np.count_nonzero(passes))
            if feasible <= wanted:  # every feasible node is scored: score them in cluster order, no gathers
                return self._decide_every_node(pod, bind, passes, feasible, weighted, masks)
        nodes, visited = scan(passes, start, wanted)
        if mode == "skippy":
            if len(nodes):
                self.start_index = (int(nodes[-1]) + 1) % n
        else:
            self.start_index = (start + visited) % n

        ctx = ScoringContext(cluster, pod, nodes, mode)
        total = np.zeros(len(nodes))
        results = []
        policy = None if settings.gpu_policy == "weighted" else self.gpu_policy(settings.gpu_policy)
        gpu_ctx = None
        if len(nodes) and policy is not None:
            tracker = self._pod_tracker(pod) if isinstance(policy, FgdPolicy) else None
            gpu_ctx = GpuContext(cluster, pod, nodes, self.policy_rng, tracker, settings.exact_fgd)
            raw, total = policy.score(gpu_ctx)
            results.append(PriorityResult(policy.name, 1.0, raw, total))
        elif len(nodes):
            for priority, weight in weighted:
                raw = priority.raw(ctx)
                score = priority.normalize(ctx, raw)
                total = add_weighted(total, weight, score)  # Skippy's order: weighted scores plus the running sum
                results.append(PriorityResult(priority.name, weight, raw, score))

        node: int | None = None
        best = 0.0
        devices: tuple[int, ...] = ()
        if len(nodes):
            if policy is not None:
                pick = pick_best(total, nodes, settings.tie_break, self.node_rank, self.policy_rng)
            else:
                pick = first_best(total)
                if mode == "kube" and self.rng is not None:
                    ties = np.flatnonzero(total == total[pick])
                    if len(ties) > 1:
                        pick = int(ties[self.rng.integers(len(ties))])
            node, best = int(nodes[pick]), float(total[pick])
            devices = policy.devices(gpu_ctx, node) if policy is not None else cluster.default_devices(pod, node)
        return self._decision(pod, bind, node, best, devices, len(nodes), ScanScores(nodes, total, results), masks, start)

    def _may_defer(self) -> bool:
        """Whether the columns the deferred priorities read are small enough to copy at every decision (a large
        cluster with many images: those priorities are scored at the decision, by the scan, as without deferral)."""
        reads = self._weighted.reads  # type: ignore[union-attr]
        return not reads or sum(getattr(self.cluster, name).nbytes for name in reads) <= SNAPSHOT_BYTES

    def _decide_every_node(
        self,
        pod: Pod,
        bind: bool,
        passes: np.ndarray,
        feasible: int,
        weighted: tuple[tuple[Priority, float], ...],
        masks: list[tuple[str, np.ndarray]],
    ) -> PlacementDecision:
        """Skippy mode when every feasible node is scored: the priorities see every node in cluster order
        (:data:`~engine.scheduling.base.EVERY_NODE`); the winner is the first best in scan order, as in :func:`scan`."""
        cluster, start = self.cluster, self.start_index
        if not feasible:
            return self._decision(pod, bind, None, 0.0, (), 0, ScanScores(np.zeros(0, np.int64), np.zeros(0), []), masks, start)
        self.start_index = (last_in_scan(passes, start) + 1) % cluster.n
        ctx = ScoringContext(cluster, pod, EVERY_NODE, "skippy", passes)
        total = None  # the first weighted scores (maybe a priority's own array, so later sums make new ones)
        owned = False  # total is this decision's own float array: later priorities add into it in place
        results = []
        nothing = zero_scores(cluster.n)
        later = self._weighted.later  # explain's zero-weight priorities computed when the breakdown is read
        for i, (priority, weight) in enumerate(weighted):
            if i in later:
                results.append((priority.name, weight, None, None))
                continue
            raw = priority.raw(ctx)
            score = priority.normalize(ctx, raw)
            if score is nothing:  # adding zeros changes no total
                pass
            elif owned:  # ``total + weight * score`` is ``weight * score + total`` exactly (IEEE addition commutes)
                total += score if weight == 1.0 else weight * score
            elif total is None:
                total = score if weight == 1.0 else weight * score  # the scan's ``weight * score + 0.0``, exactly
                owned = total is not score and total.dtype.kind == "f"
            else:
                total = add_weighted(total, weight, score)
                owned = total.dtype.kind == "f"
            results.append((priority.name, weight, raw, score))
        if total is None:
            total = np.zeros(cluster.n)
        node = first_best_from(total, passes, start)
        deferred = (ClusterAt(cluster, self._weighted.reads), pod, later) if later else None  # before the bind
        scores = EveryNodeScores(passes, start, total, results, deferred)
        return self._decision(pod, bind, node, float(total[node]), cluster.default_devices(pod, node), feasible, scores, masks, start)

    def _decision(
        self,
        pod: Pod,
        bind: bool,
        node: int | None,
        best: float,
        devices: tuple[int, ...],
        feasible: int,
        scores: ScanScores | EveryNodeScores,
        masks: list[tuple[str, np.ndarray]],
        start: int,
    ) -> PlacementDecision:
        cluster = self.cluster
        needed = None
        if node is not None:
            needed = cluster.place(pod, node, devices) if bind else cluster.missing_images(pod, node)
        # pod, node, node_name, feasible, score, needed_images, scores, predicate_masks, node_names, start_index,
        # devices: positional (keywords cost ~0.5 us more a decision)
        name = None if node is None else cluster.names[node]
        return PlacementDecision(pod, node, name, feasible, best, needed, scores, masks, cluster.names, start, devices)

    def cost_seconds(self, decision: PlacementDecision) -> float:
        """Simulated time the decision took: a fixed cost plus a cost per node scored."""
        settings = self.settings()  # the params snapshot: reading a param costs microseconds, this runs twice per decision
        return settings.schedule_fixed_cost + settings.schedule_cost_per_node * decision.feasible
