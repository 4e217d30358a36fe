"""The one-slot request loop of per-request scaling (``concurrency: 1``, SimFaaS's model) and the idle-stack upkeep.

:func:`single_slot_loop` is the reference; :mod:`engine.faas._oneslot` is its compiled twin (the same steps on the same
objects, so the same rows). :class:`engine.faas.dispatch.Dispatch` calls whichever :func:`one_slot_loop` chooses.

Idle re-checks: an instance's expiry check (an ``"expire"`` entry of the flow's transitions heap, pushed for its last
request's end plus ``idle_timeout``) is most often of an instance used since; :meth:`engine.faas.flow.RequestFlow.catch_up`
then only pushes it again for its new time. A function alone on the platform lets the loop do that itself (``heap``):
when the next arrival is past the heap's top and the top is such a re-check due by ``limit``, it is popped and pushed
again exactly as the catch-up would (the same sequence number, after the arrivals at or before its time), and the
arrivals go on, instead of a return to the catch-up per re-check. The other transitions due on the way (an instance
starting, running, expired or drained) are the catch-up's own step (``step``), called from the loop at the same point
of the order: a cold start's three or four returns to the catch-up become one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from heapq import heappop, heappush

from engine.core.compiled import chosen_module
from engine.faas.runtime import Replica

INF = math.inf
NAN = math.nan
#: The rejection code of a request beyond the instance limit (:data:`engine.faas.dispatch.REASONS`).
CONCURRENCY_LIMIT = -2
#: Environment switch of the one-slot loop and the round-robin loop: "python" (:func:`single_slot_loop`,
#: :func:`engine.faas.ready_loop.round_robin_loop`), "compiled" (their twins :mod:`engine.faas._oneslot`,
#: :mod:`engine.faas._ready`, or an error when not built), unset or "auto" (each twin when built).
FAAS_LOOP_ENV = "SCALELAB_FAAS_LOOP"
FAAS_LOOP_MODULE = "engine.faas._oneslot"
ALIVE = ("starting", "running", "conceived")  # an instance that can take a request (once its slot is free)


def one_slot_loop() -> tuple[Callable[..., tuple[int, float, int, float]], bool]:
    """The one-slot loop this process uses (see :data:`FAAS_LOOP_ENV`), and whether it is the compiled twin."""
    module = chosen_module(FAAS_LOOP_MODULE, FAAS_LOOP_ENV)
    return (module.single_slot_loop, True) if module is not None else (single_slot_loop, False)


def free_instance(slots: list, idle: list, a: float, seq: int) -> tuple[Replica | None, int]:
    """Per-request scaling's idle-stack upkeep at the arrival ``a``: instances with a slot free by ``a`` join the idle
    stack (in the order they freed), then the top of the stack is the instance the request takes; stale tops (no
    free slot, or gone) are dropped, a busy one back onto ``slots`` with a new sequence number. Returns the instance
    (None: no idle one) and the sequence number."""
    while slots and slots[0][0] <= a:
        r = heappop(slots)[2]
        if r.state in ALIVE and r.heap[0] <= a and r not in idle:
            idle.append(r)
    while idle:
        r = idle[-1]
        if r.state in ALIVE and r.heap[0] <= a:
            return r, seq
        idle.pop()
        if r.state in ALIVE:
            seq += 1
            heappush(slots, (r.heap[0], seq, r))
    return None, seq


def recheck(heap: list, h: float, rt: object, idle_timeout: float, seq: int) -> int:
    """The transitions heap's top, when it is due at ``h`` and an idle re-check of an instance of ``rt`` used since
    (running, its last request's end plus ``idle_timeout`` past ``h``), pushed again for that time as the catch-up
    would; returns the sequence number, unchanged when the top is anything else (the loop then stops at ``h``)."""
    if heap:
        top = heap[0]
        if top[0] == h and top[2] == "expire":
            r = top[3]
            if r.rt is rt and r.state == "running":
                at = r.last_end + idle_timeout
                if h < at < INF:
                    heappop(heap)
                    seq += 1
                    r.expiry = at
                    heappush(heap, (at, seq, "expire", r))
    return seq


def single_slot_loop(
    buf: list[float],
    bi: int,
    h: float,
    slots: list,
    idle: list,
    c_rep: list[int],
    c_exec: list[float],
    keep: bool,
    seq: int,
    at_limit: Callable[[], bool],
    rejected: list[int],
    heap: list | None = None,
    limit: float = -INF,
    rt: object = None,
    idle_timeout: float = 0.0,
    step: Callable[[int], int] | None = None,
) -> tuple[int, float, int, float]:
    """The one-slot loop (the reference; :mod:`engine.faas._oneslot` is its compiled twin): dispatch the arrivals
    ``buf[bi:]`` up to ``h``, each to the top of the idle stack, appending replica and execution columns; an arrival
    that finds no idle instance blocks (returned as the blocked time) unless the function is at its instance limit
    (``at_limit()``, asked when first needed and again after a ``step``, the only way an instance comes or goes within
    the call): then it is rejected (its row number appended to ``rejected``). ``keep``: the replicas keep their
    requests' starts and ends. ``heap`` (the flow's
    transitions heap, when ``rt`` is the only function): idle re-checks of ``rt``'s instances due by ``limit`` are
    pushed again on the way (see the module docstring), any other transition of ``rt``'s due by then is carried out by
    ``step`` (given and returning the sequence number; when given), and ``h`` moves to the next top (at most ``limit``).
    Returns (next row, blocked time or inf, sequence number, the horizon reached: every arrival at or before it is
    processed unless the buffer ran out first)."""
    n = len(buf)
    full = None
    while bi < n:
        a = buf[bi]
        if a > h:
            if heap is None or not heap or heap[0][0] != h:
                break
            moved = recheck(heap, h, rt, idle_timeout, seq)
            if moved != seq:
                seq = moved
            elif step is not None and heap[0][3].rt is rt:
                seq = step(seq)  # the catch-up's own step: it may add or remove an instance
                full = None
            else:
                break
            h = heap[0][0] if heap and heap[0][0] < limit else limit
            continue
        r, seq = free_instance(slots, idle, a, seq)
        if r is None:
            if full is None:
                full = at_limit()
            if not full:
                return bi, a, seq, h
            c_rep.append(CONCURRENCY_LIMIT)
            c_exec.append(NAN)
            rejected.append(bi)
            bi += 1
            continue
        if r.ei >= r.en:
            r.refill()
        e = r.eb[r.ei] * r.inv_speed + r.transfer  # the factor is 1.0: x * 1.0 is x
        r.ei += 1
        end = a + e  # start = max(a, free) = a
        r.heap[0] = end
        if keep:
            r.starts.append(a)
            r.ends.append(end)
            if e > r.max_exec:
                r.max_exec = e
        if end > r.last_end:
            r.last_end = end
        c_rep.append(r.id)
        c_exec.append(e)
        if end > a:  # its one slot is taken
            idle.pop()
            seq += 1
            heappush(slots, (end, seq, r))
        bi += 1
    return bi, INF, seq, h
