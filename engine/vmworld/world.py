"""The VM world as a :class:`~engine.core.platform.Platform`: the seed's master/worker application on a VM cloud.

It wires the parts together (the job queue, the cloud, the app daemons and their heartbeat channel, the
placement service when the scenario has a cluster, and the seed's controller with its scaling policy),
runs the controller every ``DECISION_INTERVAL`` and samples itself every ``run.sample_interval``, applies
the faults it understands, and summarises the run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import simpy

from engine.autoscaling.registry import make_policy
from engine.cluster.fit import check_worker_fits
from engine.core.budget import BYTES_PER_JOB_ROW, BYTES_PER_SAMPLE, Estimate
from engine.core.events import EventLog
from engine.core.histogram import LogHistogram
from engine.core.params import Mirror, ParamError, Section
from engine.core.platform import FaultOutcome
from engine.core.quantiles import sorted_linear_percentiles
from engine.core.recorder import Recorder
from engine.scheduling.service import PlacementService
from engine.vmworld.cloud import VMCloud
from engine.vmworld.controller import VMController
from engine.vmworld.daemon import AppDaemons, HeartbeatChannel
from engine.vmworld.jobs import JobFlow
from engine.vmworld.model import AppState, VMState, VMType
from engine.vmworld.rounds import ControlRound
from engine.vmworld.tables import DECISIONS, JOBS, SAMPLES, decision_row
from engine.workload.arrivals import ArrivalStream, peak_multiplier
from engine.workload.service import ServiceTimes

#: The faults this world understands.
FAULT_KINDS: dict[str, str] = {
    "master_crash": "the master VM's guest dies (the cloud still lists it ACTIVE; its heartbeats stop)",
    "worker_crash": "a worker VM's guest dies (vm=ID, or a random ACTIVE or booting worker)",
    "heartbeat_outage": "every heartbeat is lost for duration=S seconds (default 30)",
    "node_failure": "a cluster node fails (node=NAME or position, default the busiest): its VMs go FAILED",
}

Stream = Callable[[str], np.random.Generator]


class VMWorld:
    """The master/worker application, its VM cloud and the seed's controller."""

    fault_kinds = FAULT_KINDS

    def __init__(self, env: simpy.Environment, sections: Mapping[str, Section], recorder: Recorder, stream: Stream, log: EventLog):
        self.env = env
        self.sections = sections
        self.recorder = recorder
        self.log = log
        run, workload = sections["run"], sections["workload"]
        self.jobs = JobFlow(
            ArrivalStream(workload, stream("arrivals"), sections), ServiceTimes(workload, stream("service")), record_jobs=run.record_jobs
        )
        self.placement: PlacementService | None = None
        if "cluster" in sections:
            self.placement = PlacementService(
                sections["cluster"], sections["scheduler"], stream("placement"), recorder, history=run.breakdown_history
            )
            check_worker_fits(self.placement.cluster, sections["cluster"])  # else every worker would wait for ever
        mirror = Mirror(sections["platform"])  # read on every heartbeat
        self.channel = HeartbeatChannel(env, mirror, stream("channel"))
        platform_rng = stream("platform")
        self.daemons = AppDaemons(env, mirror, self.jobs, platform_rng, self.channel)
        self.cloud = VMCloud(env, mirror, self.daemons, platform_rng, log, placement=self.placement)
        self.controller = VMController(sections["autoscaler"], self.cloud, policy=make_policy(sections), modes=sections["controller"])
        self.last_round: ControlRound | None = None
        self._waits = LogHistogram()
        self._waits_pending: list[np.ndarray] = []  # sampled waits not yet in the histogram
        self._waits_pending_n = 0
        self._arrived_before = 0
        self._completed_before = 0
        recorder.declare(SAMPLES)
        recorder.declare(DECISIONS)
        recorder.provide(JOBS, lambda: self.jobs.rows)

    tables = (SAMPLES, DECISIONS, JOBS)

    #: Sampled waits are added to the whole-run histogram in batches of at least this many (or when it is read).
    WAITS_BATCH = 50_000

    @property
    def waits(self) -> LogHistogram:
        """Every wait so far, binned (the whole run's percentiles)."""
        if self._waits_pending:
            self._add_waits()
        return self._waits

    def _add_waits(self) -> None:
        self._waits.add(np.concatenate(self._waits_pending))
        self._waits_pending = []
        self._waits_pending_n = 0

    # -- Platform ---------------------------------------------------------------------------------------
    def start(self) -> None:
        self.controller.start(0.0)
        self.env.process(self._decisions())
        self.env.process(self._sampling())

    def settle(self, now: float) -> None:
        """Commit every job that starts before ``now``: the jobs table is complete at the end of every advance,
        whatever is read (the summary and the tables only read); the heartbeats due before ``now`` are sent."""
        self.daemons.sync(now)
        self.jobs.settle(now)

    def params_changed(self, applied: Mapping[str, Any]) -> None:
        if "policy.kind" in applied:
            # a new policy starts with empty windows; the VM lifecycle rules carry on unchanged
            self.controller.set_policy(make_policy(self.sections))

    def check_live(self, key: str, trial: Any) -> None:
        """Every live value its section allows applies here."""

    def fault_targets(self, kind: str) -> list[int]:
        if kind == "worker_crash":
            return [vm.id for vm in self.cloud.vms.values() if vm.type is VMType.WORKER and vm.alive and vm.state is VMState.ACTIVE]
        return []

    def inject(self, kind: str, args: Mapping[str, Any], cause: str, rng: np.random.Generator) -> FaultOutcome:
        now = self.env.now
        cloud = self.cloud
        if kind == "master_crash":
            vm = next((v for v in cloud.vms.values() if v.type is VMType.MASTER and v.alive), None)
            if vm is not None:
                cloud.crash(vm, now)
            return FaultOutcome(vm.id if vm else None, vm.type.value if vm else None)
        if kind == "worker_crash":
            wanted = args.get("vm")
            live = [v for v in cloud.vms.values() if v.type is VMType.WORKER and v.alive and v.state in (VMState.ACTIVE, VMState.PENDING)]
            vm = None
            if wanted is not None:
                vm = cloud.vms.get(wanted) if isinstance(wanted, int) and not isinstance(wanted, bool) else None
                if vm is None or vm.type is not VMType.WORKER:
                    raise ParamError("fault.vm", f"{wanted!r} is not a listed worker VM; allowed: {[v.id for v in live]}")
            elif live:
                vm = live[int(rng.integers(len(live)))]
            if vm is not None:
                cloud.crash(vm, now)
            return FaultOutcome(vm.id if vm else None, vm.type.value if vm else None)
        if kind == "heartbeat_outage":
            duration = args.get("duration", 30.0)
            if isinstance(duration, bool) or not isinstance(duration, int | float) or not math.isfinite(duration) or not duration > 0:
                raise ParamError("fault.duration", f"{duration!r} is not allowed; allowed: > 0 seconds")
            self.channel.outage(now + duration)
            return FaultOutcome(facts={"duration": float(duration)})
        if kind == "node_failure":
            if self.placement is None:
                raise ParamError("fault", "node_failure needs a scenario with a cluster section")
            node = args.get("node")
            if node is None:
                node = int(np.argmax(self.placement.occupancy()))
            try:
                index = self.placement.node_position(node)
            except (KeyError, IndexError, TypeError, ValueError):
                n = self.placement.cluster.n
                raise ParamError(
                    "fault.node", f"{node!r} is not a node of this cluster; allowed: a node name or a position 0..{n - 1}"
                ) from None
            hit = self.placement.fail_node(index, now)
            name = self.placement.cluster.names[index]
            for vm_id in hit:
                if vm_id in cloud.vms:
                    cloud.fail(cloud.vms[vm_id], now, name)
            return FaultOutcome(node=name, facts={"vms": hit})
        raise ParamError("fault", f"{kind!r} is not a fault of the VM world; allowed: {', '.join(FAULT_KINDS)}")

    # -- processes --------------------------------------------------------------------------------------
    def _decisions(self):
        env = self.env
        params = self.controller.params  # a Mirror: plain values, kept current
        while True:
            yield env.timeout(params.DECISION_INTERVAL)
            now = env.now
            self.jobs.catch_up(now)
            control = self.controller.step(now, self.channel.flush())
            was_stuck = self.last_round is not None and self.last_round.stuck
            if control.stuck != was_stuck and control.action not in ("waiting_for_master", "master_recovery"):
                self.log(
                    "alert",
                    command="controller_stuck" if control.stuck else "controller_unstuck",
                    reason="no_active_worker",
                    value=json.dumps({"suspended": control.suspended}),
                )
            self.last_round = control
            self.recorder.append("decisions", decision_row(control))

    def _sampling(self):
        env = self.env
        run = Mirror(self.sections["run"])  # plain values, kept current: read every sample
        auto = self.controller.params
        jobs = self.jobs
        vms = self.cloud.vms
        master, pending, suspended_state, failed_state = VMType.MASTER, VMState.PENDING, VMState.SUSPENDED, VMState.FAILED
        running, shutting = AppState.RUNNING, AppState.SHUTTING_DOWN
        while True:
            yield env.timeout(run.sample_interval)
            now = env.now
            jobs.catch_up(now)
            booting = active = shutting_down = suspended = failed = total = 0
            master_state = "none"
            for vm in vms.values():
                state = vm.state
                if vm.type is master:
                    master_state = state.value + (f"/{vm.app.value}" if vm.app is not None and vm.alive else "")
                    continue
                total += 1
                if state is pending:
                    booting += 1
                elif state is suspended_state:
                    suspended += 1
                elif state is failed_state:
                    failed += 1
                elif vm.app is running and vm.alive:
                    active += 1
                elif vm.app is shutting and vm.alive:
                    shutting_down += 1
            arrived = jobs.arrived_total(now)
            in_service, threads = jobs.thread_counts(now)
            completed = jobs.started - in_service
            waits = jobs.take_waits()
            if waits:
                waits = np.array(waits)
                self._waits_pending.append(waits)  # into the histogram when it is read (counts: the order does not matter)
                self._waits_pending_n += len(waits)
                if self._waits_pending_n > self.WAITS_BATCH:
                    self._add_waits()
                p50, p95, p99 = sorted_linear_percentiles(np.sort(waits), (50, 95, 99))
            else:
                p50 = p95 = p99 = math.nan
            d = self.last_round
            self.recorder.append(
                "samples",
                {
                    "time": now,
                    "queue_length": jobs.queue_length(now),
                    "workers_booting": booting,
                    "workers_active": active,
                    "workers_shutting_down": shutting_down,
                    "workers_suspended": suspended,
                    "workers_failed": failed,
                    "workers_total": total,
                    "threads": threads,
                    "time_left": math.nan if d is None or d.time_left is None else float(d.time_left),
                    "band_low": auto.MIN_AVG_TIME,
                    "band_high": auto.MAX_AVG_TIME,
                    "arrivals": arrived - self._arrived_before,
                    "completions": completed - self._completed_before,
                    "arrived_total": arrived,
                    "completed_total": completed,
                    "in_service": in_service,
                    "wait_p50": p50,
                    "wait_p95": p95,
                    "wait_p99": p99,
                    "vm_seconds": self.cloud.vm_seconds(now),
                    "vm_seconds_logged": self.controller.vm_seconds(now),
                    "pending_pods": len(self.placement.pending) if self.placement is not None else 0,
                    "master_state": master_state,
                },
            )
            self._arrived_before = arrived
            self._completed_before = completed

    def estimate(self, until: float) -> Estimate:
        """What a run to ``until`` will cost (see :mod:`engine.core.budget`): arrivals at the pattern's peak rate."""
        w, run, auto, platform = (self.sections[k] for k in ("workload", "run", "autoscaler", "platform"))
        span = max(until - self.env.now, 0.0)
        if w.pattern == "trace":
            trace = self.jobs.arrivals.trace()
            covered = span * w.trace_speedup
            passes = covered / trace.span if w.trace_loop else min(covered, trace.span) / trace.span
            jobs = trace.total * w.rate * passes
            peak = jobs / span if span else 0.0
        else:
            peak = w.rate * peak_multiplier(w)
            jobs = peak * span
        workers = min(auto.MAX_WORKERS, math.ceil(peak * w.service_time / platform.worker_threads) + 1)
        samples = span / run.sample_interval
        heartbeats = (workers + 1) * span / platform.heartbeat_interval
        memory = samples * BYTES_PER_SAMPLE + (jobs * BYTES_PER_JOB_ROW if run.record_jobs else 0.0)
        return Estimate(until, jobs, samples, heartbeats, memory)

    # -- summary ----------------------------------------------------------------------------------------
    def summary(self, now: float) -> dict[str, Any]:
        """Headline figures at the end of the last advance (jobs counted up to ``now``, not at the last sample).

        A read: it changes nothing, so reading it between advances cannot change what happens next. Jobs that
        start at ``now`` itself start in the next advance (:meth:`settle`)."""
        rec = self.recorder
        jobs = self.jobs
        in_service = jobs.in_service(now)
        tl = np.asarray(rec.column("samples", "time_left"), dtype=float)
        lo = np.asarray(rec.column("samples", "band_low"), dtype=float)
        hi = np.asarray(rec.column("samples", "band_high"), dtype=float)
        measured = ~np.isnan(tl)
        outside = float(np.mean((tl[measured] < lo[measured]) | (tl[measured] > hi[measured]))) if measured.any() else math.nan
        actions = rec.column("decisions", "action")
        modes = self.sections["controller"]
        return {
            "jobs_arrived": jobs.known_arrivals(now),
            "jobs_completed": jobs.started - in_service,
            "jobs_in_service": in_service,
            "queue_at_end": jobs.known_queue_length(now),
            "wait_p50": self.waits.percentile(50),
            "wait_p95": self.waits.percentile(95),
            "wait_p99": self.waits.percentile(99),
            "vm_hours": self.cloud.vm_seconds(now) / 3600.0,
            "vm_hours_logged": self.controller.vm_seconds(now) / 3600.0,
            "policy": self.sections["policy"].kind,
            "scale_outs": actions.count("scale_out"),
            "scale_ins": actions.count("scale_in"),
            "master_recoveries": actions.count("master_recovery"),
            "share_outside_band": outside,
            "max_active_workers": max(rec.column("samples", "workers_active"), default=0),
            "pods_pending": len(self.placement.pending) if self.placement is not None else 0,
            "unplaceable": self._unplaceable(),
            "seed_exact": bool(modes.seed_exact),
            "extensions": json.dumps(modes.extensions_on),
        }

    def _unplaceable(self) -> str:
        """Why pods wait for a node, from the latest pending decision's breakdown ("" when none waits)."""
        if self.placement is None or not self.placement.pending:
            return ""
        reasons = self.placement.pending_reasons()
        shown = ", ".join(f"{reason} on {count} node(s)" for reason, count in reasons.items())
        return f"no node can host the worker pod ({shown})" if shown else "no node can host the worker pod"
