"""The round-robin dispatch loop over a function's ready replicas with worker threads (the reference), and the choice
of its compiled twin :mod:`engine.faas._ready` (which also compiles two measures of a replica and a sample's utilisation rows: :func:`chosen_ready`).

:meth:`engine.faas.dispatch.Dispatch._run_ready` calls :func:`round_robin_loop` when the function balances round robin
(not least-outstanding), without the concurrency slowdown, and every ready replica has worker threads (``concurrency``
>= 1): the common case of an autoscaled function (edge-1000's four). Other cases stay in ``_run_ready``'s own loop.
The twin runs the same IEEE double operations in the same order on the same state, so every table is bit-identical;
the switch is :data:`engine.faas.oneslot.FAAS_LOOP_ENV`, shared with the one-slot loop.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapreplace
from typing import NamedTuple

from engine.core.compiled import chosen_module
from engine.faas.observations import replica_counts
from engine.faas.runtime import Replica, tail_arrays
from engine.faas.utilrows import node_rows, replica_rows, response_percentiles

FAAS_READY_MODULE = "engine.faas._ready"


def round_robin_loop(
    buf: list[float],
    bi: int,
    h: float,
    reps: list,
    rr: int,
    c_rep: list[int],
    c_arr: list[float],
    c_start: list[float],
    c_exec: list[float],
) -> tuple[int, int, float | None]:
    """Dispatch the arrivals ``buf[bi:]`` up to ``h`` round robin over ``reps`` (each with worker threads: its ``heap``
    of free times), from position ``rr``: a request starts when it arrives or when the replica's earliest thread is
    free, runs the replica's next execution draw (times its speed factor, plus its transfer), and is appended to the
    replica's starts and ends and to the four request columns. Returns (next row, next position, the last request's
    execution or None when none was dispatched)."""
    n = len(buf)
    nrep = len(reps)
    e = None
    while bi < n:
        a = buf[bi]
        if a > h:
            break
        r = reps[rr % nrep]
        rr += 1
        heap = r.heap
        free = heap[0]
        start = a if a > free else free
        if r.ei >= r.en:
            r.refill()
        e = r.eb[r.ei] * r.inv_speed + r.transfer  # _run_ready's factor is 1.0 here: x * 1.0 is x
        r.ei += 1
        end = start + e
        heapreplace(heap, end)
        r.starts.append(start)
        r.ends.append(end)
        if e > r.max_exec:
            r.max_exec = e
        if end > r.last_end:
            r.last_end = end
        c_rep.append(r.id)
        c_arr.append(a)
        c_start.append(start)
        c_exec.append(e)
        bi += 1
    return bi, rr, e


class ReadyTwins(NamedTuple):
    """What :func:`chosen_ready` gives: the round-robin loop, whether it (and the rest) is compiled, and what a sample
    and a scaler's observation read of each replica every few seconds: its request-seconds in service over a window
    (:meth:`Replica.busy_seconds`), its unfinished requests (:meth:`Replica.unfinished`), as functions of the replica,
    and a sample's utilisation rows (:func:`engine.faas.utilrows.replica_rows`, :func:`~engine.faas.utilrows.node_rows`)
    and response percentiles (:func:`~engine.faas.utilrows.response_percentiles`); a function's request columns as
    numpy arrays (:func:`engine.faas.runtime.tail_arrays`, every 4,096 rows); a scaler round's counts
    (:func:`engine.faas.observations.replica_counts`)."""

    round_robin_loop: Callable[..., tuple[int, int, float | None]]
    compiled: bool
    busy_seconds: Callable[[Replica, float, float], float]
    unfinished: Callable[[Replica, float], int]
    replica_rows: Callable[..., None]
    node_rows: Callable[..., None]
    response_percentiles: Callable[..., tuple[float, float, float]]
    tail_arrays: Callable[..., tuple]
    replica_counts: Callable[..., tuple]


def chosen_ready(env: str) -> ReadyTwins:
    """The compiled twins of :mod:`engine.faas._ready` when ``env`` (the switch's name) lets them run, else the
    references (the module asked for once)."""
    module = chosen_module(FAAS_READY_MODULE, env)
    if module is not None:
        m = module
        return ReadyTwins(
            m.round_robin_loop,
            True,
            m.busy_seconds,
            m.unfinished,
            m.replica_rows,
            m.node_rows,
            m.response_percentiles,
            m.tail_arrays,
            m.replica_counts,
        )
    return ReadyTwins(
        round_robin_loop,
        False,
        Replica.busy_seconds,
        Replica.unfinished,
        replica_rows,
        node_rows,
        response_percentiles,
        tail_arrays,
        replica_counts,
    )
