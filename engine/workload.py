"""Job arrivals and service times, drawn in batches with numpy.

Arrivals are generated one fixed window of simulated time at a time (``WINDOW`` seconds, aligned to
multiples of it), so the draws do not depend on how often anyone looks at the queue: the same seed
and the same parameter changes give the same arrivals however ``advance`` is chunked. A change of
the workload parameters takes effect from the next window on.
"""

from __future__ import annotations

import math

import numpy as np

from .params import WorkloadParams
from .rng import gamma_shape

WINDOW = 10.0


def rate_multiplier(params: WorkloadParams, t: np.ndarray) -> np.ndarray:
    """The arrival rate at times ``t`` as a multiple of ``params.rate``."""
    pattern = params.pattern
    if pattern == "diurnal":
        return 1.0 + params.diurnal_amplitude * np.sin(2.0 * math.pi * t / params.diurnal_period)
    if pattern == "steps":
        steps = params.steps or [[0.0, 1.0]]
        times = np.array([s[0] for s in steps], dtype=float)
        mult = np.array([s[1] for s in steps], dtype=float)
        idx = np.searchsorted(times, t, side="right") - 1
        return np.where(idx >= 0, mult[np.clip(idx, 0, None)], 1.0)
    if pattern == "bursts":
        in_burst = np.mod(t, params.burst_every) >= params.burst_every - params.burst_duration
        return np.where(in_burst, params.burst_factor, 1.0)
    return np.ones_like(t)


def peak_multiplier(params: WorkloadParams) -> float:
    pattern = params.pattern
    if pattern == "diurnal":
        return 1.0 + params.diurnal_amplitude
    if pattern == "steps":
        return max([1.0] + [float(s[1]) for s in params.steps])
    if pattern == "bursts":
        return params.burst_factor
    return 1.0


class ArrivalStream:
    """Arrival times in increasing order, generated window by window from the workload parameters."""

    def __init__(self, params: WorkloadParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.window_end = 0.0  # arrivals are generated up to here
        self.generated = 0  # arrivals generated so far
        self._next_constant = None  # phase of the constant pattern across windows

    def next_window(self) -> list[float]:
        """Generate the arrivals of the next window (possibly none)."""
        p = self.params
        t0 = self.window_end
        t1 = t0 + WINDOW
        self.window_end = t1
        rate = p.rate
        if rate <= 0.0:
            self._next_constant = None
            return []
        if p.pattern == "constant":
            gap = 1.0 / rate
            nxt = t0 + gap if self._next_constant is None else self._next_constant
            if nxt < t0:
                nxt = t0
            n = max(0, math.ceil((t1 - nxt) / gap))
            times = (nxt + gap * np.arange(n)).tolist()
            self._next_constant = nxt + gap * n
        elif p.pattern == "poisson":
            n = int(self.rng.poisson(rate * WINDOW))
            times = np.sort(self.rng.uniform(t0, t1, n)).tolist()
        else:  # non-homogeneous Poisson by thinning against the pattern's peak
            peak = rate * peak_multiplier(p)
            n = int(self.rng.poisson(peak * WINDOW))
            cand = np.sort(self.rng.uniform(t0, t1, n))
            keep = self.rng.uniform(0.0, 1.0, n) * peak <= rate * rate_multiplier(p, cand)
            times = cand[keep].tolist()
        self.generated += len(times)
        return times


class ServiceTimes:
    """Service times of jobs on a reference-speed thread: mean ``service_time``, gamma with ``service_cv``.

    Unit-mean draws are made in batches and scaled by the current mean, so a change of the mean
    applies to the next job; a change of the cv starts a new batch. The two parameters are cached by
    a watcher: reading a param attribute per job would cost as much as the rest of the job's work.
    """

    BATCH = 4096

    def __init__(self, params: WorkloadParams, rng: np.random.Generator):
        self.params = params
        self.rng = rng
        self.buf: list[float] = []
        self.i = 0
        self.mean = params.service_time
        self._cv = params.service_cv
        params.param.watch(self._changed, ["service_time", "service_cv"])

    def _changed(self, *_events) -> None:
        self.mean = self.params.service_time
        if self.params.service_cv != self._cv:
            self._cv = self.params.service_cv
            self.i = len(self.buf)  # the next draw starts a batch with the new cv

    def refill(self) -> None:
        shape = gamma_shape(self._cv)
        if shape is None:
            self.buf = [1.0] * self.BATCH
        else:
            self.buf = self.rng.gamma(shape, 1.0 / shape, self.BATCH).tolist()
        self.i = 0

    def next(self) -> float:
        if self.i >= len(self.buf):
            self.refill()
        v = self.buf[self.i]
        self.i += 1
        return v * self.mean
