"""Heap pages for a large cluster's kept columns touched at set-up, not inside the first pods' decisions.

On clusters of :data:`~engine.scheduling.shape_columns.SMALL` nodes or more the scheduler keeps columns over every node
between pods (per pod shape, image tuple, data item and score bounds). The heap grows as they fill, and the first write
to each new page is a page fault the process pays in its own CPU time: at 15,000 nodes ~3,400 faults (~14 MB) over the
first 200 pods, ~60 in each pod of a new shape, which made those pods 2-4x the median (the scheduler benchmark's p95).

:func:`pretouch` writes :data:`COLUMNS` float columns' worth of heap once, when the scheduler is built, and frees all
but the last, which the caller keeps: glibc's ``free`` returns only the top of the heap to the system, so the touched
pages below the kept column stay in the process and the kept columns that follow are carved from them (the JVM's
``AlwaysPreTouch``, for the part of the heap these columns use). Other allocators may return the pages at once: then
it costs the set-up a pass over that memory and changes nothing else. Decisions never depend on it.
"""

from __future__ import annotations

import numpy as np

#: Float columns of the cluster's size touched at set-up (0: none). Two shape-keyed caches of 64 entries each (the
#: fit masks and BalancedResource scores) plus the image and data columns fill about this many at 15,000 nodes.
COLUMNS = 128
LIMIT_BYTES = 64 * 2**20  # at most this much touched, whatever the cluster's size


def pretouch(nodes: int, columns: int | None = None) -> np.ndarray | None:
    """Touch ``columns`` (default :data:`COLUMNS`) float64 columns of ``nodes`` values, capped at :data:`LIMIT_BYTES`, and
    return the last one, which must be kept for the touched pages to stay (None: nothing touched)."""
    count = min(COLUMNS if columns is None else columns, LIMIT_BYTES // max(8 * nodes, 1))
    if count < 2:
        return None
    # glibc serves a block above its mmap threshold (128 KiB at first) by a mapping of its own, which freeing unmaps, and
    # raises the threshold to that block's size when it is freed: one column made and freed first puts the columns
    # below on the heap, where the freed pages stay
    np.ones(nodes)
    touched = [np.ones(nodes) for _ in range(count)]
    return touched[-1]
