# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The compiled twin of Skippy's default step (:meth:`engine.scheduling.skippy_step.SkippyStep.decide`; optional, the
Python step is the reference).

Two passes over the node columns instead of ~20 numpy calls a pod: the filter (cordons, cpu and memory fit, the GPU
mask, no storage nodes) with BalancedResource (it needs no bounds) and the bounds of the raw values over the passing
nodes, then the other four scores, the sum and the first best node in scan order. Every score is the same IEEE double operations in the same order as the numpy
expressions it stands for (compiled with ``-ffp-contract=off``): trunc((1 - |c - m|) * 10) of the cpu and memory
shares, trunc(((hi + lo) - t) * 10 / hi) of the pull seconds, trunc(((v - hi) / (lo - hi)) * 10) and
trunc(((v - lo) / (hi - lo)) * 10) of the data seconds and capability counts, summed in the priorities' order.
A score is only recomputed when its input differs from the previous node's (neighbouring nodes are alike): the same
input gives the same bits. ``SCALELAB_SKIPPY_STEP=python`` makes the step use the Python path.
"""

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.math cimport INFINITY, NAN, fabs, isfinite, trunc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, strchr

# the source this module was compiled from (setup.py defines it): skippy_step.py uses the module only when it matches
cdef extern from *:
    """
    #define SKIPPY_STEP_HASH_A 0x9E3779B97F4A7C15ULL
    #define SKIPPY_STEP_HASH_B 0xC2B2AE3D27D4EB4FULL
    """
    const char* SKIPPY_STEP_SOURCE_SHA256
    const uint64_t SKIPPY_STEP_HASH_A
    const uint64_t SKIPPY_STEP_HASH_B
SOURCE_SHA256 = SKIPPY_STEP_SOURCE_SHA256.decode("ascii")

cdef void* _column(Views* views, object array, Py_ssize_t n, Py_ssize_t itemsize, const char* kinds, bint write) except NULL:
    """The data of a C-contiguous 1-d array of ``n`` items of ``itemsize`` bytes whose format is one of ``kinds``."""
    cdef Py_buffer* view = &views.view[views.count]
    PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (PyBUF_WRITABLE if write else 0))
    views.count += 1
    cdef const char* kind = view.format
    while kind[0] == c"@" or kind[0] == c"=" or kind[0] == c"<":  # native or little-endian: this machine's order
        kind += 1
    if view.ndim != 1 or view.itemsize != itemsize or view.len != n * itemsize or kind[0] == 0 or kind[1] != 0 or strchr(kinds, kind[0]) == NULL:
        raise ValueError(f"a column of {n} items of format {kinds!r} was expected, not {view.format!r} x {view.len // max(view.itemsize, 1)}")
    return view.buf


cdef void _release(Views* views) noexcept:
    cdef int k
    for k in range(views.count):
        PyBuffer_Release(&views.view[k])
    views.count = 0


cdef struct Pod:
    # inputs per node (NULL: absent)
    const int64_t* cpu_free
    const int64_t* memory_free
    const char* schedulable
    const char* gpu_fits
    const char* no_storage
    const double* image
    const int64_t* locality
    const double* data
    const double* data_sent  # a second data item's seconds, added to ``data`` at each node (NULL: none)
    const int64_t* capability
    # outputs per node
    char* fits
    char* passes
    double* balance
    # the pod
    double cpu
    double memory
    int64_t cpu_millis
    int64_t memory_bytes
    # bounds over the passing nodes
    double image_lo, image_hi, data_lo, data_hi
    int64_t capability_lo, capability_hi
    bint whole  # BalancedResource at every node, not only the passing ones
    # the walk
    Py_ssize_t node, last
    double best


cdef enum:
    SLOTS = 64  # a small direct-mapped memo per score: nodes of one kind share inputs, and the divider is slow


cdef struct Memo:
    uint64_t key[SLOTS]
    uint64_t key2[SLOTS]
    double value[SLOTS]


cdef inline void _forget(Memo* memo) noexcept nogil:
    cdef int k
    for k in range(SLOTS):
        memo.key[k] = ~(<uint64_t>0)  # a NaN's bits, and no (cpu, memory) pair in use: matches no input
        memo.key2[k] = ~(<uint64_t>0)


cdef inline uint64_t _bits(double v) noexcept nogil:
    cdef uint64_t bits
    memcpy(&bits, &v, 8)
    return bits


cdef inline int _slot(uint64_t a, uint64_t b) noexcept nogil:
    return <int>((a * SKIPPY_STEP_HASH_A + b * SKIPPY_STEP_HASH_B) >> 58)  # Fibonacci hashing into 64 slots


cdef inline double _balance(double cpu, double memory, int64_t cpu_free, int64_t memory_free) noexcept nogil:
    """BalancedResource of a pod of ``cpu`` millis and ``memory`` bytes at a node with this much free (0 counted as 1)."""
    cdef double cpu_div = <double>cpu_free, memory_div = <double>memory_free, cpu_share, memory_share, score
    if cpu_div == 0.0:
        cpu_div = 1.0
    if memory_div == 0.0:
        memory_div = 1.0
    cpu_share = cpu / cpu_div
    memory_share = memory / memory_div
    score = cpu_share - memory_share
    score = fabs(score)
    score = 1.0 - score
    score = score * 10.0
    score = trunc(score)
    if (cpu_share if cpu_share >= memory_share else memory_share) >= 1.0:
        score = 0.0
    return score


cdef inline Py_ssize_t _filter(Pod* p, Py_ssize_t n, bint* unschedulable, bint* finite, Memo* memo) noexcept nogil:
    """Pass 1: the masks, BalancedResource (``memo``: once per distinct pair of free amounts), the feasible count and
    the raw values' bounds over the passing nodes. Columns, pod and bounds are read into locals first: the compiler
    cannot keep fields of ``p`` in registers across the mask writes (chars may alias anything)."""
    cdef Py_ssize_t i, feasible = 0
    cdef bint fit, passes, everywhere = True, ok = True, whole = p.whole
    cdef double v, score, cpu = p.cpu, memory = p.memory
    cdef int64_t c
    cdef uint64_t a, b
    cdef int slot
    cdef const int64_t* cpu_free = p.cpu_free
    cdef const int64_t* memory_free = p.memory_free
    cdef const char* schedulable = p.schedulable
    cdef const char* gpu_fits = p.gpu_fits
    cdef const char* no_storage = p.no_storage
    cdef const double* image = p.image
    cdef const double* data = p.data
    cdef const double* data_sent = p.data_sent
    cdef const int64_t* capability = p.capability
    cdef char* fits = p.fits
    cdef char* passing = p.passes
    cdef double* balance = p.balance
    cdef int64_t cpu_millis = p.cpu_millis, memory_bytes = p.memory_bytes
    cdef double image_lo = INFINITY, image_hi = -INFINITY, data_lo = INFINITY, data_hi = -INFINITY
    cdef int64_t capability_lo = 0, capability_hi = 0
    for i in range(n):
        fit = memory_free[i] >= memory_bytes and cpu_free[i] >= cpu_millis
        if gpu_fits != NULL:
            fit = fit and gpu_fits[i]
        fits[i] = fit
        everywhere = everywhere and schedulable[i]
        passes = fit and schedulable[i]
        if no_storage != NULL:
            passes = passes and no_storage[i]
        passing[i] = passes
        if passes or whole:  # BalancedResource: the pod's shares of the free cpu and memory (0 free counted as 1)
            a, b = <uint64_t>cpu_free[i], <uint64_t>memory_free[i]
            slot = _slot(a, b)
            if memo.key[slot] == a and memo.key2[slot] == b:
                score = memo.value[slot]
            else:
                score = _balance(cpu, memory, cpu_free[i], memory_free[i])
                memo.key[slot], memo.key2[slot], memo.value[slot] = a, b, score
            balance[i] = score
        else:
            balance[i] = 0.0  # a breakdown shows the passing nodes
        if not passes:
            continue
        v = image[i]
        ok = ok and isfinite(v)
        if v < image_lo:
            image_lo = v
        if v > image_hi:
            image_hi = v
        if data != NULL:
            v = data[i]
            if data_sent != NULL:
                v = (0.0 + v) + data_sent[i]  # Python's sum of the two columns: 0 + the first, then + the second
            ok = ok and isfinite(v)
            if v < data_lo:
                data_lo = v
            if v > data_hi:
                data_hi = v
        if capability != NULL:
            c = capability[i]
            if feasible == 0 or c < capability_lo:
                capability_lo = c
            if feasible == 0 or c > capability_hi:
                capability_hi = c
        feasible += 1
    p.image_lo, p.image_hi, p.data_lo, p.data_hi = image_lo, image_hi, data_lo, data_hi
    p.capability_lo, p.capability_hi = capability_lo, capability_hi
    unschedulable[0] = not everywhere
    finite[0] = ok
    return feasible


cdef inline void _score(Pod* p, Py_ssize_t begin, Py_ssize_t end, Memo* memos) noexcept nogil:
    """Pass 2 over nodes ``begin``..``end`` (in scan order): the scores of the passing nodes (BalancedResource's from
    pass 1), their total, the first best. A score is computed once per distinct input (``memos``: pull seconds, data
    seconds, capability count; the first is pass 1's, for BalancedResource)."""
    cdef Py_ssize_t i, node = p.node, last = p.last
    cdef double score, total, best = p.best
    cdef double image_hi = p.image_hi, image_sum = p.image_hi + p.image_lo
    cdef double data_hi = p.data_hi, data_span = p.data_lo - p.data_hi
    cdef int64_t capability_lo = p.capability_lo
    cdef double capability_span = <double>(p.capability_hi - p.capability_lo)
    cdef bint image_scored = p.image_hi != 0.0, data_scored = p.data != NULL and p.data_lo != p.data_hi
    cdef bint capability_scored = p.capability != NULL and p.capability_lo != p.capability_hi
    cdef const char* passes = p.passes
    cdef const double* image = p.image
    cdef const int64_t* locality = p.locality
    cdef const double* data = p.data
    cdef const double* data_sent = p.data_sent
    cdef const int64_t* capability = p.capability
    cdef const double* balance = p.balance
    cdef Memo* memo
    cdef uint64_t a
    cdef int slot
    cdef double v
    for i in range(begin, end):
        if not passes[i]:
            continue
        total = balance[i]  # BalancedResource, written by pass 1
        # LatencyAwareImageLocality
        if image_scored:
            memo = &memos[1]
            a = _bits(image[i])
            slot = _slot(a, 0)
            if memo.key[slot] != a:
                score = image_sum - image[i]
                score = score * 10.0
                score = score / image_hi
                memo.key[slot], memo.value[slot] = a, trunc(score)
            total = memo.value[slot] + total
        # LocalityType
        if locality != NULL:
            total = total + <double>locality[i]
        # DataLocality (inverse min-max)
        if data_scored:
            memo = &memos[2]
            v = data[i]
            if data_sent != NULL:
                v = (0.0 + v) + data_sent[i]
            a = _bits(v)
            slot = _slot(a, 0)
            if memo.key[slot] != a:
                score = v - data_hi
                score = score / data_span
                score = score * 10.0
                memo.key[slot], memo.value[slot] = a, trunc(score)
            total = total + memo.value[slot]
        # Capability (min-max)
        if capability_scored:
            memo = &memos[3]
            a = <uint64_t>capability[i]
            slot = _slot(a, 0)
            if memo.key[slot] != a:
                score = <double>(capability[i] - capability_lo)
                score = score / capability_span
                score = score * 10.0
                memo.key[slot], memo.value[slot] = a, trunc(score)
            total = total + memo.value[slot]
        if total > best:
            best = total
            node = i
        last = i
    p.node, p.last, p.best = node, last, best


def decide(
    cpu_free,
    memory_free,
    schedulable,
    gpu_fits,
    no_storage,
    int64_t cpu_millis,
    int64_t memory,
    image,
    locality,
    data,
    capability,
    Py_ssize_t start,
    fits,
    passes,
    balance,
    bint whole=False,
    data_sent=None,
):
    """One pod's step over ``n`` nodes (the length of ``cpu_free``); writes ``fits`` and ``passes`` (bool) at every node
    and ``balance`` (float64) at the passing ones (``whole``: at every node). ``data_sent``: a second data item's
    seconds, added to ``data``'s at each node (one IEEE addition, as numpy's sum of the two columns).

    Returns None when a raw value of a passing node is not finite (the Python step then decides: its NaN handling is
    numpy's), else (feasible, node or -1, its total, next start, any node cordoned, image bounds, data bounds or None,
    capability bounds or None); the bounds are (lo, hi) over the passing nodes."""
    cdef Views views
    views.count = 0
    cdef Pod p
    cdef Py_ssize_t n = len(cpu_free), feasible
    cdef bint unschedulable, finite
    cdef Memo memos[4]
    cdef int k
    if not 0 <= start < n:
        raise ValueError(f"start {start} is not a node of {n}")
    try:
        p.cpu_free = <const int64_t*>_column(&views, cpu_free, n, 8, b"lq", False)
        p.memory_free = <const int64_t*>_column(&views, memory_free, n, 8, b"lq", False)
        p.schedulable = <const char*>_column(&views, schedulable, n, 1, b"?", False)
        p.gpu_fits = NULL if gpu_fits is None else <const char*>_column(&views, gpu_fits, n, 1, b"?", False)
        p.no_storage = NULL if no_storage is None else <const char*>_column(&views, no_storage, n, 1, b"?", False)
        p.image = <const double*>_column(&views, image, n, 8, b"d", False)
        p.locality = NULL if locality is None else <const int64_t*>_column(&views, locality, n, 8, b"lq", False)
        p.data = NULL if data is None else <const double*>_column(&views, data, n, 8, b"d", False)
        p.data_sent = NULL if data is None or data_sent is None else <const double*>_column(&views, data_sent, n, 8, b"d", False)
        p.capability = NULL if capability is None else <const int64_t*>_column(&views, capability, n, 8, b"lq", False)
        p.fits = <char*>_column(&views, fits, n, 1, b"?", True)
        p.passes = <char*>_column(&views, passes, n, 1, b"?", True)
        p.balance = <double*>_column(&views, balance, n, 8, b"d", True)
        p.cpu_millis, p.memory_bytes, p.whole = cpu_millis, memory, whole
        p.cpu, p.memory = <double>cpu_millis, <double>memory  # Python's int / float: the int as a double
        for k in range(4):
            _forget(&memos[k])
        feasible = _filter(&p, n, &unschedulable, &finite, &memos[0])
        if feasible == 0:
            return 0, -1, 0.0, start, unschedulable, None, None, None
        if not finite:
            return None
        p.node, p.last, p.best = -1, -1, -INFINITY
        _score(&p, start, n, memos)
        _score(&p, 0, start, memos)
    finally:
        _release(&views)
    return (
        feasible,
        p.node,
        p.best,
        (p.last + 1) % n,
        unschedulable,
        (p.image_lo, p.image_hi),
        None if data is None else (p.data_lo, p.data_hi),
        None if capability is None else (p.capability_lo, p.capability_hi),
    )


cdef inline double _pull(Py_ssize_t i, const int* codes, const double* bw, int count, const char** cached, const int64_t** table,
                         const Py_ssize_t* width, const Py_ssize_t* first) except? -1.0:
    """Node ``i``'s whole seconds to pull the images it lacks (:func:`pull_seconds`)."""
    cdef Py_ssize_t code = codes[i]
    cdef double size = 0.0
    cdef int64_t pull
    cdef int k
    for k in range(count):
        if cached[k][i]:
            continue
        if not -width[k] <= code < width[k]:
            raise ValueError(f"arch code {code} is not in a table of {width[k]}")
        pull = table[k][code if code >= 0 else code + width[k]]
        if pull < 0:
            code = first[k]
            pull = table[k][code if code >= 0 else code + width[k]]
        size = size + <double>pull
    return trunc(size / bw[i])


def pull_seconds(arch, images, bandwidth, out, nodes=None):
    """Skippy's whole seconds to pull a pod's images at every node, into ``out`` (float64): trunc(bytes / bandwidth),
    the bytes of the images the node lacks added in the pod's order. ``arch``: each node's arch code (int32, -1: none);
    ``images``: per image (cached at each node (bool), size per arch code (int64, -1: lacking), its first arch code).
    Skippy's quirk, as :func:`~engine.scheduling.image_locality.missing_image_bytes` keeps it: an image lacking the
    node's arch is pulled for its first arch, which stays in use for the pod's later images on that node; a negative
    code reads a table from its end, as numpy's indexing does. ``nodes``: only at these positions (a list, repeats
    allowed: a kept row patched where nodes pulled the images), the rest of ``out`` left as it is."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(bandwidth), i
    cdef int k, count = len(images)
    cdef const int* codes
    cdef const double* bw
    cdef double* seconds
    cdef const char* cached[MAX_IMAGES]
    cdef const int64_t* table[MAX_IMAGES]
    cdef Py_ssize_t width[MAX_IMAGES]
    cdef Py_ssize_t first[MAX_IMAGES]
    if count < 1 or count > MAX_IMAGES:
        raise ValueError(f"1 to {MAX_IMAGES} images, not {count}")
    try:
        codes = <const int*>_column(&views, arch, n, 4, b"i", False)
        bw = <const double*>_column(&views, bandwidth, n, 8, b"d", False)
        seconds = <double*>_column(&views, out, n, 8, b"d", True)
        for k in range(count):
            image_cached, sizes, first[k] = images[k]
            width[k] = len(sizes)
            cached[k] = <const char*>_column(&views, image_cached, n, 1, b"?", False)
            table[k] = <const int64_t*>_column(&views, sizes, width[k], 8, b"lq", False)
            if not -width[k] <= first[k] < width[k]:
                raise ValueError(f"first arch {first[k]} is not in a table of {width[k]}")
        if nodes is None:
            for i in range(n):
                seconds[i] = _pull(i, codes, bw, count, cached, table, width, first)
        else:
            for node in nodes:
                i = node
                if not 0 <= i < n:
                    raise ValueError(f"node {i} is not one of {n}")
                seconds[i] = _pull(i, codes, bw, count, cached, table, width, first)
    finally:
        _release(&views)
    return out


def shape_at(cpu_free, memory_free, int64_t cpu_millis, int64_t memory, nodes, fits, balance):
    """A (cpu, memory) shape's kept columns brought up to date at ``nodes`` (a list of positions, repeats allowed):
    whether it fits (``fits``, bool) or its BalancedResource score (``balance``, float64), whichever is not None."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(cpu_free), i
    cdef const int64_t* cpu_left
    cdef const int64_t* memory_left
    cdef char* fit = NULL
    cdef double* score = NULL
    cdef double cpu = <double>cpu_millis, memory_bytes = <double>memory  # Python's int / float: the int as a double
    try:
        cpu_left = <const int64_t*>_column(&views, cpu_free, n, 8, b"lq", False)
        memory_left = <const int64_t*>_column(&views, memory_free, n, 8, b"lq", False)
        if fits is not None:
            fit = <char*>_column(&views, fits, n, 1, b"?", True)
        if balance is not None:
            score = <double*>_column(&views, balance, n, 8, b"d", True)
        for node in nodes:
            i = node
            if not 0 <= i < n:
                raise ValueError(f"node {i} is not one of {n}")
            if fit != NULL:
                fit[i] = memory_left[i] >= memory and cpu_left[i] >= cpu_millis
            if score != NULL:
                score[i] = _balance(cpu, memory_bytes, cpu_left[i], memory_left[i])
    finally:
        _release(&views)


def shape_column(cpu_free, memory_free, int64_t cpu_millis, int64_t memory, fits, balance):
    """A new (cpu, memory) shape's columns at every node: whether it fits (``fits``, bool) and its BalancedResource
    score (``balance``, float64; computed once per distinct pair of free amounts, as in :func:`decide`)."""
    cdef Views views
    views.count = 0
    cdef Py_ssize_t n = len(cpu_free), i
    cdef const int64_t* cpu_left
    cdef const int64_t* memory_left
    cdef char* fit
    cdef double* score
    cdef double cpu = <double>cpu_millis, memory_bytes = <double>memory
    cdef Memo memo
    cdef uint64_t a, b
    cdef int slot
    try:
        cpu_left = <const int64_t*>_column(&views, cpu_free, n, 8, b"lq", False)
        memory_left = <const int64_t*>_column(&views, memory_free, n, 8, b"lq", False)
        fit = <char*>_column(&views, fits, n, 1, b"?", True)
        score = <double*>_column(&views, balance, n, 8, b"d", True)
        with nogil:
            _forget(&memo)
            for i in range(n):
                fit[i] = memory_left[i] >= memory and cpu_left[i] >= cpu_millis
                a, b = <uint64_t>cpu_left[i], <uint64_t>memory_left[i]
                slot = _slot(a, b)
                if memo.key[slot] != a or memo.key2[slot] != b:
                    memo.key[slot], memo.key2[slot] = a, b
                    memo.value[slot] = _balance(cpu, memory_bytes, cpu_left[i], memory_left[i])
                score[i] = memo.value[slot]
    finally:
        _release(&views)
