"""The function samples of a stretch, computed in one go from the request rows and a log of replica states.

When every function scales per request and no utilisation rows are recorded, a sample row is a function of the
request rows (each one written when its request arrives, in arrival order) and of the replicas' states at the
sample's time. :class:`BatchSampler` therefore takes every sample due in a catch-up at its end, with numpy over the
stretch's rows, instead of one Python row per ``run.sample_interval``: a quiet function costs nothing per sample. The
rows are written only when the table is read (:meth:`Recorder.owe`): a run that keeps only its summary (a sweep, a
benchmark) never computes them.
The rows are the ones :meth:`FunctionWorld._sample` writes, value for value (the same floating-point operations:
percentiles as :mod:`engine.core.quantiles` does them, lifetimes summed in Python's compensated order).

The replicas' states come from :attr:`FunctionRuntime.state_log`: after each lifecycle change the flow appends
(time, pending, starting, running, draining, replica seconds of the removed, placement times of the placed), so a
sample at ``T`` reads the last entry at or before ``T`` (everything at ``T`` happens before its sample).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from engine.core.recorder import Recorder
    from engine.faas.flow import RequestFlow
    from engine.faas.runtime import FunctionRuntime

INF = math.inf
PERCENTS = (50, 95, 99)
OWED = 1 << 20  # samples owed at most (their times: 8 MB): beyond, a catch-up writes them


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
    """p50, p95, p99 of ``values`` in each of ``k`` groups (numpy's linear method, bit for bit); NaN for an empty group.

    Groups given in order (a stretch's rows by sample) are sorted by one stable sort of ``group x n + value's rank``:
    the same sorted values per group as ``lexsort`` gives (equal values are interchangeable), in a third of its time.
    """
    out = [np.full(k, np.nan) for _ in PERCENTS]
    m = len(values)
    if not m:
        return out
    if m > 1 and (groups[1:] < groups[:-1]).any():
        order = np.lexsort((values, groups))
    else:
        rank = np.empty(m, dtype=np.int64)
        rank[np.argsort(values)] = np.arange(m)
        order = np.argsort(groups.astype(np.int64) * m + rank, kind="stable")
    ordered, g = values[order], groups[order]
    first = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))  # where each present group starts
    present = g[first]
    n = np.diff(np.concatenate((first, [m])))
    for p, res in zip(PERCENTS, out, strict=True):
        virtual = (n - 1) * (p / 100)
        below = np.floor(virtual)
        gamma = virtual - below
        lo = first + below.astype(np.int64)
        hi = np.minimum(lo + 1, first + n - 1)
        low, high = ordered[lo], ordered[hi]
        diff = high - low
        value = np.where(gamma >= 0.5, high - diff * (1 - gamma), low + diff * gamma)
        res[present] = np.where(virtual >= n - 1, ordered[first + n - 1], value)
    return out


def lifetimes(log: list[tuple], at: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Replica seconds at each of ``times``: the removed replicas' (``done``) plus ``sum(t - p for p in placed)`` of the
    state-log entry in force (``at``, not decreasing), summed as Python does; entries with as many placed replicas
    are summed together (the same operations on each value, one numpy pass per count instead of one per entry)."""
    k = len(times)
    seconds = np.empty(k)
    entries, firsts = np.unique(at, return_index=True)  # each entry's samples are a slice
    entry_of = np.repeat(np.arange(len(entries)), np.diff(np.concatenate((firsts, [k]))))  # per sample
    counts = np.asarray([len(log[j][6]) for j in entries.tolist()])
    for count in np.unique(counts).tolist():
        members = entries[counts == count].tolist()
        index = np.flatnonzero(counts[entry_of] == count)
        which = np.searchsorted(np.flatnonzero(counts == count), entry_of[index])  # the sample's entry among members
        done = np.asarray([log[j][5] for j in members], dtype=np.float64)[which]
        placed = np.asarray([log[j][6] for j in members], dtype=np.float64).reshape(len(members), count)[which]
        ts = times[index]
        seconds[index] = done + python_sum([ts - placed[:, c] for c in range(count)], len(index))
    return seconds


class SampleCursor:
    """Where a world's ``function_samples`` stand: the last sample's time, the next one due, and what the last sample
    counted per function. The world (one sample at a time) and :class:`BatchSampler` (in batches) both move it."""

    def __init__(self, keys: list[str], interval: Callable[[], float], stamp: Callable[[float], tuple[float, int]]):
        self.last = 0.0
        self.due = INF
        self.stamp = (0.0, INF)  # when the next sample's timer was set, as simpy would order it (time, sequence)
        self.generated = dict.fromkeys(keys, 0)  # requests generated by the last sample
        self.max_running = dict.fromkeys(keys, 0)  # the most running replicas any sample saw
        self._interval, self._stamp = interval, stamp

    @property
    def interval(self) -> float:
        """``run.sample_interval`` now (it may change during a run)."""
        return self._interval()

    def taken(self, last: float) -> float:
        """The samples up to ``last`` are written: the next one is due an interval later (returned)."""
        self.last = last
        self.stamp = self._stamp(last)
        self.due = last + self._interval()
        return self.due


class BatchSampler:
    """Takes a world's due samples at the end of each catch-up (see the module's doc), and computes their rows only when
    the table is read: a catch-up moves the cursor (the sample times, the timer stamps, exactly as before) and keeps the
    times it owes; :meth:`settle` writes their rows, which are the same whenever it runs (see :meth:`take`)."""

    def __init__(self, flow: RequestFlow, recorder: Recorder, cursor: SampleCursor):
        self.flow, self.recorder, self.cursor = flow, recorder, cursor
        self.flying: dict[str, list[float]] = {}  # ends after the last sample of served rows before the tail's mark
        self.owed: list[np.ndarray] = []  # sample times taken but not yet written, stretch by stretch
        self.owed_count = 0
        self.written = cursor.last  # the time of the last sample written (the one before the first owed)
        recorder.owe("function_samples", self.settle)

    def start(self, now: float) -> None:
        """Begin: the functions' state logs start with their state now; requests in flight are read off the replicas."""
        flow = self.flow
        self.written = self.cursor.last
        for rt in flow.functions:
            rt.state_log = []
            flow.log_state(rt, now)
            self.flying[rt.key] = sorted(e for r in rt.replicas.values() for e in r.ends if e > self.cursor.last)
            rt.replica_rows = False  # the samples read the request rows: the replicas need not repeat them

    def stop(self) -> None:
        self.settle()
        for rt in self.flow.functions:
            rt.state_log = None
            rt.keep_replica_rows()  # samples one at a time, utilisation rows and scalers read the replicas' own

    def take(self, t: float) -> None:
        """Every sample due before ``t`` (the flow has processed everything up to ``t``): the cursor moves now, the rows
        are owed until the table is read (or too many are owed).

        The rows owed are the same whenever they are written: a sample before ``t`` reads request rows that arrived by
        its time (rows written later arrive after ``t``), state-log entries at or before its time (later ones are at
        ``t`` or after) and what the previous sample left (:meth:`settle` writes stretches in order)."""
        cursor = self.cursor
        times = sample_times(cursor.last, cursor.due, cursor.interval, t)
        if not len(times):
            return
        self.owed.append(times)
        self.owed_count += len(times)
        cursor.taken(float(times[-1]))
        if self.owed_count > OWED:
            self.settle()

    def settle(self) -> None:
        """Write the rows of every sample owed (see :meth:`take`)."""
        if not self.owed:
            return
        times = self.owed[0] if len(self.owed) == 1 else np.concatenate(self.owed)
        self.owed, self.owed_count = [], 0
        k = len(times)
        prev = np.concatenate(([self.written], times[:-1]))
        interval = times - prev
        columns = [self._function(rt, times, interval) for rt in self.flow.functions]
        f = len(columns)
        rows = {}
        for c, name in enumerate(self.recorder.specs["function_samples"].names):
            parts = [col[c] for col in columns]
            if f == 1:
                rows[name] = parts[0]
            else:
                block = np.empty((k, f), dtype=object)
                for i, part in enumerate(parts):
                    block[:, i] = part.tolist() if isinstance(part, np.ndarray) else part
                rows[name] = block.ravel().tolist()
        self.recorder.extend("function_samples", rows)
        self.written = float(times[-1])

    def max_running(self, rt: FunctionRuntime) -> int:
        """The most running replicas any sample of ``rt`` saw, the owed ones included (without writing them): the
        largest running count among the state-log entries in force at an owed sample's time."""
        most = self.cursor.max_running[rt.key]
        if not self.owed:
            return most
        times = self.owed[0] if len(self.owed) == 1 else np.concatenate(self.owed)
        log = rt.state_log
        log_t = np.asarray([e[0] for e in log])
        # entry j is in force from its time until the next entry's: the samples in [t_j, t_j+1)
        covers = np.diff(np.searchsorted(times, np.append(log_t, INF), side="left")) > 0
        running = np.asarray([e[3] for e in log], dtype=np.int64)[covers]
        return max(most, int(running.max())) if len(running) else most

    def _function(self, rt: FunctionRuntime, times: np.ndarray, interval: np.ndarray) -> list:
        cursor = self.cursor
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
        gen_prev = np.concatenate(([cursor.generated[rt.key]], generated[:-1]))
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
        seconds = lifetimes(log, at, times)
        running = states[:, 2]
        cursor.max_running[rt.key] = max(cursor.max_running[rt.key], int(running.max()))
        # what the next batch starts from
        last = float(times[-1])
        new_mark = int(upto[-1])
        ends_before = end[:new_mark][served[:new_mark]]
        self.flying[rt.key] = sorted([e for e in self.flying[rt.key] if e > last] + ends_before[ends_before > last].tolist())
        cursor.generated[rt.key] = int(generated[-1])
        rt.interval_cold = int(cold_at[-1])
        rt.sampled = mark + new_mark
        if rt.sampled >= 4096:
            rt.flush_upto(rt.sampled, mark, (rep, arr, start, exe))
        forget = last - max(self.flow.faas.metrics_window, float(interval[-1]))
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
