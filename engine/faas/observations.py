"""What the request flow's readers see: scaler observations, CPU use of replicas, and scaler decision rows.

:class:`Observations` holds these methods of :class:`engine.faas.flow.RequestFlow` (moved here to keep ``flow.py``
readable in one sitting; same code). It is a mixin: it reads the flow's ``faas`` section, ``placement`` service
and the ``function_decisions`` appender.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Any

from engine.autoscaling.functions import MEASURES, FunctionObservation
from engine.faas.runtime import FunctionRuntime, Replica

INF = math.inf
NAN = math.nan


class Observations:
    """Mixin of :class:`~engine.faas.flow.RequestFlow`: observations for scalers and utilisation, decision rows."""

    def observe(self, rt: FunctionRuntime, t: float, reads: frozenset[str] = MEASURES) -> FunctionObservation:
        """What ``rt``'s scaler sees at ``t`` (catch up first); of the costly per-replica measures only those in
        ``reads`` (the scaler's, :data:`~engine.autoscaling.functions.MEASURES`): a KPA round every 2 s reads no cpu."""
        window = self.faas.metrics_window
        ready = rt.ready
        busy, queued, queued_all = self.counts_of(ready, rt.replicas.values(), t)  # replica_counts, or its compiled twin
        if "cpu" in reads:
            cpu = tuple(self._cpu_request_share(r, t - window, t) for r in ready)
        else:
            cpu = (NAN,) * len(ready)
        pending = sum(1 for r in rt.replicas.values() if r.state in ("conceived", "pending", "starting"))
        invocations = rt.dispatched - queued_all
        recent = rt.exec_recent
        rps = (
            tuple(
                (bisect_right(r.starts, t) - bisect_left(r.starts, t - window))
                / min(window, max(t - (r.ready_at if r.ready_at < INF else t), 1e-9))
                for r in ready
            )
            if "rps" in reads
            else ()
        )
        return FunctionObservation(
            now=t,
            ready=tuple(r.id for r in ready),
            concurrency=tuple(r.threads for r in ready),
            busy=busy,
            queued=queued,
            cpu=cpu,
            pending=pending,
            gateway_queue=rt.waiting,
            invocations=invocations,
            arrivals=rt.generated - rt.rejected,
            last_request=rt.last_request,
            avg_execution=(sum(recent) / len(recent)) if recent else None,
            min_replicas=rt.spec.min_replicas,
            max_replicas=rt.spec.max_replicas,
            rps=rps,
        )

    def cpu_cores(self, r: Replica, t0: float, t1: float) -> float:
        """Cores ``r`` used on average over [t0, t1] (measured share of the device per running request)."""
        span = max(t1 - max(t0, r.placed_at if r.placed_at is not None else t0), 1e-9)
        return self.cores_when_busy(r, self.busy_of(r, t0, t1) / span)

    def _cpu_request_share(self, r: Replica, t0: float, t1: float) -> float:
        return self.cpu_cores(r, t0, t1) / (r.rt.spec.cpu_millis / 1000.0)

    def cores_when_busy(self, r: Replica, busy: float) -> float:
        """Cores ``r`` uses when ``busy`` (requests in service on average): its measured share of the node per request."""
        cores = int(self.placement.cluster.cpu_capacity[r.node_index]) / 1000.0  # a plain float: cheaper downstream
        return cores_used(r.resources[0], cores, busy)

    def record_decision(self, rt: FunctionRuntime, t: float, obs: FunctionObservation, verdict: Any) -> None:
        """A ``function_decisions`` row for a scaler round."""
        nan = math.nan
        self._decide(
            (
                t,
                rt.name,
                rt.spec.scaler,
                obs.running,
                obs.pending,
                obs.waiting,
                nan if verdict.metric is None else float(verdict.metric),
                nan if verdict.target is None else float(verdict.target),
                verdict.desired,
                verdict.reason,
            )
        )


def cores_used(share: float, node_cores: float, busy: float) -> float:
    """Cores a replica uses when ``busy`` (requests in service on average) on a node of ``node_cores``: its measured
    ``share`` of the node per request (negative: unmeasured, one core per request), no more than the node has."""
    return min(node_cores, busy * (share * node_cores if share >= 0 else 1.0))


def replica_counts(ready: list[Replica], live: Iterable[Replica], t: float) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """What a scaler round counts at ``t``: requests in service and queued per ready replica (:meth:`Replica.in_service`,
    :meth:`Replica.queued`), and queued on every replica in ``live`` (the reference of the compiled twin in
    :mod:`engine.faas._ready`, see :func:`engine.faas.ready_loop.chosen_ready`)."""
    return tuple(r.in_service(t) for r in ready), tuple(r.queued(t) for r in ready), sum(r.queued(t) for r in live)
