"""The seed's queue-drain rule: keep the time the active workers need to drain the queue inside a band."""

from __future__ import annotations

import math

from engine.autoscaling.base import ScalingObservation, ScalingVerdict


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

    Measures only when nothing is starting, a worker is active and the master has ``min_heartbeats`` heartbeats.
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
        if len(obs.queue) < obs.min_heartbeats:
            return ScalingVerdict.not_measured(f"{len(obs.queue)} of {obs.min_heartbeats} master heartbeats")
        n_active = len(obs.active)
        avg_queue = sum(obs.queue[-obs.min_heartbeats :]) / obs.min_heartbeats
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
