# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The compiled passes of Skippy's default step over kept columns (:meth:`engine.scheduling.skippy_step.SkippyStep.decide`
on clusters of :data:`~engine.scheduling.shape_columns.SMALL` nodes or more; optional, the numpy step is the reference).

A pod whose fit and BalancedResource columns are kept for its (cpu, memory) shape, and whose other scores are kept per
image, data item and capability set, costs two passes here instead of ~10 numpy calls: the filter (:func:`feasible_nodes`)
and the sum of the scores with the first best node of the walk (:func:`first_best`), each score added in the weighted
sum's order (IEEE operations as numpy does them, compiled with ``-ffp-contract=off``). :func:`latency_at` patches kept
pull-second scores where nodes pulled an image. The column buffers are read through :mod:`._skippy_step`'s helpers.
"""

from libc.math cimport INFINITY, trunc
from libc.stdint cimport int64_t

from engine.scheduling._skippy_step cimport Views, _column, _release

# the source this module was compiled from (setup.py defines it): skippy_step.py uses the module only when it matches
cdef extern from *:
    const char* KEPT_STEP_SOURCE_SHA256
SOURCE_SHA256 = KEPT_STEP_SOURCE_SHA256.decode("ascii")


def feasible_nodes(schedulable, fits, no_storage, passes, Py_ssize_t start):
    """The filter of a pod whose fit mask is kept (the numpy step on large clusters), in one pass: ``passes`` (bool,
    written) = cordons and ``fits`` and ``no_storage`` (None: not asked) at every node. Returns (feasible count, next
    start: after the last passing node of the walk from ``start``, or ``start`` when none passes, any node cordoned)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(fits), i, feasible = 0, following = start
    cdef const char* up
    cdef const char* fit
    cdef const char* apart
    cdef char* out
    cdef char everywhere = 1, v
    if not 0 <= start < n:
        raise ValueError(f"start {start} is not a node of {n}")
    try:
        up = <const char*>_column(&views, schedulable, n, 1, b"?", False)
        fit = <const char*>_column(&views, fits, n, 1, b"?", False)
        apart = NULL if no_storage is None else <const char*>_column(&views, no_storage, n, 1, b"?", False)
        out = <char*>_column(&views, passes, n, 1, b"?", True)
        with nogil:
            for i in range(n):  # bools are 0 or 1: ands of bytes, which the compiler vectorises
                v = fit[i] & up[i]
                if apart != NULL:
                    v = v & apart[i]
                out[i] = v
                feasible += v
                everywhere = everywhere & up[i]
            if feasible:
                i = start - 1 if start else n - 1
                while not out[i]:  # the walk's last passing node: the first one back from start
                    i = i - 1 if i else n - 1
                following = (i + 1) % n
    finally:
        _release(&views)
    return feasible, following, not everywhere


def first_best(passes, Py_ssize_t start, balance, image, locality, data, capability):
    """The first best passing node of the walk from ``start`` and its total, the scores summed as the weighted sum
    adds them at weight 1: ``balance``, then + ``image``, + ``locality`` (int64), + ``data``, + ``capability`` (float64;
    None: every node 0, skipped). None when a passing node's total is NaN or none exceeds -inf (the numpy step then
    picks: its handling is numpy's)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(passes), i, k, begin, end, node = -1
    cdef const char* ok
    cdef const double* b
    cdef const double* im
    cdef const int64_t* loc
    cdef const double* d
    cdef const double* cap
    cdef double total, best = -INFINITY
    cdef bint nan = False
    if not 0 <= start < n:
        raise ValueError(f"start {start} is not a node of {n}")
    try:
        ok = <const char*>_column(&views, passes, n, 1, b"?", False)
        b = <const double*>_column(&views, balance, n, 8, b"d", False)
        im = NULL if image is None else <const double*>_column(&views, image, n, 8, b"d", False)
        loc = NULL if locality is None else <const int64_t*>_column(&views, locality, n, 8, b"lq", False)
        d = NULL if data is None else <const double*>_column(&views, data, n, 8, b"d", False)
        cap = NULL if capability is None else <const double*>_column(&views, capability, n, 8, b"d", False)
        with nogil:
            for k in range(2):  # the walk: start .. n - 1, then 0 .. start - 1
                begin = start if k == 0 else 0
                end = n if k == 0 else start
                for i in range(begin, end):
                    if not ok[i]:
                        continue
                    total = b[i]
                    if im != NULL:
                        total = im[i] + total
                    if loc != NULL:
                        total = total + <double>loc[i]
                    if d != NULL:
                        total = total + d[i]
                    if cap != NULL:
                        total = total + cap[i]
                    if total > best:
                        best = total
                        node = i
                    elif total != total:
                        nan = True
    finally:
        _release(&views)
    if nan or node < 0:
        return None
    return node, best


def latency_at(row, double lo, double hi, nodes, scores):
    """LatencyAwareImageLocality's trunc(((hi + lo) - t) * 10 / hi) of the pull seconds ``row`` written into ``scores``
    (float64) at ``nodes`` (a list of positions): a kept row's scores patched where nodes pulled the image."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(row), i
    cdef const double* seconds
    cdef double* out
    cdef double score
    try:
        seconds = <const double*>_column(&views, row, n, 8, b"d", False)
        out = <double*>_column(&views, scores, n, 8, b"d", True)
        for node in nodes:
            i = node
            if not 0 <= i < n:
                raise ValueError(f"node {i} is not one of {n}")
            score = (hi + lo) - seconds[i]
            score = score * 10.0
            score = score / hi
            out[i] = trunc(score)
    finally:
        _release(&views)
