"""Where a platform's pods land: the one placement service every platform calls, and the sole owner of image state.

Interface (platforms keep to it)::

    service = PlacementService(cluster_params, scheduler_params, rng, recorder)   # builds the cluster (seeded) and scheduler
    service.request(owner, now) -> Placement | None   # place a worker pod; None: pending (FIFO, retried later)
    service.request(owner, now, pod=Pod, wait=False)  # place a given pod (a function replica); wait=False: not kept pending
    service.place(owner, pod, now) -> Placement | None  # place any pod once; None: no node fits (the caller keeps it)
    service.unbind(owner, now) -> Pod | None          # free a pod's node without retrying anything
    service.image_wait(placement, now) -> float       # seconds until the pod's image is on its node (shared pulls)
    service.release(owner, now) -> list[Placement]    # the owner is gone (not on suspend): frees capacity, retries pending
    service.retry_pending(now) -> list[Placement]     # pending pods placed now, in FIFO order
    service.fail_node(node, now) -> list[int]         # node unschedulable; returns the owners that were on it
    service.recover_node(node, now) -> list[Placement]  # node schedulable again; retries pending
    service.pending                                   # owners waiting for capacity, oldest first
    service.pods_by_node() / owners_on(node) / pending_pods()  # what a node autoscaler reads

What it records (tables declared here, see :data:`PLACEMENTS`, :data:`BREAKDOWNS`, :data:`NODES`): the nodes
once; one ``placements`` row per bind, pending attempt, release and loss; the nodes x priorities breakdown
of the newest ``history`` decisions. Views build the placement and score heatmaps from these tables alone.

A :class:`Placement` tells the platform what the node means for the pod: ``pull_seconds`` (missing image
bytes over the node's registry bandwidth), ``schedule_seconds`` (the scheduler's simulated cost: fixed + per
node scored; never wall clock), ``speed_factor`` (divide job service times by it) and
``storage_seconds_per_job`` (transfer of each job's input over the node's fastest link to the data).

Image state has one owner: the scheduler's view (``Cluster.image_cached``, updated when a pod is bound, as
Skippy does) and the time each (node, image) pull completes, which pods bound meanwhile share
(:meth:`PlacementService.image_wait`, as a kubelet pulls an image once).

A platform may hand in its own pod per owner (the function platform: one spec per function image); the VM
world's worker pod spec comes from ``ClusterParams`` at each request and the scheduler's weights and mode from
``SchedulerParams`` at each decision, so changes made live apply to the next placement; the topology
parameters take effect only when a new service is built.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from engine.cluster.build import build_cluster
from engine.cluster.grow import with_nodes
from engine.cluster.model import GPU_MODEL, WORKER_INPUT, MiB, NodeSpec, Pod
from engine.cluster.params import ClusterParams
from engine.core.recorder import Recorder, TableSpec, table
from engine.scheduling.decision_cache import DecisionCache
from engine.scheduling.framework import PRIORITIES, PlacementDecision, Scheduler
from engine.scheduling.kube_profiles import mode_label
from engine.scheduling.params import SchedulerParams
from engine.scheduling.priorities import PRIORITY_TABLE, PriorityWeights
from engine.scheduling.scan_order import EveryNodeScores, PriorityResult, ScanScores

if TYPE_CHECKING:
    import pandas as pd

#: The ``SchedulerParams`` weight of each priority, by the name the ``breakdowns`` table gives it (a view re-scores
#: a recorded decision with new weights through it).
PRIORITY_WEIGHTS: Mapping[str, str] = PriorityWeights()

NODES = table(
    "nodes",
    "One row per node of the cluster, written when the cluster is built (positions are the scheduler's scan order).",
    [
        ("node_index", "int64", "position of the node in the cluster"),
        ("node", "string", "node name"),
        ("region", "string", "topology.kubernetes.io/region"),
        ("zone", "string", "topology.kubernetes.io/zone"),
        ("locality", "string", "locality.skippy.io/type (edge | cloud)"),
        ("node_class", "string", "device or instance class"),
        ("arch", "string", "CPU architecture"),
        ("gpu_model", "string", "GPU model ('' without GPUs)"),
        ("storage", "bool", "a storage node (holds data buckets)"),
        ("cpu_capacity", "int64", "allocatable cpu, millicores"),
        ("memory_capacity", "int64", "allocatable memory, bytes"),
        ("gpu_capacity", "float64", "GPUs"),
        ("gpu_count", "int64", "GPU devices (1000 milli-GPU each; devices are numbered 0..gpu_count-1)"),
        ("speed", "float64", "job speed factor (service times are divided by it)"),
        ("registry_bandwidth", "float64", "bytes per second from the image registry"),
        ("schedulable", "bool", "schedulable when the run started (a cordoned node is not)"),
    ],
)

PLACEMENTS = table(
    "placements",
    "One row per thing the placement service did to a pod: bind, pending (no feasible node), release, lost (node failed).",
    [
        ("time", "float64", "simulated seconds"),
        ("action", "string", "bind | pending | release | lost"),
        ("pod", "string", "pod name"),
        ("owner", "int64", "what the pod belongs to (the worker VM's id)"),
        ("node", "string", "node name (missing for pending)"),
        ("node_index", "Int64", "node position (missing for pending)"),
        ("feasible", "Int64", "bind/pending: feasible nodes the filter found"),
        ("score", "Float64", "bind: the chosen node's weighted score"),
        ("pull_s", "Float64", "bind: seconds to pull the images the node lacks over its registry link"),
        ("schedule_s", "Float64", "bind/pending: simulated seconds the decision took (fixed + per node scored)"),
        ("speed", "Float64", "bind: the node's job speed factor"),
        ("storage_s", "Float64", "bind: seconds per job to read (and write) its data over the node's link"),
        ("cpu_millis", "int64", "the pod's cpu request, millicores"),
        ("memory", "int64", "the pod's memory request, bytes"),
        ("gpus", "float64", "the pod's GPU request"),
        ("gpu_count", "int64", "GPU devices the pod takes (0: none)"),
        ("gpu_milli", "int64", "milli-GPU the pod takes on each of its devices (1000: whole devices; below: a share)"),
        ("gpu_devices", "Int64", "bind/release/lost: the devices of the node, as a bit mask (bit d set: device d; 0 without GPUs)"),
        ("mode", "string", "bind/pending: scheduler mode (skippy | kube | kube-v1.20: kube mode with SchedulerParams.kube_version)"),
        ("decision", "Int64", "bind/pending: the decision's number (its breakdown rows carry it)"),
    ],
)

BREAKDOWN_COLUMNS = (
    ("decision", "int64", "the decision's number (placements.decision)"),
    ("node", "string", "node name"),
    ("node_index", "int64", "node position"),
    ("scan_position", "int64", "position among the scored nodes (-1: not scored)"),
    ("priority", "string", "priority function"),
    ("raw", "float64", "the priority's raw value (NaN: not scored)"),
    ("score", "float64", "the priority's normalised score (skippy 0-10, kube 0-100)"),
    ("weight", "float64", "the priority's weight at the decision"),
    ("weighted", "float64", "score x weight"),
    ("total", "float64", "the node's weighted sum (NaN: not scored)"),
    ("feasible", "bool", "the node passed every predicate"),
    ("reason", "string", "first predicate that rejected the node, 'not scored', or ''"),
    ("winner", "bool", "the chosen node"),
)


def breakdowns_spec(history: int, nodes: int) -> TableSpec:
    """The ``breakdowns`` table, bounded to the newest ``history`` decisions on ``nodes`` nodes."""
    return table(
        "breakdowns",
        f"Nodes x priorities of the newest {history} placement decisions (one block per decision).",
        BREAKDOWN_COLUMNS,
        bound=max(1, history) * max(1, nodes) * max(len(PRIORITIES), len(PRIORITY_TABLE)),
        layout="blocks",
    )


@dataclass(frozen=True)
class Placement:
    """A pod bound to a node, with what that node costs the pod's owner."""

    vm_id: int
    node: str
    node_index: int
    feasible: int
    score: float
    pull_seconds: float
    schedule_seconds: float
    speed_factor: float
    storage_seconds_per_job: float
    image: str = ""
    decision: int = -1
    row: int = -1  # its row in the placements table
    devices: tuple[int, ...] = ()  # the node's GPU devices the pod takes

    def event(self) -> dict:
        """The placement as a flat dict."""
        return asdict(self)


_PLACEMENT_FIELDS = tuple(f.name for f in fields(Placement))


class PlacementService:
    """Places pods with the scheduler, keeps unplaceable ones pending and retries them when capacity frees."""

    def __init__(
        self,
        cluster_params: ClusterParams,
        scheduler_params: SchedulerParams,
        rng: np.random.Generator,
        recorder: Recorder | None = None,
        history: int = 20,
        extra_nodes: Sequence[NodeSpec] = (),
    ):
        self.cluster_params = cluster_params
        self.scheduler_params = scheduler_params
        # extra_nodes: appended after the cluster is built (a node autoscaler's groups), they draw nothing from ``rng``
        self.cluster = with_nodes(build_cluster(cluster_params, rng), extra_nodes)
        self.history = history
        self.scheduler = Scheduler(self.cluster, scheduler_params, rng=np.random.default_rng(int(rng.integers(2**63))), explain=history > 0)
        self.pending: list[int] = []
        self._pods: dict[int, Pod] = {}  # pods handed in by the platform, per owner (until released)
        self._bound: dict[int, tuple[Pod, int, tuple[int, ...]]] = {}  # owner -> (pod, node, GPU devices)
        self._image_ready: dict[tuple[str, str], float] = {}  # (node, image) -> when its pull completes
        self._last: PlacementDecision | None = None
        self.decision_cache = DecisionCache(self.scheduler, self.cluster)
        self._decisions = 0
        self._label: tuple = (None, "")  # (settings snapshot, its mode label)
        self.last_row = -1  # the newest row of the placements table
        self.recorder = recorder if recorder is not None else Recorder()
        for spec in (NODES, PLACEMENTS, breakdowns_spec(history, self.cluster.n)):
            if spec.name not in self.recorder:
                self.recorder.declare(spec)
        self._add_placement = self.recorder.appender("placements")
        self._count_placements = self.recorder.counter("placements")
        self._record_nodes()

    # -- recording -------------------------------------------------------------------------------------
    def _record_nodes(self) -> None:
        t = self.cluster.node_columns()
        self.recorder.extend(
            "nodes",
            {
                "node_index": np.arange(self.cluster.n),
                "node": t["name"],
                "region": t["region"],
                "zone": t["zone"],
                "locality": t["locality"],
                "node_class": t["node_class"],
                "arch": t["arch"],
                "gpu_model": self.cluster.label_column(GPU_MODEL),
                "storage": t["storage"],
                "cpu_capacity": self.cluster.cpu_capacity,
                "memory_capacity": self.cluster.memory_capacity,
                "gpu_capacity": self.cluster.gpu_capacity,
                "gpu_count": self.cluster.gpu_count,
                "speed": self.cluster.speed,
                "registry_bandwidth": self.cluster.registry_bandwidth,
                "schedulable": self.cluster.schedulable.copy(),
            },
        )

    def _row(
        self,
        now: float,
        action: str,
        owner: int,
        pod: Pod,
        node: int | None = None,
        decision: PlacementDecision | None = None,
        placement: tuple
        | None = None,  # a bind's Placement fields (vm_id, node, node_index, feasible, score, pull, schedule, speed, storage)
        number: int | None = None,
        devices: tuple[int, ...] | None = None,
    ) -> int:
        count, milli = pod.gpu_devices
        self._add_placement(  # in PLACEMENTS' column order
            (
                now,
                action,
                pod.name,
                owner,
                None if node is None else self.cluster.names[node],
                node,
                None if decision is None else decision.feasible,
                None if placement is None else placement[4],
                None if placement is None else placement[5],
                None if decision is None else placement[6] if placement is not None else self.scheduler.cost_seconds(decision),
                None if placement is None else placement[7],
                None if placement is None else placement[8],
                pod.cpu_millis,
                pod.memory,
                float(pod.gpus),
                count,
                milli,
                None if devices is None else sum(1 << d for d in devices) if devices else 0,
                None if decision is None else self._mode_label(),
                number,
            )
        )
        self.last_row = self._count_placements() - 1
        return self.last_row

    def _mode_label(self) -> str:
        """The mode placements record, read once per params snapshot (any param change makes a new snapshot)."""
        settings = self.scheduler.settings()
        if self._label[0] is not settings:
            self._label = (settings, mode_label(settings.mode, self.scheduler_params.kube_version))
        return self._label[1]

    # -- placing ---------------------------------------------------------------------------------------
    def _pod(self, vm_id: int) -> Pod:
        if vm_id in self._pods:
            return self._pods[vm_id]
        params = self.cluster_params
        if params.worker_input_mib > 0:
            bucket, item = WORKER_INPUT.split("/")
            if self.cluster.storage.buckets.get(bucket):
                self.cluster.storage.put(bucket, item, int(params.worker_input_mib * MiB))
        return params.worker_pod(f"worker-{vm_id}")

    def _try(self, vm_id: int, now: float) -> Placement | None:
        return self.place(vm_id, self._pod(vm_id), now)

    def place(self, vm_id: int, pod: Pod, now: float) -> Placement | None:
        """Schedule ``pod`` for its owner once and record the attempt; None when no node fits (nothing is queued)."""
        if vm_id in self._bound:
            raise ValueError(f"owner {vm_id} is already placed")
        decision, needed, frozen = self._decide(pod)
        number = self._decisions
        self._decisions += 1
        if self.history > 0:  # computed only if read before the newest ``history`` decisions have moved past it
            rows = len(frozen.node_names) * max(1, frozen.scores.priority_count)
            self.recorder.extend_later("breakdowns", rows, lambda: {"decision": np.full(rows, number), **frozen.breakdown_columns()})
        if decision.node is None:
            self._row(now, "pending", vm_id, pod, decision=decision, number=number)
            return None
        node = decision.node
        self._bound[vm_id] = (pod, node, decision.devices)
        cluster = self.cluster
        values = (  # the Placement's fields up to its image, in order; its row is written first (one object, no replace)
            vm_id,
            cluster.names[node],
            node,
            decision.feasible,
            decision.score,
            cluster.pull_seconds(needed, node) if needed else 0.0,  # (nothing to pull: 0.0, as pull_seconds gives it)
            self.scheduler.cost_seconds(decision),
            float(cluster.speed[node]),
            cluster.transfer_seconds(pod, node),
        )
        row = self._row(now, "bind", vm_id, pod, node, decision, values, number, decision.devices)
        placement = object.__new__(Placement)  # what Placement(...) makes (frozen: its __init__ sets field by field)
        placement.__dict__.update(zip(_PLACEMENT_FIELDS, (*values, pod.containers[0].image, number, row, decision.devices), strict=True))
        return placement

    def _decide(self, pod: Pod) -> tuple[PlacementDecision, list[str] | None, PlacementDecision | None]:
        """Schedule and bind ``pod``: the decision, the images the bind pulls, and the frozen decision when a breakdown is
        kept. A decision made before for the same pod spec, cluster columns and scan start is bound again without
        scoring (:mod:`.decision_cache`)."""
        cache = self.decision_cache
        key = cache.key()
        if key is not None:
            hit = cache.get(key, pod)
            if hit is not None:
                frozen, self.scheduler.start_index = hit
                self._last = frozen  # its breakdown is the decision's (the pod's name is not in it)
                needed = None if frozen.node is None else self.cluster.place(pod, frozen.node, frozen.devices)
                return frozen, needed, frozen
        decision = self._last = self.scheduler.schedule(pod)
        frozen = frozen_decision(decision) if self.history > 0 or key is not None else None
        if key is not None:
            cache.put(key, pod, frozen, self.scheduler.start_index)
        return decision, decision.needed_images, frozen

    def request(self, vm_id: int, now: float, pod: Pod | None = None, wait: bool = True) -> Placement | None:
        """Place a pod for owner ``vm_id`` (the worker pod, or ``pod``); None when no node fits.

        An unplaced pod waits in :attr:`pending` (retried when capacity frees) unless ``wait`` is False (a
        platform that falls back to another image first).
        """
        if vm_id in self._bound:
            raise ValueError(f"VM {vm_id} is already placed")
        if pod is not None:
            self._pods[vm_id] = pod
        placement = self._try(vm_id, now)
        if placement is None:
            if wait and vm_id not in self.pending:
                self.pending.append(vm_id)
            elif not wait:
                self._pods.pop(vm_id, None)
        return placement

    def image_wait(self, placement: Placement, now: float) -> float:
        """Seconds from ``now`` until the placed pod can start: scheduling, then its image on the node.

        A pull already in flight on that node is shared: a pod bound while the image is still being pulled
        waits for that same pull. Called once per bind by the platform, which boots the pod after it.
        """
        key = (placement.node, placement.image)
        ready = now + placement.schedule_seconds + placement.pull_seconds
        if placement.pull_seconds > 0 or key not in self._image_ready:
            self._image_ready[key] = ready
        return max(ready, self._image_ready[key]) - now

    def release(self, vm_id: int, now: float) -> list[Placement]:
        """The owner is gone: free its node's capacity (images stay cached) and retry the pending pods."""
        self._pods.pop(vm_id, None)
        if vm_id in self.pending:
            self.pending.remove(vm_id)
            return []
        if self.unbind(vm_id, now) is None:
            return []
        return self.retry_pending(now)

    def unbind(self, vm_id: int, now: float) -> Pod | None:
        """Free the node of ``vm_id``'s pod (images stay cached) and record the release; retries nothing. None: not bound."""
        bound = self._bound.pop(vm_id, None)
        if bound is None:
            return None
        pod, node, devices = bound
        self.cluster.remove(pod, node, devices)
        self._row(now, "release", vm_id, pod, node, devices=devices)
        return pod

    def retry_pending(self, now: float) -> list[Placement]:
        """Place pending pods oldest first; after one fits nowhere, pods of the same spec are not tried again.

        (The VM world's pods share one spec, so it stops at the first that still fits nowhere.)
        """
        if not self.pending:
            return []
        placed = []
        failed: list[Pod] = []
        for owner in list(self.pending):
            pod = self._pod(owner)
            if any(_same_spec(pod, f) for f in failed):
                continue
            placement = self._try(owner, now)
            if placement is None:
                failed.append(pod)
                continue
            self.pending.remove(owner)
            placed.append(placement)
        return placed

    def node_position(self, node: str | int) -> int:
        """The position of a node given by name or position; raises KeyError/IndexError for an unknown one."""
        if isinstance(node, str):
            return self.cluster.index[node]
        if isinstance(node, bool) or not isinstance(node, int | np.integer):
            raise TypeError(f"{node!r} is neither a node name nor a position")
        index = int(node)
        if not 0 <= index < self.cluster.n:
            raise IndexError(f"node {index} out of range 0..{self.cluster.n - 1}")
        return index

    def fail_node(self, node: str | int, now: float) -> list[int]:
        """Mark ``node`` unschedulable and unbind its pods; returns their owners (the platform fails those)."""
        index = self.node_position(node)
        self.cluster.schedulable[index] = False
        lost = [vm for vm, (_, n, _) in self._bound.items() if n == index]
        for vm in lost:
            self._pods.pop(vm, None)
            pod, n, devices = self._bound.pop(vm)
            self.cluster.remove(pod, n, devices)
            self._row(now, "lost", vm, pod, n, devices=devices)
        return lost

    def recover_node(self, node: str | int, now: float) -> list[Placement]:
        """Make ``node`` schedulable again and retry the pending pods."""
        self.cluster.schedulable[self.node_position(node)] = True
        return self.retry_pending(now)

    # -- reading ---------------------------------------------------------------------------------------
    def node_of(self, vm_id: int) -> str | None:
        """Name of the node a VM is placed on (None if pending or unknown)."""
        bound = self._bound.get(vm_id)
        return None if bound is None else self.cluster.names[bound[1]]

    def pending_reasons(self) -> dict[str, int]:
        """Nodes per first rejecting predicate for the oldest pending pod, as the scheduler sees it now."""
        if not self.pending:
            return {}
        pod = self._pod(self.pending[0])
        passes = np.ones(self.cluster.n, dtype=bool)
        counts: dict[str, int] = {}
        for predicate in self.scheduler.predicates():  # the filter only: scheduling would move the scan start
            mask = predicate.mask(self.cluster, pod)
            if mask is None:
                continue
            rejected = passes & ~mask
            if rejected.any():
                counts[predicate.name] = int(rejected.sum())
            passes &= mask
        return counts

    def pods_by_node(self) -> dict[int, list[Pod]]:
        """The bound pods per node position (nodes without pods are absent), in bind order."""
        out: dict[int, list[Pod]] = {}
        for pod, node, _ in self._bound.values():
            out.setdefault(node, []).append(pod)
        return out

    def owners_on(self, node: int) -> list[int]:
        """The owners whose pods are bound to node position ``node``, in bind order."""
        return [owner for owner, (_, n, _) in self._bound.items() if n == node]

    def pending_pods(self) -> list[Pod]:
        """The pods of :attr:`pending`, oldest first."""
        return [self._pod(owner) for owner in self.pending]

    def last_breakdown(self) -> pd.DataFrame | None:
        """Node x priority breakdown of the latest decision (also of one that found no node)."""
        return None if self._last is None else self._last.breakdown()

    def node_table(self) -> pd.DataFrame:
        return self.cluster.node_table()

    def occupancy(self) -> np.ndarray:
        """Replicas per node, in node_table order."""
        return self.cluster.pods.copy()


def frozen_decision(decision: PlacementDecision) -> PlacementDecision:
    """``decision`` with its own copies of the arrays a breakdown reads (a priority or predicate may hand out an array
    it keeps updating), so that its breakdown computed later is the one of the moment it was made."""
    scores = decision.scores
    if isinstance(scores, EveryNodeScores):  # its scan order and deferred priorities are made when the breakdown is read
        frozen: ScanScores | EveryNodeScores = scores.frozen()
    else:
        priorities = [PriorityResult(p.name, p.weight, np.array(p.raw), np.array(p.score)) for p in scores.priorities]
        frozen = ScanScores(np.array(scores.nodes), np.array(scores.total), priorities)
    out = copy.copy(decision)  # node_names: the cluster's list, fixed when it is built
    out.scores = frozen
    out.predicate_masks = [(name, np.array(mask)) for name, mask in decision.predicate_masks]
    return out


def _same_spec(a: Pod, b: Pod) -> bool:
    """Pods that differ only in name fit the same nodes."""
    return replace(a, name="") == replace(b, name="")
