# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=False
"""The compiled twin of :meth:`engine.vmworld.jobs.JobFlow._advance` (optional; the Python method is the reference).

It works on the very same state (the heap of ``(end, seq, thread)`` tuples, the threads, the workers, the arrival and
draw buffers) with the same IEEE double operations in the same order, so every table is bit-identical; what it saves
is the interpreter: typed locals, and ``heapreplace`` with the tuples' order compared as C doubles and integers
(``(end, seq)`` is unique, so this is the order of the tuples) in the same sift as :mod:`heapq`, leaving the same
heap. ``SCALELAB_JOBLOOP=python`` makes :class:`~engine.vmworld.jobs.JobFlow` use the Python method instead.
"""

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item
from libc.math cimport INFINITY, NAN

from heapq import heappop

# the source this module was compiled from (setup.py defines it): jobs.py uses the module only when it matches
cdef extern from *:
    const char* JOBLOOP_SOURCE_SHA256
SOURCE_SHA256 = JOBLOOP_SOURCE_SHA256.decode("ascii")


cdef class Worker:
    """:class:`engine.vmworld.jobs.WorkerSlot` with typed fields (the same attributes, the same meaning)."""

    cdef public object vm_id
    cdef public double speed
    cdef public double storage_seconds
    cdef public list threads
    cdef public double busy_time
    cdef public long long jobs

    def __init__(self, vm_id, speed=1.0, storage_seconds=0.0):
        self.vm_id = vm_id
        self.speed = speed
        self.storage_seconds = storage_seconds
        self.threads = []
        self.busy_time = 0.0
        self.jobs = 0

    @property
    def avg_time(self):
        """Average task time of the jobs this worker took (0 before its first job)."""
        return self.busy_time / self.jobs if self.jobs else 0.0


cdef class Thread:
    """:class:`engine.vmworld.jobs.Thread` with typed fields."""

    cdef public object worker
    cdef public double free_at
    cdef public bint accepting
    cdef public object job
    cdef public Py_ssize_t row

    def __init__(self, worker, double free_at):
        self.worker = worker
        self.free_at = free_at
        self.accepting = True
        self.job = None
        self.row = -1


cdef inline double _service_on(object w, double scaled) except? -1.0:
    """A job's service time on worker ``w`` from its draw times the mean: ``scaled / speed + storage``."""
    if type(w) is Worker:
        return scaled / (<Worker>w).speed + (<Worker>w).storage_seconds
    return scaled / <double>w.speed + <double>w.storage_seconds


cdef inline int _account(object w, double s) except -1:
    """The worker's task-time statistics take one more job of ``s`` seconds."""
    if type(w) is Worker:
        (<Worker>w).busy_time += s
        (<Worker>w).jobs += 1
    else:  # a plain WorkerSlot handed in by a caller
        w.busy_time = <double>w.busy_time + s
        w.jobs = w.jobs + 1
    return 0


cdef inline double _as_double(PyObject* number) except? -1.0:
    if PyFloat_CheckExact(<object>number):
        return PyFloat_AS_DOUBLE(<object>number)
    return <double><object>number  # an int (a time that was simpy's integer now)


cdef inline double _end_of(object entry) except? -1.0:
    return _as_double(PyTuple_GET_ITEM(entry, 0))


cdef inline bint _before(PyObject* a, PyObject* b) except -1:
    """``a < b`` for two heap entries ``(end, seq, thread)`` with distinct ``(end, seq)``: the tuples' order."""
    cdef double ea = _as_double(PyTuple_GET_ITEM(<object>a, 0))
    cdef double eb = _as_double(PyTuple_GET_ITEM(<object>b, 0))
    if ea != eb:
        return ea < eb
    return <long long><object>PyTuple_GET_ITEM(<object>a, 1) < <long long><object>PyTuple_GET_ITEM(<object>b, 1)


cdef int _heapreplace(list heap, object item) except -1:
    """heapq.heapreplace(heap, item) without its result: the same sift (the smaller child up to a leaf, then the item
    up to its place), so the same layout. The entries are only permuted: the list keeps its references."""
    cdef PyObject** arr = (<PyListObject*>heap).ob_item
    cdef Py_ssize_t endpos = PyList_GET_SIZE(heap)
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t limit = endpos >> 1
    cdef Py_ssize_t childpos, parentpos
    cdef PyObject* out = arr[0]
    cdef PyObject* new = <PyObject*>item
    Py_INCREF(item)
    arr[0] = new
    while pos < limit:
        childpos = 2 * pos + 1
        if childpos + 1 < endpos and not _before(arr[childpos], arr[childpos + 1]):
            childpos += 1
        arr[pos] = arr[childpos]
        pos = childpos
    while pos > 0:
        parentpos = (pos - 1) >> 1
        if not _before(new, arr[parentpos]):
            break
        arr[pos] = arr[parentpos]
        pos = parentpos
    arr[pos] = new
    Py_DECREF(<object>out)  # the caller still holds it
    return 0


cdef class _Starts:
    """What starting one job touches, shared by the loop over re-queued jobs and the loop over fresh arrivals: the
    heap, the service draws (times the mean) and the sequence number, the waits and the job rows."""

    cdef object flow, service, mean, rows
    cdef list heap, sbuf, waits
    cdef Py_ssize_t si, nsbuf
    cdef long long seq
    cdef bint uniform, recording

    def __cinit__(self, flow):
        self.flow = flow
        self.heap = flow._heap
        self.service = flow.service
        self.mean = self.service.mean  # parameters cannot change inside one advance
        self.si = self.service.i
        self.sbuf = flow._scaled_draws(self.mean)
        self.nsbuf = PyList_GET_SIZE(self.sbuf)
        self.uniform = flow._uniform
        self.seq = flow._seq
        self.waits = flow.waits
        self.rows = flow.rows
        self.recording = self.rows is not None

    cdef int start(self, Thread th, double start, object arrival_obj, object jid) except -1:
        """Thread ``th`` (the heap's head) takes job ``jid`` (arrived at ``arrival_obj``) at ``start``."""
        cdef object w = th.worker
        cdef double s, end
        if self.si >= self.nsbuf:
            self.service.refill()
            self.sbuf = self.flow._scaled_draws(self.mean)
            self.si, self.nsbuf = 0, PyList_GET_SIZE(self.service.buf)
        if self.uniform:
            s = <double><object>PyList_GET_ITEM(self.sbuf, self.si)
        else:
            s = _service_on(w, <double><object>PyList_GET_ITEM(self.sbuf, self.si))
        self.si += 1
        end = start + s
        self.seq += 1
        end_obj = end
        _heapreplace(self.heap, (end_obj, self.seq, th))
        th.free_at = end
        th.job = (jid, arrival_obj)
        _account(w, s)
        self.waits.append(start - <double>arrival_obj)
        if self.recording:
            th.row = len(self.rows)
            self.rows.append([jid, arrival_obj, start, end_obj, w.vm_id, False, NAN])
        return 0

    cdef void store(self):
        """Hand the draw position and the sequence number back to the flow (before anything else reads them)."""
        self.flow._seq = self.seq
        self.service.i = self.si


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
    cdef _Starts starts = _Starts(flow)
    cdef long long started = 0
    cdef bint dispatching = flow.dispatching
    cdef double cp = flow.checkpoint
    cdef double limit, free_at, ready, arrival, start
    cdef bint at_cp
    cdef object entry, arrival_obj, jid
    cdef Thread th
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
            while heap and not (<Thread>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 2)).accepting:
                heappop(heap)
            if not heap:
                break
            entry = <object>PyList_GET_ITEM(heap, 0)
            free_at = _end_of(entry)
            th = <Thread>PyTuple_GET_ITEM(entry, 2)
            start = ready if ready > free_at else free_at
            if start > limit:
                break
            starts.start(th, start, arrival_obj, jid)
            requeued.popleft()
            started += 1
        if dispatching and heap and not requeued:  # then fresh arrivals, in order: the hot loop
            first = bi
            while bi < nbuf:
                entry = <object>PyList_GET_ITEM(heap, 0)
                th = <Thread>PyTuple_GET_ITEM(entry, 2)
                if not th.accepting:
                    while heap and not (<Thread>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 2)).accepting:
                        heappop(heap)
                    if not heap:
                        break
                    entry = <object>PyList_GET_ITEM(heap, 0)
                    th = <Thread>PyTuple_GET_ITEM(entry, 2)
                free_at = _end_of(entry)
                arrival_obj = <object>PyList_GET_ITEM(buf, bi)
                arrival = arrival_obj
                start = arrival if arrival > free_at else free_at
                if start > limit:  # (an arrival after limit starts after it)
                    break
                starts.start(th, start, arrival_obj, base + bi)
                bi += 1
            started += bi - first
        if not at_cp:
            break
        # a checkpoint: what reads the queue there sees it as it is at cp
        flow._bi = bi
        starts.store()
        flow.started += started
        started = 0
        flow.checkpoint = INFINITY  # nothing called from there may come back here
        cp = flow.on_checkpoint(cp)
        flow.checkpoint = cp
        bi, base, nbuf = flow._bi, flow._base, PyList_GET_SIZE(buf)  # a reader may have dropped old arrivals
    flow._bi = bi
    starts.store()
    flow.started += started
