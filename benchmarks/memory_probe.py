"""What a served dashboard process holds: ``panel serve --setup benchmarks/memory_probe.py`` (as
``dashboard_memory.py --diagnose`` does), then ``kill -USR1 <pid>`` writes one JSON snapshot into
``$SCALELAB_MEMORY_PROBE_DIR`` (``probe-<n>.json``, ``n`` counting from 1).

A snapshot, taken after a full ``gc.collect()`` (so garbage that is merely not collected yet is not counted as kept):

* ``rss_mib``: the process's resident memory; ``heap``: glibc's ``mallinfo2`` (bytes in use and free inside the heap:
  memory freed by Python that glibc did not give back to the system shows as ``free``) and Python's own allocated
  blocks;
* ``types``: live objects by type (module.qualname), every type gc tracks;
* ``threads``: live threads by name prefix; ``sessions``: the Bokeh sessions in memory; ``modules``: those imported;
* with ``SCALELAB_MEMORY_PROBE_TRACE`` set, ``tracemalloc`` is started here (before the app is imported: every
  allocation is traced) and each snapshot is also dumped to ``trace-<n>.bin`` for :func:`top_growers`.

Diagnostics only: the served app is the same (no module of the dashboard imports this).
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import re
import signal
import sys
import tempfile
import threading
import tracemalloc
from pathlib import Path

OUT = Path(os.environ.get("SCALELAB_MEMORY_PROBE_DIR", "/tmp/scalelab-memory-probe"))
TRACE = bool(os.environ.get("SCALELAB_MEMORY_PROBE_TRACE"))
#: Frames kept per traced allocation: enough to see which of our lines made what a library allocated.
TRACE_FRAMES = 12


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _heap() -> dict:
    heap = {"python_blocks": sys.getallocatedblocks()}
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
        heap.update(
            arena_mib=round(info.arena / 2**20, 1),
            mmap_mib=round(info.hblkhd / 2**20, 1),
            in_use_mib=round((info.uordblks + info.hblkhd) / 2**20, 1),
            free_mib=round(info.fordblks / 2**20, 1),
        )
    except (OSError, AttributeError):  # not glibc
        pass
    return heap


def _status_mib() -> dict:
    """Resident memory in all, anonymous (heaps, Python's arenas, stacks) and file-backed (code of the libraries)."""
    fields = {"VmRSS": "rss_mib", "RssAnon": "anon_mib", "RssFile": "file_mib"}
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in fields:
            out[fields[key]] = round(int(line.split()[1]) / 1024, 1)
    return out


def _pymalloc() -> dict:
    """Python's small-object allocator: its arenas (1 MiB each on 64-bit CPython 3.12, given back only when empty) and the bytes in them
    that hold objects, from ``sys._debugmallocstats`` (CPython's documented debugging report, written to stderr)."""
    with tempfile.TemporaryFile(mode="w+") as out:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    stats = {}
    for key, label in (
        ("arenas", "arenas allocated current"),
        ("arenas_highwater", "arenas highwater mark"),
        ("allocated_bytes", "bytes in allocated blocks"),
        ("free_in_pools_bytes", "bytes in available blocks"),
    ):
        m = re.search(rf"# {label}\s*=\s*([\d,]+)", text)
        if m:
            stats[key] = int(m.group(1).replace(",", ""))
    for key in ("allocated_bytes", "free_in_pools_bytes"):
        if key in stats:
            stats[key.replace("_bytes", "_mib")] = round(stats.pop(key) / 2**20, 1)
    return stats


def snapshot(n: int) -> dict:
    """Everything above, as a dict (and ``trace-<n>.bin`` when tracing)."""
    gc.collect()
    types: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        cls = type(obj)
        types[f"{cls.__module__}.{cls.__qualname__}"] += 1
    sessions = [_session(obj) for obj in gc.get_objects() if type(obj).__name__ == "ServerSession"]
    threads = collections.Counter(t.name.rstrip("0123456789_-") or t.name for t in threading.enumerate())
    data = {
        "n": n,
        **_status_mib(),
        "heap": _heap(),
        "pymalloc": _pymalloc(),
        "threads": dict(threads),
        "sessions": sessions,
        "types": dict(types),
    }
    if TRACE and tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(str(OUT / f"trace-{n}.bin"))
        data["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    return data


def _session(session) -> dict:
    """A Bokeh server session still in memory: is a browser attached, since when not, is it being destroyed."""
    info = {"id": str(getattr(session, "id", "?"))[:8]}
    for name in ("connection_count", "expiration_requested", "destroyed"):
        info[name] = getattr(session, name, None)
    since = getattr(session, "milliseconds_since_last_unsubscribe", None)
    info["ms_since_last_browser"] = round(since) if isinstance(since, (int, float)) else None
    return info


_count = 0


def _on_signal(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    global _count
    _count += 1
    data = snapshot(_count)
    tmp = OUT / f".probe-{_count}.json"
    tmp.write_text(json.dumps(data))
    tmp.rename(OUT / f"probe-{_count}.json")  # whole, or not there: the benchmark waits for the name


def top_growers(before: dict, after: dict, limit: int = 15) -> list[tuple[str, int, int]]:
    """The types whose live count grew most from ``before`` to ``after``: (type, count after, growth)."""
    grown = [(t, n, n - before["types"].get(t, 0)) for t, n in after["types"].items()]
    return sorted((g for g in grown if g[2] > 0), key=lambda g: -g[2])[:limit]


def trace_growers(before: Path, after: Path, limit: int = 15, frames: int = TRACE_FRAMES) -> list[str]:
    """``tracemalloc``'s largest growths between two dumped snapshots, by the innermost frame of our own code (or the
    allocating line when no frame of ours is in the trace)."""
    a, b = tracemalloc.Snapshot.load(str(before)), tracemalloc.Snapshot.load(str(after))
    stats = b.compare_to(a, "traceback")
    by_site: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for stat in stats:
        if stat.size_diff <= 0:
            continue
        site = _site(stat.traceback)
        by_site[site] += stat.size_diff
        counts[site] += stat.count_diff
    return [f"{size / 2**20:+8.2f} MiB {counts[site]:+8d} blocks  {site}" for site, size in by_site.most_common(limit)]


def _site(traceback: tracemalloc.Traceback) -> str:
    """The allocation's innermost library line and, when there is one, our innermost line that led to it."""
    frames = list(traceback)  # most recent call first (tracemalloc's default order)
    inner = frames[0]
    ours = next((f for f in frames if "/dashboard/" in f.filename or "/engine/" in f.filename), None)
    where = f"{_short(inner.filename)}:{inner.lineno}"
    return where if ours is None or ours is inner else f"{where} <- {_short(ours.filename)}:{ours.lineno}"


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/dashboard/", "/engine/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1] if marker == "site-packages/" else marker.strip("/") + "/" + filename.split(marker, 1)[1]
    return filename


if __name__ in ("panel_setup_module", "__main__"):
    OUT.mkdir(parents=True, exist_ok=True)
    if TRACE:
        tracemalloc.start(TRACE_FRAMES)
    signal.signal(signal.SIGUSR1, _on_signal)
