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
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

from engine.scheduling._skippy_step cimport Views, _column, _release

# the source this module was compiled from (setup.py defines it): skippy_step.py uses the module only when it matches
cdef extern from *:
    const char* KEPT_STEP_SOURCE_SHA256
SOURCE_SHA256 = KEPT_STEP_SOURCE_SHA256.decode("ascii")

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* min and max of row over the nodes ok marks (bools): 1, 0 when none passes, -1 when a passing value is NaN.
       SSE2: four nodes a step, a node that fails counted as +inf for the min and -inf for the max (exact: a min or a
       max of doubles is one of them, whatever the order). */
    static int kept_row_bounds(const double* row, const char* ok, Py_ssize_t n, double* lo, double* hi) {
        Py_ssize_t i = 0, k;
        double l = INFINITY, h = -INFINITY, v;
        int any = 0, nan = 0;
    #if defined(__SSE2__)
        const __m128d up = _mm_set1_pd(INFINITY), down = _mm_set1_pd(-INFINITY);
        __m128d l0 = up, l1 = up, h0 = down, h1 = down, bad = _mm_setzero_pd();
        __m128i seen = _mm_setzero_si128();
        double lanes[4];
        for (; i + 4 <= n; i += 4) {
            int bytes;
            memcpy(&bytes, ok + i, 4);
            __m128i b = _mm_cvtsi32_si128(bytes);
            b = _mm_unpacklo_epi8(b, b);
            b = _mm_unpacklo_epi16(b, b);
            b = _mm_cmpgt_epi32(b, _mm_setzero_si128());  /* a 32-bit lane of ones per passing node */
            __m128d k0 = _mm_castsi128_pd(_mm_unpacklo_epi32(b, b)), k1 = _mm_castsi128_pd(_mm_unpackhi_epi32(b, b));
            __m128d x0 = _mm_loadu_pd(row + i), x1 = _mm_loadu_pd(row + i + 2);
            bad = _mm_or_pd(bad, _mm_or_pd(_mm_and_pd(k0, _mm_cmpunord_pd(x0, x0)), _mm_and_pd(k1, _mm_cmpunord_pd(x1, x1))));
            l0 = _mm_min_pd(l0, _mm_or_pd(_mm_and_pd(k0, x0), _mm_andnot_pd(k0, up)));
            l1 = _mm_min_pd(l1, _mm_or_pd(_mm_and_pd(k1, x1), _mm_andnot_pd(k1, up)));
            h0 = _mm_max_pd(h0, _mm_or_pd(_mm_and_pd(k0, x0), _mm_andnot_pd(k0, down)));
            h1 = _mm_max_pd(h1, _mm_or_pd(_mm_and_pd(k1, x1), _mm_andnot_pd(k1, down)));
            seen = _mm_or_si128(seen, b);
        }
        nan = _mm_movemask_pd(bad) != 0;
        any = _mm_movemask_epi8(seen) != 0;
        _mm_storeu_pd(lanes, l0);
        _mm_storeu_pd(lanes + 2, l1);
        for (k = 0; k < 4; k++)
            l = lanes[k] < l ? lanes[k] : l;
        _mm_storeu_pd(lanes, h0);
        _mm_storeu_pd(lanes + 2, h1);
        for (k = 0; k < 4; k++)
            h = lanes[k] > h ? lanes[k] : h;
    #endif
        for (; i < n; i++) {
            if (!ok[i])
                continue;
            v = row[i];
            any = 1;
            if (v != v)
                nan = 1;
            l = v < l ? v : l;
            h = v > h ? v : h;
        }
        *lo = l;
        *hi = h;
        return nan ? -1 : any;
    }
    """
    int kept_row_bounds(const double* row, const char* ok, Py_ssize_t n, double* lo, double* hi) noexcept nogil


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
    (float64) at ``nodes`` (a list of positions): a kept row's scores patched where nodes pulled the image. ``nodes``
    None: at every node, each score computed once per run of equal bits (a row holds a few values in long runs)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(row), i
    cdef const double* seconds
    cdef double* out
    cdef double score = 0.0
    cdef uint64_t bits, last = 0
    cdef bint have = False
    try:
        seconds = <const double*>_column(&views, row, n, 8, b"d", False)
        out = <double*>_column(&views, scores, n, 8, b"d", True)
        if nodes is None:
            with nogil:
                for i in range(n):
                    memcpy(&bits, &seconds[i], 8)
                    if not have or bits != last:
                        score = _latency(seconds[i], lo, hi)
                        last, have = bits, True
                    out[i] = score
            return scores
        for node in nodes:
            i = node
            if not 0 <= i < n:
                raise ValueError(f"node {i} is not one of {n}")
            out[i] = _latency(seconds[i], lo, hi)
    finally:
        _release(&views)
    return scores


cdef inline double _latency(double t, double lo, double hi) noexcept nogil:
    cdef double score = (hi + lo) - t
    score = score * 10.0
    score = score / hi
    return trunc(score)

def row_bounds(row, passes):
    """(min, max) of ``row`` (float64) over the nodes ``passes`` marks (at least one): what ``row[passes]``'s ``min()``
    and ``max()`` give, without the gather. None when one of those values is NaN (numpy's handling then decides)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(passes)
    cdef double lo, hi
    cdef int found
    cdef const char* ok
    cdef const double* seconds
    try:
        ok = <const char*>_column(&views, passes, n, 1, b"?", False)
        seconds = <const double*>_column(&views, row, n, 8, b"d", False)
        with nogil:
            found = kept_row_bounds(seconds, ok, n, &lo, &hi)
    finally:
        _release(&views)
    if found == 0:
        raise ValueError("no node passes")
    return None if found < 0 else (lo, hi)


def static_extremes(values, Py_ssize_t walk, second=None, out=None):
    """The first ``walk`` nodes holding the smallest and the largest of ``values`` (float64), as
    :meth:`~engine.scheduling.static_column.StaticColumn.find_extremes` finds them: (lowest, highest) lists. With
    ``second`` (float64), the values are a data-item pair's ``(0.0 + values) + second`` (Python's sum of the two
    columns, the same IEEE steps), written into ``out`` first. None when a value is NaN (numpy's handling then)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(values), i
    cdef const double* a
    cdef const double* b = NULL
    cdef double* v
    cdef double lo = INFINITY, hi = -INFINITY, x
    cdef bint nan = False
    cdef list lowest = [], highest = []
    if n == 0 or walk < 1:
        raise ValueError("a column of at least one node and a walk of at least one node")
    try:
        a = <const double*>_column(&views, values, n, 8, b"d", False)
        if second is not None:
            b = <const double*>_column(&views, second, n, 8, b"d", False)
            v = <double*>_column(&views, out, n, 8, b"d", True)
        with nogil:
            for i in range(n):
                x = a[i]
                if b != NULL:
                    x = (0.0 + x) + b[i]
                    v[i] = x
                nan = nan | (x != x)
                lo = x if x < lo else lo
                hi = x if x > hi else hi
            if b != NULL:
                a = v
        if not nan:
            for i in range(n):
                x = a[i]
                if x == lo and len(lowest) < walk:
                    lowest.append(i)
                if x == hi and len(highest) < walk:
                    highest.append(i)
                    if len(lowest) == walk and len(highest) == walk:
                        break
                elif len(lowest) == walk and len(highest) == walk:
                    break
    finally:
        _release(&views)
    return None if nan else (lowest, highest)


def min_max_scores(values, lo, hi, bint inverse, out):
    """Skippy's min-max scores of ``values`` (float64, or int64 counts) into ``out`` (float64), as
    :func:`~engine.scheduling.base.skippy_min_max` computes them (lo != hi): trunc(((v - hi) / (lo - hi)) * 10)
    (``inverse``) or trunc(((v - lo) / (hi - lo)) * 10), counts subtracted as int64 and divided as doubles (numpy's
    true division); each once per run of equal values (neighbouring nodes are alike; the same input gives the same
    result)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(values), i
    cdef const double* v = NULL
    cdef const int64_t* c = NULL
    cdef double* score
    cdef double base = 0.0, span, s = 0.0
    cdef int64_t count_base = 0, count_lo, count_hi
    cdef uint64_t bits, last = 0
    cdef bint have = False
    try:
        if values.dtype.kind == "i":
            c = <const int64_t*>_column(&views, values, n, 8, b"lq", False)
            count_lo, count_hi = lo, hi
            count_base = count_hi if inverse else count_lo
            span = <double>(count_lo - count_hi) if inverse else <double>(count_hi - count_lo)
        else:
            v = <const double*>_column(&views, values, n, 8, b"d", False)
            base = hi if inverse else lo
            span = (<double>lo - <double>hi) if inverse else (<double>hi - <double>lo)
        score = <double*>_column(&views, out, n, 8, b"d", True)
        with nogil:
            for i in range(n):
                if c != NULL:
                    bits = <uint64_t>c[i]
                else:
                    memcpy(&bits, &v[i], 8)
                if not have or bits != last:  # the same bits give the same score
                    s = <double>(c[i] - count_base) if c != NULL else v[i] - base
                    s = s / span
                    s = s * 10.0
                    s = trunc(s)
                    last, have = bits, True
                score[i] = s
    finally:
        _release(&views)
    return out
