"""Moving simulated time: exactly to the time asked for, and never to a time that is not a number.

simpy's ``env.run(until=t)`` schedules its stop at ``now + (t - now)``, which in floating point can land one
ulp away from ``t``; a parameter change applied "at t" was then stamped 1e-13 s off, and two ways of chunking
the same session gave different event logs. :func:`run_until` schedules the stop at ``t`` itself.
"""

from __future__ import annotations

import heapq
import math

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import URGENT

from engine.core.params import ParamError

#: The longest horizon anything may ask for: 400 days of simulated time (run.duration's bound; a pod trace spans months).
MAX_HORIZON = 400 * 86400.0


def check_horizon(until: float, field: str = "until") -> float:
    """``until`` as a float, or a :class:`ParamError` for NaN, infinities, negatives and beyond :data:`MAX_HORIZON`."""
    try:
        value = float(until)
    except (TypeError, ValueError):
        raise ParamError(
            field, f"{until!r} is not allowed; allowed: simulated seconds in [0, {MAX_HORIZON:.0f}] (the {MAX_HORIZON / 86400:g}-day cap)"
        ) from None
    if not math.isfinite(value) or value < 0 or value > MAX_HORIZON:
        raise ParamError(
            field, f"{until!r} is not allowed; allowed: simulated seconds in [0, {MAX_HORIZON:.0f}] (the {MAX_HORIZON / 86400:g}-day cap)"
        )
    return value


def run_until(env: simpy.Environment, until: float) -> None:
    """Process every event before ``until`` and leave ``env.now`` exactly at ``until``."""
    stop = simpy.Event(env)
    stop._ok = True  # a triggered event: its callbacks run when it is taken from the queue
    stop._value = None
    stop.callbacks.append(StopSimulation.callback)
    heapq.heappush(env._queue, (until, URGENT, next(env._eid), stop))  # the exact time, not now + (until - now)
    try:
        while True:
            env.step()
    except StopSimulation:
        return
    except EmptySchedule:  # not while the stop event is queued
        raise RuntimeError("the stop event left the queue without stopping the run") from None


def timeout_at(env: simpy.Environment, t: float) -> simpy.Timeout:
    """A timeout that fires at ``t`` itself (not before now): the delay is nudged by ulps until ``now + delay == t``.

    A timer that sleeps while nothing can change and then resumes on its grid (``t`` a sum of intervals) must land on
    the grid point, not one ulp beside it.
    """
    now = env.now
    delay = max(t - now, 0.0)
    while delay > 0.0 and now + delay > t:
        delay = math.nextafter(delay, 0.0)
    while now + delay < t:
        delay = math.nextafter(delay, math.inf)
    return env.timeout(delay)
