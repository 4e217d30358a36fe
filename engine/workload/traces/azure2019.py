"""Azure Functions 2019: per-minute invocation counts per function, and per-function duration percentiles."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.core import filecache
from engine.workload.traces.common import (
    TraceError,
    _frozen,
    _listing,
    _numeric,
    _read_csv,
    _require,
    _select_rows,
    log,
    resolve_trace_path,
)
from engine.workload.traces.model import MinuteCounts, PercentileDurations

if TYPE_CHECKING:
    pass

AZURE2019_LEVELS = (0, 1, 25, 50, 75, 99, 100)
#: Most invocations a minute may hold (a million a second): beyond it the arrival buffer could not be held.
MAX_PER_MINUTE = 60_000_000


_MINUTE = re.compile(r"^(\D*?)(\d+)$")


def minute_columns(columns: Sequence[str]) -> tuple[list[str], str]:
    """The per-minute count columns, in minute order, and their prefix.

    The original release names them ``1``..``1440``; samples written by other tools add a prefix (``minute_1``).
    The prefix (possibly empty) that most columns share wins; columns such as ``HashOwner`` never match.
    """
    groups: dict[str, list[tuple[int, str]]] = {}
    for c in columns:
        m = _MINUTE.match(str(c))
        if m and not m.group(1).lower().startswith(("hash", "percentile", "average")):
            groups.setdefault(m.group(1), []).append((int(m.group(2)), str(c)))
    if not groups:
        return [], ""
    prefix = max(groups, key=lambda k: (len(groups[k]), k == ""))
    return [c for _, c in sorted(groups[prefix])], prefix


def _minute_block(df, minute_cols: list[str]) -> np.ndarray:
    """Every row's per-minute counts as floats (a cell that is no number: NaN), once per file."""
    import pandas as pd

    frame = df[minute_cols]
    if all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
        out = frame.to_numpy(dtype=float)
    else:
        out = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    out.flags.writeable = False
    return out


def read_azure2019_invocations(path: str | Path, function: str = "") -> MinuteCounts:
    """Per-minute invocation counts from an Azure Functions 2019 ``invocations`` CSV (columns ``1``.. or ``minute_1``..).

    ``function`` selects rows: '' all; else comma-separated HashFunction prefixes (case-insensitive,
    each may match several rows) or ``#i`` (0-based data row). A selector that matches nothing raises.
    """
    import pandas as pd

    path = resolve_trace_path(path)
    # the parsed file, once per process while it is unchanged: a scenario's function slots, their durations and memory
    # files each select rows of the same invocations file (12 reads of it for faas-azure; the frame is only read here)
    df = filecache.cached(
        "azure2019-invocations-csv", path, (), lambda: _read_csv(path, text_columns=("HashOwner", "HashApp", "HashFunction", "Trigger"))
    )
    _require(df, path, ["HashFunction"], "azure2019 invocations")
    minute_cols, prefix = minute_columns(df.columns)
    if not minute_cols:
        raise TraceError(
            path,
            "columns '1'..'1440'",
            f"missing; the azure2019 format has one count column per minute, named 1..1440 or with a prefix such as minute_1 (found {_listing(df.columns)})",
        )
    expected = [f"{prefix}{i}" for i in range(1, len(minute_cols) + 1)]
    if minute_cols != expected:
        gap = next(e for e, c in zip(expected, minute_cols, strict=True) if e != c)
        raise TraceError(
            path, f"column {gap!r}", f"missing; allowed: minute columns '{prefix}1'..'{prefix}{len(minute_cols)}' without gaps"
        )
    hashes = df["HashFunction"].fillna("").astype(str).str.strip().str.lower().to_numpy()
    rows = _select_rows(hashes, function, path, "HashFunction")
    sub = df.iloc[rows]
    # vectorised check of the whole block first; locate the offending cell only on error
    block = filecache.cached("azure2019-invocations-minutes", path, (tuple(minute_cols),), lambda: _minute_block(df, minute_cols))[rows]
    ok = np.isfinite(block) & (block >= 0) & (block == np.round(block)) & (block <= MAX_PER_MINUTE)
    if not ok.all():
        r, c = map(int, np.argwhere(~ok)[0])
        col = minute_cols[c]
        cell = sub[col].iloc[r]
        v = block[r, c]
        if np.isfinite(v) and v > MAX_PER_MINUTE:
            raise TraceError(
                path, f"line {rows[r] + 2}, column {col!r}", f"{v:.3g} invocations in one minute; allowed: at most {MAX_PER_MINUTE:,.0f}"
            )
        if np.isfinite(v) and v < 0:
            what = f"{v:g} is negative"
        else:
            shown = "an empty cell" if pd.isna(cell) else repr(str(cell).strip())
            what = f"{shown} is not a count"
        raise TraceError(path, f"line {rows[r] + 2}, column {col!r}", f"{what}; allowed: integers >= 0")
    per = block.astype(np.int64)
    return MinuteCounts(
        path=str(path),
        functions=tuple(str(h) for h in hashes[rows]),
        rows=tuple(int(r) for r in rows),
        per_function=_frozen(per),
        apps=tuple(df["HashApp"].fillna("").astype(str).str.strip().str.lower().to_numpy()[rows]) if "HashApp" in df.columns else (),
    )


def azure2019_durations_path(invocations: str | Path) -> Path:
    """The duration table that goes with an invocations file (same folder)."""
    p = resolve_trace_path(invocations)
    if "invocations_per_function" in p.name:
        return p.with_name(p.name.replace("invocations_per_function", "function_durations_percentiles"))
    return p.with_name("durations.csv")


def read_azure2019_durations(path: str | Path, functions: Sequence[str], weights: Sequence[float] | None = None) -> PercentileDurations:
    """Percentile tables (ms in the file, seconds here) of ``functions`` from an Azure 2019 durations CSV.

    Each function must have a row (the first row with its HashFunction is used); ``weights`` (default:
    equal) are normalised. Percentiles that decrease along a row are sorted, with a note.
    """
    path = resolve_trace_path(path)
    cols = [f"percentile_Average_{q}" for q in AZURE2019_LEVELS]
    df = _read_csv(path, text_columns=("HashOwner", "HashApp", "HashFunction"), field_name="workload.trace_service")
    try:
        _require(df, path, ["HashFunction", *cols], "azure2019 durations")
    except TraceError as e:
        raise TraceError(path, e.where, _tail(e), "workload.trace_service") from None
    hashes = df["HashFunction"].fillna("").astype(str).str.strip().str.lower()
    first = {h: i for i, h in reversed(list(enumerate(hashes)))}
    rows = []
    for f in functions:
        if f.lower() not in first:
            raise TraceError(
                path,
                "column 'HashFunction'",
                f"no row for function {f!r}; allowed: a durations file listing every replayed function",
                "workload.trace_service",
            )
        rows.append(first[f.lower()])
    sub = df.iloc[rows].reset_index(drop=True)
    table = (
        np.column_stack([_numeric(sub, c, path, "a duration in ms", rows=rows, field_name="workload.trace_service") for c in cols]) / 1000.0
    )
    notes = []
    if (np.diff(table, axis=1) < 0).any():
        note = f"{path}: percentiles decrease along a row; sorted"
        notes.append(note)
        log.info(note)
        table = np.sort(table, axis=1)
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=float)
    if len(w) != len(rows) or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights: one non-negative weight per function, not all zero")
    return PercentileDurations(
        path=str(path),
        functions=tuple(functions),
        levels=_frozen(np.array(AZURE2019_LEVELS, dtype=float) / 100.0),
        table=_frozen(table),
        weights=_frozen(w / w.sum()),
        notes=tuple(notes),
    )


def _tail(e: TraceError) -> str:
    return e.message[len(f"{e.path}: {e.where}: ") :] if e.where else e.message[len(f"{e.path}: ") :]


def read_azure2019_memory(path: str | Path, apps: Sequence[str], column: str = "AverageAllocatedMb") -> dict[str, float]:
    """Allocated memory (MB) per app from an Azure Functions 2019 memory CSV, keyed by HashApp (lower case).

    The original release keys memory by ``HashOwner, HashApp``; samples may add ``HashFunction`` (ignored). Apps
    missing from the file raise, naming the file and the app.
    """
    path = resolve_trace_path(path)
    df = _read_csv(path, text_columns=("HashOwner", "HashApp", "HashFunction"), field_name="trace_memory_file")
    try:
        _require(df, path, ["HashApp", column], "azure2019 memory")
    except TraceError as e:
        raise TraceError(path, e.where, _tail(e), "trace_memory_file") from None
    keys = df["HashApp"].fillna("").astype(str).str.strip().str.lower().to_numpy()
    values = _numeric(df, column, path, "memory in MB", field_name="trace_memory_file")
    first = {k: float(v) for k, v in reversed(list(zip(keys, values, strict=True)))}
    out = {}
    for app in apps:
        if app.lower() not in first:
            raise TraceError(
                path, "column 'HashApp'", f"no row for app {app!r}; allowed: a memory file listing every replayed app", "trace_memory_file"
            )
        out[app.lower()] = first[app.lower()]
    return out
