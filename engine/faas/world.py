"""The function world as a :class:`~engine.core.platform.Platform`: function deployments on a shared cluster.

It wires the placement service (the cluster and scheduler every platform shares), the request flow
(:mod:`engine.faas.flow`) and one scaler per function; deploys each function's ``min_replicas`` at t=0; runs each
scaler every round and samples every ``run.sample_interval``; applies its fault (``node_drain``); summarises per
function. Every request generated ends up in exactly one status (completed, in flight, queued, rejected), at every
sample and at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from engine.autoscaling.functions import MEASURES
from engine.autoscaling.registry import FUNCTION_SCALERS, make_function_scaler
from engine.cluster.model import Pod
from engine.core.budget import BYTES_PER_SAMPLE, Estimate
from engine.core.clock import timeout_at
from engine.core.events import EventLog
from engine.core.params import Mirror, ParamError, Section
from engine.core.platform import FaultOutcome
from engine.core.quantiles import sorted_linear_percentiles
from engine.core.recorder import Recorder
from engine.faas.batchsample import BatchSampler, SampleCursor
from engine.faas.flow import REASONS, TAIL, RequestFlow
from engine.faas.measured import load_measurements
from engine.faas.params import FUNCTION_SLOTS
from engine.faas.runtime import FunctionRuntime
from engine.faas.tables import DEPLOYMENTS, FUNCTION_SAMPLES, INVOCATIONS, STATUSES, TABLES, UTILIZATION
from engine.faas.utilrows import NodeCapacities
from engine.nodescaling.controller import KEY as NODE_AUTOSCALER
from engine.nodescaling.controller import NodeScaling, fleet_nodes
from engine.scheduling.service import PlacementService
from engine.workload.requests import shape_peak

if TYPE_CHECKING:
    import pandas as pd

FAULT_KINDS: dict[str, str] = {
    "node_drain": "a node is cordoned and drained (node=NAME or position, default the one with most replicas): its replicas "
    "take no new requests, finish what they hold and go; scalers replace them elsewhere",
}

Stream = Callable[[str], np.random.Generator]
_STATUS = np.array(STATUSES, dtype=object)
_REASON_OF = {code: i for i, code in enumerate(REASONS)}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


class FunctionWorld:
    """Function deployments behind a gateway, placed by the shared scheduler, scaled per function."""

    fault_kinds = FAULT_KINDS
    tables = TABLES
    sample_table = "function_samples"

    def __init__(self, env: simpy.Environment, sections: Mapping[str, Section], recorder: Recorder, stream: Stream, log: EventLog):
        self.env = env
        self.sections = sections
        self.recorder = recorder
        self.log = log
        run = sections["run"]
        self.slots = [k for k in FUNCTION_SLOTS if k in sections]
        if not self.slots:
            raise ParamError("fn1", "the functions world needs at least one function; allowed: a section fn1 (.. fn6)")
        self.placement = PlacementService(
            sections["cluster"],
            sections["scheduler"],
            stream("placement"),
            recorder,
            history=run.breakdown_history,
            extra_nodes=fleet_nodes(sections),
        )
        self.flow = RequestFlow(sections, self.slots, self.placement, load_measurements(), recorder, stream)
        self.nodescaling = NodeScaling(env, sections, self.placement, recorder, stream, self) if NODE_AUTOSCALER in sections else None
        recorder.provide_columns(INVOCATIONS, self.invocation_columns)
        for spec in (DEPLOYMENTS, FUNCTION_SAMPLES, UTILIZATION):
            recorder.declare(spec)
        self._sample_row = recorder.appender("function_samples")  # positional, in FUNCTION_SAMPLES's column order
        run_now = Mirror(run)  # sample_interval, read every sample
        self._seq = 0
        # the first sample's timer: set after the scalers' first ones (its stamp's sequence is infinite)
        self.samples = SampleCursor([rt.key for rt in self.flow.functions], lambda: run_now.sample_interval, self._stamp)
        self._batch: BatchSampler | None = None
        self._asleep: dict[str, simpy.Event] = {}  # scaler timers waiting for their function's parameters to change

    # -- Platform -----------------------------------------------------------------------------------------
    def start(self) -> None:
        if self.nodescaling is not None:
            self.nodescaling.start()  # the groups' initial nodes are up before the first replicas are placed
        flow = self.flow
        for rt in flow.functions:
            s = rt.section
            self.recorder.append(
                "deployments",
                {
                    "function": rt.name,
                    "slot": rt.key,
                    "images": ",".join(s.images),
                    "cpu_millis": s.cpu_millis,
                    "memory": s.memory_mib * 2**20,
                    "concurrency": s.concurrency,
                    "load_balancer": s.load_balancer,
                    "simulator": s.simulator,
                    "scaler": s.scaler,
                    "min_replicas": s.min_replicas,
                    "max_replicas": s.max_replicas,
                    "arrival": s.arrival,
                    "rate": s.rate,
                },
            )
            flow.scale_to(rt, s.min_replicas, 0.0, "deploy", "min_replicas at deployment")
            self.env.process(self._scaling(rt))
        self.samples.due = self.env.now + self.samples.interval
        if not flow.faas.record_utilization and all(rt.per_request for rt in flow.functions):
            self._batch = BatchSampler(flow, self.recorder, self.samples)  # samples are a function of the request rows
            self._batch.start(self.env.now)
            flow.after = self._batch.take
        else:
            flow.sampler = self._sample_due
            flow.next_sample = self.samples.due

    def settle(self, now: float) -> None:
        self.flow.catch_up(now)

    def params_changed(self, applied: Mapping[str, Any]) -> None:
        now = self.env.now
        self.flow.catch_up(now)
        if self.nodescaling is not None:
            self.nodescaling.params_changed(applied, now)
        for rt in self.flow.functions:
            names = {k.split(".", 1)[1] for k in applied if k.split(".", 1)[0] == rt.key}
            if not names:
                continue
            wake = self._asleep.pop(rt.key, None)
            if wake is not None:
                wake.succeed()
            rt.arrivals.changed(names, now, rt.buf, rt.bi)
            if "scaler" in names:
                rt.scaler = make_function_scaler(rt.section, self.sections)
            if rt.scaler is None and not rt.per_request and names & {"min_replicas", "max_replicas", "scaler"}:
                self.flow.scale_to(rt, rt.spec.min_replicas, now, "none", "fixed at min_replicas")
            elif names & {"max_replicas"} and len(rt.counted()) > rt.spec.max_replicas:
                self.flow.scale_to(rt, rt.spec.max_replicas, now, "bounds", "max_replicas lowered")
        if self._batch is not None and (self.flow.faas.record_utilization or not all(rt.per_request for rt in self.flow.functions)):
            self._batch.stop()  # from now on one sample at a time (for the rest of the run)
            self._batch = None
            self.flow.after = None
            self.flow.sampler = self._sample_due
            self.flow.next_sample = self.samples.due

    def check_live(self, key: str, trial: Any) -> None:
        if self.nodescaling is not None:
            self.nodescaling.check_live(key, trial)

    def fault_targets(self, kind: str) -> list[int]:
        return []

    def inject(self, kind: str, args: Mapping[str, Any], cause: str, rng: np.random.Generator) -> FaultOutcome:
        if kind != "node_drain":
            raise ParamError("fault", f"{kind!r} is not a fault of the functions world; allowed: {', '.join(FAULT_KINDS)}")
        now = self.env.now
        self.flow.catch_up(now)
        node = args.get("node")
        if node is None:
            node = int(np.argmax(self.placement.occupancy()))
        try:
            index = self.placement.node_position(node)
        except (KeyError, IndexError):
            raise ParamError(
                "fault.node", f"{node!r} is not a node; allowed: a node name or a position 0..{self.placement.cluster.n - 1}"
            ) from None
        self.placement.cluster.schedulable[index] = False
        hit = []
        for rt in self.flow.functions:
            for r in [r for r in rt.counted() if r.node_index == index]:
                self.flow.drain(r, now, "fault")
                hit.append(r.id)
            if rt.scaler is None and not rt.per_request and len(rt.counted()) < rt.spec.min_replicas:
                self.flow.scale_to(rt, rt.spec.min_replicas, now, "fault", "replacing drained replicas")
        return FaultOutcome(node=self.placement.cluster.names[index], facts={"replicas": hit})

    # -- NodeHost: what the node autoscaler asks of the world ------------------------------------------------
    def waiting_pods(self, now: float) -> list[Pod]:
        """Replicas waiting for a node (the placement service's pending pods), oldest first."""
        self.flow.catch_up(now)
        return self.placement.pending_pods()

    def evict(self, node: int, now: float) -> int:
        """A node is drained: its replicas take no new requests and go when done; a new replica replaces each at once."""
        self.flow.catch_up(now)
        moved = 0
        for rt in self.flow.functions:
            for r in [r for r in rt.counted() if r.node_index == node]:
                self.flow.drain(r, now, "node_scale_down")
                self.flow.create(rt, now, "evicted")
                moved += 1
        return moved

    def capacity_added(self, node: int, now: float) -> None:
        """A node joined: the pending replicas are retried (oldest first) and bound."""
        self.flow.catch_up(now)
        self.flow.bind_retried(self.placement.retry_pending(now), now)

    # -- processes ----------------------------------------------------------------------------------------
    def _scaling(self, rt: FunctionRuntime):
        """The function's scaler rounds, every ``interval``. A ``per_request`` function has no rounds to run (the
        gateway scales it): its timer sleeps until the function's parameters change, then resumes on the same grid."""
        env, flow = self.env, self.flow
        tick = env.now
        interval = None
        while True:
            if interval is None:
                interval = rt.spec.scale_interval or FUNCTION_SCALERS[rt.spec.scaler].interval or 10.0
            tick += interval
            stamp = self._stamp(env.now)
            yield timeout_at(env, tick)
            now = env.now
            if rt.scaler is None and rt.per_request:
                # the next round's interval is read now, as the round's timer would; rounds before the change did nothing
                interval = rt.spec.scale_interval or FUNCTION_SCALERS[rt.spec.scaler].interval or 10.0
                wake = self._asleep[rt.key] = env.event()
                yield wake
                while tick + interval < env.now:
                    tick += interval
                continue
            interval = None
            if rt.scaler is None:
                if not rt.per_request and len(rt.counted()) < rt.spec.min_replicas:
                    self._round_catch_up(now, stamp)
                    flow.scale_to(rt, rt.spec.min_replicas, now, "none", "fixed at min_replicas")
                continue
            self._round_catch_up(now, stamp)
            obs = flow.observe(rt, now, getattr(rt.scaler, "reads", MEASURES))
            verdict = rt.scaler.decide(obs)
            flow.record_decision(rt, now, obs, verdict)
            if verdict.desired is not None:
                flow.scale_to(rt, verdict.desired, now, rt.spec.scaler, verdict.reason)

    def _stamp(self, t: float) -> tuple[float, int]:
        """When a timer of this world was set, in the order simpy would queue it (time, then sequence)."""
        self._seq += 1
        return (t, self._seq)

    def _round_catch_up(self, now: float, stamp: tuple[float, int]) -> None:
        """A scaler round at ``now`` catches up; the sample due at ``now`` comes first if its timer was set first (a
        2 s KPA round at a sample's time follows the sample, a 10 s round precedes it), as with a simpy timer each."""
        flow = self.flow
        flow.catch_up(now)
        if flow.next_sample == now and self.samples.stamp < stamp:
            self._sample_due(now)

    def _sample_due(self, now: float) -> None:
        """The sample at ``now``: taken by the flow's catch-up once everything at ``now`` has happened, or by a scaler
        round at ``now`` whose timer was set after the sample's."""
        self._sample(now, now - self.samples.last, self.flow.faas.record_utilization)
        self.flow.next_sample = self.samples.taken(now)

    def _sample(self, now: float, interval: float, utilization: bool) -> None:
        flow = self.flow
        util: list[tuple] = []  # utilisation rows (engine.faas.utilrows), in the table's column order
        add = self._sample_row
        forget = now - max(flow.faas.metrics_window, interval)
        rps_of = (lambda k: k / interval) if interval > 0 else (lambda k: math.nan)
        nodes = NodeCapacities(self.placement.cluster, not flow.compiled_ready) if utilization else None  # arrays: compiled rows
        unfinished = flow.unfinished_of  # Replica.unfinished, or its compiled twin
        for rt in flow.functions:
            tail, lo = rt.c_rep, rt.sampled
            if len(tail) > lo:  # rows since the last sample (the tail's end): their response percentiles
                p50, p95, p99 = flow.percentiles_of(tail, rt.c_arr, rt.c_start, rt.c_exec, lo)  # or its compiled twin
                if len(tail) >= TAIL:
                    rt.flush()
                else:
                    rt.sampled = len(tail)
            else:  # a quiet function: no percentiles
                p50 = p95 = p99 = math.nan
            pending, starting, running, draining, placed = rt.states()  # as the batch sampler's state log has them
            in_flight = 0
            for r in rt.replicas.values():
                if r.last_end > now:  # all ended by now: nothing unfinished
                    in_flight += unfinished(r, now)
                if len(r.starts) > 4096:
                    r.trim(forget)
            if running > self.samples.max_running[rt.key]:
                self.samples.max_running[rt.key] = running
            generated = rt.generated
            arrivals = generated - self.samples.generated[rt.key]
            self.samples.generated[rt.key] = generated
            ncold = len(rt.cold)
            cold = ncold - rt.interval_cold
            rt.interval_cold = ncold
            add(
                (
                    now,
                    rt.name,
                    generated,
                    rt.dispatched - in_flight,
                    in_flight,
                    rt.waiting,
                    rt.rejected,
                    arrivals,
                    rps_of(arrivals),
                    cold,
                    p50,
                    p95,
                    p99,
                    pending,
                    starting,
                    running,
                    draining,
                    rt.replica_seconds_done + sum([now - p for p in placed]),  # sum(): compensated, as before
                )
            )
            if utilization:
                flow.replica_rows_of(nodes, rt, now, interval, util)  # utilrows.replica_rows, or its compiled twin
        if utilization:
            flow.node_rows_of(self.placement.cluster, nodes, now, util)  # utilrows.node_rows, or its compiled twin
            if util:
                self.recorder.extend("utilization", dict(zip(UTILIZATION.names, zip(*util, strict=True), strict=True)))

    def replica_seconds(self, rt: FunctionRuntime, now: float) -> float:
        """Replica lifetime so far (placed to removed), the cost measure."""
        return rt.replica_seconds_done + sum(now - r.placed_at for r in rt.replicas.values() if r.placed_at is not None)

    def estimate(self, until: float) -> Estimate:
        """What a run to ``until`` will cost (see :mod:`engine.core.budget`): requests at each function's peak rate.

        A request costs about what a job does (a few us, ~28 bytes at rest) and a sample per function about what a VM
        world sample does; replicas are not heartbeating VMs (no heartbeats).
        """
        span = max(until - self.env.now, 0.0)
        requests = 0.0
        for rt in self.flow.functions:
            s = rt.section
            if s.arrival == "trace":
                trace = rt.stream._trace_cursor().trace
                covered = span * s.trace_speedup
                passes = covered / trace.span if s.trace_loop else min(covered, trace.span) / trace.span
                requests += trace.total * s.rate * passes
            else:
                requests += s.rate * shape_peak(s) * (s.walk_max if s.walk_sigma > 0 else 1.0) * span
        samples = span / self.sections["run"].sample_interval * len(self.flow.functions)
        return Estimate(until, requests, samples, 0.0, samples * BYTES_PER_SAMPLE + requests * 28.0)

    # -- the invocations table ----------------------------------------------------------------------------
    def invocation_columns(self) -> dict[str, Any]:
        """Every request's row as numpy/pandas columns, statuses as of now (see :data:`engine.faas.tables.INVOCATIONS`)."""
        import pandas as pd

        now = self.env.now
        parts: list[dict[str, np.ndarray]] = []
        for rt in self.flow.functions:
            rep, arr, start, exe = rt.columns()
            q = [(a, code) for a, code in rt.gateway]
            q_arr = np.array([a for a, _ in q], dtype=np.float64)
            q_code = np.array([code for _, code in q], dtype=np.int32)
            n, m = len(rep), len(q)
            served = rep >= 0
            gw = np.zeros(n + m)
            if rt.gw_wait:
                rows = np.fromiter(rt.gw_wait.keys(), dtype=np.int64, count=len(rt.gw_wait))
                gw[rows] = np.fromiter(rt.gw_wait.values(), dtype=np.float64, count=len(rt.gw_wait))
            cold = np.zeros(n + m, dtype=bool)
            if rt.cold:
                cold[np.asarray(rt.cold, dtype=np.int64)] = True
            status = np.where(served, np.where(start + exe <= now, 0, 1), 3).astype(np.int8)
            q_status = np.where(q_code == 0, 2, 3).astype(np.int8)
            end = start + exe
            parts.append(
                {
                    "request": np.arange(n + m, dtype=np.int64),
                    "function": np.full(n + m, rt.name, dtype=object),
                    "replica": np.concatenate([rep, np.full(m, -1, dtype=np.int32)]),
                    "arrival": np.concatenate([arr, q_arr]),
                    "gateway_wait": np.concatenate([gw[:n], np.maximum(now - q_arr, 0.0) * (q_code == 0)]),
                    "start": np.concatenate([start, np.full(m, np.nan)]),
                    "execution": np.concatenate([exe, np.full(m, np.nan)]),
                    "end": np.concatenate([end, np.full(m, np.nan)]),
                    "cold_start": cold,
                    "status": np.concatenate([status, q_status]),
                    "reason": np.concatenate([np.where(served, 0, -rep), -q_code]).astype(np.int8),
                }
            )
        if not parts:
            return {c.name: np.zeros(0) for c in INVOCATIONS.columns}
        cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        replica = cat["replica"].astype(np.int64)
        served = replica >= 0
        # node of each replica id (fixed for its life), looked up as arrays: no Python work per row
        node_of = np.full(self.flow.next_id + 1, len(self.placement.cluster.names), dtype=np.int64)
        for rid, r in self.flow.by_id.items():
            if r.node_index >= 0:
                node_of[rid] = r.node_index
        node_names = np.array([*self.placement.cluster.names, None], dtype=object)
        node = node_names[np.where(served, node_of[np.where(served, replica, self.flow.next_id)], len(node_names) - 1)]
        arrival, gateway, start, end = cat["arrival"], cat["gateway_wait"], cat["start"], cat["end"]
        reasons = np.array(["", *REASONS.values()], dtype=object)
        return {
            "request": cat["request"],
            "function": pd.array(cat["function"], dtype="string"),
            "replica": pd.arrays.IntegerArray(np.where(served, replica, 0), ~served),
            "node": pd.array(node, dtype="string"),
            "arrival": arrival,
            "gateway_wait": gateway,
            "replica_wait": np.where(served, start - arrival - gateway, 0.0),
            "start": start,
            "execution": cat["execution"],
            "end": end,
            "response": end - arrival,
            "cold_start": cat["cold_start"],
            "status": pd.array(_STATUS[cat["status"]], dtype="string"),
            "reason": pd.array(reasons[cat["reason"]], dtype="string"),
        }

    def request_bytes(self) -> tuple[int, int]:
        """(bytes the request rows take at rest, requests stored): the columnar store's cost per request."""
        if self._batch is not None:
            self._batch.settle()  # the owed samples read the tail lists from their mark
        for rt in self.flow.functions:
            rt.flush()
        stored = sum(rt.stored_bytes() for rt in self.flow.functions)
        return stored, sum(rt.rows for rt in self.flow.functions)

    # -- summary ------------------------------------------------------------------------------------------
    def function_summary(self, now: float) -> pd.DataFrame:
        """One row per function: requests by status, p50/p95/p99 response of the completed, cold starts, replicas."""
        import pandas as pd

        return pd.DataFrame(self._function_rows(now))

    def _function_rows(self, now: float) -> list[dict[str, Any]]:
        """:meth:`function_summary`'s rows as dicts of plain Python values."""
        rows = []
        for rt in self.flow.functions:
            most = self.samples.max_running[rt.key] if self._batch is None else self._batch.max_running(rt)
            rep, arr, start, exe = rt.columns()
            served = rep >= 0
            done = served & (start + exe <= now)
            response = (start + exe - arr)[done]
            # np.percentile's numbers (engine.core.quantiles), sorted once: its partition at six ranks cost ~3x a sort
            p50, p95, p99 = sorted_linear_percentiles(np.sort(response), (50, 95, 99)) if len(response) else (math.nan,) * 3
            rows.append(
                {
                    "function": rt.name,
                    "scaler": rt.spec.scaler,
                    "generated": rt.generated,
                    "completed": int(done.sum()),
                    "in_flight": int((served & ~done).sum()),
                    "queued": rt.waiting,
                    "rejected": rt.rejected,
                    "cold_starts": len(rt.cold),
                    "response_p50": p50,
                    "response_p95": p95,
                    "response_p99": p99,
                    "replicas_now": sum(1 for r in rt.replicas.values() if r.state == "running"),
                    "replicas_max": max(most, sum(1 for r in rt.replicas.values() if r.state == "running")),
                    "replicas_created": sum(1 for r in self.flow.by_id.values() if r.rt is rt),
                    "replica_hours": self.replica_seconds(rt, now) / 3600.0,
                }
            )
        return rows

    def summary(self, now: float) -> dict[str, Any]:
        rows = self._function_rows(now)  # no DataFrame: the sums are the ones pandas takes (numpy's, over the rows)
        totals = {k: int(sum(row[k] for row in rows)) for k in ("generated", "completed", "in_flight", "queued", "rejected", "cold_starts")}
        return {
            "world": "functions",
            **{f"requests_{k}" if k != "cold_starts" else k: v for k, v in totals.items()},
            "replica_hours": float(np.sum(np.array([row["replica_hours"] for row in rows], dtype=np.float64))),
            # plain Python values, as a DataFrame's records are (a replica's placement time may be a numpy float)
            "functions": {row["function"]: {k: _plain(v) for k, v in row.items() if k != "function"} for row in rows},
            **(self.nodescaling.summary(now) if self.nodescaling is not None else {}),
        }
