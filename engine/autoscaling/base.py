"""What every scaling policy sees and answers: one observation per round, one verdict, a plain ``decide``.

The rules of each policy in plain words: ``docs/explanation/autoscalers.md`` (HPA, KPA, KEDA) and
``docs/explanation/vm-controller.md`` (the queue drain and the controller). The controller (:mod:`engine.vmworld.controller`) keeps everything else and shares
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

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine.autoscaling.seed_conf import AutoscalerParams

SCALING_ACTIONS = ("not_measured", "hold", "scale_in", "scale_out")


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
    command is CREATE or RESUME (the seed's count). ``band_low``/``band_high``/``min_heartbeats``: the seed's
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
    min_heartbeats: int = _default("MIN_MEASURE_LOAD_HB")

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
