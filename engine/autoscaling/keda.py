"""KEDA ScaledObject with a queue-length trigger: activation at each poll, then its HPA."""

from __future__ import annotations

import math

import param

from engine.autoscaling.base import ScalingObservation, ScalingVerdict
from engine.autoscaling.hpa import HPAMemory, HPAParams, _bound_replicas, _within
from engine.core.params import ParamError, Section


class KEDAParams(Section):
    """KEDA ScaledObject with a queue-length trigger (RabbitMQ ``mode: QueueLength``); its HPA uses the hpa section's behavior."""

    key = "keda"

    target_queue_length = param.Number(
        20.0,
        bounds=(0.001, 1e6),
        step=1.0,
        label="Target queue length per worker",
        softbounds=(1, 200),
        doc="Trigger value: queued jobs per worker (AverageValue).",
    )
    activation_threshold = param.Number(
        0.0,
        bounds=(0.0, 1e6),
        step=1.0,
        label="Activation threshold (jobs)",
        softbounds=(0, 100),
        doc="activationValue: active while the queue is strictly above it.",
    )
    polling_interval = param.Number(
        30.0,
        bounds=(1.0, 3600.0),
        step=5.0,
        label="Polling interval (s)",
        softbounds=(1, 300),
        doc="pollingInterval (s): how often activation is checked.",
    )
    cooldown_period = param.Number(
        300.0,
        bounds=(0.0, 86400.0),
        step=30.0,
        label="Cooldown period (s)",
        softbounds=(0, 1800),
        doc="cooldownPeriod (s) after the last active poll before going to zero.",
    )
    initial_cooldown_period = param.Number(
        0.0,
        bounds=(0.0, 86400.0),
        step=30.0,
        label="Initial cooldown (s)",
        softbounds=(0, 1800),
        doc="initialCooldownPeriod (s): no scaling to zero this soon after the start.",
    )
    min_replica_count = param.Integer(
        0, bounds=(0, 1000), label="Min replicas", softbounds=(0, 100), doc="minReplicaCount: 0 lets the workers go to zero when inactive."
    )
    max_replica_count = param.Integer(
        100, bounds=(1, 1000), label="Max replicas", softbounds=(1, 100), doc="maxReplicaCount (MAX_WORKERS caps it too)."
    )

    def check(self) -> None:
        if self.min_replica_count > self.max_replica_count:
            raise ParamError(
                "keda.min_replica_count",
                f"{self.min_replica_count} exceeds max_replica_count ({self.max_replica_count}); allowed: <= max_replica_count",
            )


class KEDAPolicy:
    """KEDA: activation 0 <-> 1 at each poll (queue > activation threshold), then its HPA on ``ceil(queue / target)``.

    At a poll: active with 0 replicas -> max(1, min); inactive with min 0 -> 0 once past the cooldown after the
    last active poll (or, if the trigger was never active, past the initial cooldown after the start), straight
    away and without the HPA's behavior; inactive below a min above 0 -> min. Between and after: the HPA KEDA creates
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
        """The operator's poll (``scale_scaledobjects.go RequestScale``): activation, the cooldown to zero and the
        floor at minReplicaCount while inactive; None leaves the count to the HPA."""
        p = self.params
        self.last_poll = now
        self.active = queue > p.activation_threshold
        if self.active:
            self.last_active = now
            if current == 0:
                return max(1, p.min_replica_count), f"activated: queue {queue} > {p.activation_threshold:g}"
            return None
        if p.min_replica_count == 0 and current > 0:
            # scaleToZeroOrIdle: the initial cooldown counts from the start only until the trigger was first active.
            # Upstream's test is creation + initialCooldown < now; a ScaledObject is created before its first poll,
            # so a poll exactly initialCooldown after the start is past it (hence >= at the start's instant here).
            if self.last_active is None:
                cooled, since = now >= self.started + p.initial_cooldown_period, "the initial cooldown"
            else:
                cooled, since = self.last_active + p.cooldown_period < now, "the cooldown"
            if cooled:
                return 0, f"inactive: queue {queue} <= {p.activation_threshold:g} past {since}"
        elif current < p.min_replica_count:
            return p.min_replica_count, f"inactive below minReplicaCount {p.min_replica_count}"
        return None
