"""The request flow's dispatch: each function's arrivals sent to its replicas, or held by the gateway, in time order.

:class:`Dispatch` holds the methods of :class:`engine.faas.flow.RequestFlow` that move requests (moved here to keep
``flow.py`` readable in one sitting; same code, same order of operations, so the same rows and digests):
the hot loops over the ready replicas (:meth:`Dispatch._run_ready`), the gateway that holds requests while no
replica is ready (:meth:`Dispatch._run_gateway`, released by :meth:`Dispatch._serve`), and ``per_request``
scaling (:meth:`Dispatch._run_per_request`, :meth:`Dispatch._unblock`; its one-slot loop is
:mod:`engine.faas.oneslot`'s). It is a mixin: it reads the flow's state
(``faas``, ``_seq``) and calls back into its replica management (``create``, ``scale_to``, ``_push``, ``_scale``).
The rejection codes live here because the loops write them; ``engine.faas.flow`` re-exports :data:`REASONS`.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush, heapreplace
from typing import Any

from engine.faas.oneslot import CONCURRENCY_LIMIT, FAAS_LOOP_ENV, FAAS_LOOP_MODULE, free_instance, one_slot_loop, single_slot_loop  # noqa: F401 - re-exported
from engine.faas.runtime import FunctionRuntime, Replica, live_count

INF = math.inf
NAN = math.nan
#: Rejection codes in the replica column (>= 0 is the replica that served the request).
QUEUE_FULL, NO_NODE = -1, -3  # and CONCURRENCY_LIMIT (-2), which the one-slot loop writes too
REASONS = {QUEUE_FULL: "queue_full", CONCURRENCY_LIMIT: "concurrency_limit", NO_NODE: "no_node"}


class Dispatch:
    """Mixin of :class:`~engine.faas.flow.RequestFlow`: dispatch of arrivals to replicas, the gateway, per-request scaling."""

    # -- dispatch -----------------------------------------------------------------------------------------
    def _run(self, rt: FunctionRuntime, h: float) -> float:
        """Process ``rt``'s arrivals up to ``h``; returns the time of an arrival that needs shared state (else inf)."""
        if rt.blocked is not None:
            return rt.blocked
        if h <= rt.done_to:
            return INF
        buf = rt.buf
        rt.arrivals.fill(buf, h)
        if rt.bi > 65536 and rt.bi * 2 > len(buf):
            del buf[: rt.bi]
            rt.base += rt.bi
            rt.bi = 0
        if rt.per_request:
            b = self._run_per_request(rt, h)
        elif rt.ready:
            b = self._run_ready(rt, h)
        else:
            b = self._run_gateway(rt, h)
        if b == INF:
            rt.done_to = h
        return b

    def _run_ready(self, rt: FunctionRuntime, h: float) -> float:
        """The hot loop: dispatch arrivals up to ``h`` over the ready replicas.

        It inlines :meth:`_assign` (the same arithmetic): a method call and attribute lookups per request would
        cost about a third of the loop's time.
        """
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        reps = rt.ready
        nrep = len(reps)
        rr = rt.rr
        lor = rt.spec.load_balancer == "least_outstanding"
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        start_bi = bi
        if not lor and not slow and not rt.unthreaded:  # all ready replicas have threads: its own loop (or compiled twin)
            bi, rr, e = self._rr_loop(buf, bi, h, reps, rr, rt.c_rep, rt.c_arr, rt.c_start, rt.c_exec)
            n = bi  # the loop below has nothing left to do
        c_rep, c_arr, c_start, c_exec = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        out, lheap = rt.outstanding, rt.lor_heap
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            if lor:
                while lheap and lheap[0][0] <= a:
                    gone = heappop(lheap)[1]
                    if gone in out:  # a drained replica's requests no longer count
                        out[gone] -= 1
                r = min(reps, key=lambda x: out[x.id])
            else:
                r = reps[rr % nrep]
                rr += 1
            factor = 1.0
            if r.threads:
                heap = r.heap
                free = heap[0]
                start = a if a > free else free
                if slow:
                    factor = 1.0 + slow * sum(1 for x in heap if x > start)
                if r.ei >= r.en:
                    r.refill()
                e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
                r.ei += 1
                end = start + e
                heapreplace(heap, end)
            else:
                start = a
                if slow:
                    eh = r.ends_heap
                    while eh and eh[0] <= start:
                        heappop(eh)
                    factor = 1.0 + slow * len(eh)
                if r.ei >= r.en:
                    r.refill()
                e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
                r.ei += 1
                end = start + e
                if slow:
                    heappush(r.ends_heap, end)
            r.starts.append(start)
            r.ends.append(end)
            if e > r.max_exec:
                r.max_exec = e
            if end > r.last_end:
                r.last_end = end
            if lor:
                out[r.id] += 1
                heappush(lheap, (end, r.id))
            c_rep(r.id)
            c_arr(a)
            c_start(start)
            c_exec(e)
            bi += 1
        k = bi - start_bi
        if k:
            rt.exec_recent.append(e)
            rt.last_request = buf[bi - 1]
        rt.rows += k
        rt.dispatched += k
        rt.bi = bi
        rt.rr = rr
        return INF

    def _run_gateway(self, rt: FunctionRuntime, h: float) -> float:
        """No replica ready: the gateway holds arrivals up to ``h`` (a function at zero that the gateway wakes blocks)."""
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        limit = self.faas.gateway_queue_limit
        wake = rt.spec.scaler == "scale_to_zero" and not rt.counted()
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            if wake:
                rt.bi = bi
                rt.blocked = a
                return a
            if limit and rt.waiting >= limit:
                rt.gateway.append((a, QUEUE_FULL))
                rt.rejected += 1
            else:
                rt.gateway.append((a, 0))
                rt.waiting += 1
            rt.last_request = a
            bi += 1
        rt.bi = bi
        return INF

    def _run_per_request(self, rt: FunctionRuntime, h: float) -> float:
        """Scale per request: a free slot of a warm instance (the most recently used first, so spare instances idle
        out, as public clouds reuse warm instances), else block (a new instance needs the scheduler).

        Like :meth:`_run_ready` it inlines :meth:`_assign` and :meth:`_busy` (the same arithmetic, the same sequence
        numbers): a call per request was most of this loop's cost.
        """
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        lor = rt.spec.load_balancer == "least_outstanding"
        if rt.single_slot and not slow and not lor:
            return self._run_single_slot(rt, h)
        buf, bi, n = rt.buf, rt.bi, len(rt.buf)
        slots, idle = rt.slots, rt.idle
        c_rep, c_arr, c_start, c_exec = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        recent = rt.exec_recent.append
        out = rt.outstanding
        first = bi
        blocked = INF
        full: bool | None = None  # at max_replicas (counted when first needed)
        limited = 0  # requests rejected at the limit
        while bi < n:
            a = buf[bi]
            if a > h:
                break
            r, self._seq = free_instance(slots, idle, a, self._seq)
            if r is None:
                if full is None:  # no transition or new instance within this call: the count holds for the loop
                    full = rt.at_limit()
                if not full:
                    rt.blocked = blocked = a
                    break
                # at the instance limit: rejected here, as _unblock would (no shared state: no catch-up round each)
                c_rep(CONCURRENCY_LIMIT)
                c_arr(a)
                c_start(NAN)
                c_exec(NAN)
                limited += 1
                bi += 1
                continue
            heap = r.heap  # r.threads >= 1 for per_request
            free = heap[0]
            start = a if a > free else free
            factor = 1.0
            if slow:
                factor = 1.0 + slow * sum(1 for x in heap if x > start)
            if r.ei >= r.en:
                r.refill()
            e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
            r.ei += 1
            end = start + e
            heapreplace(heap, end)
            r.starts.append(start)
            r.ends.append(end)
            if e > r.max_exec:
                r.max_exec = e
            if end > r.last_end:
                r.last_end = end
            if lor and r.id in out:
                out[r.id] += 1
                heappush(rt.lor_heap, (end, r.id))
            c_rep(r.id)
            c_arr(a)
            c_start(start)
            c_exec(e)
            recent(e)
            if heap[0] > a:  # no free slot left
                idle.pop()
                self._seq += 1
                heappush(slots, (heap[0], self._seq, r))
            bi += 1
        k = bi - first
        if k:
            rt.rows += k
            rt.dispatched += k - limited
            rt.rejected += limited
            rt.last_request = buf[bi - 1]
        rt.bi = bi
        return blocked

    def _run_single_slot(self, rt: FunctionRuntime, h: float) -> float:
        """:meth:`_run_per_request` when every instance has one slot (``concurrency: 1``, SimFaaS's model), without
        the concurrency slowdown and least-outstanding bookkeeping: the same steps and rows, fewer operations per
        request (:func:`single_slot_loop`, or its compiled twin). An instance's one-slot heap is its free time, at or
        before the arrival it takes, so the request starts at its arrival: the arrival and start columns (NaN start for
        a rejection) and the recent executions are written once per call, from the arrivals processed, not per
        request."""
        first = rt.bi
        buf = rt.buf
        rejected: list[int] = []  # rows rejected at the instance limit
        limit = self._recheck_to  # idle re-checks due by then are the loop's (catch_up: this is the only function)
        heap = self.heap if limit >= h else None
        step = self._step_in_loop if heap is not None else None
        loop = self._one_slot_loop

        def run(start: int, until: float) -> tuple:
            return loop(
                buf,
                start,
                until,
                rt.slots,
                rt.idle,
                rt.c_rep,
                rt.c_exec,
                rt.replica_rows,
                self._seq,
                rt.at_limit,
                rejected,
                heap,
                limit,
                rt,
                rt.spec.idle_timeout,
                step,
            )

        bi, blocked, self._seq, reached = run(first, h)
        while bi == len(buf) and reached > h and blocked == INF:  # past h and out of arrivals: draw up to where it got
            h = reached
            rt.arrivals.fill(buf, h)
            bi, blocked, self._seq, reached = run(bi, h)
        if blocked != INF:
            rt.blocked = blocked
        k = bi - first
        if k:
            arrivals = buf[first:bi]
            rt.c_arr += arrivals
            if rejected:
                starts = list(arrivals)
                for i in rejected:
                    starts[i - first] = NAN
                rt.c_start += starts
                reps, execs = rt.c_rep[-k:], rt.c_exec[-k:]
                rt.exec_recent.extend([x for rep, x in zip(reps, execs, strict=True) if rep >= 0][-64:])
            else:
                rt.c_start += arrivals
                rt.exec_recent.extend(rt.c_exec[-k:] if k <= 64 else rt.c_exec[-64:])
            rt.rows += k
            rt.dispatched += k - len(rejected)
            rt.rejected += len(rejected)
            rt.last_request = buf[bi - 1]
        rt.bi = bi
        return blocked

    def _busy(self, rt: FunctionRuntime, r: Replica) -> None:
        if r.threads != 1:
            rt.single_slot = False  # for the rest of the run: an instance with several slots may be on the stack
        self._seq += 1
        heappush(rt.slots, (r.heap[0], self._seq, r))

    def _assign(self, rt: FunctionRuntime, r: Replica, a: float, t: float, c_rep: Any, c_arr: Any, c_start: Any, c_exec: Any) -> float:
        """Dispatch one request (arrived at ``a``) to ``r`` at ``t``: its start, execution and end; returns the end."""
        slow = self.faas.concurrency_slowdown if self.faas.concurrency_model == "linear" else 0.0
        factor = 1.0
        if r.threads:
            free = r.heap[0]
            start = t if t > free else free
            if slow:
                factor = 1.0 + slow * sum(1 for x in r.heap if x > start)
        else:
            start = t
            if slow:
                while r.ends_heap and r.ends_heap[0] <= start:
                    heappop(r.ends_heap)
                factor = 1.0 + slow * len(r.ends_heap)
        if r.ei >= r.en:
            r.refill()
        e = r.eb[r.ei] * factor * r.inv_speed + r.transfer
        r.ei += 1
        end = start + e
        if r.threads:
            heapreplace(r.heap, end)
        elif slow:
            heappush(r.ends_heap, end)
        r.starts.append(start)
        r.ends.append(end)
        r.max_exec = max(r.max_exec, e)
        r.last_end = max(r.last_end, end)
        if rt.spec.load_balancer == "least_outstanding" and r.id in rt.outstanding:
            rt.outstanding[r.id] += 1
            heappush(rt.lor_heap, (end, r.id))
        c_rep(r.id)
        c_arr(a)
        c_start(start)
        c_exec(e)
        rt.rows += 1
        rt.dispatched += 1
        rt.exec_recent.append(e)
        return end

    def _unblock(self, rt: FunctionRuntime, a: float) -> None:
        """The arrival at ``a`` that needs the scheduler: wake a function at zero, or start a per-request instance."""
        rt.blocked = None
        if not rt.per_request:  # scale_to_zero at zero: the gateway scales to max(1, min) and holds the request
            self.scale_to(rt, max(1, rt.spec.min_replicas), a, "gateway", "a request for a function at zero")
            rt.gateway.append((a, 0))
            rt.waiting += 1
            rt.last_request = a
            rt.bi += 1
            return
        before = live_count(rt)
        row = rt.rows
        if before >= rt.spec.max_replicas:
            self._reject(rt, a, CONCURRENCY_LIMIT)
        else:
            r = self.create(rt, a, "per_request", wait=False)
            if r is None:
                self._reject(rt, a, NO_NODE)
            else:
                self._scale((a, rt.name, before, before + 1, "per_request", "cold start: no idle warm instance"))
                self._assign(rt, r, a, r.ready_at, rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append)
                rt.cold.append(row)
                self._busy(rt, r)
                self._expiry(r, r.last_end)
        rt.last_request = a
        rt.bi += 1

    def _reject(self, rt: FunctionRuntime, a: float, code: int) -> None:
        """Reject a request now: counted, and its row written."""
        rt.rejected += 1
        self._reject_row(rt, a, code)

    def _expiry(self, r: Replica, last_end: float) -> None:
        """per_request: check the instance for expiry once its last request has been idle for idle_timeout."""
        at = last_end + r.rt.spec.idle_timeout
        if at < r.expiry:
            r.expiry = at
            self._push(at, "expire", r)

    def _serve(self, rt: FunctionRuntime, r: Replica, t: float) -> None:
        """A replica is ready at ``t``: it joins the balancer, and the gateway's held requests go out."""
        r.heap = [t] * r.threads if r.threads else []
        rt.ready.append(r)
        if not r.threads:
            rt.unthreaded += 1
        rt.outstanding[r.id] = 0
        if not rt.gateway:
            return
        rows = rt.rows
        append = rt.c_rep.append, rt.c_arr.append, rt.c_start.append, rt.c_exec.append
        reps = rt.ready
        while rt.gateway:
            a, code = rt.gateway.popleft()
            if code:
                self._reject_row(rt, a, code)
                rows += 1
                continue
            rt.waiting -= 1
            if rt.spec.load_balancer == "least_outstanding":
                out = rt.outstanding
                while rt.lor_heap and rt.lor_heap[0][0] <= t:
                    gone = heappop(rt.lor_heap)[1]
                    if gone in out:
                        out[gone] -= 1
                target = min(reps, key=lambda x: out[x.id])
            else:
                target = reps[rt.rr % len(reps)]
                rt.rr += 1
            self._assign(rt, target, a, t, *append)
            rt.gw_wait[rows] = t - a
            rt.cold.append(rows)
            rows += 1

    def _reject_row(self, rt: FunctionRuntime, a: float, code: int) -> None:
        """A rejection held in the gateway's order: its row now (it was counted when rejected)."""
        rt.c_rep.append(code)
        rt.c_arr.append(a)
        rt.c_start.append(math.nan)
        rt.c_exec.append(math.nan)
        rt.rows += 1
