"""The replay structures the workload reads: :func:`load_trace`, :func:`load_durations` (cached), :class:`TraceCursor`.

Both loaders keep the last few results (keyed by path, size and modification time), so a simulation reads
its trace once, not per window, and checking a scenario costs a dictionary lookup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.core import filecache
from engine.core.params import ParamError
from engine.workload.params import MAX_RATE, TRACE_FORMATS, WorkloadParams, reads_trace
from engine.workload.traces.azure2019 import azure2019_durations_path, read_azure2019_durations, read_azure2019_invocations
from engine.workload.traces.azure2021 import read_azure2021
from engine.workload.traces.common import MIN_SERVICE, MINUTE, TRACE_DIR, TraceError, _frozen, resolve_trace_path
from engine.workload.traces.model import Durations, EmpiricalDurations, PercentileDurations, Trace
from engine.workload.traces.openb import read_openb_pods


def check_files(params: WorkloadParams) -> None:
    """The trace pattern and trace_service need a readable trace: read it now (then cached), or raise naming the field."""
    if not reads_trace(params):
        return
    use = "the trace pattern" if params.pattern == "trace" else "trace_service"
    if not params.trace_file.strip():
        raise ParamError("workload.trace_file", f"{use} needs a trace file; allowed: a CSV path relative to data/traces or absolute")
    path = resolve_trace_path(params.trace_file)
    if not path.is_file():
        raise ParamError("workload.trace_file", f"{path}: no such file; allowed: a CSV path relative to {TRACE_DIR} or absolute")
    if params.pattern == "trace":
        trace = load_trace(params.trace_file, params.trace_format, params.trace_function)
        peak = peak_rate(trace) * params.trace_speedup * params.rate
        if peak > MAX_RATE:
            raise ParamError(
                "workload.trace_speedup",
                f"{trace.source}: replayed {params.trace_speedup:g}x faster at rate {params.rate:g} the trace peaks at {peak:.3g} arrivals/s; "
                f"allowed: at most {MAX_RATE:,.0f} arrivals/s",
            )
    if params.trace_service:
        load_durations(params.trace_file, params.trace_format, params.trace_function)


def peak_rate(trace: Trace, window: float = 10.0) -> float:
    """The trace's highest arrival rate per trace second: over its busiest bin, or its busiest ``window`` of events."""
    if trace.counts is not None:
        return float(trace.counts.max()) / trace.bin_seconds if len(trace.counts) else 0.0
    times = trace.times
    if len(times) == 0:
        return 0.0
    ends = np.searchsorted(times, times + window, side="left")
    return float((ends - np.arange(len(times))).max()) / window


def clear_cache() -> None:
    """Forget every loaded trace (the next load reads the files again)."""
    filecache.clear()


def _event_span(times: np.ndarray) -> float:
    n = len(times)
    if n < 2 or times[-1] <= 0:
        return MINUTE
    return float(times[-1] * n / (n - 1))


def load_trace(file: str | Path, fmt: str, function: str = "") -> Trace:
    """The replay structure of a trace file (read once, then served from a small cache)."""
    if fmt not in TRACE_FORMATS:
        raise ParamError("workload.trace_format", f"{fmt!r} is not allowed; allowed: one of {', '.join(repr(f) for f in TRACE_FORMATS)}")
    path = resolve_trace_path(file)
    return filecache.cached("trace", path, (fmt, function), lambda: _build_trace(path, fmt, function))


def _build_trace(path: Path, fmt: str, function: str) -> Trace:
    where = f"trace_function {function!r}" if function else ""
    if fmt == "azure2019":
        inv = filecache.cached("azure2019", path, (function,), lambda: read_azure2019_invocations(path, function))
        counts = inv.counts
        if counts.sum() == 0:
            raise TraceError(
                path, where, "empty trace: no invocations in the selected rows; allowed: a selection with at least one invocation"
            )
        return Trace(str(path), fmt, function, span=inv.minutes * MINUTE, counts=_frozen(counts), bin_seconds=MINUTE, notes=inv.notes)
    if fmt == "azure2021":
        inv = filecache.cached("azure2021", path, (function,), lambda: read_azure2021(path, function))
        times = inv.start
        notes = inv.notes
    else:
        pods = filecache.cached("openb", path, (function,), lambda: read_openb_pods(path, function))
        times = pods.creation_time
        notes = pods.notes
    if len(times) == 0:
        raise TraceError(path, where, "empty trace: no arrivals in the selection; allowed: at least one arrival")
    shifted = times - times[0]
    return Trace(str(path), fmt, function, span=_event_span(shifted), times=_frozen(shifted), notes=notes, origin=float(times[0]))


def load_durations(file: str | Path, fmt: str, function: str = "") -> Durations:
    """The service-time distribution of a trace (azure2019: percentile tables; azure2021: empirical)."""
    if fmt == "openb":
        raise ParamError(
            "workload.trace_service", "the openb pod list has no service durations; allowed: trace_format azure2019 or azure2021"
        )
    if fmt not in TRACE_FORMATS:
        raise ParamError("workload.trace_format", f"{fmt!r} is not allowed; allowed: one of {', '.join(repr(f) for f in TRACE_FORMATS)}")
    path = resolve_trace_path(file)
    if fmt == "azure2021":
        inv = filecache.cached("azure2021", path, (function,), lambda: read_azure2021(path, function))
        if inv.total == 0:
            raise TraceError(path, "", "empty trace: no invocations in the selection; allowed: at least one")
        return filecache.cached(
            "durations2021", path, (function,), lambda: EmpiricalDurations(str(path), _frozen(np.maximum(inv.duration, MIN_SERVICE)))
        )
    inv = filecache.cached("azure2019", path, (function,), lambda: read_azure2019_invocations(path, function))
    dpath = azure2019_durations_path(path)

    def build() -> PercentileDurations:
        totals = inv.per_function.sum(axis=1).astype(float)
        # a function may appear in several rows (different apps): merge by hash, weight by invocations
        uniq: dict[str, float] = {}
        for h, w in zip(inv.functions, totals, strict=True):
            uniq[h] = uniq.get(h, 0.0) + w
        weights = list(uniq.values())
        if sum(weights) <= 0:
            raise TraceError(
                path, "", "empty trace: no invocations in the selected rows; allowed: a selection with at least one invocation"
            )
        return read_azure2019_durations(dpath, list(uniq), weights)

    return filecache.cached("durations2019", dpath, (str(path), function), build)


@dataclass
class TraceCursor:
    """Where a replay stands in its trace; advanced window by window by the arrival stream.

    ``pos`` is in trace seconds. For count traces, ``carry`` is ``(bin, remaining)``: the part of a
    bin's arrivals not yet placed because the bin goes on past the last window.
    """

    trace: Trace
    pos: float = 0.0
    carry: tuple[int, int] | None = None
    key: tuple = field(default_factory=tuple)

    def take(self, length: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        """Trace positions of the arrivals in ``[pos, pos + length)`` (sorted); moves ``pos`` on.

        ``multiple`` scales the trace's intensity: each recorded arrival (or each count) counts
        ``floor(multiple)`` times plus once more with probability ``multiple - floor(multiple)``.
        """
        a = self.pos
        b = a + length
        self.pos = b
        if self.trace.counts is not None:
            return self._take_counts(a, b, loop, multiple, rng)
        return self._take_events(a, b, loop, multiple, rng)

    def _take_counts(self, a: float, b: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        tr = self.trace
        counts = tr.counts
        w = tr.bin_seconds
        nb = len(counts)
        m_lo = int(math.floor(a / w))
        m_hi = int(math.ceil(b / w))
        if not loop:
            m_hi = min(m_hi, nb)
        if m_hi <= m_lo:
            self.carry = None
            return np.empty(0)
        ms = np.arange(m_lo, m_hi)
        lo = np.maximum(ms * w, a)
        hi = np.minimum((ms + 1) * w, b)
        raw = counts[ms % nb]
        fresh = _scale(raw, multiple, rng)
        if self.carry is not None and self.carry[0] == m_lo and lo[0] > m_lo * w:
            fresh[0] = self.carry[1]
        share = (hi - lo) / ((ms + 1) * w - lo)  # this window's share of what is left of each bin
        n = rng.binomial(fresh, np.clip(share, 0.0, 1.0))
        self.carry = (int(ms[-1]), int(fresh[-1] - n[-1])) if hi[-1] < (ms[-1] + 1) * w else None
        total = int(n.sum())
        if total == 0:
            return np.empty(0)
        u = rng.random(total)
        start = np.repeat(lo, n)
        end = np.repeat(hi, n)
        # keep every arrival inside its bin even where u * width rounds up to the bin's end
        return np.sort(np.minimum(start + u * (end - start), np.nextafter(end, -np.inf)))

    def _take_events(self, a: float, b: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        tr = self.trace
        times = tr.times
        span = tr.span
        if not loop:
            i, j = np.searchsorted(times, [a, b], "left")
            pos = times[i:j]
        else:
            parts = []
            for k in range(int(math.floor(a / span)), int(math.floor(b / span)) + 1):
                off = k * span
                i, j = np.searchsorted(times, [a - off, b - off], "left")
                if j > i:
                    parts.append(times[i:j] + off)
            pos = np.concatenate(parts) if parts else np.empty(0)
        if multiple != 1.0 and len(pos):
            pos = np.repeat(pos, _scale(np.ones(len(pos), dtype=np.int64), multiple, rng))
        return pos


def _scale(counts: np.ndarray, multiple: float, rng: np.random.Generator) -> np.ndarray:
    """``counts`` times ``multiple`` in whole arrivals: floor part exactly, fraction by a binomial draw."""
    counts = np.asarray(counts, dtype=np.int64)
    if multiple == 1.0:
        return counts.copy()
    whole = math.floor(multiple)
    frac = multiple - whole
    out = counts * whole
    if frac > 0.0:
        out = out + rng.binomial(counts, frac)
    return out
