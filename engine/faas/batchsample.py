"""The function samples of a stretch, computed in one go from the request rows and a log of replica states.

When every function scales per request and no utilisation rows are recorded, a sample row is a function of the
request rows (each one written when its request arrives, in arrival order) and of the replicas' states at the
sample's time. :class:`BatchSampler` therefore takes every sample due in a catch-up at its end, with numpy over the
stretch's rows, instead of one Python row per ``run.sample_interval``: a quiet function costs nothing per sample.
The rows are the ones :meth:`FunctionWorld._sample` writes, value for value (the same floating-point operations:
percentiles as :mod:`engine.core.quantiles` does them, lifetimes summed in Python's compensated order).

The replicas' states come from :attr:`FunctionRuntime.state_log`: after each lifecycle change the flow appends
(time, pending, starting, running, draining, replica seconds of the removed, placement times of the placed), so a
sample at ``T`` reads the last entry at or before ``T`` (everything at ``T`` happens before its sample).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from engine.faas.flow import FunctionRuntime

INF = math.inf
PERCENTS = (50, 95, 99)


def sample_times(last: float, due: float, interval: float, t: float) -> np.ndarray:
    """The sample times from ``due`` on, before ``t``, each ``interval`` after the last (the same sums as a timer's)."""
    if due >= t:
        return np.zeros(0)
    k = int((t - due) / interval) + 2 if interval > 0 else 1
    steps = np.full(k, interval)
    steps[0] = due
    times = np.cumsum(steps)  # sequential sums: due, due + i, (due + i) + i, ...
    return times[: int(np.searchsorted(times, t, side="left"))]


def python_sum(columns: list[np.ndarray], shape: int) -> np.ndarray:
    """``sum([c[j] for c in columns])`` for every j, as Python 3.12's ``sum`` of floats does it (Neumaier)."""
    if not columns:
        return np.zeros(shape, dtype=np.int64)  # sum([]) is the int 0
    f = columns[0] + 0.0
    c = np.zeros(shape)
    for x in columns[1:]:
        t = f + x
        c += np.where(np.abs(f) >= np.abs(x), (f - t) + x, (x - t) + f)
        f = t
    return np.where((c != 0.0) & np.isfinite(c), f + c, f)


def group_percentiles(values: np.ndarray, groups: np.ndarray, k: int) -> list[np.ndarray]:
    """p50, p95, p99 of ``values`` in each of ``k`` groups (numpy's linear method, bit for bit); NaN for an empty group."""
    out = [np.full(k, np.nan) for _ in PERCENTS]
    if not len(values):
        return out
    order = np.lexsort((values, groups))
    ordered, g = values[order], groups[order]
    counts = np.bincount(g, minlength=k)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    has = counts > 0
    n, first = counts[has], starts[has]
    for p, res in zip(PERCENTS, out, strict=True):
        virtual = (n - 1) * (p / 100)
        below = np.floor(virtual)
        gamma = virtual - below
        lo = first + below.astype(np.int64)
        hi = np.minimum(lo + 1, first + n - 1)
        low, high = ordered[lo], ordered[hi]
        diff = high - low
        value = np.where(gamma >= 0.5, high - diff * (1 - gamma), low + diff * gamma)
        res[has] = np.where(virtual >= n - 1, ordered[first + n - 1], value)
    return out


class BatchSampler:
    """Takes a world's due samples at the end of each catch-up (see the module's doc)."""

    def __init__(self, world: Any):  # the engine.faas.world.FunctionWorld it samples for (not imported: no cycle)
        self.world = world
        self.flying: dict[str, list[float]] = {}  # ends after the last sample of served rows before the tail's mark

    def start(self, now: float) -> None:
        """Begin: the functions' state logs start with their state now; requests in flight are read off the replicas."""
        flow = self.world.flow
        for rt in flow.functions:
            rt.state_log = []
            flow.log_state(rt, now)
            self.flying[rt.key] = sorted(e for r in rt.replicas.values() for e in r.ends if e > self.world._last_sample)

    def stop(self) -> None:
        for rt in self.world.flow.functions:
            rt.state_log = None

    def take(self, t: float) -> None:
        """Every sample due before ``t`` (the flow has processed everything up to ``t``)."""
        world = self.world
        times = sample_times(world._last_sample, world._next_sample, world._run.sample_interval, t)
        k = len(times)
        if not k:
            return
        prev = np.concatenate(([world._last_sample], times[:-1]))
        interval = times - prev
        columns = [self._function(rt, times, interval) for rt in world.flow.functions]
        f = len(columns)
        rows = {}
        for c, name in enumerate(world.recorder.specs["function_samples"].names):
            parts = [col[c] for col in columns]
            if f == 1:
                rows[name] = parts[0]
            else:
                block = np.empty((k, f), dtype=object)
                for i, part in enumerate(parts):
                    block[:, i] = part.tolist() if isinstance(part, np.ndarray) else part
                rows[name] = block.ravel().tolist()
        world.recorder.extend("function_samples", rows)
        last = float(times[-1])
        world._last_sample = last
        world._sample_stamp = world._stamp(last)
        world._next_sample = last + world._run.sample_interval

    def _function(self, rt: FunctionRuntime, times: np.ndarray, interval: np.ndarray) -> list:
        world = self.world
        k = len(times)
        mark = rt.sampled
        rep = np.asarray(rt.c_rep[mark:], dtype=np.int64)
        arr = np.asarray(rt.c_arr[mark:], dtype=np.float64)
        start = np.asarray(rt.c_start[mark:], dtype=np.float64)
        exe = np.asarray(rt.c_exec[mark:], dtype=np.float64)
        n_tail = len(rep)
        upto = np.searchsorted(arr, times, side="right")  # tail rows (from the mark) written by each sample
        served = rep >= 0
        # counts at each sample: rows written by then, of them rejected, cold
        rows_now = rt.rows
        rows_at = rows_now - n_tail + upto
        rej_cum = np.concatenate(([0], np.cumsum(~served)))
        rejected = rt.rejected - int(rej_cum[-1]) + rej_cum[upto]
        generated = rt.generated - n_tail + upto
        cold_all = rt.cold
        c0 = bisect_left(cold_all, rows_now - n_tail)
        cold_arr = np.asarray(cold_all[c0:], dtype=np.int64)
        cold_at = c0 + np.searchsorted(cold_arr, rows_at, side="left")
        dispatched = generated - rejected  # per request: every row is dispatched or rejected
        # in flight: served rows written by then that have not ended (before the mark: the kept ends)
        end = start + exe
        s_arr = np.sort(arr[served])
        s_end = np.sort(end[served])
        flying = np.asarray(self.flying[rt.key])
        in_flight = (
            np.searchsorted(s_arr, times, side="right")
            - np.searchsorted(s_end, times, side="right")
            + (len(flying) - np.searchsorted(flying, times, side="right"))
        )
        gen_prev = np.concatenate(([world._sampled_generated[rt.key]], generated[:-1]))
        arrivals = generated - gen_prev
        with np.errstate(divide="ignore", invalid="ignore"):
            rps = np.where(interval > 0, arrivals / interval, np.nan)
        cold_prev = np.concatenate(([rt.interval_cold], cold_at[:-1]))
        cold = cold_at - cold_prev
        # response percentiles of the served rows each sample wrote
        group = np.searchsorted(times, arr, side="left")  # the sample that wrote the row (arr <= its time)
        keep = served & (group < k)
        p50, p95, p99 = group_percentiles((start + exe - arr)[keep], group[keep], k)
        # replica states and lifetimes from the state log
        log = rt.state_log
        log_t = np.asarray([e[0] for e in log])
        at = np.searchsorted(log_t, times, side="right") - 1
        states = np.asarray([e[1:5] for e in log], dtype=np.int64)[at]
        seconds = np.empty(k)
        for j in np.unique(at).tolist():
            sel = at == j
            _, _, _, _, _, done, placed = log[j]
            ts = times[sel]
            seconds[sel] = done + python_sum([ts - p for p in placed], len(ts))
        running = states[:, 2]
        world._max_running[rt.key] = max(world._max_running[rt.key], int(running.max()))
        # what the next batch starts from
        last = float(times[-1])
        new_mark = int(upto[-1])
        ends_before = end[:new_mark][served[:new_mark]]
        self.flying[rt.key] = sorted([e for e in self.flying[rt.key] if e > last] + ends_before[ends_before > last].tolist())
        world._sampled_generated[rt.key] = int(generated[-1])
        rt.interval_cold = int(cold_at[-1])
        rt.sampled = mark + new_mark
        if rt.sampled >= 4096:
            rt.flush_upto(rt.sampled)
        forget = last - max(world.flow.faas.metrics_window, float(interval[-1]))
        for r in rt.replicas.values():
            if len(r.starts) > 4096:
                r.trim(forget)
        del log[: max(int(at[-1]), 0)]  # the entry in force at the last sample stays
        return [
            times,
            [rt.name] * k,
            generated,
            dispatched - in_flight,
            in_flight,
            [rt.waiting] * k,
            rejected,
            arrivals,
            rps,
            cold,
            p50,
            p95,
            p99,
            states[:, 0],
            states[:, 1],
            running,
            states[:, 3],
            seconds,
        ]
