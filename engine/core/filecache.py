"""What was read from a file, kept while the file is unchanged (its path, size and modification time).

One bounded LRU for every importer (traces, node dumps): ``check()`` of a section and the run that
follows read a file once. A build that raises stores nothing. Safe across threads (the dashboard builds runs in a
worker thread while its event loop may read files too): two threads may both build a missing value; one is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from threading import Lock
from typing import Any

CACHE_SIZE = 32
_cache: OrderedDict[tuple, Any] = OrderedDict()
_lock = Lock()  # held for the dictionary's operations only, never while a value is built (builds may nest)


def cached(kind: str, path: Path, key: tuple, build: Callable[[], Any]) -> Any:
    """``build()``'s value for ``(kind, path, key)``, rebuilt when the file changes."""
    try:
        st = path.stat()
        stamp: tuple = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (None, None)  # build() reports the unreadable file
    full = (kind, str(path), *stamp, *key)
    with _lock:
        if full in _cache:
            _cache.move_to_end(full)
            return _cache[full]
    value = build()
    with _lock:
        value = _cache.setdefault(full, value)
        _cache.move_to_end(full)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return value


def clear() -> None:
    """Forget everything read (the next load reads the files again)."""
    with _lock:
        _cache.clear()
