# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=False
"""The compiled twin of :func:`engine.faas.oneslot.single_slot_loop` (optional; the Python function is the reference).

It works on the very same state (the arrival buffer, the ``slots`` heap of ``(free, seq, instance)`` tuples, the idle
stack, the instances' attributes, the request columns) with the same IEEE double operations in the same order, so every
table is bit-identical; the heap is moved by heapq's sifts, written here with
``(free, seq)`` compared as C numbers (the same layout). What it saves is the interpreter:
typed locals, C comparisons of times, the idle-stack upkeep inline, and the instances' attributes read and written at
their slots' offsets (:class:`~engine.faas.runtime.Replica` has ``__slots__``: the very storage ``r.ei`` and ``r.ei = x``
use, without the generic attribute lookup; any other class, or one that customises attribute access, goes through
``getattr``/``setattr``). ``SCALELAB_FAAS_LOOP=python`` makes the request flow use the Python function instead.
"""

from cpython.array cimport array
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_SIZE, PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item
from libc.math cimport INFINITY

from engine.faas._values cimport _as_double, _exec_at

from heapq import heappop as _py_heappop, heappush as _py_heappush  # the transitions heap: heapq's own, as the catch-up
from math import nan as NAN_FLOAT  # the very object the Python loop appends
from types import MemberDescriptorType

# the source this module was compiled from (setup.py defines it): dispatch.py uses the module only when it matches
cdef extern from *:
    const char* FAAS_LOOP_SOURCE_SHA256
SOURCE_SHA256 = FAAS_LOOP_SOURCE_SHA256.decode("ascii")

cdef int CONCURRENCY_LIMIT = -2  # engine.faas.dispatch.CONCURRENCY_LIMIT

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    bint _float_exact "PyFloat_CheckExact"(PyObject*)
    double _float_value "PyFloat_AS_DOUBLE"(PyObject*)

# -- an instance's slots ------------------------------------------------------------------------------------------
# The offsets of the slots the loop reads and writes, learnt from the first instance's class (a plain object slot each,
# ``Py_T_OBJECT_EX``, writable, and the class does not customise attribute access); instances of that very class are
# read at the offsets, any other goes through getattr/setattr (the same objects either way).
cdef object _learnt = None  # the class the offsets are of
cdef bint _direct = False  # its slots may be used directly
cdef Py_ssize_t O_STATE, O_HEAP, O_EI, O_EN, O_EB, O_INV_SPEED, O_TRANSFER, O_STARTS, O_ENDS, O_MAX_EXEC, O_LAST_END, O_ID
_SLOTS = ("state", "heap", "ei", "en", "eb", "inv_speed", "transfer", "starts", "ends", "max_exec", "last_end", "id")


cdef int _learn(object cls) except -1:
    global _learnt, _direct, O_STATE, O_HEAP, O_EI, O_EN, O_EB, O_INV_SPEED, O_TRANSFER, O_STARTS, O_ENDS, O_MAX_EXEC
    global O_LAST_END, O_ID
    cdef list offsets = []
    cdef PyMemberDef* member
    _learnt, _direct = cls, False
    if cls.__getattribute__ is not object.__getattribute__ or cls.__setattr__ is not object.__setattr__:
        return 0
    if hasattr(cls, "__getattr__"):
        return 0
    for name in _SLOTS:
        d = getattr(cls, name, None)
        if type(d) is not MemberDescriptorType:
            return 0
        member = (<PyMemberDescrObject*>d).d_member
        if member.type != 16 or member.flags & 1:  # Py_T_OBJECT_EX, not Py_READONLY
            return 0
        offsets.append(member.offset)
    (O_STATE, O_HEAP, O_EI, O_EN, O_EB, O_INV_SPEED, O_TRANSFER, O_STARTS, O_ENDS, O_MAX_EXEC, O_LAST_END,
     O_ID) = offsets
    _direct = True
    return 0


cdef inline PyObject* _slot(object r, Py_ssize_t offset) noexcept:
    """The object in ``r``'s slot at ``offset`` (borrowed; NULL when the slot is empty)."""
    return (<PyObject**>((<char*><PyObject*>r) + offset))[0]


cdef inline object _get(object r, bint direct, Py_ssize_t offset, str name):
    """``getattr(r, name)``: at the slot when ``direct`` (an empty slot raises through getattr, as Python would)."""
    cdef PyObject* p
    if direct:
        p = _slot(r, offset)
        if p != NULL:
            return <object>p
    return getattr(r, name)


cdef inline double _getd(object r, bint direct, Py_ssize_t offset, str name) except? -1.0:
    """``getattr(r, name)`` as a double, without a new reference for a float in the slot."""
    cdef PyObject* p
    if direct:
        p = _slot(r, offset)
        if p != NULL and _float_exact(p):
            return _float_value(p)
    return _as_double(getattr(r, name))


cdef inline int _set(object r, bint direct, Py_ssize_t offset, str name, object value) except -1:
    """``setattr(r, name, value)``: into the slot when ``direct`` (what a member descriptor's set does)."""
    cdef PyObject** p
    cdef PyObject* old
    if not direct:
        setattr(r, name, value)
        return 0
    p = <PyObject**>((<char*><PyObject*>r) + offset)
    old = p[0]
    Py_INCREF(value)
    p[0] = <PyObject*>value
    Py_XDECREF(old)
    return 0


cdef inline bint _alive(object state) except -1:
    """``state in ("starting", "running", "conceived")``."""
    return state == "running" or state == "starting" or state == "conceived"


cdef inline double _free_at(list heap) except? -1.0:
    """``r.heap[0]`` (``heap``: ``r.heap``): the instance's one slot is free at this time."""
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


cdef long long _recheck(list heap, double h, object rt, double idle_timeout, long long seq) except? -1:
    """:func:`engine.faas.oneslot.recheck`: the heap's top pushed again when it is an idle re-check of an instance of
    ``rt`` used since; returns the sequence number (unchanged: the top is anything else)."""
    cdef double at
    if not PyList_GET_SIZE(heap):
        return seq
    top = <object>PyList_GET_ITEM(heap, 0)
    if _as_double(<object>PyTuple_GET_ITEM(top, 0)) != h or not (<object>PyTuple_GET_ITEM(top, 2) == "expire"):
        return seq
    r = <object>PyTuple_GET_ITEM(top, 3)
    if r.rt is not rt or not (r.state == "running"):
        return seq
    at = _as_double(r.last_end) + idle_timeout
    if not (h < at < INFINITY):
        return seq
    _py_heappop(heap)
    seq += 1
    at_obj = at
    r.expiry = at_obj
    _py_heappush(heap, (at_obj, seq, "expire", r))
    return seq


def single_slot_loop(list buf, Py_ssize_t bi, double h, list slots, list idle, list c_rep, list c_exec, bint keep,
                     long long seq, at_limit, list rejected, list heap=None, double limit=-INFINITY, rt=None,
                     double idle_timeout=0.0, step=None):
    """:func:`engine.faas.oneslot.single_slot_loop`, compiled: read that function (and ``free_instance``) first."""
    cdef Py_ssize_t n = PyList_GET_SIZE(buf)
    cdef double a, e, end, top
    cdef Py_ssize_t ei
    cdef long long moved
    cdef list heap_r
    cdef object eb
    cdef object r, a_obj, end_obj, e_obj
    cdef bint found, direct
    cdef PyObject* p
    cdef int full = -1  # at the instance limit: asked once, when first needed
    while bi < n:
        a_obj = <object>PyList_GET_ITEM(buf, bi)
        a = _as_double(a_obj)
        if a > h:
            if heap is None or not PyList_GET_SIZE(heap):
                break
            if _as_double(<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 0)) != h:
                break
            moved = _recheck(heap, h, rt, idle_timeout, seq)
            if moved != seq:
                seq = moved
            elif step is not None and (<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 3)).rt is rt:
                seq = step(seq)  # the catch-up's own step: it may add or remove an instance
                full = -1
            else:
                break
            if PyList_GET_SIZE(heap):
                top = _as_double(<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(heap, 0), 0))
                h = top if top < limit else limit
            else:
                h = limit
            continue
        # free_instance: instances free by a join the idle stack in the order they freed, then the valid top
        while PyList_GET_SIZE(slots) and _as_double(<object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(slots, 0), 0)) <= a:
            r = <object>PyTuple_GET_ITEM(_heappop(slots), 2)
            if type(r) is not _learnt:
                _learn(type(r))
            direct = _direct and type(r) is _learnt
            if _alive(_get(r, direct, O_STATE, "state")) and _free_at(_get(r, direct, O_HEAP, "heap")) <= a and r not in idle:
                idle.append(r)
        found = False
        while PyList_GET_SIZE(idle):
            r = <object>PyList_GET_ITEM(idle, PyList_GET_SIZE(idle) - 1)
            if type(r) is not _learnt:
                _learn(type(r))
            direct = _direct and type(r) is _learnt
            if _alive(_get(r, direct, O_STATE, "state")) and _free_at(_get(r, direct, O_HEAP, "heap")) <= a:
                found = True
                break
            idle.pop()
            if _alive(_get(r, direct, O_STATE, "state")):
                seq += 1
                _heappush(slots, (_get(r, direct, O_HEAP, "heap")[0], seq, r))
        if not found:
            if full < 0:
                full = 1 if at_limit() else 0
            if not full:
                return bi, a, seq, h
            c_rep.append(CONCURRENCY_LIMIT)
            c_exec.append(NAN_FLOAT)
            rejected.append(bi)
            bi += 1
            continue
        ei = _get(r, direct, O_EI, "ei")
        if ei >= <Py_ssize_t>_get(r, direct, O_EN, "en"):
            r.refill()
            ei = _get(r, direct, O_EI, "ei")
        eb = _get(r, direct, O_EB, "eb")
        e = (_exec_at(eb, ei) * _getd(r, direct, O_INV_SPEED, "inv_speed")
             + _getd(r, direct, O_TRANSFER, "transfer"))
        _set(r, direct, O_EI, "ei", ei + 1)
        end = a + e
        end_obj = end
        e_obj = e
        heap_r = _get(r, direct, O_HEAP, "heap")
        heap_r[0] = end_obj
        if keep:
            _get(r, direct, O_STARTS, "starts").append(a_obj)
            _get(r, direct, O_ENDS, "ends").append(end_obj)
            if e > _getd(r, direct, O_MAX_EXEC, "max_exec"):
                _set(r, direct, O_MAX_EXEC, "max_exec", e_obj)
        if end > _getd(r, direct, O_LAST_END, "last_end"):
            _set(r, direct, O_LAST_END, "last_end", end_obj)
        c_rep.append(_get(r, direct, O_ID, "id"))
        c_exec.append(e_obj)
        if end > a:  # its one slot is taken
            idle.pop()
            seq += 1
            _heappush(slots, (end_obj, seq, r))
        bi += 1
    return bi, INFINITY, seq, h
