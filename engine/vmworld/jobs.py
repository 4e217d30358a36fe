"""The master's job queue and the worker threads serving it.

Jobs are not simpy processes. The queue is a FIFO with many servers (threads), so the start of every
job follows from the arrival times and the times threads become free (the Kiefer-Wolfowitz
recursion: ``start = max(ready, earliest free thread)``). :meth:`JobFlow.catch_up` applies it up to a
time ``t``, committing every job that starts at or before ``t``; whoever changes the set of threads
(a worker joins, drains, crashes) or reads the queue inside the simulation first catches up to the
current time, and the end of every ``advance(t)`` commits every job that starts before ``t``
(:meth:`JobFlow.settle`), so the jobs table is complete whatever is read between advances, and reading
(:meth:`JobFlow.known_arrivals`) never changes the state. The result is the same as one simpy event per
arrival and per completion, at a fraction of the cost.

Readers that must see the queue as it was at their own, earlier time (the heartbeats, materialised lazily: see
:mod:`engine.vmworld.daemon`) set :attr:`JobFlow.checkpoint`: a catch-up past it stops there, calls
:attr:`JobFlow.on_checkpoint` with that time (the queue caught up to it) and goes on to the next checkpoint it
returns; :meth:`JobFlow.through_checkpoints` does only that.

The per-job loop (:meth:`JobFlow._advance`) has an optional compiled twin, :mod:`engine.vmworld._jobloop` (Cython, built
by ``make setup``), with the same IEEE operations in the same order: the tables are bit-identical either way. It is
used when built; ``SCALELAB_JOBLOOP=python`` forces this module's loop, ``=compiled`` requires the compiled one.

The queue is durable (a broker-backed queue): it survives master restarts. While no master is
running nothing is dispatched. Jobs in service on a worker that crashes, is deleted or suspended go
back to the head of the queue, so no job is lost or served twice.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush, heapreplace
from types import MethodType

import numpy as np

from engine.core.compiled import chosen_module, compiled_module
from engine.workload.arrivals import ArrivalStream
from engine.workload.service import ServiceTimes

JOBLOOP_ENV = "SCALELAB_JOBLOOP"  # "python": the loop below; "compiled": the compiled one or an error; unset/"auto": either
JOBLOOP_MODULE = "engine.vmworld._jobloop"


def compiled_loop():
    """The compiled job loop module, or None when it is not built or was built from another source than the .pyx
    beside it (a stale build is never used: its tables could differ)."""
    return compiled_module(JOBLOOP_MODULE)


def _chosen_loop():
    """The compiled loop module if it is to be used (see :data:`JOBLOOP_ENV`), else None."""
    return chosen_module(JOBLOOP_MODULE, JOBLOOP_ENV)


class Thread:
    __slots__ = ("worker", "free_at", "accepting", "job", "row")

    def __init__(self, worker: WorkerSlot, free_at: float):
        self.worker = worker
        self.free_at = free_at
        self.accepting = True
        self.job: tuple[int, float] | None = None  # (job id, arrival) of the job last started
        self.row = -1


class WorkerSlot:
    """The job-side state of one worker VM: its threads, speed and task-time statistics."""

    __slots__ = ("vm_id", "speed", "storage_seconds", "threads", "busy_time", "jobs")

    def __init__(self, vm_id: int, speed: float = 1.0, storage_seconds: float = 0.0):
        self.vm_id = vm_id
        self.speed = speed
        self.storage_seconds = storage_seconds
        self.threads: list[Thread] = []
        self.busy_time = 0.0
        self.jobs = 0

    @property
    def avg_time(self) -> float:
        """Average task time of the jobs this worker took (0 before its first job)."""
        return self.busy_time / self.jobs if self.jobs else 0.0


class JobFlow:
    def __init__(self, arrivals: ArrivalStream, service: ServiceTimes, record_jobs: bool = False):
        self.arrivals = arrivals
        self.service = service
        self._heap: list[tuple[float, int, Thread]] = []
        self._seq = 0
        self._buf: list[float] = []  # generated arrival times; _buf[_bi:] not yet started
        self._bi = 0
        self._base = 0  # job id of _buf[0]
        self._requeued: deque[tuple[float, float, int]] = deque()  # (ready, arrival, job id)
        self.workers: dict[int, WorkerSlot] = {}
        self._uniform = True  # every worker at speed 1 without storage time: a service time is the draw x mean (the same bits)
        self._scaled: list[float] = []  # see _scaled_draws
        self._scaled_from: list[float] | None = None
        self._scaled_mean = math.nan
        self.started = 0  # jobs started and not aborted
        self.aborted = 0
        self.dispatching = True
        self.waits: list[float] = []  # waits of jobs started since the last :meth:`take_waits`
        self.now = 0.0
        self.rows: list[list] | None = [] if record_jobs else None
        self.checkpoint = math.inf  # a catch-up past this time stops there and calls on_checkpoint(checkpoint)
        self.on_checkpoint: Callable[[float], float] | None = None  # returns the next checkpoint
        loop = _chosen_loop()
        self.compiled = loop is not None
        # the compiled loop reads typed twins of the thread and the worker (the same attributes)
        self._thread_class = Thread if loop is None else loop.Thread
        self.new_worker: Callable[..., WorkerSlot] = WorkerSlot if loop is None else loop.Worker
        if loop is not None:
            self._advance = MethodType(loop.advance, self)  # the compiled twin of _advance: the same state, the same bits

    # -- time ------------------------------------------------------------------------------
    def _generate_upto(self, t: float) -> None:
        arrivals = self.arrivals
        buf = self._buf
        while arrivals.window_end <= t:
            buf.extend(arrivals.next_window())
        if self._bi > 65536 and self._bi * 2 > len(buf):
            del buf[: self._bi]
            self._base += self._bi
            self._bi = 0

    def settle(self, t: float) -> None:
        """Commit every job that starts before ``t`` (the end of an ``advance(t)``: what happens at ``t`` itself is the
        next advance's), generating only the arrival windows that start before ``t``."""
        self.catch_up(math.nextafter(t, -math.inf))

    def catch_up(self, t: float) -> None:
        """Commit every job that starts at or before ``t`` (stopping at every checkpoint before ``t`` on the way)."""
        if t > self.checkpoint:
            self._advance(t, True)
            return
        if self.arrivals.window_end <= t:
            self._generate_upto(t)
        if t > self.now:
            self.now = t
        heap = self._heap
        if not self.dispatching or not heap:
            return
        requeued = self._requeued
        bi = self._bi
        # nothing can start: no job is ready by t, or no thread is free by t
        if (requeued[0][0] if requeued else self._buf[bi] if bi < len(self._buf) else t + 1.0) > t or (
            heap[0][0] > t and heap[0][2].accepting
        ):
            return
        self._advance(t, True)

    def through_checkpoints(self, t: float) -> None:
        """Stop at every checkpoint before ``t`` (the queue caught up to each), committing no job past the last of them."""
        if t > self.checkpoint:
            self._advance(t, False)

    def _scaled_draws(self, mean: float) -> list[float]:
        """The service stream's current batch of draws, each times ``mean`` (kept until the batch or the mean changes).

        ``draw * mean`` here and ``/ speed + storage`` per job are the bits ``draw * mean / speed + storage`` gives."""
        draws = self.service.buf
        if draws is not self._scaled_from or mean != self._scaled_mean:
            self._scaled = (np.asarray(draws, dtype=float) * mean).tolist()  # IEEE products: the bits of x * mean
            self._scaled_from, self._scaled_mean = draws, mean
        return self._scaled

    def _advance(self, t: float, to_t: bool) -> None:
        """Commit the jobs that start at or before each checkpoint before ``t``, calling :attr:`on_checkpoint` there
        (with the queue as it is at that time), then, if ``to_t``, the jobs that start at or before ``t``.

        One call for all of them: the loop's state stays in locals from one checkpoint to the next (a heartbeat is
        a checkpoint; there are many more of them than of anything else that reads the queue)."""
        arrivals = self.arrivals
        buf = self._buf
        requeued = self._requeued
        heap = self._heap
        bi = self._bi
        base = self._base
        nbuf = len(buf)
        wait = self.waits.append
        rows = self.rows
        service = self.service
        mean, si = service.mean, service.i  # parameters cannot change inside this call
        sbuf = self._scaled_draws(mean)  # the draws times the mean: a job's service time on a reference thread
        nsbuf = len(sbuf)
        uniform = self._uniform
        seq = self._seq
        started = 0
        dispatching = self.dispatching
        cp = self.checkpoint
        while True:
            at_cp = cp < t
            if at_cp:
                limit = cp
            elif to_t:
                limit = t
            else:
                break
            if arrivals.window_end <= limit:
                self._bi = bi
                self._generate_upto(limit)
                bi, base, nbuf = self._bi, self._base, len(buf)
            if limit > self.now:
                self.now = limit
            while dispatching and requeued:  # re-queued jobs first (at the head of the queue), one by one
                ready, arrival, jid = requeued[0]
                if ready > limit:
                    break
                while heap and not heap[0][2].accepting:
                    heappop(heap)
                if not heap:
                    break
                free_at, _, th = heap[0]
                start = ready if ready > free_at else free_at
                if start > limit:
                    break
                w = th.worker
                if si >= nsbuf:
                    service.refill()
                    sbuf, si, nsbuf = self._scaled_draws(mean), 0, len(service.buf)
                s = sbuf[si] if uniform else sbuf[si] / w.speed + w.storage_seconds
                si += 1
                end = start + s
                seq += 1
                heapreplace(heap, (end, seq, th))
                th.free_at = end
                th.job = (jid, arrival)
                requeued.popleft()
                started += 1
                w.busy_time += s
                w.jobs += 1
                wait(start - arrival)
                if rows is not None:
                    th.row = len(rows)
                    rows.append([jid, arrival, start, end, w.vm_id, False, math.nan])
            if dispatching and heap and not requeued:  # then fresh arrivals, in order: the hot loop
                first = bi
                while bi < nbuf:
                    free_at, _, th = heap[0]
                    if not th.accepting:
                        while heap and not heap[0][2].accepting:
                            heappop(heap)
                        if not heap:
                            break
                        free_at, _, th = heap[0]
                    arrival = buf[bi]
                    start = arrival if arrival > free_at else free_at
                    if start > limit:  # (an arrival after limit starts after it)
                        break
                    w = th.worker
                    if si >= nsbuf:
                        service.refill()
                        sbuf, si, nsbuf = self._scaled_draws(mean), 0, len(service.buf)
                    s = sbuf[si] if uniform else sbuf[si] / w.speed + w.storage_seconds
                    si += 1
                    end = start + s
                    seq += 1
                    heapreplace(heap, (end, seq, th))
                    th.free_at = end
                    th.job = (base + bi, arrival)
                    bi += 1
                    w.busy_time += s
                    w.jobs += 1
                    wait(start - arrival)
                    if rows is not None:
                        th.row = len(rows)
                        rows.append([base + bi - 1, arrival, start, end, w.vm_id, False, math.nan])
                started += bi - first
            if not at_cp:
                break
            # a checkpoint: what reads the queue there sees it as it is at cp
            self._bi, self._seq, service.i = bi, seq, si
            self.started += started
            started = 0
            self.checkpoint = math.inf  # nothing called from there may come back here
            cp = self.checkpoint = self.on_checkpoint(cp)
            bi, base, nbuf = self._bi, self._base, len(buf)  # a reader may have dropped old arrivals (_generate_upto)
        self._bi = bi
        self._seq = seq
        service.i = si
        self.started += started

    # -- workers ---------------------------------------------------------------------------
    def add_threads(self, worker: WorkerSlot, n: int, t: float) -> None:
        """``worker`` starts taking jobs with ``n`` threads at ``t``."""
        self.catch_up(t)
        self.workers[worker.vm_id] = worker
        self._uniform = self._uniform and worker.speed == 1.0 and worker.storage_seconds == 0.0
        worker.threads = [self._thread_class(worker, t) for _ in range(n)]
        for th in worker.threads:
            self._seq += 1
            heappush(self._heap, (t, self._seq, th))

    def drain(self, vm_id: int, t: float) -> float:
        """Stop giving jobs to a worker; returns when its last job ends (its threads then leave)."""
        self.catch_up(t)
        w = self.workers.get(vm_id)
        if w is None:
            return t
        done = t
        for th in w.threads:
            th.accepting = False
            done = max(done, th.free_at)
        return done

    def remove(self, vm_id: int, t: float) -> int:
        """A worker leaves at ``t``; jobs still in service go back to the head of the queue."""
        self.catch_up(t)
        w = self.workers.pop(vm_id, None)
        if w is None:
            return 0
        lost = []
        for th in w.threads:
            th.accepting = False
            if th.free_at > t and th.job is not None:
                jid, arrival = th.job
                lost.append((t, arrival, jid))
                if self.rows is not None and th.row >= 0:
                    self.rows[th.row][5] = True
                    self.rows[th.row][6] = t
        w.threads = []
        if not self._uniform:
            self._uniform = all(v.speed == 1.0 and v.storage_seconds == 0.0 for v in self.workers.values())
        # oldest first, ahead of everything already waiting
        for item in sorted(lost, key=lambda x: x[2], reverse=True):
            self._requeued.appendleft(item)
        self.started -= len(lost)
        self.aborted += len(lost)
        return len(lost)

    def pause(self, t: float) -> None:
        """No master: stop dispatching (jobs in service finish)."""
        self.catch_up(t)
        self.dispatching = False

    def resume(self, t: float) -> None:
        """A master runs again: dispatch from ``t`` on."""
        self.catch_up(t)
        if self.dispatching:
            return
        self.dispatching = True
        heap = []
        for w in self.workers.values():
            for th in w.threads:
                if th.accepting:
                    th.free_at = max(th.free_at, t)
                    self._seq += 1
                    heap.append((th.free_at, self._seq, th))
        heap.sort()
        self._heap = heap

    # -- observations (call catch_up(t) first) --------------------------------------------
    def arrived_total(self, t: float) -> int:
        self._generate_upto(t)
        return self.known_arrivals(t)

    def known_arrivals(self, t: float) -> int:
        """Arrivals at or before ``t`` among those generated so far (a read: generates nothing)."""
        return self._base + bisect_right(self._buf, t)

    def known_queue_length(self, t: float) -> int:
        """Jobs waiting at ``t`` among the arrivals generated so far (a read: generates nothing)."""
        return self.known_arrivals(t) - (self._base + self._bi) + len(self._requeued)

    def queue_length(self, t: float) -> int:
        return self.arrived_total(t) - (self._base + self._bi) + len(self._requeued)

    def in_service(self, t: float) -> int:
        return sum(1 for w in self.workers.values() for th in w.threads if th.free_at > t)

    def busy_threads(self, vm_id: int, t: float) -> int:
        w = self.workers.get(vm_id)
        return 0 if w is None else sum(1 for th in w.threads if th.free_at > t)

    def earliest_free(self) -> float:
        """A time no thread taking jobs is free before: when it is past ``t``, every such thread is busy at ``t``.

        Every thread taking jobs is in the heap keyed by its ``free_at`` (others may linger there: they only lower it)."""
        heap = self._heap
        return heap[0][0] if heap else -math.inf

    def thread_counts(self, t: float) -> tuple[int, int]:
        """(threads busy at ``t``, threads taking jobs) in one pass: :meth:`in_service` and :meth:`accepting_threads`.

        A worker's threads all take jobs or none do (they are made together, drained and removed together)."""
        busy = accepting = 0
        all_busy = self.earliest_free() > t  # then only draining threads need a look
        for w in self.workers.values():
            threads = w.threads
            if threads and threads[0].accepting:
                accepting += len(threads)
                if all_busy:
                    busy += len(threads)
                    continue
            for th in threads:
                if th.free_at > t:
                    busy += 1
        return busy, accepting

    def accepting_threads(self) -> int:
        return sum(1 for w in self.workers.values() for th in w.threads if th.accepting)

    def take_waits(self) -> list[float]:
        waits, self.waits = self.waits, []
        return waits
