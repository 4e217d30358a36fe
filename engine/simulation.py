"""The simulation: one simpy environment, one seed, one way to move time (:meth:`Simulation.advance`).

Everything a user does to a running simulation goes through :meth:`Simulation.set_params` and
:meth:`Simulation.inject`; both are stamped with the simulated time and kept as the run's inputs, so
:meth:`Simulation.recording` and :meth:`Simulation.replay` reproduce a session exactly. Nothing of the
wall clock enters simulated time.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import simpy

from . import rng as rngs
from .cloud import World
from .jobs import JobFlow
from .params import ParamError, Section, apply_checked
from .policies import make_policy
from .recorder import Recorder
from .scenario import Scenario, ScenarioError, load_scenario
from .vm_autoscaler import Decision, QueueDrainAutoscaler
from .vm_model import AppState, VMState, VMType
from .workload import ArrivalStream, ServiceTimes

RECORDING_FORMAT = "scalelab-recording"
RECORDING_VERSION = 1
FAULT_KINDS = ("master_crash", "worker_crash", "heartbeat_outage", "node_failure")
FAULT_TICK = 10.0  # seconds between two draws of the random crash processes
_FIXED_PER_RUN = ("run.seed", "run.record_jobs")


class Simulation:
    """A live simulation of the master/worker application, its cloud and its autoscaler."""

    def __init__(self, scenario: Scenario | str | None = None, seed: int | None = None):
        if scenario is None:
            scenario = load_scenario("default")
        elif isinstance(scenario, str):
            scenario = load_scenario(scenario)
        self.scenario = scenario
        self.sections: dict[str, Section] = scenario.build_sections()
        run = self.sections["run"]
        if seed is not None:
            apply_checked(self.sections, {"run.seed": seed})
        self.seed = run.seed
        self.env = simpy.Environment()
        self.recorder = Recorder()
        self.recorder.now = lambda: self.env.now
        self.inputs: list[dict[str, Any]] = []
        self._fault_rng = rngs.stream(self.seed, "faults")
        workload = self.sections["workload"]
        self.jobs = JobFlow(
            ArrivalStream(workload, rngs.stream(self.seed, "arrivals")),
            ServiceTimes(workload, rngs.stream(self.seed, "service")),
            record_jobs=run.record_jobs,
        )
        self.placement = None
        if "cluster" in self.sections:
            from .placement import PlacementService

            self.placement = PlacementService(self.sections["cluster"], self.sections["scheduler"], rngs.stream(self.seed, "placement"))
        self.world = World(
            self.env,
            self.sections["platform"],
            self.jobs,
            rngs.stream(self.seed, "platform"),
            rngs.stream(self.seed, "channel"),
            self.recorder.event,
            placement=self.placement,
        )
        self.autoscaler = QueueDrainAutoscaler(self.sections["autoscaler"], self.world, policy=make_policy(self.sections))
        self.last_decision: Decision | None = None
        self._completed_before = 0
        self._arrived_before = 0
        self._scheduled_faults: set[tuple] = set()
        self.autoscaler.start(0.0)
        self.env.process(self._decisions())
        self.env.process(self._sampling())
        self.env.process(self._random_faults())
        self._schedule_faults()

    # -- the one way time moves --------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.env.now

    def advance(self, until: float) -> Simulation:
        """Run the simulation up to simulated time ``until`` (no-op if it is not ahead)."""
        if until > self.env.now:
            self.env.run(until=until)
        return self

    def run(self) -> Simulation:
        """Advance to the end of the run (``run.duration``)."""
        return self.advance(self.sections["run"].duration)

    # -- inputs --------------------------------------------------------------------------
    def set_params(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change parameters now (``{"autoscaler.MAX_WORKERS": 5}``), atomically.

        Raises :class:`ParamError` on a value out of range or a combination that is not allowed (for
        example MIN_AVG_TIME >= MAX_AVG_TIME); then nothing changes. Changes take effect at the next
        decision (autoscaler), window (workload) or placement (scheduler), and are logged.
        """
        for key in changes:
            if key in _FIXED_PER_RUN:
                raise ParamError(key, "is fixed for a run; allowed: set it in the scenario and reset")
        applied = apply_checked(self.sections, changes)
        if "policy.kind" in applied:
            # a new policy starts with empty windows; the VM lifecycle rules carry on unchanged
            self.autoscaler.set_policy(make_policy(self.sections))
        if any(key.startswith("faults.") for key in applied):
            self._schedule_faults()  # times added live are scheduled; removing one does not cancel it
        for key, value in applied.items():
            self.recorder.event("param", command=key, detail=json.dumps(value))
        if applied:
            self.inputs.append({"time": self.now, "kind": "params", "changes": applied})
        return applied

    def inject(self, fault: str, **args: Any) -> str:
        """Inject a fault now: ``master_crash``, ``worker_crash`` (vm=None: a random worker),
        ``heartbeat_outage`` (duration=s), ``node_failure`` (node=None: the busiest node)."""
        if fault not in FAULT_KINDS:
            raise ParamError("fault", f"{fault!r} is not a fault; allowed: {', '.join(FAULT_KINDS)}")
        detail = self._fault(fault, **args)
        self.inputs.append({"time": self.now, "kind": "fault", "fault": fault, "args": args})
        return detail

    # -- outputs -------------------------------------------------------------------------
    def samples(self, start: int = 0) -> pd.DataFrame:
        """Fixed-interval samples from row ``start`` on (columns: ``recorder.SAMPLE_COLUMNS``)."""
        return self.recorder.samples_frame(start)

    def events(self, start: int = 0) -> pd.DataFrame:
        """The event log from row ``start`` on (columns: ``recorder.EVENT_COLUMNS``)."""
        return self.recorder.events_frame(start)

    def decisions(self, start: int = 0) -> pd.DataFrame:
        """One row per autoscaler decision (``recorder.DECISION_COLUMNS``)."""
        return self.recorder.decisions_frame(start)

    def jobs_frame(self) -> pd.DataFrame | None:
        """One row per started job (``run.record_jobs`` only); ``aborted`` rows were re-queued."""
        if self.jobs.rows is None:
            return None
        return pd.DataFrame(self.jobs.rows, columns=["job", "arrival", "start", "end", "worker", "aborted"])

    @property
    def sample_count(self) -> int:
        return self.recorder.sample_count

    @property
    def event_count(self) -> int:
        return self.recorder.event_count

    def summary(self) -> dict[str, Any]:
        """Headline figures of the run so far."""
        s = self.recorder.samples
        dec = self.recorder.decisions["action"]
        tl, lo, hi = (np.asarray(s[c], dtype=float) for c in ("time_left", "band_low", "band_high"))
        measured = ~np.isnan(tl)
        outside = float(np.mean((tl[measured] < lo[measured]) | (tl[measured] > hi[measured]))) if measured.any() else float("nan")
        h = self.recorder.waits
        return {
            "scenario": self.scenario.name,
            "seed": self.seed,
            "simulated_seconds": self.now,
            "jobs_arrived": s["arrived_total"][-1] if s["time"] else 0,
            "jobs_completed": s["completed_total"][-1] if s["time"] else 0,
            "queue_at_end": s["queue_length"][-1] if s["time"] else 0,
            "wait_p50": h.percentile(50),
            "wait_p95": h.percentile(95),
            "wait_p99": h.percentile(99),
            "vm_hours": self.autoscaler.vm_seconds(self.now) / 3600.0,
            "policy": self.sections["policy"].kind,
            "scale_outs": dec.count("scale_out"),
            "scale_ins": dec.count("scale_in"),
            "master_recoveries": dec.count("master_recovery"),
            "share_outside_band": outside,
            "max_active_workers": max(s["workers_active"], default=0),
        }

    # -- recording and replay --------------------------------------------------------------
    def recording(self) -> dict[str, Any]:
        """Inputs, not pixels: the scenario, the seed, every change with its time, and a digest to check."""
        return {
            "format": RECORDING_FORMAT,
            "version": RECORDING_VERSION,
            "scenario": self.scenario.to_dict(),
            "seed": self.seed,
            "inputs": json.loads(json.dumps(self.inputs)),
            "until": self.now,
            "samples_sha256": frame_digest(self.samples()),
        }

    @classmethod
    def replay(cls, recording: Mapping[str, Any], verify: bool = True) -> Simulation:
        """Rebuild a recorded session: same scenario and seed, the same inputs at the same times."""
        rec = check_recording(recording)
        sim = cls(Scenario.from_dict(rec["scenario"], origin="recording.scenario"), seed=rec["seed"])
        for item in rec["inputs"]:
            sim.advance(item["time"])
            if item["kind"] == "params":
                sim.set_params(item["changes"])
            else:
                sim.inject(item["fault"], **item.get("args", {}))
        sim.advance(rec["until"])
        if verify and rec.get("samples_sha256") and frame_digest(sim.samples()) != rec["samples_sha256"]:
            raise ScenarioError("recording: samples_sha256: the replay differs from the recorded session")
        return sim

    # -- processes -----------------------------------------------------------------------
    def _decisions(self):
        env = self.env
        params = self.sections["autoscaler"]
        while True:
            yield env.timeout(params.DECISION_INTERVAL)
            now = env.now
            self.jobs.catch_up(now)
            decision = self.autoscaler.step(now, self.world.flush_heartbeats())
            self.last_decision = decision
            self.recorder.decision(
                {
                    "time": now,
                    "action": decision.action,
                    "time_left": _nan(decision.time_left),
                    "avg_queue": _nan(decision.avg_queue),
                    "avg_time": _nan(decision.avg_time),
                    "threads": decision.threads,
                    "active": decision.active,
                    "suspended": decision.suspended,
                    "starting": decision.starting,
                    "band_low": decision.band_low,
                    "band_high": decision.band_high,
                    "load": _nan(decision.load),
                    "commands": len(decision.commands),
                    "policy": decision.policy or "",
                    "metric": _nan(decision.metric),
                    "target": _nan(decision.target),
                    "desired": decision.desired if decision.desired is not None else -1,
                }
            )

    def _sampling(self):
        env = self.env
        run = self.sections["run"]
        auto = self.sections["autoscaler"]
        jobs = self.jobs
        while True:
            yield env.timeout(run.sample_interval)
            now = env.now
            jobs.catch_up(now)
            counts = {"booting": 0, "active": 0, "shutting_down": 0, "suspended": 0, "failed": 0, "total": 0}
            master_state = "none"
            for vm in self.world.vms.values():
                if vm.type is VMType.MASTER:
                    master_state = vm.state.value + (f"/{vm.app.value}" if vm.app is not None and vm.alive else "")
                    continue
                counts["total"] += 1
                if vm.state is VMState.PENDING:
                    counts["booting"] += 1
                elif vm.state is VMState.SUSPENDED:
                    counts["suspended"] += 1
                elif vm.state is VMState.FAILED:
                    counts["failed"] += 1
                elif vm.app is AppState.RUNNING and vm.alive:
                    counts["active"] += 1
                elif vm.app is AppState.SHUTTING_DOWN and vm.alive:
                    counts["shutting_down"] += 1
            arrived = jobs.arrived_total(now)
            in_service = jobs.in_service(now)
            completed = jobs.started - in_service
            waits = np.asarray(jobs.take_waits())
            self.recorder.waits.add(waits)
            if len(waits):
                p50, p95, p99 = np.percentile(waits, [50, 95, 99]).tolist()
            else:
                p50 = p95 = p99 = math.nan
            d = self.last_decision
            self.recorder.sample(
                {
                    "time": now,
                    "queue_length": jobs.queue_length(now),
                    "workers_booting": counts["booting"],
                    "workers_active": counts["active"],
                    "workers_shutting_down": counts["shutting_down"],
                    "workers_suspended": counts["suspended"],
                    "workers_failed": counts["failed"],
                    "workers_total": counts["total"],
                    "threads": jobs.accepting_threads(),
                    "time_left": _nan(d.time_left) if d is not None else math.nan,
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
                    "vm_seconds": self.autoscaler.vm_seconds(now),
                    "pending_pods": len(self.placement.pending) if self.placement is not None else 0,
                    "master_state": master_state,
                }
            )
            self._arrived_before = arrived
            self._completed_before = completed

    def _random_faults(self):
        """Seeded random crashes: one draw per FAULT_TICK for the master and for each live worker."""
        env = self.env
        faults = self.sections["faults"]
        rng = self._fault_rng
        while True:
            yield env.timeout(FAULT_TICK)
            p_master = -math.expm1(-faults.master_crash_rate * FAULT_TICK / 3600.0)
            p_worker = -math.expm1(-faults.worker_crash_rate * FAULT_TICK / 3600.0)
            if rng.random() < p_master:
                self._fault("master_crash", cause="random")
            workers = [vm for vm in self.world.vms.values() if vm.type is VMType.WORKER and vm.alive and vm.state is VMState.ACTIVE]
            if workers:
                for vm, u in zip(workers, rng.random(len(workers)), strict=True):
                    if u < p_worker:
                        self._fault("worker_crash", vm=vm.id, cause="random")

    def _schedule_faults(self) -> None:
        """Schedule the faults the ``faults`` section lists at given times (those not yet scheduled and not past)."""
        faults = self.sections["faults"]
        wanted = [("master_crash", t, {}) for t in faults.master_crash_at]
        wanted += [("worker_crash", t, {}) for t in faults.worker_crash_at]
        wanted += [("heartbeat_outage", start, {"duration": duration}) for start, duration in faults.heartbeat_outages]
        for kind, t, args in wanted:
            key = (kind, float(t), tuple(args.items()))
            if key in self._scheduled_faults or t < self.env.now:
                continue
            self._scheduled_faults.add(key)
            ev = self.env.timeout(t - self.env.now)
            ev.callbacks.append(lambda _e, kind=kind, args=args: self._fault(kind, cause="scheduled", **args))

    def _fault(self, kind: str, cause: str = "injected", **args: Any) -> str:
        now = self.env.now
        world = self.world
        detail = f"{cause}"
        vm = None
        if kind == "master_crash":
            vm = next((v for v in world.vms.values() if v.type is VMType.MASTER and v.alive), None)
            if vm is not None:
                world.crash(vm, now)
        elif kind == "worker_crash":
            wanted = args.get("vm")
            live = [v for v in world.vms.values() if v.type is VMType.WORKER and v.alive and v.state in (VMState.ACTIVE, VMState.PENDING)]
            if wanted is not None:
                vm = world.vms.get(int(wanted))
                if vm is None or vm.type is not VMType.WORKER:
                    raise ParamError("fault.vm", f"{wanted!r} is not a listed worker VM; allowed: {[v.id for v in live]}")
            elif live:
                vm = live[int(self._fault_rng.integers(len(live)))]
            if vm is not None:
                world.crash(vm, now)
        elif kind == "heartbeat_outage":
            duration = float(args.get("duration", 30.0))
            if not duration > 0:
                raise ParamError("fault.duration", f"{duration!r} is not allowed; allowed: > 0 seconds")
            world.outage_until = max(world.outage_until, now + duration)
            detail += f" duration={duration:g}s"
        elif kind == "node_failure":
            if self.placement is None:
                raise ParamError("fault", "node_failure needs a scenario with a cluster section")
            node = args.get("node")
            if node is None:
                occ = self.placement.occupancy()
                node = int(np.argmax(occ))
            hit = self.placement.fail_node(node, now)
            for vm_id in hit:
                if vm_id in world.vms:
                    world.fail(world.vms[vm_id], now, f"node {node} failed")
            detail += f" node={node} vms={hit}"
        self.recorder.event(
            "fault", vm=vm.id if vm is not None else None, vm_type=vm.type.value if vm is not None else None, command=kind, detail=detail
        )
        return detail


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def frame_digest(df: pd.DataFrame) -> str:
    """A stable digest of a DataFrame's values (identical frames, identical digests)."""
    h = hashlib.sha256()
    h.update(",".join(df.columns).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def check_recording(data: Any) -> dict[str, Any]:
    """Validate a recording's structure; raise :class:`ScenarioError` naming the field."""
    if not isinstance(data, Mapping):
        raise ScenarioError("recording: must be a JSON object")
    if data.get("format") != RECORDING_FORMAT:
        raise ScenarioError(f"recording: format: {data.get('format')!r} is not allowed; allowed: {RECORDING_FORMAT!r}")
    if data.get("version") != RECORDING_VERSION:
        raise ScenarioError(f"recording: version: {data.get('version')!r} is not supported; allowed: {RECORDING_VERSION}")
    for key, typ in (("scenario", Mapping), ("seed", int), ("inputs", list), ("until", int | float)):
        if not isinstance(data.get(key), typ) or isinstance(data.get(key), bool):
            raise ScenarioError(f"recording: {key}: missing or of the wrong type; allowed: {getattr(typ, '__name__', typ)}")
    last = 0.0
    for i, item in enumerate(data["inputs"]):
        if not isinstance(item, Mapping) or item.get("kind") not in ("params", "fault"):
            raise ScenarioError(f"recording: inputs[{i}].kind: allowed: 'params' or 'fault'")
        t = item.get("time")
        if not isinstance(t, int | float) or t < last or t > data["until"]:
            raise ScenarioError(f"recording: inputs[{i}].time: {t!r} is not allowed; allowed: non-decreasing times in [0, until]")
        last = t
        if item["kind"] == "params" and not isinstance(item.get("changes"), Mapping):
            raise ScenarioError(f"recording: inputs[{i}].changes: must be a mapping of section.NAME to values")
        if item["kind"] == "fault" and item.get("fault") not in FAULT_KINDS:
            raise ScenarioError(f"recording: inputs[{i}].fault: {item.get('fault')!r}; allowed: {', '.join(FAULT_KINDS)}")
    return dict(data)
