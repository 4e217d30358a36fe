# cython: language_level=3
"""Reading Python numbers as C doubles, shared by the function platform's compiled loops (``_oneslot.pyx``, ``_ready.pyx``)."""

from cpython.array cimport array
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_SIZE


cdef inline double _as_double(object number) except? -1.0:
    if PyFloat_CheckExact(number):
        return PyFloat_AS_DOUBLE(number)
    return <double>number  # an int, or a numpy float


cdef inline double _exec_at(object eb, Py_ssize_t ei) except? -1.0:
    """``eb[ei]`` as a double: the replica's execution times, an ``array('d')`` (read in place) or a list."""
    if type(eb) is array and (<array>eb).ob_descr.typecode == b'd' and 0 <= ei < Py_SIZE(eb):
        return (<array>eb).data.as_doubles[ei]
    if type(eb) is list and 0 <= ei < PyList_GET_SIZE(eb):
        return _as_double(<object>PyList_GET_ITEM(eb, ei))
    return _as_double(eb[ei])
