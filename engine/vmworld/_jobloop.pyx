# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=False
"""The compiled twin of :meth:`engine.vmworld.jobs.JobFlow._advance` (optional; the Python method is the reference).

It works on the very same state (the heap of ``(end, seq, thread)`` tuples, the threads, the workers, the arrival and
draw buffers) with the same IEEE double operations in the same order, so every table is bit-identical; what it saves
is the interpreter: typed locals, and ``heapreplace`` with the tuples' order compared as C doubles and integers
(``(end, seq)`` is unique, so this is the order of the tuples) in the same sift as :mod:`heapq`, leaving the same
heap. ``SCALELAB_JOBLOOP=python`` makes :class:`~engine.vmworld.jobs.JobFlow` use the Python method instead.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF, Py_DECREF, PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.math cimport INFINITY, NAN

from heapq import heappop

# the source this module was compiled from (setup.py defines it): jobs.py uses the module only when it matches
cdef extern from *:
    const char* JOBLOOP_SOURCE_SHA256
SOURCE_SHA256 = JOBLOOP_SOURCE_SHA256.decode("ascii")


cdef inline double _end_of(object entry):
    return <double><object>PyTuple_GET_ITEM(entry, 0)


cdef inline bint _before(object a, object b):
    """``a < b`` for two heap entries ``(end, seq, thread)`` with distinct ``(end, seq)``."""
    cdef double ea = <double><object>PyTuple_GET_ITEM(a, 0)
    cdef double eb = <double><object>PyTuple_GET_ITEM(b, 0)
    if ea != eb:
        return ea < eb
    return <long long><object>PyTuple_GET_ITEM(a, 1) < <long long><object>PyTuple_GET_ITEM(b, 1)


cdef inline void _put(list heap, Py_ssize_t pos, object item):
    """heap[pos] = item (a new reference for the list; the old one dropped)."""
    cdef PyObject* old = PyList_GET_ITEM(heap, pos)
    Py_INCREF(item)
    PyList_SET_ITEM(heap, pos, item)
    Py_DECREF(<object>old)


cdef void _heapreplace(list heap, object item):
    """heapq.heapreplace(heap, item) without its result: the same sift (to a leaf, then up), the same layout."""
    cdef Py_ssize_t endpos = PyList_GET_SIZE(heap)
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t limit = endpos >> 1
    cdef Py_ssize_t childpos, parentpos
    cdef object child, parent
    _put(heap, 0, item)
    # bubble the smaller child up until hitting a leaf
    while pos < limit:
        childpos = 2 * pos + 1
        if childpos + 1 < endpos and not _before(<object>PyList_GET_ITEM(heap, childpos), <object>PyList_GET_ITEM(heap, childpos + 1)):
            childpos += 1
        child = <object>PyList_GET_ITEM(heap, childpos)
        _put(heap, pos, child)
        pos = childpos
    _put(heap, pos, item)
    # then item up to its place
    while pos > 0:
        parentpos = (pos - 1) >> 1
        parent = <object>PyList_GET_ITEM(heap, parentpos)
        if not _before(item, parent):
            break
        _put(heap, pos, parent)
        pos = parentpos
    _put(heap, pos, item)


def advance(flow, double t, bint to_t):
    """:meth:`JobFlow._advance(t, to_t) <engine.vmworld.jobs.JobFlow._advance>`, compiled: read that method first."""
    arrivals = flow.arrivals
    cdef list buf = flow._buf
    requeued = flow._requeued
    cdef list heap = flow._heap
    cdef Py_ssize_t bi = flow._bi
    cdef Py_ssize_t first
    cdef long long base = flow._base
    cdef Py_ssize_t nbuf = PyList_GET_SIZE(buf)
    cdef list waits = flow.waits
    rows = flow.rows
    cdef bint recording = rows is not None
    service = flow.service
    mean = service.mean  # parameters cannot change inside this call
    cdef Py_ssize_t si = service.i
    cdef list sbuf = flow._scaled_draws(mean)
    cdef Py_ssize_t nsbuf = PyList_GET_SIZE(sbuf)
    cdef bint uniform = flow._uniform
    cdef long long seq = flow._seq
    cdef long long started = 0
    cdef bint dispatching = flow.dispatching
    cdef double cp = flow.checkpoint
    cdef double limit, free_at, ready, arrival, start, s, end
    cdef bint at_cp
    cdef object entry, th, w, arrival_obj, end_obj, jid
    while True:
        at_cp = cp < t
        if at_cp:
            limit = cp
        elif to_t:
            limit = t
        else:
            break
        if arrivals.window_end <= limit:
            flow._bi = bi
            flow._generate_upto(limit)
            bi, base, nbuf = flow._bi, flow._base, PyList_GET_SIZE(buf)
        if limit > flow.now:
            flow.now = limit
        while dispatching and requeued:  # re-queued jobs first (at the head of the queue), one by one
            ready_obj, arrival_obj, jid = requeued[0]
            ready = ready_obj
            if ready > limit:
                break
            while heap and not (<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 2)).accepting:
                heappop(heap)
            if not heap:
                break
            entry = <object>PyList_GET_ITEM(heap, 0)
            free_at = _end_of(entry)
            th = <object>PyTuple_GET_ITEM(entry, 2)
            start = ready if ready > free_at else free_at
            if start > limit:
                break
            w = th.worker
            if si >= nsbuf:
                service.refill()
                sbuf = flow._scaled_draws(mean)
                si, nsbuf = 0, PyList_GET_SIZE(service.buf)
            if uniform:
                s = <double><object>PyList_GET_ITEM(sbuf, si)
            else:
                s = <double><object>PyList_GET_ITEM(sbuf, si) / <double>w.speed + <double>w.storage_seconds
            si += 1
            end = start + s
            seq += 1
            end_obj = end
            _heapreplace(heap, (end_obj, seq, th))
            th.free_at = end_obj
            th.job = (jid, arrival_obj)
            requeued.popleft()
            started += 1
            w.busy_time = <double>w.busy_time + s
            w.jobs = w.jobs + 1
            arrival = arrival_obj
            waits.append(start - arrival)
            if recording:
                th.row = len(rows)
                rows.append([jid, arrival_obj, start, end_obj, w.vm_id, False, NAN])
        if dispatching and heap and not requeued:  # then fresh arrivals, in order: the hot loop
            first = bi
            while bi < nbuf:
                entry = <object>PyList_GET_ITEM(heap, 0)
                th = <object>PyTuple_GET_ITEM(entry, 2)
                if not th.accepting:
                    while heap and not (<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 2)).accepting:
                        heappop(heap)
                    if not heap:
                        break
                    entry = <object>PyList_GET_ITEM(heap, 0)
                    th = <object>PyTuple_GET_ITEM(entry, 2)
                free_at = _end_of(entry)
                arrival_obj = <object>PyList_GET_ITEM(buf, bi)
                arrival = arrival_obj
                start = arrival if arrival > free_at else free_at
                if start > limit:  # (an arrival after limit starts after it)
                    break
                w = th.worker
                if si >= nsbuf:
                    service.refill()
                    sbuf = flow._scaled_draws(mean)
                    si, nsbuf = 0, PyList_GET_SIZE(service.buf)
                if uniform:
                    s = <double><object>PyList_GET_ITEM(sbuf, si)
                else:
                    s = <double><object>PyList_GET_ITEM(sbuf, si) / <double>w.speed + <double>w.storage_seconds
                si += 1
                end = start + s
                seq += 1
                end_obj = end
                _heapreplace(heap, (end_obj, seq, th))
                th.free_at = end_obj
                jid = base + bi
                th.job = (jid, arrival_obj)
                bi += 1
                w.busy_time = <double>w.busy_time + s
                w.jobs = w.jobs + 1
                waits.append(start - arrival)
                if recording:
                    th.row = len(rows)
                    rows.append([jid, arrival_obj, start, end_obj, w.vm_id, False, NAN])
            started += bi - first
        if not at_cp:
            break
        # a checkpoint: what reads the queue there sees it as it is at cp
        flow._bi, flow._seq, service.i = bi, seq, si
        flow.started += started
        started = 0
        flow.checkpoint = INFINITY  # nothing called from there may come back here
        cp = flow.on_checkpoint(cp)
        flow.checkpoint = cp
        bi, base, nbuf = flow._bi, flow._base, PyList_GET_SIZE(buf)  # a reader may have dropped old arrivals
    flow._bi = bi
    flow._seq = seq
    service.i = si
    flow.started += started
