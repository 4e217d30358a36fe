"""Per-function scalers: what a function deployment's autoscaler sees (:class:`FunctionObservation`) and decides.

Two families, listed in :data:`engine.autoscaling.registry.FUNCTION_SCALERS`:

* **faas-sim's three scalers and OpenFaaS' idler**, written here over the function observation:
  :class:`RpsThresholdScaler` (``FaasRequestScaler``), :class:`AverageRpsScaler` (``AverageFaasRequestScaler``),
  :class:`QueuePerReplicaScaler` (``AverageQueueFaasRequestScaler``) and :class:`IdleScaler` (faas-idler plus the
  gateway's scale from zero).
* **the Kubernetes-style policies** of this package (HPA, KPA, KEDA, the seed's queue drain), unchanged: a
  :class:`PolicyScaler` turns the function observation into a :class:`~engine.autoscaling.base.ScalingObservation`
  (:meth:`FunctionObservation.scaling`) and reads the function's min/max and targets through an :class:`Overlay`
  on the shared ``hpa``/``kpa``/``keda`` sections (cluster-wide behaviour, per-function targets, as Knative's
  config-autoscaler and per-revision annotations, or an HPA object per deployment).

Scale-per-request (public FaaS clouds) decides per request, inside the platform's request flow: it has no
``decide`` here (``engine.faas.flow``).

faas-sim's arithmetic is reproduced while the function's ``faas_sim_exact`` is on (the default), and its oddities
are the documented switch: (1) ``FaasRequestScaler`` scales by ``int(scale_factor / 100 * scale_max)`` replicas,
which is 0 with its defaults (1 %, 20): it never scales unless scale_factor is raised, and it counts executions
started, which saturated replicas cap; off, the step is at least 1 and it counts requests arriving;
(2) ``AverageFaasRequestScaler`` compares invocations per replica *per alert window* with a target named requests
per second; off, per second; (3) both average scalers add ``desired - running`` replicas, ignoring those already
starting, so they overshoot during start-up; off, they aim the total at ``desired``. faas-sim's idler never acts
(``suspend`` calls ``scale_down`` without running the generator, and ``scale_down`` keeps one replica): the idler
here follows OpenFaaS (scale to zero after ``idle_timeout`` without requests; the gateway holds requests and
scales back to ``max(1, min_replicas)``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.autoscaling.base import ScalingObservation, ScalingPolicy
from engine.autoscaling.hpa import HPAPolicy

#: The per-replica measures of a :class:`FunctionObservation` that cost a pass over each ready replica's recent
#: requests: ``cpu`` (its use over the metrics window) and ``rps`` (requests it started per second). A scaler names
#: those it reads in ``reads``; the platform measures only those (``cpu`` not read is NaN per replica, ``rps`` not read
#: is empty). A scaler without ``reads`` (a plugin that does not say) is given every measure.
MEASURES = frozenset({"cpu", "rps"})
NO_MEASURES: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class FunctionObservation:
    """What a function's autoscaler sees at one round; the per-replica tuples follow ``ready``.

    ``ready``: running replicas (serving), in the order they became ready. ``concurrency``: worker threads of each
    (0: unbounded forking). ``busy``: requests in service on each; ``queued``: requests waiting in each replica's
    queue (the watchdog's). ``cpu``: each replica's cpu use over the metrics window as a fraction of its cpu request
    (the resource model). ``pending``: replicas conceived, scheduling or starting. ``gateway_queue``: requests the
    gateway holds (no replica ready). ``invocations`` / ``arrivals``: executions started and requests accepted so
    far (cumulative). ``last_request``: when the latest request arrived (None: none yet). ``avg_execution``: mean
    execution time of recent requests (s). ``min_replicas``/``max_replicas``: the deployment's bounds.
    """

    now: float
    ready: tuple[int, ...] = ()
    concurrency: tuple[int, ...] = ()
    busy: tuple[int, ...] = ()
    queued: tuple[int, ...] = ()
    cpu: tuple[float, ...] = ()
    pending: int = 0
    gateway_queue: int = 0
    invocations: int = 0
    arrivals: int = 0
    last_request: float | None = None
    avg_execution: float | None = None
    min_replicas: int = 1
    max_replicas: int = 20
    rps: tuple[float, ...] = ()  # requests per second each ready replica started over the metrics window (empty: none measured)

    def __post_init__(self) -> None:
        n = len(self.ready)
        if not len(self.concurrency) == len(self.busy) == len(self.queued) == len(self.cpu) == n:
            raise ValueError("concurrency, busy, queued and cpu need one value per ready replica")
        if self.rps and len(self.rps) != n:
            raise ValueError("rps needs one value per ready replica")

    @property
    def running(self) -> int:
        return len(self.ready)

    @property
    def replicas(self) -> int:
        """Replicas counted against the bounds: ready plus pending (draining ones are on their way out)."""
        return len(self.ready) + self.pending

    @property
    def waiting(self) -> int:
        """Requests waiting anywhere: in the gateway and in the replicas' queues."""
        return self.gateway_queue + sum(self.queued)

    def scaling(
        self, queue_history: tuple[int, ...] = (), band: tuple[float, float] = (10.0, 30.0), requests_target: float | None = None
    ) -> ScalingObservation:
        """The same round as the VM world's policies see one: replicas as workers, waiting requests as the queue.

        ``threads`` is the ready replicas' worker threads; ``busy`` per replica the requests in service; the
        queue (``queue_history``, newest last, or the waiting requests now) is every waiting request, so KPA's
        concurrency is in service plus waiting and KEDA's queue length the waiting requests. With
        ``requests_target`` (an HPA on requests per replica, a Pods metric of AverageValue) each replica's load
        is its requests per second over that target, to be compared with a 100 % target.
        """
        queue = queue_history or (self.waiting,)
        loads = self.cpu if requests_target is None else tuple(r / requests_target for r in (self.rps or (0.0,) * len(self.ready)))
        return ScalingObservation(
            now=self.now,
            active=self.ready,
            threads=int(sum(self.concurrency)),
            cpu=loads,
            busy=tuple(float(b) for b in self.busy),
            avg_time=self.avg_execution,
            queue=tuple(queue),
            pending=self.pending,
            starting=self.pending,
            worker_count=self.replicas,
            max_workers=self.max_replicas,
            band_low=band[0],
            band_high=band[1],
        )


@dataclass(frozen=True, slots=True)
class FunctionVerdict:
    """A scaler's answer: ``desired`` replicas (ready + pending; None: hold), its metric and target, and why."""

    desired: int | None
    reason: str = ""
    metric: float | None = None
    target: float | None = None

    @property
    def action(self) -> str:
        return "hold" if self.desired is None else "scale"


class FunctionScaler(Protocol):
    """Decides one function's replica count at each of its rounds (every ``interval`` seconds).

    ``reads`` (optional): which of :data:`MEASURES` its ``decide`` reads; without it the observation has them all.
    """

    name: str

    def decide(self, obs: FunctionObservation) -> FunctionVerdict: ...


class HPATarget:
    """The HPA's per-function targets: ``target_utilization`` in %, or 100 % of ``target_requests_per_replica``."""

    def __init__(self, fn: Any):
        self.fn = fn

    @property
    def target_utilization(self) -> int:
        return 100 if self.fn.hpa_metric == "requests" else self.fn.target_utilization

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)


class Overlay:
    """A section read through per-function overrides: ``Overlay(hpa, fn, {"min_replicas": "min_replicas"})``.

    Attributes named in ``names`` are read from ``override`` (under the mapped name), every other from ``base``;
    both are read at each access, so live changes to either apply at the next decision.
    """

    def __init__(self, base: Any, override: Any, names: Mapping[str, str]):
        self._base, self._override, self._names = base, override, dict(names)

    def __getattr__(self, name: str) -> Any:
        if name in self._names:
            return getattr(self._override, self._names[name])
        return getattr(self._base, name)


def _clamp(desired: int, low: int, high: int) -> int:
    return min(max(desired, low), high)


class RpsThresholdScaler:
    """faas-sim's ``FaasRequestScaler``: invocations per second since the last round against ``target_rps``.

    At or above the threshold it adds ``step`` replicas, below it removes ``step`` (never below max(1, min)).
    ``step = int(scale_factor / 100 * max_replicas)``. faas-sim counts executions *started*, which the replicas
    cap at their capacity, so a saturated deployment never reaches the threshold; with ``faas_sim_exact`` off it
    counts requests arriving at the gateway (as OpenFaaS' alert rule does) and the step is at least 1.
    """

    name = "rps_threshold"
    reads = NO_MEASURES

    def __init__(self, fn: Any):
        self.fn = fn
        self.last_invocations = 0
        self.last_time = 0.0

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        fn = self.fn
        interval = max(obs.now - self.last_time, 1e-9)
        count = obs.invocations if fn.faas_sim_exact else obs.arrivals
        rps = (count - self.last_invocations) / interval
        self.last_invocations, self.last_time = count, obs.now
        step = int(fn.scale_factor / 100 * fn.max_replicas)
        if not fn.faas_sim_exact:
            step = max(1, step)
        low, high = max(1, fn.min_replicas), fn.max_replicas
        current = obs.replicas
        if rps >= fn.target_rps:
            desired, why = _clamp(current + step, low, high), f"{rps:.3g} rps >= {fn.target_rps:g}: up by {step}"
        else:
            desired, why = _clamp(current - step, low, high), f"{rps:.3g} rps < {fn.target_rps:g}: down by {step}"
        return FunctionVerdict(None if desired == current else desired, why, rps, fn.target_rps)


def _faas_sim_average(fn: Any, obs: FunctionObservation, average: float, adjusted: float, target: float, what: str) -> FunctionVerdict:
    """The decision shared by faas-sim's two average scalers (reversal check, tolerance, then scale)."""
    running = obs.running
    desired = math.ceil(running * (average / target))
    updated = desired
    if obs.pending and desired > running:
        updated = math.ceil(running * (adjusted / target))
    ratio = average / target
    if desired > running and updated < running:
        return FunctionVerdict(None, f"{what} {average:.3g}: reversed by {obs.pending} pending replica(s)", average, target)
    if 1 - fn.tolerance <= ratio < 1 or 1 < ratio < 1 + fn.tolerance or ratio == 1:
        return FunctionVerdict(None, f"{what} {average:.3g} within tolerance of {target:g}", average, target)
    if fn.faas_sim_exact:
        total = obs.replicas + (desired - running)  # faas-sim adds desired - running, ignoring pending replicas
    else:
        total = desired
    total = _clamp(total, max(1, fn.min_replicas), fn.max_replicas)
    verdict = None if total == obs.replicas else total
    return FunctionVerdict(verdict, f"{what} {average:.3g} / target {target:g}: {desired} wanted", average, target)


class AverageRpsScaler:
    """faas-sim's ``AverageFaasRequestScaler``: invocations per running replica against ``target_average_rps``."""

    name = "average_rps"
    reads = NO_MEASURES

    def __init__(self, fn: Any):
        self.fn = fn
        self.last_invocations = 0
        self.last_time = 0.0

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        fn = self.fn
        invocations = obs.invocations - self.last_invocations
        window = max(obs.now - self.last_time, 1e-9)
        self.last_invocations, self.last_time = obs.invocations, obs.now
        if obs.running == 0:
            return FunctionVerdict(None, "no running replica")
        per = 1.0 if fn.faas_sim_exact else window  # faas-sim: per window, not per second
        average = invocations / per / obs.running
        adjusted = invocations / per / (obs.running + obs.pending)
        return _faas_sim_average(fn, obs, average, adjusted, fn.target_average_rps, "invocations per replica")


class QueuePerReplicaScaler:
    """faas-sim's ``AverageQueueFaasRequestScaler``: the median replica queue (rounded up) against ``target_queue``."""

    name = "queue_per_replica"
    reads = NO_MEASURES

    def __init__(self, fn: Any):
        self.fn = fn

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        if obs.running == 0:
            return FunctionVerdict(None, "no running replica")
        queues = list(obs.queued)
        average = int(math.ceil(np.median(queues)))
        adjusted = int(math.ceil(np.median(queues + [0] * obs.pending)))
        return _faas_sim_average(self.fn, obs, float(average), float(adjusted), self.fn.target_queue, "median replica queue")


class IdleScaler:
    """OpenFaaS scale to zero: after ``idle_timeout`` s without a request, zero replicas; else at least max(1, min).

    (The gateway scales a function at zero back up when a request arrives; ``engine.faas.flow``.)
    """

    name = "scale_to_zero"
    reads = NO_MEASURES

    def __init__(self, fn: Any):
        self.fn = fn

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        fn = self.fn
        if obs.replicas == 0:
            return FunctionVerdict(None, "at zero: the gateway wakes it")
        idle = obs.now - (obs.last_request if obs.last_request is not None else 0.0)
        if idle >= fn.idle_timeout and obs.waiting == 0 and sum(obs.busy) == 0:
            return FunctionVerdict(0, f"idle for {idle:.0f} s >= {fn.idle_timeout:g} s", idle, fn.idle_timeout)
        floor = max(1, fn.min_replicas)
        if obs.replicas < floor:
            return FunctionVerdict(floor, f"below min {floor}", idle, fn.idle_timeout)
        return FunctionVerdict(None, f"active ({idle:.0f} s since the last request)", idle, fn.idle_timeout)


class PolicyScaler:
    """One of the package's policies (HPA, KPA, KEDA, queue drain) deciding a function's replica count."""

    def __init__(self, name: str, policy: ScalingPolicy, fn: Any, history: int = 3):
        self.name = name
        self.policy = policy
        self.fn = fn
        self.queue_history: deque[int] = deque(maxlen=history)

    @property
    def reads(self) -> frozenset[str]:
        """The HPA reads each replica's cpu, or its requests per second (``hpa_metric: requests``); the other policies
        (KPA, KEDA, queue drain) read counts of requests only."""
        if not isinstance(self.policy, HPAPolicy):
            return NO_MEASURES
        return frozenset({"rps"}) if self._requests_target() is not None else frozenset({"cpu"})

    def _requests_target(self) -> float | None:
        return self.fn.target_requests_per_replica if self.name == "hpa" and self.fn.hpa_metric == "requests" else None

    def decide(self, obs: FunctionObservation) -> FunctionVerdict:
        self.queue_history.append(obs.waiting)
        band = (self.fn.drain_band_low, self.fn.drain_band_high)
        requests = self._requests_target()
        verdict = self.policy.decide(obs.scaling(tuple(self.queue_history), band, requests))
        desired = verdict.desired
        if desired is not None:
            desired = _clamp(desired, self.fn.min_replicas, self.fn.max_replicas)
            if desired == obs.replicas:
                desired = None
        return FunctionVerdict(desired, verdict.reason or verdict.action, verdict.metric, verdict.target)
