"""The pod world as a :class:`~engine.core.platform.Platform`: a trace's pods arrive and leave on a cluster, placed by the scheduler.

The cluster is the ``cluster`` section's (an openb node list by default), the placement the ``scheduler``
section's (Skippy/kube weighted priorities, or one of the FGD paper's GPU policies, ``scheduler.gpu_policy``);
every placement goes through :class:`~engine.scheduling.service.PlacementService`, which records it. The
target workload fragmentation is measured against (:mod:`engine.cluster.fragmentation`) is built from the
pods taking part, and FGD scores against it.

**Lifetime replay** (``pods.experiment: replay``). Times are the trace's, shifted so that the first
``creation_time`` is 0. A pod arrives at its ``creation_time`` and leaves at its ``deletion_time``, whether it
ran or still waits (then it counts as withdrawn): the trace records when a pod was deleted, not how long it
would have run. At one instant, departures come first, then waiting pods are retried (oldest first), then
new arrivals are placed. A pod no node fits waits in a FIFO queue; waiting pods are retried whenever a node
gains capacity (a pod left, a node recovered), and only those that fit some such node by their requests
are tried. Which pods take part follows ``pods.phases``. Sampled every ``run.sample_interval``.

**Cluster filling** (``pods.experiment: fill``), our reading of the FGD paper's artifact
(``hkust-adsl/kubernetes-scheduler-simulator``; the paper reports its results for 1,213 GPU nodes of the openb
node list, ``cluster.openb_gpu_nodes_only``):

1. The pods of the trace, sorted by name and shuffled with the run's seed (``pods.shuffle``), then pods drawn
   uniformly with replacement from the name-sorted trace are appended until their GPU requests reach
   ``pods.tune_ratio`` (1.3) x the cluster's GPUs (:func:`engine.podworld.workload.tune_workload`; the
   artifact's per-device stopping test is ``pods.tune_stop``).
2. The pods are submitted in that order, one per ``pods.submit_interval`` simulated seconds (time counts
   submissions), and never leave. A pod's GPU request counts as arrived *before* it is placed, so refused
   pods count too; a pod no node fits is refused and never retried (the artifact deletes it).
3. After every submission the world records the GPU allocation, the fragmentation amount (for the target
   workload: the trace's most popular pod shapes covering 95 % of its pods, CPU-only shapes included) and the
   fragmentation ratio (amount / unallocated GPU). ``allocation_curve`` bins those on the paper's x-axis, one
   row per 1 % of arrived GPU demand (:func:`engine.podworld.tables.allocation_curve`).
4. The same seed gives the same workload and the same tie-break node order whatever the policy (the tuning
   draws from the ``pods`` stream, the node order from the placement stream), as in the artifact, where both
   come from the tuning seed. The artifact's Go random streams are not reproduced: a seed here is another
   sample of the same distributions.

Faults: ``node_failure`` (its pods go back to the front of the waiting queue in a replay; are lost in a fill)
and ``node_recovery``. What the world records (samples, node snapshots, the pods table, the allocation curve) and
its summary: :mod:`engine.podworld.records`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import simpy

from engine.cluster.model import ARCH, GPU_MODEL, MiB, Pod
from engine.core.budget import BYTES_PER_SAMPLE, Estimate
from engine.core.events import EventLog
from engine.core.params import ParamError, Section
from engine.core.platform import FaultOutcome
from engine.core.recorder import Recorder
from engine.nodescaling.controller import KEY as NODE_AUTOSCALER
from engine.nodescaling.controller import NodeScaling, fleet_nodes
from engine.podworld.params import FIELD
from engine.podworld.records import COMPLETED, LOST, OUTCOMES, REFUSED, RUNNING, WAITING, WITHDRAWN, PodWorldRecords
from engine.podworld.tables import ALLOCATION_CURVE, NODE_SAMPLES, PODS, SAMPLES
from engine.podworld.workload import POD_IMAGE, pod_target, select_phases, trace_pod, tune_workload
from engine.scheduling.service import PlacementService
from engine.workload.traces.common import resolve_trace_path
from engine.workload.traces.openb import read_openb_pod_list

#: Re-exported: the outcome codes of a submission and their names are :mod:`engine.podworld.records`'s.
__all__ = ["COMPLETED", "FAULT_KINDS", "LOST", "OUTCOMES", "REFUSED", "RUNNING", "WAITING", "WITHDRAWN", "PodWorld"]

FAULT_KINDS: dict[str, str] = {
    "node_failure": "a node fails (node=NAME or position, default the node with the most pods): its pods wait again (replay) or are lost (fill)",
    "node_recovery": "a failed node is schedulable again (node=NAME or position); waiting pods are retried",
}

Stream = Callable[[str], np.random.Generator]


class PodWorld(PodWorldRecords):
    """A trace's pods on a cluster: lifetime replay or the FGD paper's cluster filling."""

    fault_kinds = FAULT_KINDS
    tables = (SAMPLES, NODE_SAMPLES, PODS, ALLOCATION_CURVE)

    def __init__(self, env: simpy.Environment, sections: Mapping[str, Section], recorder: Recorder, stream: Stream, log: EventLog):
        self.env = env
        self.sections = sections
        self.recorder = recorder
        self.log = log
        run, params = sections["run"], sections["pods"]
        self.params = params
        self.fill = params.experiment == "fill"
        self.placement = PlacementService(
            sections["cluster"],
            sections["scheduler"],
            stream("placement"),
            recorder,
            history=run.breakdown_history,
            extra_nodes=fleet_nodes(sections),
        )
        cluster = self.cluster = self.placement.cluster
        cluster.registry.add(POD_IMAGE, dict.fromkeys(cluster.label_values[ARCH], 0))
        trace = self.trace = read_openb_pod_list(resolve_trace_path(params.pod_file), params.required_columns(), FIELD)
        self._check_models()
        rows = select_phases(trace, params.phases)
        if not len(rows):
            raise ParamError("pods.phases", f"{params.phases!r} leaves no pod of {trace.path}; allowed: a rule that keeps some, e.g. 'all'")
        devices, milli = trace.gpu_request()
        self.devices, self.milli = devices, milli
        self.capacity_milli = int(cluster.gpu_milli_free.sum())
        self.placement.scheduler.set_target(pod_target(trace, rows, params.target_threshold, params.target_cpu_pods))
        self.tracker = self.placement.scheduler.fragmentation
        if self.fill:
            if self.capacity_milli == 0:
                raise ParamError("pods.experiment", "fill needs a cluster with GPUs; allowed: replay, or a cluster section with GPU nodes")
            picked = tune_workload(
                trace.name[rows],
                milli[rows],
                (devices * milli)[rows],
                self.capacity_milli,
                params.tune_ratio,
                stream("pods"),
                params.shuffle,
                params.tune_stop,
            )
            self.row = rows[picked]  # submission -> row of the trace
            self.submit_at = np.arange(len(self.row)) * params.submit_interval
            self.leave_at = np.full(len(self.row), np.inf)
        else:
            order = rows[np.argsort(trace.creation_time[rows], kind="stable")]
            origin = float(trace.creation_time[order[0]])
            self.row = order
            self.submit_at = trace.creation_time[order] - origin
            leave = trace.deletion_time[order] - origin
            self.leave_at = np.where(np.isnan(leave), np.inf, leave)  # an empty deletion_time: the pod never leaves
        n = len(self.row)
        self.state = np.full(n, -1, dtype=np.int64)  # -1 not submitted yet, else an OUTCOMES index
        self.bound_at = np.full(n, np.nan)
        self.node = np.full(n, -1, dtype=np.int64)
        self.device_mask = np.full(n, -1, dtype=np.int64)
        self.submitted = 0
        self.pending: list[int] = []  # waiting submissions, oldest first
        self.dirty: set[int] = set()  # nodes that gained capacity since the last retry
        self.counts = dict.fromkeys(("scheduled", "running", "unplaced", "departed"), 0)
        self.arrived_milli = 0
        self.allocated_milli = 0
        self.allocated_cpu = 0  # millicores and bytes requested by the pods on the cluster
        self.allocated_memory = 0
        self._cpu_capacity = max(int(cluster.cpu_capacity.sum()), 1)
        self._memory_capacity = max(int(cluster.memory_capacity.sum()), 1)
        self._present = np.arange(cluster.gpu_devices_max)[None, :] < cluster.gpu_count[:, None]  # devices that exist
        self.max_pending = 0
        self._pods: dict[int, Pod] = {}
        recorder.declare(SAMPLES)
        recorder.declare(NODE_SAMPLES)
        self._add_sample = recorder.appender(SAMPLES.name)
        self._next_snapshot = 0.0  # fill: arrived % of the next node snapshot
        recorder.provide(PODS, self._pod_rows)
        recorder.provide(ALLOCATION_CURVE, self._curve_rows)
        self.nodescaling = None
        if NODE_AUTOSCALER in sections:
            if self.fill:
                raise ParamError(
                    "node_autoscaler", "fill refuses at once the pods no node fits; allowed: pods.experiment replay with a node autoscaler"
                )
            self.nodescaling = NodeScaling(env, sections, self.placement, recorder, stream, self)

    # -- reading the trace -------------------------------------------------------------------------------
    def _check_models(self) -> None:
        """A GPU model a pod asks for must be on some node of the cluster (else the pod could never run)."""
        known = set(self.cluster.label_values.get(GPU_MODEL, []))
        for i, spec in enumerate(self.trace.gpu_spec.tolist()):
            for model in spec.split("|") if spec else ():
                if model not in known:
                    raise ParamError(
                        FIELD,
                        f"{self.trace.path}: line {int(self.trace.line[i])}, column 'gpu_spec': {model!r} is on no node of the cluster; "
                        f"allowed: {', '.join(sorted(known)) or 'none (the cluster has no GPU model)'}",
                    )

    def pod(self, row: int) -> Pod:
        """The trace's pod of ``row`` as the scheduler sees it (built once)."""
        pod = self._pods.get(row)
        if pod is None:
            pod = self._pods[row] = trace_pod(self.trace, row)
        return pod

    # -- Platform ---------------------------------------------------------------------------------------
    def start(self) -> None:
        if self.nodescaling is not None:
            self.nodescaling.start()
        if self.fill:
            self.env.process(self._filling())
        else:
            self.env.process(self._replay())
            self.env.process(self._sampling())
            if self.params.replay_snapshot_interval > 0:
                self.env.process(self._snapshots())

    def settle(self, now: float) -> None:
        """Nothing to do: every event is applied when it happens."""

    def params_changed(self, applied: Mapping[str, Any]) -> None:
        """Scheduler changes apply at the next placement (the pods section is fixed for a run: the registry says so); node
        group changes apply to the groups' next launches and to their cost from now on."""
        if self.nodescaling is not None:
            self.nodescaling.params_changed(applied, self.env.now)

    def check_live(self, key: str, trial: Any) -> None:
        if self.nodescaling is not None:
            self.nodescaling.check_live(key, trial)

    def fault_targets(self, kind: str) -> list[int]:
        return []

    def inject(self, kind: str, args: Mapping[str, Any], cause: str, rng: np.random.Generator) -> FaultOutcome:
        now = self.env.now
        if kind not in FAULT_KINDS:
            raise ParamError("fault", f"{kind!r} is not a fault of the pod world; allowed: {', '.join(FAULT_KINDS)}")
        node = args.get("node")
        if node is None:
            if kind == "node_recovery":
                raise ParamError("fault.node", "node_recovery needs node=NAME or position")
            node = int(np.argmax(self.placement.occupancy()))
        try:
            index = self.placement.node_position(node)
        except (KeyError, IndexError, ValueError):
            raise ParamError("fault.node", f"{node!r} is not a node of the cluster; allowed: a name or 0..{self.cluster.n - 1}") from None
        name = self.cluster.names[index]
        if kind == "node_recovery":
            self.cluster.schedulable[index] = True
            self.dirty.add(index)
            self._retry(now)
            return FaultOutcome(node=name)
        lost = self.placement.fail_node(index, now)
        for sub in lost:
            self._leave_node(sub)
            if self.fill:
                self.state[sub] = LOST
                self.counts["departed"] += 1
            else:
                self.state[sub] = WAITING
        if not self.fill:
            self.pending = sorted([*lost, *self.pending])  # back in the queue by submission order
            self.max_pending = max(self.max_pending, len(self.pending))
        return FaultOutcome(node=name, facts={"pods": [int(s) for s in lost]})

    # -- NodeHost: what the node autoscaler asks of the world ----------------------------------------------
    def waiting_pods(self, now: float) -> list[Pod]:
        """The pods waiting for a node, oldest submission first."""
        return [self.pod(int(self.row[sub])) for sub in self.pending]

    def evict(self, node: int, now: float) -> int:
        """A node is drained: each of its pods is scheduled again at once (oldest first); one that fits nowhere waits."""
        subs = sorted(self.placement.owners_on(node))
        waiting = []
        for sub in subs:
            self.placement.unbind(sub, now)
            self._leave_node(sub)
            self.state[sub] = WAITING
            self.node[sub] = -1
        for sub in subs:
            if not self._place(sub, now):
                waiting.append(sub)
        if waiting:
            self.pending = sorted([*waiting, *self.pending])
            self.max_pending = max(self.max_pending, len(self.pending))
        return len(subs)

    def capacity_added(self, node: int, now: float) -> None:
        """A node joined: the waiting pods that fit it are retried, oldest first."""
        self.dirty.add(node)
        self._retry(now)

    # -- placing ----------------------------------------------------------------------------------------
    def _place(self, sub: int, now: float) -> bool:
        row = int(self.row[sub])
        placement = self.placement.place(sub, self.pod(row), now)
        if placement is None:
            return False
        first = np.isnan(self.bound_at[sub])
        self.state[sub] = RUNNING
        if first:
            self.bound_at[sub] = now
            self.counts["scheduled"] += 1
        self.node[sub] = placement.node_index
        self.device_mask[sub] = sum(1 << d for d in placement.devices)
        self._account(row, +1)
        return True

    def _leave_node(self, sub: int) -> None:
        self._account(int(self.row[sub]), -1)

    def _account(self, row: int, sign: int) -> None:
        self.counts["running"] += sign
        self.allocated_milli += sign * int(self.devices[row] * self.milli[row])
        self.allocated_cpu += sign * int(self.trace.cpu_milli[row])
        self.allocated_memory += sign * int(self.trace.memory_mib[row]) * MiB

    def _submit(self, sub: int, now: float) -> bool:
        row = int(self.row[sub])
        self.submitted += 1
        self.arrived_milli += int(self.devices[row] * self.milli[row])
        self.state[sub] = WAITING
        return self._place(sub, now)

    def _fits_dirty(self, subs: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Which submissions fit some of ``nodes`` by their requests (cpu, memory, GPU devices) and model: those worth a retry."""
        c = self.cluster
        nodes = nodes[c.schedulable[nodes]]
        if not len(nodes):
            return np.zeros(len(subs), dtype=bool)
        rows = self.row[subs]
        t = self.trace
        fits = (t.cpu_milli[rows][:, None] <= c.cpu_free[nodes][None, :]) & (
            t.memory_mib[rows][:, None] * MiB <= c.memory_free[nodes][None, :]
        )
        devices, milli = self.devices[rows], self.milli[rows]
        usable = (c.gpu_milli_free[nodes][None, :, :] >= milli[:, None, None]).sum(axis=2)
        fits &= usable >= devices[:, None]
        for i, row in enumerate(rows.tolist()):
            models = self.pod(row).gpu_models
            if models and devices[i]:
                fits[i] &= np.logical_or.reduce([c.label_equals(GPU_MODEL, m)[nodes] for m in models])
        return fits.any(axis=1)

    def _retry(self, now: float) -> None:
        """Retry waiting pods, oldest first, that fit a node which gained capacity since the last retry."""
        if not self.pending or not self.dirty:
            self.dirty.clear()
            return
        dirty = np.array(sorted(self.dirty), dtype=np.int64)
        self.dirty.clear()
        waiting = np.array(self.pending, dtype=np.int64)
        placed = set()
        for sub in waiting[self._fits_dirty(waiting, dirty)].tolist():
            # earlier retries may have filled the nodes: check this pod again before a full scheduling attempt
            if self._fits_dirty(np.array([sub]), dirty)[0] and self._place(sub, now):
                placed.add(sub)
        if placed:
            self.pending = [s for s in self.pending if s not in placed]

    # -- processes --------------------------------------------------------------------------------------
    def _replay(self):
        env = self.env
        n = len(self.row)
        times = np.concatenate([self.leave_at, self.submit_at])
        kinds = np.concatenate([np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)])  # at one instant: departures first
        subs = np.concatenate([np.arange(n), np.arange(n)])
        order = np.lexsort((subs, kinds, times))
        order = order[np.isfinite(times[order])]  # pods that never leave have no departure
        times, kinds, subs = times[order].tolist(), kinds[order].tolist(), subs[order].tolist()
        gone = np.zeros(n, dtype=bool)
        k = 0
        while k < len(times):
            t = times[k]
            if t > env.now:
                yield env.timeout(t - env.now)
            now = env.now
            arrivals = []
            while k < len(times) and times[k] == t:
                sub = subs[k]
                if kinds[k] == 0:
                    gone[sub] = True
                    self._depart(sub, now)
                else:
                    arrivals.append(sub)
                k += 1
            self._retry(now)
            for sub in arrivals:
                if gone[sub]:  # it left at the instant it came (deletion_time == creation_time)
                    self.submitted += 1
                    self.arrived_milli += int(self.devices[self.row[sub]] * self.milli[self.row[sub]])
                    self.state[sub] = WITHDRAWN
                    self.counts["unplaced"] += 1
                elif not self._submit(sub, now):
                    self.pending.append(sub)
            self.max_pending = max(self.max_pending, len(self.pending))

    def _depart(self, sub: int, now: float) -> None:
        state = self.state[sub]
        if state == RUNNING:
            node = int(self.node[sub])
            self.placement.unbind(sub, now)
            self._leave_node(sub)
            self.state[sub] = COMPLETED
            self.counts["departed"] += 1
            self.dirty.add(node)
        elif state == WAITING:
            self.pending.remove(sub)
            self.state[sub] = WITHDRAWN
            self.counts["unplaced"] += 1

    def _filling(self):
        env = self.env
        for sub in range(len(self.row)):
            at = float(self.submit_at[sub])
            if at > env.now:
                yield env.timeout(at - env.now)
            if not self._submit(sub, env.now):
                self.state[sub] = REFUSED
                self.counts["unplaced"] += 1
            self._sample()
            step = self.params.fill_snapshot_pct
            if step > 0 and (self._arrived_pct() >= self._next_snapshot or sub == len(self.row) - 1):
                self._snapshot()
                while self._next_snapshot <= self._arrived_pct():
                    self._next_snapshot += step

    def estimate(self, until: float) -> Estimate:
        """What a run to ``until`` will cost (see :mod:`engine.core.budget`): each pod still to come scored on every node.

        Retries of waiting pods are not counted (a lower bound where many wait); node snapshots are ~56 bytes per node.
        """
        now = self.env.now
        pods = float(np.count_nonzero((self.submit_at >= now) & (self.submit_at <= until)))
        span = max(until - now, 0.0)
        samples = span / self.sections["run"].sample_interval
        interval = self.params.replay_snapshot_interval if not self.fill else 0.0
        snapshots = span / interval if interval > 0 else 0.0
        memory = samples * BYTES_PER_SAMPLE + snapshots * self.cluster.n * 56.0 + pods * 200.0
        return Estimate(until, pods, samples, 0.0, memory, scored=pods * self.cluster.n, unit="pods")
