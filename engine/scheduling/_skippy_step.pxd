# Shared with engine/scheduling/_kept_step.pyx (cimported): the buffers of the numpy columns a compiled pass reads.
from cpython.buffer cimport Py_buffer

cdef enum:
    MAX_IMAGES = 8  # a pod of more images takes the numpy step's pull seconds
    MAX_VIEWS = 3 + 2 * MAX_IMAGES


cdef struct Views:
    Py_buffer view[MAX_VIEWS]
    int count


cdef void* _column(Views* views, object array, Py_ssize_t n, Py_ssize_t itemsize, const char* kinds, bint write) except NULL
cdef void _release(Views* views) noexcept
