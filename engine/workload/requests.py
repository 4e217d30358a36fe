"""Request generators for function deployments: a composable rate profile times an arrival process, window by window.

One :class:`RequestStream` per function. Its rate at time ``t`` is ``rate`` times every shape switched on::

    rate(t) = rate x diurnal(t) x steps(t) x bursts(t) x walk(t)

* diurnal: ``1 + diurnal_amplitude sin(2 pi t / diurnal_period)`` (0 amplitude: off);
* steps: ``[[time, multiple], ...]`` (empty: off); bursts: ``burst_factor`` for the last ``burst_duration`` s of
  every ``burst_every`` s (factor 1: off) — the same functions as the VM world's workload patterns;
* walk: a Gaussian random walk of the multiple, one step of ``walk_sigma`` per window, kept in [0, ``walk_max``]
  (faas-sim's ``randomwalk_rps_profile``; sigma 0: off).

``arrival`` is ``poisson`` (a non-homogeneous Poisson process, by thinning against the window's peak: faas-sim's
``expovariate_arrival_profile``), ``constant`` (evenly spaced at the window's rate, the phase carried across
windows: faas-sim's ``static_arrival_profile``) or ``trace`` (a replayed Azure Functions 2019/2021 trace through
:class:`~engine.workload.traces.replay.TraceCursor`; ``rate`` then multiplies its intensity and the shapes are
ignored), or a request generator plugin (:mod:`engine.workload.generators`: it draws each window itself from
``rate``; the shapes are ignored). Windows of ``WINDOW`` simulated seconds are generated in order from the function's own stream, so the
draws do not depend on how often the platform looks; a parameter change applies from the next window on.

``profile`` is any object with those attributes (a function's section, or a mirror of it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.core.params import Section
from engine.workload.arrivals import WINDOW, burst_multiplier, diurnal_multiplier, step_multiplier
from engine.workload.generators import GuardedGenerator, make_generator
from engine.workload.traces.replay import TraceCursor, load_trace

ARRIVALS = ("poisson", "constant", "trace")
_NONE = np.empty(0)
_NONE.flags.writeable = False


def shape_multiplier(profile: Any, t: np.ndarray) -> np.ndarray:
    """The product of the deterministic shapes switched on (diurnal, steps, bursts) at times ``t``."""
    out = np.ones_like(t, dtype=float)
    if profile.diurnal_amplitude > 0:
        out = out * diurnal_multiplier(t, profile.diurnal_amplitude, profile.diurnal_period)
    if profile.steps:
        out = out * step_multiplier(t, profile.steps)
    if profile.burst_factor != 1.0:
        out = out * burst_multiplier(t, profile.burst_every, profile.burst_duration, profile.burst_factor)
    return out


def shape_peak(profile: Any) -> float:
    """An upper bound of :func:`shape_multiplier` (for thinning)."""
    peak = 1.0 + max(0.0, profile.diurnal_amplitude)
    if profile.steps:
        peak *= max([1.0] + [float(s[1]) for s in profile.steps])
    return peak * max(1.0, profile.burst_factor)


class RequestStream:
    """Arrival times of one function's requests, generated one window at a time."""

    def __init__(self, profile: Any, rng: np.random.Generator, sections: Mapping[str, Section] | None = None):
        self.profile = profile
        self.rng = rng
        self.sections = sections or {}  # a plugin arrival's param section is read from here
        self._generators: dict[str, GuardedGenerator] = {}  # plugin arrivals built so far, by name (this function's own)
        self.window_end = 0.0
        self.generated = 0
        self.walk = 1.0  # the random walk's multiple
        self._next_constant: float | None = None
        self._cursor: TraceCursor | None = None
        if profile.arrival == "trace":
            self._trace_cursor()  # read now: a bad file fails when the world is built
        elif profile.arrival not in ARRIVALS:
            self._generator(profile.arrival)  # a plugin that cannot be built fails now, too

    def _generator(self, name: str) -> GuardedGenerator:
        if name not in self._generators:
            self._generators[name] = make_generator(name, self.sections)
        return self._generators[name]

    def _trace_cursor(self) -> TraceCursor:
        p = self.profile
        key = (p.trace_file, p.trace_format, p.trace_function)
        if self._cursor is None or self._cursor.key != key:
            self._cursor = TraceCursor(load_trace(*key), key=key)
        return self._cursor

    def rate_at(self, t: np.ndarray) -> np.ndarray:
        """The current rate profile at times ``t`` (requests per second; the walk at its present level)."""
        p = self.profile
        return p.rate * self.walk * shape_multiplier(p, np.asarray(t, dtype=float))

    def next_window(self) -> np.ndarray:
        """The arrivals of the next window (sorted, possibly none)."""
        p = self.profile
        t0 = self.window_end
        t1 = t0 + WINDOW
        self.window_end = t1
        if p.arrival == "trace":
            cursor = self._trace_cursor()
            a = cursor.pos
            pos = cursor.take(WINDOW * p.trace_speedup, p.trace_loop, p.rate, self.rng)
            times = np.clip(t0 + (pos - a) / p.trace_speedup, t0, np.nextafter(t1, t0)) if len(pos) else np.empty(0)
            self.generated += len(times)
            return times
        if p.arrival not in ARRIVALS:  # a request generator plugin
            times = self._generator(p.arrival).arrivals(t0, t1, p.rate, self.rng)
            self.generated += len(times)
            return times
        if p.walk_sigma > 0:  # one step per window, drawn whether or not the rate is zero (keeps the stream aligned)
            self.walk = min(max(self.walk + float(self.rng.normal(0.0, p.walk_sigma)), 0.0), p.walk_max)
        base = p.rate * self.walk
        if base <= 0.0:
            self._next_constant = None
            return np.empty(0)
        if p.arrival == "constant":
            rate = base * float(shape_multiplier(p, np.array([t0]))[0])
            if rate <= 0:
                self._next_constant = None
                return np.empty(0)
            gap = 1.0 / rate
            nxt = t0 + gap if self._next_constant is None else max(self._next_constant, t0)
            n = max(0, math.ceil((t1 - nxt) / gap))
            times = nxt + gap * np.arange(n)
            self._next_constant = nxt + gap * n
        else:
            plain = p.diurnal_amplitude <= 0 and not p.steps and p.burst_factor == 1.0
            peak = base if plain else base * shape_peak(p)  # shape_peak is exactly 1.0 without shapes
            n = int(self.rng.poisson(peak * WINDOW))
            if n == 0:  # a quiet window: uniform(.., 0) draws nothing, so nothing else to do
                return _NONE
            cand = np.sort(self.rng.uniform(t0, t1, n))
            if plain:  # every candidate is kept (u x peak <= base for u < 1), but the draws keep the stream aligned
                self.rng.uniform(0.0, 1.0, n)
                self.generated += n
                return cand
            keep = self.rng.uniform(0.0, 1.0, n) * peak <= base * shape_multiplier(p, cand)
            times = cand[keep]
        self.generated += len(times)
        return times
