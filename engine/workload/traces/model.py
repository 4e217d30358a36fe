"""The structures importers return: small frozen dataclasses of read-only numpy arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.workload.traces.common import MIN_SERVICE, MINUTE


@dataclass(frozen=True)
class MinuteCounts:
    """Azure Functions 2019 invocations of the selected functions, per minute of the day.

    ``per_function[i, m]`` is the number of invocations of ``functions[i]`` (a HashFunction) in minute
    ``m`` (column ``str(m + 1)`` of the file); ``counts`` is their sum per minute.
    """

    path: str
    functions: tuple[str, ...]
    rows: tuple[int, ...]  # 0-based data rows of the file
    per_function: np.ndarray  # (functions, minutes) int64 >= 0
    notes: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()  # the HashApp of each selected row (when the file has the column)

    @property
    def counts(self) -> np.ndarray:
        """Invocations per minute, summed over the selected functions (int64)."""
        return self.per_function.sum(axis=0)

    @property
    def minutes(self) -> int:
        return int(self.per_function.shape[1])

    @property
    def total(self) -> int:
        return int(self.per_function.sum())


@dataclass(frozen=True)
class Invocations:
    """Azure Functions 2021 invocations, sorted by arrival: ``start = end_timestamp - duration`` (s)."""

    path: str
    app: np.ndarray  # str
    func: np.ndarray  # str
    start: np.ndarray  # float64 seconds, non-decreasing (as in the file, not shifted)
    duration: np.ndarray  # float64 seconds >= 0
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return int(len(self.start))


@dataclass(frozen=True)
class PodArrivals:
    """openb pods, sorted by ``creation_time`` (s)."""

    path: str
    name: np.ndarray  # str
    qos: np.ndarray  # str ('' when the file has no qos column)
    creation_time: np.ndarray  # float64 seconds, non-decreasing
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return int(len(self.creation_time))


class Durations(Protocol):
    """A service-time distribution taken from a trace."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` service times in seconds (>= ``MIN_SERVICE``), drawn from ``rng``."""
        ...

    def mean(self) -> float:
        """The mean of :meth:`sample` in seconds."""
        ...


@dataclass(frozen=True)
class PercentileDurations:
    """Azure Functions 2019 execution times as a percentile table per function (seconds).

    A draw picks a function with probability ``weights`` (its share of the replayed invocations), then
    inverts its piecewise-linear CDF through the table: ``levels`` are the cumulative probabilities of
    the columns ``percentile_Average_{0,1,25,50,75,99,100}``.
    """

    path: str
    functions: tuple[str, ...]
    levels: np.ndarray  # (7,) in [0, 1], increasing
    table: np.ndarray  # (functions, 7) seconds, non-decreasing along a row
    weights: np.ndarray  # (functions,) summing to 1
    notes: tuple[str, ...] = ()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        k = len(self.functions)
        which = np.zeros(n, dtype=np.int64) if k == 1 else rng.choice(k, size=n, p=self.weights)
        u = rng.random(n)
        out = np.empty(n)
        for j in range(k):
            sel = which == j
            out[sel] = np.interp(u[sel], self.levels, self.table[j])
        return np.maximum(out, MIN_SERVICE)

    def mean(self) -> float:
        # mean of a piecewise-linear inverse CDF: trapezoids between the levels
        dl = np.diff(self.levels)
        per = ((self.table[:, 1:] + self.table[:, :-1]) / 2.0 * dl).sum(axis=1)
        return float(np.dot(self.weights, np.maximum(per, MIN_SERVICE)))


@dataclass(frozen=True)
class EmpiricalDurations:
    """Durations of recorded invocations (seconds); a draw picks one of them uniformly."""

    path: str
    values: np.ndarray  # float64 >= MIN_SERVICE

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.values[rng.integers(0, len(self.values), n)]

    def mean(self) -> float:
        return float(self.values.mean())


@dataclass(frozen=True)
class Trace:
    """What the workload replays, in trace seconds from the trace's start.

    Either ``counts`` per bin of ``bin_seconds`` (azure2019: per minute; arrivals are spread uniformly
    within a bin when replayed) or exact arrival ``times`` shifted so that the first arrival is at 0
    (azure2021, openb). ``span`` is the length of one pass, the period when the trace loops: all the
    bins, or the last arrival plus the mean gap between arrivals (60 s for a trace of one arrival).
    """

    source: str
    format: str
    selection: str
    span: float
    counts: np.ndarray | None = None  # int64 per bin
    bin_seconds: float = MINUTE
    times: np.ndarray | None = None  # float64, sorted, times[0] == 0
    notes: tuple[str, ...] = ()
    origin: float = 0.0  # trace time (file units) of times[0], for per-invocation traces

    @property
    def total(self) -> int:
        """Arrivals in one pass of the trace."""
        return int(self.counts.sum()) if self.counts is not None else int(len(self.times))

    def count_between(self, a: float, b: float) -> int:
        """Arrivals in one pass within trace seconds ``[a, b)`` (for counts: whole bins only)."""
        if self.counts is not None:
            lo = max(0, math.ceil(a / self.bin_seconds - 1e-9))
            hi = min(len(self.counts), math.floor(b / self.bin_seconds + 1e-9))
            return int(self.counts[lo:hi].sum()) if hi > lo else 0
        return int(np.searchsorted(self.times, b, "left") - np.searchsorted(self.times, a, "left"))
