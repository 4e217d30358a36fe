"""Job arrivals and service times, drawn in batches with numpy.

Arrivals are generated one fixed window of simulated time at a time (``WINDOW`` seconds, aligned to
multiples of it), so the draws do not depend on how often anyone looks at the queue: the same seed
and the same parameter changes give the same arrivals however ``advance`` is chunked. A change of
the workload parameters takes effect from the next window on.

The ``trace`` pattern replays a real trace (:mod:`engine.workload.traces`) through a cursor in trace time
that moves ``WINDOW * trace_speedup`` trace seconds per window, only while the pattern is ``trace``
(so a trace selected mid-run starts from its beginning, and switching away pauses it; choosing
another file, format or function starts the new trace from its beginning). Simulated time 0 of the
replay is the trace's start: the first minute of a per-minute trace, the first arrival of a
per-invocation trace (offsets are kept relative to it). Per-invocation arrivals (azure2021, openb)
keep their exact times, divided by the speedup. Per-minute counts (azure2019) are spread uniformly
within their minute with seeded draws from the arrivals stream: a minute that spans several windows
is split between them by binomial draws on what is left of it, so each minute gets exactly its count
and nothing depends on how ``advance`` is chunked. ``rate`` multiplies the trace's intensity (1
replays it as recorded; 0.5 keeps each arrival with probability 1/2; 2.5 doubles it and adds each
arrival once more with probability 1/2; a minute already begun keeps the multiple it started with).
Past its end a trace stops, or starts over with ``trace_loop``. With ``trace_service`` the service
times are drawn from the trace's durations instead (:class:`~engine.workload.service.ServiceTimes`).
A pattern a plugin adds (:mod:`engine.workload.generators`) draws each window itself, from the same stream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from engine.core.params import Section
from engine.workload.generators import BUILTIN_PATTERNS, GuardedGenerator, make_generator
from engine.workload.params import WorkloadParams

if TYPE_CHECKING:
    from engine.workload.traces.model import Trace
    from engine.workload.traces.replay import TraceCursor

WINDOW = 10.0


def diurnal_multiplier(t: np.ndarray, amplitude: float, period: float) -> np.ndarray:
    """A sine cycle of the rate: ``1 + amplitude * sin(2 pi t / period)``."""
    return 1.0 + amplitude * np.sin(2.0 * math.pi * t / period)


def step_multiplier(t: np.ndarray, steps: list) -> np.ndarray:
    """Piecewise-constant multiples: ``[[time, multiple], ...]``, each holding until the next (1 before the first)."""
    steps = steps or [[0.0, 1.0]]
    times = np.array([s[0] for s in steps], dtype=float)
    mult = np.array([s[1] for s in steps], dtype=float)
    idx = np.searchsorted(times, t, side="right") - 1
    return np.where(idx >= 0, mult[np.clip(idx, 0, None)], 1.0)


def burst_multiplier(t: np.ndarray, every: float, duration: float, factor: float) -> np.ndarray:
    """``factor`` during the last ``duration`` seconds of every ``every`` seconds, else 1."""
    in_burst = np.mod(t, every) >= every - duration
    return np.where(in_burst, factor, 1.0)


def rate_multiplier(params: WorkloadParams, t: np.ndarray) -> np.ndarray:
    """The arrival rate at times ``t`` as a multiple of ``params.rate``."""
    pattern = params.pattern
    if pattern == "diurnal":
        return diurnal_multiplier(t, params.diurnal_amplitude, params.diurnal_period)
    if pattern == "steps":
        return step_multiplier(t, params.steps)
    if pattern == "bursts":
        return burst_multiplier(t, params.burst_every, params.burst_duration, params.burst_factor)
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

    def __init__(self, params: WorkloadParams, rng: np.random.Generator, sections: Mapping[str, Section] | None = None):
        self.params = params
        self.rng = rng
        self.sections = sections or {}  # a plugin pattern's param section is read from here
        self._generators: dict[str, GuardedGenerator] = {}  # plugin patterns built so far, by name
        self.window_end = 0.0  # arrivals are generated up to here
        self.generated = 0  # arrivals generated so far
        self._next_constant = None  # phase of the constant pattern across windows
        self._cursor: TraceCursor | None = None  # the trace pattern's place in its trace
        if params.pattern == "trace":
            self._trace_cursor()  # read the trace now: a bad file fails at construction, not mid-run
        elif params.pattern not in BUILTIN_PATTERNS:
            self._generator(params.pattern)  # a plugin that cannot be built fails now, too

    def _generator(self, name: str) -> GuardedGenerator:
        """The plugin pattern ``name``, built once (it keeps its own state across windows and pattern switches)."""
        if name not in self._generators:
            self._generators[name] = make_generator(name, self.sections)
        return self._generators[name]

    def trace(self) -> Trace:
        """The trace the pattern replays (the trace pattern only)."""
        return self._trace_cursor().trace

    def _trace_cursor(self) -> TraceCursor:
        """The cursor of the selected trace, (re)loaded when the file, format or function changed."""
        p = self.params
        key = (p.trace_file, p.trace_format, p.trace_function)
        if self._cursor is None or self._cursor.key != key:
            # the trace readers load with the first trace, not with every run
            from engine.workload.traces.replay import TraceCursor, load_trace

            self._cursor = TraceCursor(load_trace(*key), key=key)
        return self._cursor

    def _trace_window(self, t0: float, t1: float) -> list[float]:
        p = self.params
        speedup = p.trace_speedup
        cursor = self._trace_cursor()
        a = cursor.pos
        pos = cursor.take(WINDOW * speedup, p.trace_loop, p.rate, self.rng)
        if not len(pos):
            return []
        # map trace positions into the window; the clip only guards rounding at its ends
        times = np.clip(t0 + (pos - a) / speedup, t0, np.nextafter(t1, t0))
        return times.tolist()

    def next_window(self) -> list[float]:
        """Generate the arrivals of the next window (possibly none)."""
        p = self.params
        t0 = self.window_end
        t1 = t0 + WINDOW
        self.window_end = t1
        if p.pattern == "trace":
            times = self._trace_window(t0, t1)
            self.generated += len(times)
            return times
        rate = p.rate
        if p.pattern not in BUILTIN_PATTERNS:  # a request generator plugin draws the window itself
            times = self._generator(p.pattern).arrivals(t0, t1, rate, self.rng).tolist()
            self.generated += len(times)
            return times
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
