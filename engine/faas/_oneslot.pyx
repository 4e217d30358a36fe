# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=False
"""The compiled twin of :func:`engine.faas.dispatch.single_slot_loop` (optional; the Python function is the reference).

It works on the very same state (the arrival buffer, the ``slots`` heap of ``(free, seq, instance)`` tuples, the idle
stack, the instances' attributes, the request columns) with the same IEEE double operations in the same order, so every
table is bit-identical; the heap is moved by heapq's sifts, written here with
``(free, seq)`` compared as C numbers (the same layout). What it saves is the interpreter:
typed locals, C comparisons of times, and the idle-stack upkeep inline. ``SCALELAB_FAAS_LOOP=python`` makes the
request flow use the Python function instead.
"""

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item
from libc.math cimport INFINITY

from math import nan as NAN_FLOAT  # the very object the Python loop appends

# the source this module was compiled from (setup.py defines it): dispatch.py uses the module only when it matches
cdef extern from *:
    const char* FAAS_LOOP_SOURCE_SHA256
SOURCE_SHA256 = FAAS_LOOP_SOURCE_SHA256.decode("ascii")

cdef int CONCURRENCY_LIMIT = -2  # engine.faas.dispatch.CONCURRENCY_LIMIT


cdef inline double _as_double(object number) except? -1.0:
    if PyFloat_CheckExact(number):
        return PyFloat_AS_DOUBLE(number)
    return <double>number  # an int, or a numpy float


cdef inline bint _alive(object state) except -1:
    """``state in ("starting", "running", "conceived")``."""
    return state == "running" or state == "starting" or state == "conceived"


cdef inline double _free_at(object r) except? -1.0:
    """``r.heap[0]``: the instance's one slot is free at this time."""
    cdef list heap = r.heap
    return _as_double(<object>PyList_GET_ITEM(heap, 0))


cdef inline bint _before(PyObject* x, PyObject* y) except -1:
    """``x < y`` for two ``slots`` entries ``(free, seq, instance)``: ``(free, seq)`` is unique, so this is the tuples'
    order (what :mod:`heapq` compares)."""
    cdef double fx = _as_double(<object>PyTuple_GET_ITEM(<object>x, 0))
    cdef double fy = _as_double(<object>PyTuple_GET_ITEM(<object>y, 0))
    if fx != fy:
        return fx < fy
    return <long long><object>PyTuple_GET_ITEM(<object>x, 1) < <long long><object>PyTuple_GET_ITEM(<object>y, 1)


cdef int _sift_down(list heap, Py_ssize_t startpos, Py_ssize_t pos) except -1:
    """heapq's ``_siftdown``: the entry at ``pos`` moves up towards ``startpos`` to its place (entries only permuted)."""
    cdef PyObject** arr = (<PyListObject*>heap).ob_item
    cdef PyObject* new = arr[pos]
    cdef Py_ssize_t parentpos
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        if not _before(new, arr[parentpos]):
            break
        arr[pos] = arr[parentpos]
        pos = parentpos
    arr[pos] = new
    return 0


cdef int _sift_up(list heap, Py_ssize_t pos) except -1:
    """heapq's ``_siftup``: the smaller child up to a leaf, then the entry back up to its place."""
    cdef PyObject** arr = (<PyListObject*>heap).ob_item
    cdef Py_ssize_t endpos = PyList_GET_SIZE(heap)
    cdef Py_ssize_t startpos = pos
    cdef PyObject* new = arr[pos]
    cdef Py_ssize_t childpos = 2 * pos + 1
    while childpos < endpos:
        if childpos + 1 < endpos and not _before(arr[childpos], arr[childpos + 1]):
            childpos += 1
        arr[pos] = arr[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    arr[pos] = new
    return _sift_down(heap, startpos, pos)


cdef int _heappush(list heap, object item) except -1:
    """heapq.heappush, the same layout."""
    heap.append(item)
    return _sift_down(heap, 0, PyList_GET_SIZE(heap) - 1)


cdef object _heappop(list heap):
    """heapq.heappop, the same layout."""
    cdef object last = heap.pop()
    cdef PyObject** arr
    cdef PyObject* top
    if PyList_GET_SIZE(heap) == 0:
        return last
    arr = (<PyListObject*>heap).ob_item
    top = arr[0]
    Py_INCREF(last)  # the list's reference to it (pop handed ours to `last`)
    arr[0] = <PyObject*>last
    _sift_up(heap, 0)
    returned = <object>top  # a new reference for the caller...
    Py_DECREF(returned)  # ...and the list's old one, given up
    return returned


def single_slot_loop(list buf, Py_ssize_t bi, double h, list slots, list idle, list c_rep, list c_exec, bint keep,
                     long long seq, at_limit, list rejected):
    """:func:`engine.faas.dispatch.single_slot_loop`, compiled: read that function (and ``free_instance``) first."""
    cdef Py_ssize_t n = PyList_GET_SIZE(buf)
    cdef double a, e, end, free
    cdef Py_ssize_t ei
    cdef list eb, heap
    cdef object r, a_obj, end_obj, e_obj
    cdef bint found
    cdef int full = -1  # at the instance limit: asked once, when first needed
    while bi < n:
        a_obj = <object>PyList_GET_ITEM(buf, bi)
        a = _as_double(a_obj)
        if a > h:
            break
        # free_instance: instances free by a join the idle stack in the order they freed, then the valid top
        while PyList_GET_SIZE(slots) and _as_double(<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(slots, 0), 0)) <= a:
            r = <object>PyTuple_GET_ITEM(_heappop(slots), 2)
            if _alive(r.state) and _free_at(r) <= a and r not in idle:
                idle.append(r)
        found = False
        while PyList_GET_SIZE(idle):
            r = <object>PyList_GET_ITEM(idle, PyList_GET_SIZE(idle) - 1)
            if _alive(r.state) and _free_at(r) <= a:
                found = True
                break
            idle.pop()
            if _alive(r.state):
                seq += 1
                _heappush(slots, (r.heap[0], seq, r))
        if not found:
            if full < 0:
                full = 1 if at_limit() else 0
            if not full:
                return bi, a, seq
            c_rep.append(CONCURRENCY_LIMIT)
            c_exec.append(NAN_FLOAT)
            rejected.append(bi)
            bi += 1
            continue
        ei = r.ei
        if ei >= <Py_ssize_t>r.en:
            r.refill()
            ei = r.ei
        eb = r.eb
        e = _as_double(<object>PyList_GET_ITEM(eb, ei)) * _as_double(r.inv_speed) + _as_double(r.transfer)
        r.ei = ei + 1
        end = a + e
        end_obj = end
        e_obj = e
        heap = r.heap
        heap[0] = end_obj
        if keep:
            r.starts.append(a_obj)
            r.ends.append(end_obj)
            if e > _as_double(r.max_exec):
                r.max_exec = e_obj
        if end > _as_double(r.last_end):
            r.last_end = end_obj
        c_rep.append(r.id)
        c_exec.append(e_obj)
        if end > a:  # its one slot is taken
            idle.pop()
            seq += 1
            _heappush(slots, (end_obj, seq, r))
        bi += 1
    return bi, INFINITY, seq
