"""Knative Pod Autoscaler (KPA) on request concurrency, with stable and panic windows."""

from __future__ import annotations

import math
from collections import deque

import param

from engine.autoscaling.base import ScalingObservation, ScalingVerdict
from engine.core.params import ParamError, Section

CONCURRENCY_TARGET_DEFAULT = 100.0  # Knative's container-concurrency-target-default, before any worker reported threads


class KPAParams(Section):
    """Knative Pod Autoscaler on request concurrency (config-autoscaler defaults)."""

    key = "kpa"

    container_concurrency = param.Integer(
        0,
        bounds=(0, 1000),
        label="Container concurrency (0: threads)",
        softbounds=(0, 100),
        doc="Jobs a worker serves at once (containerConcurrency); 0: the workers' threads as reported.",
    )
    target_percentage = param.Integer(
        70, bounds=(1, 100), label="Target concurrency (%)", doc="container-concurrency-target-percentage: target = concurrency x this %."
    )
    stable_window = param.Number(
        60.0,
        bounds=(6.0, 3600.0),
        step=6.0,
        label="Stable window (s)",
        softbounds=(6, 600),
        doc="stable-window (s): concurrency is averaged over it.",
    )
    panic_window_percentage = param.Number(
        10.0,
        bounds=(1.0, 100.0),
        step=1.0,
        label="Panic window (% of stable)",
        doc="panic-window-percentage: panic window as % of the stable window.",
    )
    panic_threshold_percentage = param.Number(
        200.0,
        bounds=(110.0, 1000.0),
        step=10.0,
        label="Panic threshold (%)",
        doc="panic-threshold-percentage: panic when panic-window pods / ready >= this %.",
    )
    max_scale_up_rate = param.Number(
        1000.0,
        bounds=(1.0, 10000.0),
        step=1.0,
        label="Max scale-up rate",
        softbounds=(1, 1000),
        doc="max-scale-up-rate: at most ceil(rate x ready) workers.",
    )
    max_scale_down_rate = param.Number(
        2.0,
        bounds=(1.0, 1000.0),
        step=0.5,
        label="Max scale-down rate",
        softbounds=(1, 100),
        doc="max-scale-down-rate: at least floor(ready / rate) workers.",
    )
    min_scale = param.Integer(
        0, bounds=(0, 1000), label="Min scale", softbounds=(0, 100), doc="min-scale: fewest workers; 0 allows scaling to zero."
    )
    max_scale = param.Integer(
        0, bounds=(0, 1000), label="Max scale (0: none)", softbounds=(0, 100), doc="max-scale: most workers; 0: no limit but MAX_WORKERS."
    )
    enable_scale_to_zero = param.Boolean(
        True, label="Allow scaling to zero", doc="enable-scale-to-zero: with min_scale 0, may the last worker go."
    )
    scale_to_zero_grace_period = param.Number(
        30.0,
        bounds=(0.0, 3600.0),
        step=5.0,
        label="Scale-to-zero grace period (s)",
        softbounds=(0, 300),
        doc="scale-to-zero-grace-period (s): zero must be wanted this long before the last worker goes.",
    )
    scale_down_delay = param.Number(
        0.0,
        bounds=(0.0, 3600.0),
        step=5.0,
        label="Scale-down delay (s)",
        softbounds=(0, 600),
        doc="scale-down-delay (s): the highest want within it is used.",
    )

    activation_scale = param.Integer(
        1,
        bounds=(1, 1000),
        label="Activation scale",
        softbounds=(1, 20),
        doc="activation-scale: when any worker is wanted, at least this many (1: no effect).",
    )

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
    ceil(up rate x ready)], raised to the activation scale when above zero; panic when dppc / ready >=
    threshold, during which the count never decreases; panic ends a full stable window after the last round
    over the threshold; a policy whose first round sees more than one ready worker starts in panic (as a
    Knative autoscaler created for a revision that has pods). Then scale-down delay, min/max scale and the
    scale-to-zero grace period. Not modelled: excess burst capacity and the activator (requests are already
    buffered by the master), requests-per-second targets, unreachable revisions.
    """

    name = "kpa"
    seed_scale_in = False

    def __init__(self, params: KPAParams | None = None):
        self.params = params if params is not None else KPAParams()
        self.samples: deque[tuple[float, float]] = deque()
        self.started = False
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
        if not obs.queue:
            return ScalingVerdict.not_measured("no master heartbeat")
        if obs.active and obs.threads > 0:
            self.worker_threads = obs.threads / len(obs.active)
        now = obs.now
        ready_count = len(obs.serving)
        if not self.started:
            self.start(now, ready_count)
        concurrency = sum(obs.serving_busy) + obs.queue[-1]
        stable_avg, panic_avg = self._averages(now, concurrency)
        desired = self.scale(now, stable_avg, panic_avg, ready_count)
        desired, bound = self._bounds(obs, desired)
        target = self.target()
        mode = "panic" if self.panic_since is not None else "stable"
        dspc, dppc = math.ceil(stable_avg / target), math.ceil(panic_avg / target)
        reason = f"{mode}: concurrency {stable_avg:.3g} stable / {panic_avg:.3g} panic over target {target:.3g}: {dspc}/{dppc} pods{bound}"
        return ScalingVerdict.toward(
            obs, desired, metric=stable_avg / max(1, ready_count), target=target, concurrency=concurrency, reason=reason
        )

    def start(self, now: float, ready_count: int) -> None:
        """``newAutoscaler``: an autoscaler that starts with more than one ready pod starts in panic, holding them."""
        self.started = True
        self.max_panic_pods = ready_count
        if ready_count > 1:
            self.panic_since = now

    def scale(self, now: float, stable_avg: float, panic_avg: float, ready_count: int) -> int:
        """``autoscaler.go Scale``: the wanted pods from the stable and panic averages, before min/max scale.

        Rate limits against ``max(1, ready)``, activation scale, panic (enter or extend when the panic window wants
        ``threshold`` x ready or more; leave a full stable window after the last such round; never shrink while in
        it), then the scale-down delay.
        """
        p = self.params
        target = self.target()
        ready = max(1, ready_count)
        max_up = math.ceil(p.max_scale_up_rate * ready)
        max_down = math.floor(ready / p.max_scale_down_rate)
        dspc = math.ceil(stable_avg / target)
        dppc = math.ceil(panic_avg / target)
        stable_pods = min(max(dspc, max_down), max_up)
        panic_pods = min(max(dppc, max_down), max_up)
        if p.activation_scale > 1:
            if dspc > 0 and stable_pods < p.activation_scale:
                stable_pods = p.activation_scale
            if dppc > 0 and panic_pods < p.activation_scale:
                panic_pods = p.activation_scale
        over = dppc / ready >= p.panic_threshold_percentage / 100.0
        if over:
            self.panic_since = now  # enter, or extend
        elif self.panic_since is not None and self.panic_since + p.stable_window < now:
            self.panic_since, self.max_panic_pods = None, 0
        desired = stable_pods
        if self.panic_since is not None:
            self.max_panic_pods = max(self.max_panic_pods, stable_pods, panic_pods)
            desired = self.max_panic_pods
        return self._delay(now, desired)

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
