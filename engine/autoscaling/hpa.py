"""Kubernetes HorizontalPodAutoscaler (autoscaling/v2) with behavior, on the workers' cpu utilisation.

Follows ``pkg/controller/podautoscaler`` (``horizontal.go``, ``replica_calculator.go``); the functions name
the Go functions they reproduce.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import param

from engine.autoscaling.base import ScalingObservation, ScalingVerdict
from engine.core.params import ParamError, Section

SELECT_POLICIES = ["Max", "Min", "Disabled"]


class HPAParams(Section):
    """Kubernetes HorizontalPodAutoscaler (autoscaling/v2) on the workers' cpu utilisation, with behavior.

    Each direction has up to two policies, Pods and Percent (value 0 leaves that policy out). KEDA's
    policy reads ``tolerance`` and the behavior from this section too (its HPA's advanced config).
    """

    key = "hpa"

    min_replicas = param.Integer(1, bounds=(1, 1000), label="Min replicas", softbounds=(1, 100), doc="minReplicas: fewest serving workers.")
    max_replicas = param.Integer(
        20, bounds=(1, 1000), label="Max replicas", softbounds=(1, 100), doc="maxReplicas: most workers (MAX_WORKERS caps it too)."
    )
    target_utilization = param.Integer(
        80,
        bounds=(1, 100),
        label="Target cpu utilisation (%)",
        doc="Target average cpu utilisation in % (busy threads / threads); 80 is the v1 default.",
    )
    tolerance = param.Number(
        0.1, bounds=(0.0, 1.0), step=0.01, label="Tolerance", doc="No scaling while |utilisation/target - 1| <= tolerance."
    )
    scale_up_stabilization = param.Number(
        0.0,
        bounds=(0.0, 3600.0),
        step=15.0,
        label="Scale-up stabilisation window (s)",
        softbounds=(0, 600),
        doc="scaleUp.stabilizationWindowSeconds: the lowest recommendation within it is used.",
    )
    scale_up_pods = param.Integer(
        4,
        bounds=(0, 1000),
        label="Scale-up: pods per period",
        softbounds=(0, 50),
        doc="scaleUp Pods policy: workers added per period (0: no Pods policy).",
    )
    scale_up_pods_period = param.Integer(
        15, bounds=(1, 1800), label="Scale-up: pods period (s)", softbounds=(1, 300), doc="scaleUp Pods policy: periodSeconds."
    )
    scale_up_percent = param.Integer(
        100,
        bounds=(0, 1000),
        label="Scale-up: percent per period",
        softbounds=(0, 500),
        doc="scaleUp Percent policy: % added per period (0: no Percent policy).",
    )
    scale_up_percent_period = param.Integer(
        15, bounds=(1, 1800), label="Scale-up: percent period (s)", softbounds=(1, 300), doc="scaleUp Percent policy: periodSeconds."
    )
    scale_up_select = param.Selector(
        default="Max",
        objects=SELECT_POLICIES,
        label="Scale-up: policy selection",
        doc="scaleUp.selectPolicy: Max (largest change), Min (smallest) or Disabled.",
    )
    scale_down_stabilization = param.Number(
        300.0,
        bounds=(0.0, 3600.0),
        step=15.0,
        label="Scale-down stabilisation window (s)",
        softbounds=(0, 900),
        doc="scaleDown.stabilizationWindowSeconds: the highest recommendation within it is used.",
    )
    scale_down_pods = param.Integer(
        0,
        bounds=(0, 1000),
        label="Scale-down: pods per period",
        softbounds=(0, 50),
        doc="scaleDown Pods policy: workers removed per period (0: no Pods policy).",
    )
    scale_down_pods_period = param.Integer(
        15, bounds=(1, 1800), label="Scale-down: pods period (s)", softbounds=(1, 300), doc="scaleDown Pods policy: periodSeconds."
    )
    scale_down_percent = param.Integer(
        100,
        bounds=(0, 100),
        label="Scale-down: percent per period",
        doc="scaleDown Percent policy: % removed per period (0: no Percent policy).",
    )
    scale_down_percent_period = param.Integer(
        15, bounds=(1, 1800), label="Scale-down: percent period (s)", softbounds=(1, 300), doc="scaleDown Percent policy: periodSeconds."
    )
    scale_down_select = param.Selector(
        default="Max",
        objects=SELECT_POLICIES,
        label="Scale-down: policy selection",
        doc="scaleDown.selectPolicy: Max (largest change), Min (smallest) or Disabled.",
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

    ``loads``: cpu of the ready pods as fractions of their request; ``target`` in %. A pod without a metric
    counts as 0 on a scale-up and, on a scale-down, as its whole request (or the target if that is above 100 %):
    the code's ``max(100, target)``, where the docs say "100 % of the target". Unready pods count as 0 on a
    scale-up.
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
        adjusted += [max(100.0, target) / 100.0] * missing
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
        if not self._initialised:  # recordInitialRecommendation
            self.recommendations.append((now, current))
            self._initialised = True
        stabilised = self.stabilise(p, now, current, desired)
        return self.limit_rate(p, now, current, stabilised, low, high)

    def stabilise(self, p: HPAParams, now: float, current: int, desired: int) -> int:
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

    def limit_rate(self, p: HPAParams, now: float, current: int, desired: int, low: int, high: int) -> tuple[int, str]:
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
