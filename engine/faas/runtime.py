"""A function deployment at run time (:class:`FunctionRuntime`: its request rows, gateway queue and replicas) and its
replicas (:class:`Replica`: worker threads, the requests they served). :mod:`engine.faas.flow` moves them in time.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.autoscaling.functions import FunctionScaler
from engine.core.params import Mirror, Section
from engine.faas.arrivals import Arrivals
from engine.faas.measured import Measurements
from engine.faas.simulators import SIMULATORS, FunctionSimulator
from engine.faas.traces import load_function_trace
from engine.workload.requests import RequestStream

INF = math.inf
BATCH = 256  # execution draws per replica at a time
FLOAT64 = np.dtype(np.float64)
LIVE = ("conceived", "starting", "running")  # a per-request function's instances counted against max_replicas
STATES = ("conceived", "pending", "starting", "running", "draining", "removed")  # a replica's, in lifecycle order


def _numpy_sum(d: list[float]) -> float:
    """``float(np.sum(d))`` for 8..128 values, in numpy's order (eight running sums, combined pairwise, then the rest).

    numpy's sum of up to 128 contiguous doubles is that unrolled loop; repeating it in Python gives the same bits
    without the cost of making arrays of a few dozen values (checked against numpy on 100,000 random lists).
    """
    n = len(d)
    r0, r1, r2, r3, r4, r5, r6, r7 = d[0:8]
    m = n - n % 8
    for i in range(8, m, 8):
        r0 += d[i]
        r1 += d[i + 1]
        r2 += d[i + 2]
        r3 += d[i + 3]
        r4 += d[i + 4]
        r5 += d[i + 5]
        r6 += d[i + 6]
        r7 += d[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for i in range(m, n):
        res += d[i]
    return 0.0 + res


def tail_arrays(rep: list, arr: list, start: list, exe: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A function's tail lists as numpy columns (replica or rejection code as int32, the times as float64): the
    reference of the compiled twin in :mod:`engine.faas._ready` (see :func:`engine.faas.ready_loop.chosen_ready`)."""
    return (
        np.asarray(rep, dtype=np.int32),
        np.asarray(arr, dtype=np.float64),
        np.asarray(start, dtype=np.float64),
        np.asarray(exe, dtype=np.float64),
    )


def live_count(rt: FunctionRuntime) -> int:
    """Instances of a per-request function counted against max_replicas (conceived, starting or running)."""
    n = rt.count
    return n["conceived"] + n["starting"] + n["running"]


class Replica:
    """One replica (an instance): where it runs, its worker threads, what it served recently."""

    __slots__ = (
        "id",
        "rt",
        "image",
        "state",
        "node",
        "node_index",
        "device",
        "threads",
        "heap",
        "ends_heap",
        "starts",
        "ends",
        "max_exec",
        "last_end",
        "eb",
        "ei",
        "en",
        "rng",
        "inv_speed",
        "transfer",
        "created",
        "placed_at",
        "ready_at",
        "drain_at",
        "removed_at",
        "resources",
        "requests",
        "expiry",
    )

    def __init__(self, rid: int, rt: FunctionRuntime, image: str, created: float, rng: np.random.Generator):
        self.id = rid
        self.rt = rt
        self.image = image
        self.state = "conceived"
        self.node: str | None = None
        self.node_index = -1
        self.device = ""
        self.threads = max(1, rt.spec.concurrency) if rt.per_request else rt.spec.concurrency
        self.heap: list[float] = []
        self.ends_heap: list[float] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.max_exec = 0.0
        self.last_end = 0.0
        self.eb: array | list[float] = []
        self.ei = 0
        self.en = 0
        self.rng = rng
        self.inv_speed = 1.0
        self.transfer = 0.0
        self.created = created
        self.placed_at: float | None = None
        self.ready_at = INF
        self.drain_at = INF
        self.removed_at: float | None = None
        self.resources = (-1.0, 0.0, 0.0)
        self.requests = 0
        self.expiry = INF

    def refill(self) -> None:
        """The next execution times (:attr:`eb`, read ``eb[ei]``): the simulator's batch for this replica's device and
        image, drawn when the previous batch is used up. A batch of float64 is kept as an ``array('d')`` of its doubles
        (one copy of its bytes: indexing gives the very float ``tolist()`` would, and the compiled loops read the
        doubles in place); any other batch as ``tolist()``'s list."""
        batch = self.rt.sim.execution(self.device, self.image, BATCH, self.rng)
        self.eb = array("d", batch.tobytes()) if type(batch) is np.ndarray and batch.dtype is FLOAT64 else batch.tolist()
        self.ei, self.en = 0, len(self.eb)

    def in_service(self, t: float) -> int:
        """Requests in service at ``t`` (started, not ended)."""
        starts = self.starts
        hi = bisect_right(starts, t)
        n = 0
        for e in self.ends[bisect_left(starts, t - self.max_exec) : hi]:  # a loop: a few values, no generator
            if e > t:
                n += 1
        return n

    def queued(self, t: float) -> int:
        """Requests dispatched to it that have not started at ``t``."""
        return len(self.starts) - bisect_right(self.starts, t)

    def unfinished(self, t: float) -> int:
        """Requests dispatched to it that have not ended at ``t`` (queued plus in service, one pass; every sample asks
        each replica)."""
        starts = self.starts
        hi = bisect_right(starts, t)
        n = len(starts) - hi
        for e in self.ends[bisect_left(starts, t - self.max_exec) : hi]:
            if e > t:
                n += 1
        return n

    def busy_seconds(self, t0: float, t1: float) -> float:
        """Request-seconds in service within [t0, t1].

        Nothing ended after ``t0``: 0 without a look. Up to 128 requests: summed in Python in numpy's order (fewer than
        8 left to right, then :func:`_numpy_sum`), so the figure is the same to the last bit; more: numpy.
        """
        if self.last_end <= t0:
            return 0.0
        starts = self.starts
        lo = bisect_left(starts, t0 - self.max_exec)
        hi = bisect_left(starts, t1)
        if hi <= lo:
            return 0.0
        ends = self.ends
        if hi - lo < 8:
            total = 0.0
            for i in range(lo, hi):
                e, s = ends[i], starts[i]
                d = (e if e < t1 else t1) - (s if s > t0 else t0)
                if d > 0.0:
                    total += d
            return total
        if hi - lo <= 128:
            # d > 0 or 0.0 where max(d, 0.0) kept -0.0: the same sum (a signed zero moves no sum; _numpy_sum ends in 0.0 + ...)
            return _numpy_sum(
                [
                    d if (d := (e if e < t1 else t1) - (s if s > t0 else t0)) > 0.0 else 0.0
                    for s, e in zip(starts[lo:hi], ends[lo:hi], strict=True)
                ]
            )
        s = np.asarray(starts[lo:hi])
        e = np.asarray(self.ends[lo:hi])
        return float(np.clip(np.minimum(e, t1) - np.maximum(s, t0), 0.0, None).sum())

    def trim(self, before: float) -> None:
        """Forget requests that started before ``before`` - max_exec (they ended before ``before``)."""
        k = bisect_left(self.starts, before - self.max_exec)
        if k > 4096:
            del self.starts[:k]
            del self.ends[:k]


class FunctionRuntime:
    """One function deployment at run time: its requests (columns), gateway queue, replicas and scaler."""

    def __init__(
        self,
        index: int,
        key: str,
        section: Section,
        faas: Any,
        measurements: Measurements,
        rng: np.random.Generator,
        sections: Mapping[str, Section] | None = None,
    ):
        self.index = index
        self.key = key
        self.section = section
        self.spec = Mirror(section)  # read on hot paths
        self.name = section.label
        self.trace = load_function_trace(section) if (section.simulator == "trace" or section.trace_memory_file) else None
        self.sim: FunctionSimulator = SIMULATORS[section.simulator](self.spec, faas, measurements, self.trace)
        self.stream = RequestStream(self.spec, rng, sections)  # sections: a request generator plugin's own
        self.arrivals = Arrivals(self.stream)
        self.buf: list[float] = []
        self.bi = 0
        self.base = 0  # row number of buf[0]
        self.done_to = -INF
        self.blocked: float | None = None
        self.gateway: deque[tuple[float, int]] = deque()  # (arrival, 0 waiting | rejection code), in arrival order
        self.waiting = 0
        self.ready: list[Replica] = []
        self.unthreaded = 0  # ready replicas without worker threads (kept as ready changes: no pass per dispatch)
        self.rr = 0
        self.replicas: dict[int, Replica] = {}  # every replica not removed
        #: replicas (not removed) per state, kept by the flow as states change (:meth:`set_state`): no pass to count them
        self.count = dict.fromkeys(STATES, 0)
        self.slots: list[tuple[float, int, Replica]] = []  # per_request: busy instances by their earliest free slot
        self.idle: list[Replica] = []  # per_request: instances with a free slot, most recently freed last
        #: each replica keeps its requests' starts and ends (off while samples are taken in batches: no reader then)
        self.replica_rows = True
        self.single_slot = True  # per_request: no instance with more than one slot has been busy (the one-slot loop)
        self.rows = 0  # rows appended (dispatched + rejected)
        self.c_rep: list[int] = []
        self.c_arr: list[float] = []
        self.c_start: list[float] = []
        self.c_exec: list[float] = []
        self.as_arrays = tail_arrays  # or its compiled twin (the flow sets it)
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.gw_wait: dict[int, float] = {}  # row -> seconds held by the gateway
        self.cold: list[int] = []  # rows that waited for a starting replica
        self.rejected = 0
        self.dispatched = 0
        self.last_request: float | None = None
        self.scaler: FunctionScaler | None = None
        self.replica_seconds_done = 0.0
        self.outstanding: dict[int, int] = {}  # least_outstanding: unfinished requests per ready replica
        self.lor_heap: list[tuple[float, int]] = []  # (end, replica) of dispatched requests, least_outstanding only
        self.interval_rows = 0  # rows when the last sample was taken
        self.sampled = 0  # rows of the tail lists a sample has already covered (the tail is flushed every TAIL rows)
        self.interval_cold = 0
        self.exec_recent: deque[float] = deque(maxlen=64)
        #: (time, pending, starting, running, draining, replica seconds done, placement times) after each change,
        #: kept while the world samples in batches (None otherwise)
        self.state_log: list[tuple] | None = None

    # -- reading the spec ---------------------------------------------------------------------------------
    @property
    def per_request(self) -> bool:
        """Does this function scale per request (instances, no gateway queue)?"""
        return self.spec.scaler == "per_request"

    @property
    def generated(self) -> int:
        """Requests generated and processed so far (each one has, or will have, a row)."""
        return self.base + self.bi

    def live(self) -> list[Replica]:
        """Every replica not removed (draining ones included)."""
        return list(self.replicas.values())

    def set_state(self, r: Replica, state: str) -> None:
        """Move replica ``r`` to ``state`` (:attr:`count` follows)."""
        n = self.count
        n[r.state] -= 1
        n[state] += 1
        r.state = state

    def states(self) -> tuple[int, int, int, int, list[float]]:
        """Replicas pending (conceived or pending), starting, running, draining, and the placement times of the placed
        ones (in replica order): what a sample row reports (the counts kept, the times one pass over the replicas)."""
        n = self.count
        placed = [p for r in self.replicas.values() if (p := r.placed_at) is not None]
        return n["conceived"] + n["pending"], n["starting"], n["running"], n["draining"], placed

    def at_limit(self) -> bool:
        """Per request: are as many instances live as ``max_replicas`` allows?"""
        return live_count(self) >= self.spec.max_replicas

    def counted(self) -> list[Replica]:
        """Replicas counted against the bounds: not draining, not removed."""
        return [r for r in self.replicas.values() if r.state not in ("draining", "removed")]

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every row so far (replica or rejection code, arrival, start, execution), flushed chunks and the tail."""
        parts = [*self.chunks, self.as_arrays(self.c_rep, self.c_arr, self.c_start, self.c_exec)]
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))  # type: ignore[return-value]

    def flush(self, chunk: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
        """Move the tail lists into a numpy chunk (``chunk``: the tail already as arrays); returns it."""
        if chunk is None:
            chunk = self.as_arrays(self.c_rep, self.c_arr, self.c_start, self.c_exec)
        if len(chunk[0]):
            self.chunks.append(chunk)
            if len(self.chunks) > 64:  # merge small chunks: fewer arrays, same bytes
                merged = tuple(np.concatenate([c[i] for c in self.chunks]) for i in range(4))
                self.chunks = [merged]  # type: ignore[list-item]
        self.c_rep, self.c_arr, self.c_start, self.c_exec = [], [], [], []
        self.sampled = 0
        return chunk

    def flush_upto(self, n: int, mark: int = 0, arrays: tuple[np.ndarray, ...] | None = None) -> None:
        """Move the first ``n`` rows of the tail into a numpy chunk (rows a sample has covered); the rest stay.
        ``arrays``: the tail's rows from ``mark`` on, already made into arrays (reused, not made again)."""
        lists = (self.c_rep, self.c_arr, self.c_start, self.c_exec)
        rest = tuple(c[n:] for c in lists)
        chunk = None
        if arrays is not None and mark <= n:
            dtypes = (np.int32, np.float64, np.float64, np.float64)
            chunk = tuple(
                np.concatenate((np.asarray(c[:mark], dtype=d), a[: n - mark].astype(d))) if mark else a[:n].astype(d)
                for c, a, d in zip(lists, arrays, dtypes, strict=True)
            )
        del self.c_rep[n:], self.c_arr[n:], self.c_start[n:], self.c_exec[n:]
        self.flush(chunk)  # type: ignore[arg-type]
        self.c_rep, self.c_arr, self.c_start, self.c_exec = rest  # type: ignore[assignment]
        self.sampled = 0

    def keep_replica_rows(self) -> None:
        """Each live replica's starts and ends (and longest execution) again, from the request rows, and kept from now
        on: what :attr:`Replica.starts` held had it been kept all along (dropped old rows never change a reading)."""
        rep, _, start, exe = self.columns()
        for r in self.replicas.values():
            mine = rep == r.id
            s, e = start[mine], exe[mine]
            r.starts, r.ends = s.tolist(), (s + e).tolist()
            longer = e[e > 0.0]  # the loops keep the largest execution above 0.0 (NaN never is)
            r.max_exec = float(longer.max()) if len(longer) else 0.0
        self.replica_rows = True

    def stored_bytes(self) -> int:
        """Bytes the request rows take at rest (chunks, sparse waits and cold flags; the unflushed tail excluded)."""
        return sum(a.nbytes for c in self.chunks for a in c) + 16 * len(self.gw_wait) + 8 * len(self.cold)
