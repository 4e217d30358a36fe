"""Scaling policies: the swappable decision step of the VM autoscaler.

Specs: ``shared/specs/vm-autoscaler.md`` (queue drain) and ``shared/specs/autoscalers-and-kube-scoring.md``
section 2 (HPA, KPA, KEDA). The controller (:mod:`engine.vm_autoscaler`) keeps everything else and shares
it between policies: the per-VM lifecycle rules, master first, the time-outs, MAX_WORKERS, and turning a
wanted worker count into commands (scale-out resumes suspended workers first, then CREATEs; scale-in sends
an app SHUTDOWN to the last workers of the active list, which are suspended once drained). A policy only
answers "how many workers now?" from a :class:`ScalingObservation`, in a plain method: no simpy.

The Kubernetes / Knative vocabulary on the master/worker application:

* a pod (replica) is a worker VM. ``replicas`` counts the *serving* workers (ACTIVE, newest heartbeat
  RUNNING, not told to SHUT DOWN) plus the *pending* ones (booting, resuming, initialising): the pods that
  are not ready yet. Workers draining after a SHUTDOWN are pods being deleted and are ignored;
* a worker's cpu utilisation is busy threads / threads: its request is the whole VM;
* Knative's request concurrency is the jobs in service (busy threads) plus the jobs waiting in the master's
  queue, which the activator would hold;
* KEDA's queue length is the master's queue length;
* every policy ticks at the controller's decision rounds (``autoscaler.DECISION_INTERVAL``), in place of
  the HPA's 15 s sync period and the KPA's 2 s tick.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import param

from engine.params import AutoscalerParams, ParamError, Section, register_section

POLICY_KINDS = ["queue_drain", "hpa", "kpa", "keda"]
SCALING_ACTIONS = ("not_measured", "hold", "scale_in", "scale_out")
SELECT_POLICIES = ["Max", "Min", "Disabled"]
CONCURRENCY_TARGET_DEFAULT = 100.0  # Knative's container-concurrency-target-default, before any worker reported threads


def _default(name: str):
    return AutoscalerParams.param[name].default


# ---- observation and verdict -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScalingObservation:
    """What the controller saw in one scaling round; the per-worker tuples follow ``active``.

    ``active``: ACTIVE workers, not being deleted, newest heartbeat RUNNING, in the cloud's order (the
    seed's active list: it includes ``draining`` workers that were told to SHUT DOWN but still report
    RUNNING). ``threads`` and ``avg_time`` are the seed's sum and mean over ``active``; ``cpu`` is each
    one's latest cpu load and ``busy`` its busy threads (cpu x threads). ``queue``: the master's buffered
    queue lengths, newest last. ``pending``: workers on their way to serve (booting, resuming,
    initialising). ``suspended``: suspended workers that can be resumed. ``starting``: workers whose last
    command is CREATE or RESUME (the seed's count). ``band_low``/``band_high``/``window``: the seed's
    MIN_AVG_TIME, MAX_AVG_TIME and MIN_MEASURE_LOAD_HB.
    """

    now: float
    active: tuple[int, ...] = ()
    threads: int = 0
    cpu: tuple[float, ...] = ()
    busy: tuple[float, ...] = ()
    avg_time: float | None = None
    queue: tuple[int, ...] = ()
    draining: tuple[int, ...] = ()
    pending: int = 0
    suspended: int = 0
    starting: int = 0
    worker_count: int = 0
    max_workers: int = _default("MAX_WORKERS")
    interval: float = _default("DECISION_INTERVAL")
    band_low: float = _default("MIN_AVG_TIME")
    band_high: float = _default("MAX_AVG_TIME")
    window: int = _default("MIN_MEASURE_LOAD_HB")

    def __post_init__(self) -> None:
        if not len(self.cpu) == len(self.busy) == len(self.active):
            raise ValueError("cpu and busy need one value per active worker")
        if not set(self.draining) <= set(self.active):
            raise ValueError("draining workers are a subset of the active ones")

    @property
    def serving(self) -> tuple[int, ...]:
        """Active workers not told to SHUT DOWN: the ready pods."""
        return tuple(w for w in self.active if w not in self.draining)

    def _serving_values(self, values: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(v for w, v in zip(self.active, values, strict=True) if w not in self.draining)

    @property
    def serving_cpu(self) -> tuple[float, ...]:
        return self._serving_values(self.cpu)

    @property
    def serving_busy(self) -> tuple[float, ...]:
        return self._serving_values(self.busy)

    @property
    def replicas(self) -> int:
        """The current replica count: serving plus pending workers."""
        return len(self.serving) + self.pending

    @property
    def room(self) -> int:
        """Most workers a scale-out can add: every resumable one plus CREATEs up to MAX_WORKERS."""
        return self.suspended + max(0, self.max_workers - self.worker_count)


@dataclass(frozen=True, slots=True)
class ScalingVerdict:
    """A policy's answer: ``desired`` replicas (None: hold or not measured) and its figures for the record.

    ``action`` is one of :data:`SCALING_ACTIONS`; ``metric`` is the measured value the policy compares with
    ``target`` (queue drain: time_left in s; HPA: cpu utilisation in %; KPA: concurrency per ready worker;
    KEDA: queue length).
    """

    action: str
    desired: int | None = None
    metric: float | None = None
    target: float | None = None
    time_left: float | None = None
    avg_queue: float | None = None
    utilisation: float | None = None
    concurrency: float | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.action not in SCALING_ACTIONS:
            raise ValueError(f"unknown action {self.action!r}")

    @classmethod
    def toward(cls, obs: ScalingObservation, desired: int, **figures) -> ScalingVerdict:
        """The verdict for ``desired`` replicas, its action read from the change against ``obs.replicas``."""
        current = obs.replicas
        action = "scale_out" if desired > current else "scale_in" if desired < current else "hold"
        return cls(action, desired, **figures)

    @classmethod
    def not_measured(cls, reason: str) -> ScalingVerdict:
        return cls("not_measured", reason=reason)


@runtime_checkable
class ScalingPolicy(Protocol):
    """Decides the worker count of one scaling round.

    ``seed_scale_in``: how the controller shrinks to ``desired``. True is the seed's accounting: workers
    already told to SHUT DOWN but still reporting RUNNING count as active, and ``replicas - desired``
    workers are picked from the end of the whole active list. False is Kubernetes': draining workers are
    pods being deleted (ignored), and pending workers are the first to go, as a ReplicaSet deletes
    not-ready pods first; they cannot be cancelled here, so only the excess beyond them is shut down
    among the serving workers (the rest, if still unwanted, once they serve).
    """

    name: str
    seed_scale_in: bool

    def decide(self, obs: ScalingObservation) -> ScalingVerdict: ...


# ---- queue drain (the seed) ------------------------------------------------------------------------


def drain_time(avg_queue: float, threads: int, avg_time: float) -> float:
    """Seconds the active workers need to drain the queue; zero threads drain nothing (+inf, or 0 if empty)."""
    if threads <= 0:
        return math.inf if avg_queue > 0 else 0.0
    return avg_queue / float(threads) * avg_time


def scale_in_target(low: float, high: float) -> float:
    """The drain time a scale-in aims at: a quarter into the band."""
    return low + (high - low) / 4


def scale_out_target(low: float, high: float) -> float:
    """The drain time a scale-out aims at: a quarter below the top of the band."""
    return high - (high - low) / 4


def scale_in_count(time_left: float, active: int, low: float, high: float) -> int:
    """Workers to shut down when the queue drains faster than ``low`` (the original's expression)."""
    if time_left == 0.0:
        return max(active - 1, 0)
    count = math.floor((1 - 1 / (scale_in_target(low, high) / time_left)) * active)
    return min(max(count, 0), active)


def scale_out_count(time_left: float, active: int, low: float, high: float) -> int | float:
    """Workers to add when the queue drains slower than ``high``; +inf means as many as allowed."""
    target = scale_out_target(low, high)
    if math.isinf(time_left) or target <= 0:
        return math.inf
    return max(math.ceil(time_left / target * active - active), 0)


class QueueDrainPolicy:
    """The seed's rule: keep ``time_left = avg_queue / threads x avg_time`` inside [MIN_AVG_TIME, MAX_AVG_TIME].

    Measures only when nothing is starting, a worker is active and the master has ``window`` heartbeats.
    Below the band it sheds ``scale_in_count`` workers, above it adds ``scale_out_count`` (an infinite count
    becomes ``obs.room``), inside it holds (``desired`` None).
    """

    name = "queue_drain"
    seed_scale_in = True

    def decide(self, obs: ScalingObservation) -> ScalingVerdict:
        if obs.starting:
            return ScalingVerdict.not_measured(f"{obs.starting} worker(s) starting")
        if not obs.active:
            return ScalingVerdict.not_measured("no active worker")
        if len(obs.queue) < obs.window:
            return ScalingVerdict.not_measured(f"{len(obs.queue)} of {obs.window} master heartbeats")
        n_active = len(obs.active)
        avg_queue = sum(obs.queue[-obs.window :]) / obs.window
        time_left = drain_time(avg_queue, obs.threads, obs.avg_time)
        low, high = obs.band_low, obs.band_high
        figures = {"metric": time_left, "time_left": time_left, "avg_queue": avg_queue}
        if time_left < low:
            count = scale_in_count(time_left, n_active, low, high)
            reason = f"time_left {time_left:.4g} s < {low:g} s: shut down {count}"
            return ScalingVerdict("scale_in", obs.replicas - count, target=scale_in_target(low, high), reason=reason, **figures)
        if time_left > high:
            count = scale_out_count(time_left, n_active, low, high)
            wanted = obs.room if math.isinf(count) else int(count)
            reason = f"time_left {time_left:.4g} s > {high:g} s: add {wanted}"
            return ScalingVerdict("scale_out", obs.replicas + wanted, target=scale_out_target(low, high), reason=reason, **figures)
        return ScalingVerdict("hold", reason=f"time_left {time_left:.4g} s inside [{low:g}, {high:g}] s", **figures)


# ---- Kubernetes HPA ----------------------------------------------------------------------------------


class HPAParams(Section):
    """Kubernetes HorizontalPodAutoscaler (autoscaling/v2) on the workers' cpu utilisation, with behavior.

    Each direction has up to two policies, Pods and Percent (value 0 leaves that policy out). KEDA's
    policy reads ``tolerance`` and the behavior from this section too (its HPA's advanced config).
    """

    _key = "hpa"

    min_replicas = param.Integer(1, bounds=(1, 1000), doc="minReplicas: fewest serving workers.")
    max_replicas = param.Integer(20, bounds=(1, 1000), doc="maxReplicas: most workers (MAX_WORKERS caps it too).")
    target_utilization = param.Integer(
        80, bounds=(1, 100), doc="Target average cpu utilisation in % (busy threads / threads); 80 is the v1 default."
    )
    tolerance = param.Number(0.1, bounds=(0.0, 1.0), step=0.01, doc="No scaling while |utilisation/target - 1| <= tolerance.")
    scale_up_stabilization = param.Number(
        0.0, bounds=(0.0, 3600.0), step=15.0, doc="scaleUp.stabilizationWindowSeconds: the lowest recommendation within it is used."
    )
    scale_up_pods = param.Integer(4, bounds=(0, 1000), doc="scaleUp Pods policy: workers added per period (0: no Pods policy).")
    scale_up_pods_period = param.Integer(15, bounds=(1, 1800), doc="scaleUp Pods policy: periodSeconds.")
    scale_up_percent = param.Integer(100, bounds=(0, 1000), doc="scaleUp Percent policy: % added per period (0: no Percent policy).")
    scale_up_percent_period = param.Integer(15, bounds=(1, 1800), doc="scaleUp Percent policy: periodSeconds.")
    scale_up_select = param.Selector(
        default="Max", objects=SELECT_POLICIES, doc="scaleUp.selectPolicy: Max (largest change), Min (smallest) or Disabled."
    )
    scale_down_stabilization = param.Number(
        300.0, bounds=(0.0, 3600.0), step=15.0, doc="scaleDown.stabilizationWindowSeconds: the highest recommendation within it is used."
    )
    scale_down_pods = param.Integer(0, bounds=(0, 1000), doc="scaleDown Pods policy: workers removed per period (0: no Pods policy).")
    scale_down_pods_period = param.Integer(15, bounds=(1, 1800), doc="scaleDown Pods policy: periodSeconds.")
    scale_down_percent = param.Integer(100, bounds=(0, 100), doc="scaleDown Percent policy: % removed per period (0: no Percent policy).")
    scale_down_percent_period = param.Integer(15, bounds=(1, 1800), doc="scaleDown Percent policy: periodSeconds.")
    scale_down_select = param.Selector(
        default="Max", objects=SELECT_POLICIES, doc="scaleDown.selectPolicy: Max (largest change), Min (smallest) or Disabled."
    )

    def check(self) -> None:
        if self.min_replicas > self.max_replicas:
            raise ParamError(
                "hpa.min_replicas", f"{self.min_replicas} exceeds max_replicas ({self.max_replicas}); allowed: <= max_replicas"
            )
        for direction in ("up", "down"):
            if getattr(self, f"scale_{direction}_select") != "Disabled" and not _rules(self, direction):
                raise ParamError(
                    f"hpa.scale_{direction}_pods",
                    f"scale {direction} has no policy; allowed: scale_{direction}_pods or scale_{direction}_percent > 0, "
                    f"or scale_{direction}_select Disabled",
                )


def _rules(p: HPAParams, direction: str) -> list[tuple[str, int, int]]:
    """The (kind, value, period) policies of one direction that are in use."""
    rules = []
    for kind in ("pods", "percent"):
        value = getattr(p, f"scale_{direction}_{kind}")
        if value > 0:
            rules.append((kind, value, getattr(p, f"scale_{direction}_{kind}_period")))
    return rules


def _within(ratio: float, tolerance: float) -> bool:
    """horizontal.go's tolerance test: ``1 - t <= ratio <= 1 + t``."""
    return (1.0 - tolerance) <= ratio <= (1.0 + tolerance)


def hpa_utilisation(loads: Sequence[float]) -> int:
    """Average utilisation in whole % of the request, truncated as ``GetResourceUtilizationRatio`` does."""
    return math.floor(round(100.0 * sum(loads) / len(loads), 9))


def hpa_replicas(
    current: int, loads: Sequence[float], target: float, tolerance: float, unready: int = 0, missing: int = 0
) -> tuple[int, float]:
    """``replica_calculator.go GetResourceReplicas``: (desired replicas, unadjusted usage ratio).

    ``loads``: cpu of the ready pods as fractions of their request; ``target`` in %. Missing metrics count
    as 100 % of the target on a scale-down and 0 on a scale-up; unready pods count as 0 on a scale-up.
    Then the ratio is recomputed; within tolerance, or if the direction flips, ``current`` is kept.
    """
    if not loads:
        raise ValueError("no ready pod reported a metric")
    ratio = hpa_utilisation(loads) / target
    scale_up_with_unready = unready > 0 and ratio > 1.0
    if not scale_up_with_unready and missing == 0:
        if _within(ratio, tolerance):
            return current, ratio
        return math.ceil(ratio * len(loads)), ratio
    adjusted = list(loads)
    if missing and ratio < 1.0:
        adjusted += [target / 100.0] * missing
    elif missing and ratio > 1.0:
        adjusted += [0.0] * missing
    if scale_up_with_unready:
        adjusted += [0.0] * unready
    new_ratio = hpa_utilisation(adjusted) / target
    if _within(new_ratio, tolerance) or (ratio < 1.0 < new_ratio) or (new_ratio < 1.0 < ratio):
        return current, ratio
    new = math.ceil(new_ratio * len(adjusted))
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current, ratio
    return new, ratio


class HPAMemory:
    """``horizontal.go``'s per-HPA memory: recommendations for the stabilisation windows, scale events for the policies."""

    def __init__(self) -> None:
        self.recommendations: list[tuple[float, int]] = []
        self.up_events: list[tuple[float, int]] = []
        self.down_events: list[tuple[float, int]] = []
        self._initialised = False

    def normalise(self, p: HPAParams, now: float, current: int, desired: int, low: int, high: int) -> tuple[int, str]:
        """``normalizeDesiredReplicasWithBehaviors``: stabilise, then limit by the behavior policies and [low, high]."""
        if not self._initialised:  # maybeInitScaleDownStabilizationWindow
            self.recommendations.append((now, current))
            self._initialised = True
        stabilised = self._stabilise(p, now, current, desired)
        return self._limit(p, now, current, stabilised, low, high)

    def _stabilise(self, p: HPAParams, now: float, current: int, desired: int) -> int:
        """``stabilizeRecommendationWithBehaviors``: min over the up window, max over the down window."""
        up_cutoff = now - p.scale_up_stabilization
        down_cutoff = now - p.scale_down_stabilization
        up = down = desired
        for at, recommendation in self.recommendations:
            if at > up_cutoff:
                up = min(up, recommendation)
            if at > down_cutoff:
                down = max(down, recommendation)
        self.recommendations = [(at, r) for at, r in self.recommendations if at >= min(up_cutoff, down_cutoff)]
        self.recommendations.append((now, desired))
        return min(max(current, up), down)

    def _limit(self, p: HPAParams, now: float, current: int, desired: int, low: int, high: int) -> tuple[int, str]:
        """``convertDesiredReplicasWithBehaviorRate``."""
        if desired > current:
            limit = max(self.limit(p, "up", now, current), current)
            allowed, reason = (limit, "ScaleUpLimit") if high > limit else (high, "TooManyReplicas")
            if desired > allowed:
                return allowed, reason
        elif desired < current:
            limit = min(self.limit(p, "down", now, current), current)
            allowed, reason = (limit, "ScaleDownLimit") if low < limit else (low, "TooFewReplicas")
            if desired < allowed:
                return allowed, reason
        return desired, "DesiredWithinRange"

    def limit(self, p: HPAParams, direction: str, now: float, current: int) -> int:
        """``calculateScaleUpLimitWithScalingRules`` / ``calculateScaleDownLimitWithBehaviors``.

        periodStartReplicas = current - added + deleted within each policy's period; Pods adds or removes
        ``value``, Percent multiplies by (1 +- value/100), rounded up going up and truncated going down.
        """
        select = getattr(p, f"scale_{direction}_select")
        if select == "Disabled":
            return current
        proposals = []
        for kind, value, period in _rules(p, direction):
            start = current - self.change(self.up_events, now, period) + self.change(self.down_events, now, period)
            if direction == "up":
                proposals.append(start + value if kind == "pods" else math.ceil(start * (1 + value / 100)))
            else:
                proposals.append(start - value if kind == "pods" else int(start * (1 - value / 100)))
        largest_change = max if direction == "up" else min
        smallest_change = min if direction == "up" else max
        return (largest_change if select == "Max" else smallest_change)(proposals)

    @staticmethod
    def change(events: list[tuple[float, int]], now: float, period: float) -> int:
        """``getReplicasChangePerPeriod``: replicas changed by events within the last ``period`` seconds."""
        return sum(change for at, change in events if at > now - period)

    def record(self, p: HPAParams, now: float, before: int, after: int) -> None:
        """``storeScaleEvent``: remember a rescale, forgetting events older than the longest period."""
        if after == before:
            return
        direction, events = ("up", self.up_events) if after > before else ("down", self.down_events)
        longest = max((period for _, _, period in _rules(p, direction)), default=0)
        events[:] = [(at, c) for at, c in events if at > now - longest]
        events.append((now, abs(after - before)))


class HPAPolicy:
    """Kubernetes HPA: ``desired = ceil(ready x utilisation / target)`` with tolerance, readiness, windows and policies.

    Not modelled: several metrics (one: cpu), the cpu-initialization-period and initial-readiness-delay
    timings (pending workers are simply not ready), and "scaling disabled at 0 replicas" (with no serving
    or pending worker it scales to minReplicas). ``max_replicas`` is capped by MAX_WORKERS.
    """

    name = "hpa"
    seed_scale_in = False

    def __init__(self, params: HPAParams | None = None):
        self.params = params if params is not None else HPAParams()
        self.memory = HPAMemory()

    def decide(self, obs: ScalingObservation) -> ScalingVerdict:
        p = self.params
        high = min(p.max_replicas, obs.max_workers)
        low = min(p.min_replicas, high)
        current = obs.replicas
        loads = obs.serving_cpu
        utilisation = hpa_utilisation(loads) if loads else None
        figures = {"metric": utilisation, "target": float(p.target_utilization), "utilisation": utilisation}
        bounded = _bound_replicas(current, low, high)
        if bounded is not None:
            self.memory.record(p, obs.now, current, bounded[0])
            return ScalingVerdict.toward(obs, bounded[0], reason=bounded[1], **figures)
        if not loads:
            return ScalingVerdict.not_measured("no ready worker reports cpu")
        raw, ratio = hpa_replicas(current, loads, p.target_utilization, p.tolerance, unready=obs.pending)
        desired, why = self.memory.normalise(p, obs.now, current, raw, low, high)
        self.memory.record(p, obs.now, current, desired)
        reason = f"utilisation {utilisation}% / target {p.target_utilization}% = {ratio:.3f}: {raw} wanted, {desired} ({why})"
        return ScalingVerdict.toward(obs, desired, reason=reason, **figures)


def _bound_replicas(current: int, low: int, high: int) -> tuple[int, str] | None:
    """The HPA's first check: a replica count outside [low, high] is brought back before any metric is read."""
    if current > high:
        return high, f"{current} replicas above max {high}"
    if current < low:
        return low, f"{current} replicas below min {low}"
    return None


# ---- Knative KPA -------------------------------------------------------------------------------------


class KPAParams(Section):
    """Knative Pod Autoscaler on request concurrency (config-autoscaler defaults)."""

    _key = "kpa"

    container_concurrency = param.Integer(
        0, bounds=(0, 1000), doc="Jobs a worker serves at once (containerConcurrency); 0: the workers' threads as reported."
    )
    target_percentage = param.Integer(70, bounds=(1, 100), doc="container-concurrency-target-percentage: target = concurrency x this %.")
    stable_window = param.Number(60.0, bounds=(6.0, 3600.0), step=6.0, doc="stable-window (s): concurrency is averaged over it.")
    panic_window_percentage = param.Number(
        10.0, bounds=(1.0, 100.0), step=1.0, doc="panic-window-percentage: panic window as % of the stable window."
    )
    panic_threshold_percentage = param.Number(
        200.0, bounds=(110.0, 1000.0), step=10.0, doc="panic-threshold-percentage: panic when panic-window pods / ready >= this %."
    )
    max_scale_up_rate = param.Number(1000.0, bounds=(1.0, 10000.0), step=1.0, doc="max-scale-up-rate: at most ceil(rate x ready) workers.")
    max_scale_down_rate = param.Number(
        2.0, bounds=(1.0, 1000.0), step=0.5, doc="max-scale-down-rate: at least floor(ready / rate) workers."
    )
    min_scale = param.Integer(0, bounds=(0, 1000), doc="min-scale: fewest workers; 0 allows scaling to zero.")
    max_scale = param.Integer(0, bounds=(0, 1000), doc="max-scale: most workers; 0: no limit but MAX_WORKERS.")
    enable_scale_to_zero = param.Boolean(True, doc="enable-scale-to-zero: with min_scale 0, may the last worker go.")
    scale_to_zero_grace_period = param.Number(
        30.0,
        bounds=(0.0, 3600.0),
        step=5.0,
        doc="scale-to-zero-grace-period (s): zero must be wanted this long before the last worker goes.",
    )
    scale_down_delay = param.Number(0.0, bounds=(0.0, 3600.0), step=5.0, doc="scale-down-delay (s): the highest want within it is used.")

    def check(self) -> None:
        if self.max_scale and self.min_scale > self.max_scale:
            raise ParamError(
                "kpa.min_scale", f"{self.min_scale} exceeds max_scale ({self.max_scale}); allowed: <= max_scale, or max_scale 0"
            )
        for name in ("max_scale_up_rate", "max_scale_down_rate"):
            if getattr(self, name) <= 1.0:
                raise ParamError(f"kpa.{name}", f"{getattr(self, name):g} is not allowed; allowed: a number > 1")


class KPAPolicy:
    """Knative KPA (``autoscaler.go Scale``): pods = ceil(concurrency / target) over stable and panic windows.

    Per round: total concurrency = busy threads of the serving workers + the master's newest queue length.
    ``dspc``/``dppc`` = ceil(stable / panic window average / target), kept in [floor(ready / down rate),
    ceil(up rate x ready)]; panic when dppc / ready >= threshold, during which the count never decreases;
    panic ends a full stable window after the last round over the threshold. Then scale-down delay, min/max
    scale and the scale-to-zero grace period. Not modelled: excess burst capacity and the activator
    (requests are already buffered by the master), requests-per-second targets, activation scale.
    """

    name = "kpa"
    seed_scale_in = False

    def __init__(self, params: KPAParams | None = None):
        self.params = params if params is not None else KPAParams()
        self.samples: deque[tuple[float, float]] = deque()
        self.panic_since: float | None = None
        self.max_panic_pods = 0
        self.delayed: deque[tuple[float, int]] = deque()
        self.zero_since: float | None = None
        self.worker_threads: float | None = None

    def target(self) -> float:
        """Target concurrency per worker: container concurrency x target percentage."""
        p = self.params
        concurrency = p.container_concurrency or self.worker_threads or CONCURRENCY_TARGET_DEFAULT
        return max(0.01, concurrency * p.target_percentage / 100.0)

    def decide(self, obs: ScalingObservation) -> ScalingVerdict:
        p = self.params
        if not obs.queue:
            return ScalingVerdict.not_measured("no master heartbeat")
        if obs.active and obs.threads > 0:
            self.worker_threads = obs.threads / len(obs.active)
        now = obs.now
        target = self.target()
        concurrency = sum(obs.serving_busy) + obs.queue[-1]
        stable_avg, panic_avg = self._averages(now, concurrency)
        ready_count = len(obs.serving)
        ready = max(1, ready_count)
        max_up = math.ceil(p.max_scale_up_rate * ready)
        max_down = math.floor(ready / p.max_scale_down_rate)
        dspc = math.ceil(stable_avg / target)
        dppc = math.ceil(panic_avg / target)
        stable_pods = min(max(dspc, max_down), max_up)
        panic_pods = min(max(dppc, max_down), max_up)
        over = dppc / ready >= p.panic_threshold_percentage / 100.0
        if over:
            self.panic_since = now  # enter, or extend
        elif self.panic_since is not None and self.panic_since + p.stable_window < now:
            self.panic_since, self.max_panic_pods = None, 0
        desired = stable_pods
        if self.panic_since is not None:
            self.max_panic_pods = max(self.max_panic_pods, stable_pods, panic_pods)
            desired = self.max_panic_pods
        desired = self._delay(now, desired)
        desired, bound = self._bounds(obs, desired)
        mode = "panic" if self.panic_since is not None else "stable"
        reason = f"{mode}: concurrency {stable_avg:.3g} stable / {panic_avg:.3g} panic over target {target:.3g}: {dspc}/{dppc} pods{bound}"
        return ScalingVerdict.toward(obs, desired, metric=stable_avg / ready, target=target, concurrency=concurrency, reason=reason)

    def _averages(self, now: float, concurrency: float) -> tuple[float, float]:
        """Mean concurrency over the stable and the panic window (``t > now - window``), this round included."""
        p = self.params
        self.samples.append((now, concurrency))
        while self.samples[0][0] <= now - p.stable_window:
            self.samples.popleft()
        panic_window = p.stable_window * p.panic_window_percentage / 100.0
        panic = [c for at, c in self.samples if at > now - panic_window]
        return sum(c for _, c in self.samples) / len(self.samples), sum(panic) / len(panic)

    def _delay(self, now: float, desired: int) -> int:
        """scale-down-delay: the highest want within the delay window."""
        delay = self.params.scale_down_delay
        if delay <= 0:
            self.delayed.clear()
            return desired
        self.delayed.append((now, desired))
        while self.delayed[0][0] <= now - delay:
            self.delayed.popleft()
        return max(d for _, d in self.delayed)

    def _bounds(self, obs: ScalingObservation, desired: int) -> tuple[int, str]:
        """min/max scale (and MAX_WORKERS), then scale to zero only after the grace period."""
        p = self.params
        high = min(p.max_scale or obs.max_workers, obs.max_workers)
        low = min(p.min_scale, high)
        bounded = min(max(desired, low), high)
        note = "" if bounded == desired else f", bounded to {bounded}"
        if bounded > 0:
            self.zero_since = None
            return bounded, note
        if not p.enable_scale_to_zero:
            return 1, ", scale to zero disabled"
        if self.zero_since is None:
            self.zero_since = obs.now
        if obs.replicas > 0 and obs.now - self.zero_since < p.scale_to_zero_grace_period:
            return 1, ", one kept for the scale-to-zero grace period"
        return 0, note


# ---- KEDA ------------------------------------------------------------------------------------------


class KEDAParams(Section):
    """KEDA ScaledObject with a queue-length trigger (RabbitMQ ``mode: QueueLength``); its HPA uses the hpa section's behavior."""

    _key = "keda"

    target_queue_length = param.Number(20.0, bounds=(0.001, 1e6), step=1.0, doc="Trigger value: queued jobs per worker (AverageValue).")
    activation_threshold = param.Number(
        0.0, bounds=(0.0, 1e6), step=1.0, doc="activationValue: active while the queue is strictly above it."
    )
    polling_interval = param.Number(30.0, bounds=(1.0, 3600.0), step=5.0, doc="pollingInterval (s): how often activation is checked.")
    cooldown_period = param.Number(
        300.0, bounds=(0.0, 86400.0), step=30.0, doc="cooldownPeriod (s) after the last active poll before going to zero."
    )
    initial_cooldown_period = param.Number(
        0.0, bounds=(0.0, 86400.0), step=30.0, doc="initialCooldownPeriod (s): no scaling to zero this soon after the start."
    )
    min_replica_count = param.Integer(0, bounds=(0, 1000), doc="minReplicaCount: 0 lets the workers go to zero when inactive.")
    max_replica_count = param.Integer(100, bounds=(1, 1000), doc="maxReplicaCount (MAX_WORKERS caps it too).")

    def check(self) -> None:
        if self.min_replica_count > self.max_replica_count:
            raise ParamError(
                "keda.min_replica_count",
                f"{self.min_replica_count} exceeds max_replica_count ({self.max_replica_count}); allowed: <= max_replica_count",
            )


class KEDAPolicy:
    """KEDA: activation 0 <-> 1 at each poll (queue > activation threshold), then its HPA on ``ceil(queue / target)``.

    At a poll: active with 0 replicas -> max(1, min); inactive past the cooldown (and the initial cooldown)
    with min 0 -> 0, straight away and without the HPA's behavior. Between and after: the HPA KEDA creates
    (min max(1, minReplicaCount), external AverageValue metric, the hpa section's tolerance, windows and
    policies); it does nothing at 0 replicas. Not modelled: fallback (the queue metric never errors here,
    no master heartbeat just means no decision), scalingModifiers, several triggers, idleReplicaCount.
    """

    name = "keda"
    seed_scale_in = False

    def __init__(self, params: KEDAParams | None = None, hpa: HPAParams | None = None):
        self.params = params if params is not None else KEDAParams()
        self.hpa = hpa if hpa is not None else HPAParams()
        self.memory = HPAMemory()
        self.started: float | None = None
        self.last_poll: float | None = None
        self.active = False
        self.last_active: float | None = None

    def decide(self, obs: ScalingObservation) -> ScalingVerdict:
        p = self.params
        if not obs.queue:
            return ScalingVerdict.not_measured("no master heartbeat")
        now, queue, current = obs.now, obs.queue[-1], obs.replicas
        figures = {"metric": float(queue), "target": p.target_queue_length}
        if self.started is None:
            self.started = now
        if self.last_poll is None or now - self.last_poll >= p.polling_interval:
            operator = self._poll(now, queue, current)
            if operator is not None:
                return ScalingVerdict.toward(obs, operator[0], reason=operator[1], **figures)
        if current == 0:
            return ScalingVerdict.toward(obs, 0, reason="inactive at zero: the HPA does not act", **figures)
        high = min(p.max_replica_count, obs.max_workers)
        low = min(max(1, p.min_replica_count), high)
        bounded = _bound_replicas(current, low, high)
        if bounded is not None:
            self.memory.record(self.hpa, now, current, bounded[0])
            return ScalingVerdict.toward(obs, bounded[0], reason=bounded[1], **figures)
        ratio = queue / (p.target_queue_length * current)
        raw = current if _within(ratio, self.hpa.tolerance) else math.ceil(queue / p.target_queue_length)
        desired, why = self.memory.normalise(self.hpa, now, current, raw, low, high)
        self.memory.record(self.hpa, now, current, desired)
        reason = f"queue {queue} / {p.target_queue_length:g} per worker: {raw} wanted, {desired} ({why})"
        return ScalingVerdict.toward(obs, desired, reason=reason, **figures)

    def _poll(self, now: float, queue: int, current: int) -> tuple[int, str] | None:
        """The operator's poll (``scale_executor``): activation and the cooldown to zero, or None to leave it to the HPA."""
        p = self.params
        self.last_poll = now
        self.active = queue > p.activation_threshold
        if self.active:
            self.last_active = now
            if current == 0:
                return max(1, p.min_replica_count), f"activated: queue {queue} > {p.activation_threshold:g}"
            return None
        if p.min_replica_count == 0 and current > 0:
            cooled = self.last_active is None or self.last_active + p.cooldown_period < now
            if cooled and now >= self.started + p.initial_cooldown_period:
                return 0, f"inactive: queue {queue} <= {p.activation_threshold:g} past the cooldown"
        return None


# ---- sections and selection ----------------------------------------------------------------------------


class PolicyParams(Section):
    """Which scaling policy decides the worker count; the rest of the controller is shared."""

    _key = "policy"

    kind = param.Selector(
        default="queue_drain",
        objects=POLICY_KINDS,
        doc="queue_drain (the seed's drain-time band), hpa (Kubernetes HPA on cpu), kpa (Knative on concurrency), keda (queue length).",
    )


for _section in (PolicyParams, HPAParams, KPAParams, KEDAParams):
    register_section(_section)


def make_policy(sections: Mapping[str, Section]) -> ScalingPolicy:
    """The policy ``sections["policy"].kind`` names (queue_drain without a policy section), reading its live params."""
    policy = sections.get("policy")
    kind = policy.kind if policy is not None else "queue_drain"
    if kind == "queue_drain":
        return QueueDrainPolicy()
    if kind == "hpa":
        return HPAPolicy(sections.get("hpa"))
    if kind == "kpa":
        return KPAPolicy(sections.get("kpa"))
    if kind == "keda":
        return KEDAPolicy(sections.get("keda"), sections.get("hpa"))
    raise ValueError(f"unknown policy kind {kind!r}; allowed: {', '.join(POLICY_KINDS)}")
