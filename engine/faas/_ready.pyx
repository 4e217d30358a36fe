# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=False
"""The compiled twin of :func:`engine.faas.ready_loop.round_robin_loop` (optional; the Python function is the reference).

It works on the very same state (the arrival buffer, the ready replicas' attributes and thread heaps, the request
columns) with the same IEEE double operations in the same order, so every table is bit-identical. A replica's thread
heap (its threads' free times) is moved by heapq's ``heapreplace`` sift, written here with the times compared as C
doubles (what heapq's ``<`` on numbers does). What it saves is the interpreter: typed locals, C comparisons, appends
without method lookups. ``SCALELAB_FAAS_LOOP=python`` makes the request flow use the Python function instead.
"""

from cpython.array cimport array
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_SIZE, PyObject
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.math cimport NAN, floor
from libc.stdint cimport int64_t
from libc.stdlib cimport qsort

from engine.faas._values cimport _as_double, _exec_at

import numpy as np

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item

# the source this module was compiled from (setup.py defines it): ready_loop.py uses the module only when it matches
cdef extern from *:
    const char* FAAS_READY_SOURCE_SHA256
SOURCE_SHA256 = FAAS_READY_SOURCE_SHA256.decode("ascii")
cdef enum:
    PAIRWISE_MAX = 4096  # busy_seconds sums up to this many values on the stack (a replica's window rarely holds 200)


cdef int _heapreplace(list heap, object item, double value) except -1:
    """``heapq.heapreplace(heap, item)`` on a heap of numbers (``value`` is ``item`` as a double), the same layout:
    heapq's ``_siftup`` from the root (the smaller child up to a leaf) then its ``_siftdown`` back towards the root."""
    cdef PyObject** arr = (<PyListObject*>heap).ob_item
    cdef Py_ssize_t endpos = PyList_GET_SIZE(heap)
    cdef Py_ssize_t pos = 0
    cdef Py_ssize_t childpos = 1
    cdef Py_ssize_t parentpos
    cdef PyObject* old = arr[0]
    while childpos < endpos:
        if childpos + 1 < endpos and not (_as_double(<object>arr[childpos]) < _as_double(<object>arr[childpos + 1])):
            childpos += 1
        arr[pos] = arr[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    while pos > 0:
        parentpos = (pos - 1) >> 1
        if not (value < _as_double(<object>arr[parentpos])):
            break
        arr[pos] = arr[parentpos]
        pos = parentpos
    Py_INCREF(item)  # the list's reference to the new entry
    arr[pos] = <PyObject*>item
    Py_DECREF(<object>old)  # the list's reference to the entry it replaced
    return 0


def round_robin_loop(list buf, Py_ssize_t bi, double h, list reps, Py_ssize_t rr, list c_rep, list c_arr, list c_start,
                     list c_exec):
    """:func:`engine.faas.ready_loop.round_robin_loop`, compiled: read that function first."""
    cdef Py_ssize_t n = PyList_GET_SIZE(buf)
    cdef Py_ssize_t nrep = PyList_GET_SIZE(reps)
    cdef double a, free, start, e, end
    cdef Py_ssize_t ei
    cdef list heap
    cdef object eb
    cdef object r, a_obj, free_obj, start_obj, end_obj
    cdef object e_obj = None
    cdef Py_ssize_t first = bi
    while bi < n:
        a_obj = <object>PyList_GET_ITEM(buf, bi)
        a = _as_double(a_obj)
        if a > h:
            break
        r = <object>PyList_GET_ITEM(reps, rr % nrep)
        rr += 1
        heap = r.heap
        free_obj = <object>PyList_GET_ITEM(heap, 0)
        free = _as_double(free_obj)
        if a > free:
            start_obj = a_obj
            start = a
        else:
            start_obj = free_obj
            start = free
        ei = r.ei
        if ei >= <Py_ssize_t>r.en:
            r.refill()
            ei = r.ei
        eb = r.eb
        e = _exec_at(eb, ei) * _as_double(r.inv_speed) + _as_double(r.transfer)
        r.ei = ei + 1
        end = start + e
        e_obj = e
        end_obj = end
        _heapreplace(heap, end_obj, end)
        r.starts.append(start_obj)
        r.ends.append(end_obj)
        if e > _as_double(r.max_exec):
            r.max_exec = e_obj
        if end > _as_double(r.last_end):
            r.last_end = end_obj
        c_rep.append(r.id)
        c_start.append(start_obj)
        c_exec.append(e_obj)
        bi += 1
    if bi > first:
        c_arr.extend(buf[first:bi])  # the arrivals themselves, in one copy
    return bi, rr, e_obj


cdef Py_ssize_t _bisect_left(list a, double x, Py_ssize_t hi) except -1:
    """``bisect.bisect_left(a, x, 0, hi)`` on numbers (compared as C doubles)."""
    cdef Py_ssize_t lo = 0, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if _as_double(<object>PyList_GET_ITEM(a, mid)) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef Py_ssize_t _bisect_right(list a, double x, Py_ssize_t hi) except -1:
    """``bisect.bisect_right(a, x, 0, hi)`` on numbers (compared as C doubles)."""
    cdef Py_ssize_t lo = 0, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < _as_double(<object>PyList_GET_ITEM(a, mid)):
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef double _pairwise(double* d, Py_ssize_t n) noexcept nogil:
    """numpy's pairwise sum of ``n`` doubles (``pairwise_sum_DOUBLE``): under 8 left to right, up to 128 in eight
    running sums combined pairwise and then the rest, more split in two halves (the first a multiple of 8)."""
    cdef double r0, r1, r2, r3, r4, r5, r6, r7, res
    cdef Py_ssize_t i, n2
    if n < 8:
        res = 0.0
        for i in range(n):
            res += d[i]
        return res
    if n <= 128:
        r0 = d[0]; r1 = d[1]; r2 = d[2]; r3 = d[3]; r4 = d[4]; r5 = d[5]; r6 = d[6]; r7 = d[7]
        i = 8
        while i < n - (n % 8):
            r0 += d[i]; r1 += d[i + 1]; r2 += d[i + 2]; r3 += d[i + 3]
            r4 += d[i + 4]; r5 += d[i + 5]; r6 += d[i + 6]; r7 += d[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += d[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(d, n2) + _pairwise(d + n2, n - n2)


def busy_seconds(r, double t0, double t1):
    """:meth:`engine.faas.runtime.Replica.busy_seconds` of the replica ``r``, compiled: read that method first. Every
    length is summed in numpy's pairwise order (what the method's ``_numpy_sum`` and numpy's ``sum`` do), up to
    ``PAIRWISE_MAX`` values; beyond it the method itself answers."""
    return _busy(r, t0, t1)


cdef double _busy(object r, double t0, double t1) except? -1.0:
    cdef double d, s, e, total
    cdef Py_ssize_t lo, hi, i, n
    cdef list starts, ends
    cdef double buf[PAIRWISE_MAX]
    if _as_double(r.last_end) <= t0:
        return 0.0
    starts = r.starts
    ends = r.ends
    n = PyList_GET_SIZE(starts)
    lo = _bisect_left(starts, t0 - _as_double(r.max_exec), n)
    hi = _bisect_left(starts, t1, n)
    if hi <= lo:
        return 0.0
    if hi - lo > PAIRWISE_MAX:
        return type(r).busy_seconds(r, t0, t1)
    if hi - lo < 8:
        total = 0.0
        for i in range(lo, hi):
            e = _as_double(<object>PyList_GET_ITEM(ends, i))
            s = _as_double(<object>PyList_GET_ITEM(starts, i))
            d = (e if e < t1 else t1) - (s if s > t0 else t0)
            if d > 0.0:
                total += d
        return total
    for i in range(lo, hi):
        e = _as_double(<object>PyList_GET_ITEM(ends, i))
        s = _as_double(<object>PyList_GET_ITEM(starts, i))
        d = (e if e < t1 else t1) - (s if s > t0 else t0)
        buf[i - lo] = d if d > 0.0 else 0.0
    return 0.0 + _pairwise(buf, hi - lo)


def unfinished(r, double t):
    """:meth:`engine.faas.runtime.Replica.unfinished` of the replica ``r``, compiled: read that method first."""
    cdef list starts = r.starts
    cdef list ends = r.ends
    cdef Py_ssize_t n = PyList_GET_SIZE(starts)
    cdef Py_ssize_t hi = _bisect_right(starts, t, n)
    cdef Py_ssize_t count = n - hi
    cdef Py_ssize_t i
    for i in range(_bisect_left(starts, t - _as_double(r.max_exec), hi), hi):
        if _as_double(<object>PyList_GET_ITEM(ends, i)) > t:
            count += 1
    return count


def replica_rows(nodes, rt, now, double interval, list rows):
    """:func:`engine.faas.utilrows.replica_rows` with :func:`busy_seconds`, compiled: read that function first (and
    :func:`engine.faas.observations.cores_used`, whose rule is written out here). Python's ``min(x, y)`` is ``y if
    y < x else x`` and ``max(x, y)`` is ``y if y > x else x``: the same comparisons pick the same objects."""
    cdef double t_now = now
    cdef double t0 = t_now - interval
    spec = rt.spec
    cdef double request = _as_double(spec.cpu_millis) / 1000.0
    memory_request_obj = spec.memory_mib * 2**20
    cdef double memory_request = _as_double(memory_request_obj)
    name = rt.name
    cdef const int64_t[:] cpu = nodes.cpu  # the cluster's columns (utilrows.NodeCapacities with lists off)
    cdef const int64_t[:] memory = nodes.memory
    cdef Py_ssize_t i
    cdef double pa, start, span, busy, node_cores, share, gpu, ram, y, cores, node_memory, z, m, g
    for r in rt.replicas.values():
        i = r.node_index
        placed = r.placed_at
        if placed is None or i < 0:
            continue
        if i >= cpu.shape[0] or i >= memory.shape[0]:
            raise IndexError("node index out of range")
        pa = _as_double(placed)
        start = pa if pa > t0 else t0
        span = t_now - start
        if 1e-9 > span:
            span = 1e-9
        busy = _busy(r, t0, t_now) / span
        node_cores = <double>cpu[i] / 1000.0  # int(cpu[i]) / 1000.0: the int made a double, then divided
        share, gpu, ram = r.resources
        y = busy * (share * node_cores if share >= 0 else 1.0)
        cores = y if y < node_cores else node_cores
        node_memory = <double>memory[i]
        z = busy * ram * node_memory
        if z > memory_request:
            m = z
            m_obj = z
        else:
            m = memory_request
            m_obj = memory_request_obj
        g = busy * gpu
        rows.append(
            (
                now,
                "replica",
                r.node,
                r.id,
                name,
                cores / node_cores,
                cores / request,
                m_obj if m < node_memory else node_memory,
                g if g < 1.0 else 1.0,
                busy,
            )
        )


def node_rows(cluster, nodes, now, list rows):
    """:func:`engine.faas.utilrows.node_rows`, compiled: read that function first (each node's sums in the rows' order,
    as doubles: Python's float additions)."""
    cdef dict slot = {}  # node -> its four sums' place in acc, in order of first row
    cdef Py_ssize_t n = PyList_GET_SIZE(rows)
    cdef Py_ssize_t k, j, i
    cdef double cpu, memory, gpu, busy, allocated, cores, node_memory
    cdef long long capacity, free_cpu
    cdef const int64_t[:] ncpu = nodes.cpu  # the cluster's columns (utilrows.NodeCapacities with lists off)
    cdef const int64_t[:] nfree = nodes.free_cpu
    cdef const int64_t[:] nmemory = nodes.memory
    if n == 0:
        return
    cdef double* acc = <double*>PyMem_Malloc(4 * n * sizeof(double))
    if acc == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            row = <object>PyList_GET_ITEM(rows, k)
            node = row[2]
            if node in slot:
                j = slot[node]
            else:
                j = len(slot)
                slot[node] = j
                acc[4 * j] = acc[4 * j + 1] = acc[4 * j + 2] = acc[4 * j + 3] = 0.0
            acc[4 * j] += _as_double(row[5])
            acc[4 * j + 1] += _as_double(row[7])
            acc[4 * j + 2] += _as_double(row[8])
            acc[4 * j + 3] += _as_double(row[9])
        index = cluster.index
        for node in sorted(slot):
            j = slot[node]
            cpu, memory, gpu, busy = acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]
            i = index[node]
            if i < 0 or i >= ncpu.shape[0] or i >= nfree.shape[0] or i >= nmemory.shape[0]:
                raise IndexError("node index out of range")
            capacity = ncpu[i]
            free_cpu = nfree[i]
            allocated = <double>(capacity - free_cpu) / 1000.0
            cores = cpu * <double>capacity / 1000.0
            node_memory = <double>nmemory[i]
            rows.append(
                (
                    now,
                    "node",
                    node,
                    None,
                    None,
                    cpu if cpu < 1.0 else 1.0,
                    cores / allocated if allocated > 0 else NAN,
                    node_memory if node_memory < memory else memory,
                    gpu if gpu < 1.0 else 1.0,
                    busy,
                )
            )
    finally:
        PyMem_Free(acc)


cdef int _ascending(const void* x, const void* y) noexcept nogil:
    cdef double a = (<const double*>x)[0]
    cdef double b = (<const double*>y)[0]
    return (a > b) - (a < b)


cdef double _percentile(double* ordered, Py_ssize_t n, double p) noexcept nogil:
    """:func:`engine.core.quantiles.sorted_linear_percentiles` of one percent ``p``: the same operations."""
    cdef double virtual = <double>(n - 1) * (p / 100.0)
    cdef Py_ssize_t below
    cdef double gamma, low, high, diff
    if virtual >= <double>(n - 1):
        return ordered[n - 1]
    below = <Py_ssize_t>floor(virtual)
    gamma = virtual - <double>below
    low = ordered[below]
    high = ordered[below + 1]
    diff = high - low
    return high - diff * (1.0 - gamma) if gamma >= 0.5 else low + diff * gamma


def response_percentiles(list rep, list arr, list start, list exe, Py_ssize_t lo=0):
    """:func:`engine.faas.utilrows.response_percentiles`, compiled: read that function first. The responses (start +
    execution - arrival, as doubles) of the served rows are sorted by ``qsort``: the same values in the same order
    as Python's or numpy's sort (no NaN is served), then interpolated as the reference does."""
    cdef Py_ssize_t n = PyList_GET_SIZE(rep)
    cdef Py_ssize_t i, k = 0
    cdef double* ordered
    cdef double p50, p95, p99
    if PyList_GET_SIZE(arr) != n or PyList_GET_SIZE(start) != n or PyList_GET_SIZE(exe) != n:
        raise ValueError("the request columns differ in length")
    if lo < 0:
        lo = 0
    if n <= lo:
        return (NAN, NAN, NAN)
    ordered = <double*>PyMem_Malloc((n - lo) * sizeof(double))
    if ordered == NULL:
        raise MemoryError()
    try:
        for i in range(lo, n):
            if <object>PyList_GET_ITEM(rep, i) >= 0:
                ordered[k] = (_as_double(<object>PyList_GET_ITEM(start, i)) + _as_double(<object>PyList_GET_ITEM(exe, i))
                              - _as_double(<object>PyList_GET_ITEM(arr, i)))
                k += 1
        if k == 0:
            return (NAN, NAN, NAN)
        qsort(ordered, k, sizeof(double), _ascending)
        p50 = _percentile(ordered, k, 50.0)
        p95 = _percentile(ordered, k, 95.0)
        p99 = _percentile(ordered, k, 99.0)
    finally:
        PyMem_Free(ordered)
    return (p50, p95, p99)


def tail_arrays(list rep, list arr, list start, list exe):
    """:func:`engine.faas.runtime.tail_arrays`, compiled: each number written into its array as ``np.asarray`` does
    (an int as a C int, range-checked; a float's double as is), without numpy's discovery pass over the list."""
    cdef Py_ssize_t n = PyList_GET_SIZE(rep)
    cdef Py_ssize_t i
    if PyList_GET_SIZE(arr) != n or PyList_GET_SIZE(start) != n or PyList_GET_SIZE(exe) != n:
        raise ValueError("the request columns differ in length")
    out = (np.empty(n, dtype=np.int32), np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64), np.empty(n, dtype=np.float64))
    cdef int[::1] r = out[0]
    cdef double[::1] a = out[1]
    cdef double[::1] s = out[2]
    cdef double[::1] e = out[3]
    for i in range(n):
        r[i] = <object>PyList_GET_ITEM(rep, i)
        a[i] = _as_double(<object>PyList_GET_ITEM(arr, i))
        s[i] = _as_double(<object>PyList_GET_ITEM(start, i))
        e[i] = _as_double(<object>PyList_GET_ITEM(exe, i))
    return out


cdef Py_ssize_t _in_service(object r, double t) except -1:
    """:meth:`engine.faas.runtime.Replica.in_service`: starts up to ``t`` (as far back as the longest execution) whose
    end is after ``t``."""
    cdef list starts = r.starts
    cdef list ends = r.ends
    cdef Py_ssize_t n = PyList_GET_SIZE(starts)
    cdef Py_ssize_t hi = _bisect_right(starts, t, n)
    cdef Py_ssize_t count = 0
    cdef Py_ssize_t i
    if hi > PyList_GET_SIZE(ends):
        raise IndexError("a replica has fewer ends than starts")
    for i in range(_bisect_left(starts, t - _as_double(r.max_exec), hi), hi):
        if _as_double(<object>PyList_GET_ITEM(ends, i)) > t:
            count += 1
    return count


cdef Py_ssize_t _queued(object r, double t) except -1:
    """:meth:`engine.faas.runtime.Replica.queued`: starts after ``t``."""
    cdef list starts = r.starts
    cdef Py_ssize_t n = PyList_GET_SIZE(starts)
    return n - _bisect_right(starts, t, n)


def replica_counts(list ready, live, double t):
    """:func:`engine.faas.observations.replica_counts`, compiled: read that function first."""
    cdef Py_ssize_t total = 0
    busy = tuple([_in_service(r, t) for r in ready])
    queued = tuple([_queued(r, t) for r in ready])
    for r in live:
        total += _queued(r, t)
    return busy, queued, total
