"""Real workload traces: CSV importers and the replay structure the workload reads.

Three formats (``workload.trace_format``), read by header name with ``pandas.read_csv`` only (no
pickle, no code from the file):

* ``azure2019``: Azure Functions 2019 ``invocations.csv`` (``HashFunction`` and one column of
  invocation counts per minute, named ``"1"`` .. ``"1440"``; other columns are ignored, column order
  does not matter). Service durations come from the per-function percentile table
  (``durations.csv`` beside it, or ``function_durations_percentiles*`` for a file named
  ``invocations_per_function*`` of the full release), in ms.
* ``azure2021``: Azure Functions 2021 per invocation (``app, func, end_timestamp, duration`` in
  seconds); an invocation arrives at ``end_timestamp - duration`` and its duration is its service time.
* ``openb``: Alibaba openb pod list; a pod arrives at ``creation_time`` (seconds). No durations.

``workload.trace_function`` selects part of a trace ('' is all of it; several selectors separated by
commas are summed): for ``azure2019`` a ``HashFunction`` prefix or ``#i`` / ``rowi`` (the i-th
function row, from 0; quote ``"#3"`` in YAML, where an unquoted ``#`` starts a comment); for
``azure2021`` a prefix of ``func`` or of ``app`` (or a row); for ``openb`` a ``qos`` class (``LS``,
``BE``, ...). Hash prefixes that look like numbers must be quoted in YAML too.

Every importer returns a small frozen structure of read-only numpy arrays. Bad input raises
:class:`TraceError` (a :class:`~engine.params.ParamError`, so scenario loading and ``set_params``
report it like any other bad value) naming the parameter, the file, the line and column and what is
allowed. Unsorted arrival times are sorted and the structure keeps a note saying so.

:func:`load_trace` turns a file into a :class:`Trace` and :func:`load_durations` into a duration
model; both keep the last few results (keyed by path, size and modification time), so a simulation
reads its trace once, not per window, and a parameter check costs a dictionary lookup.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from . import filecache
from .params import TRACE_FORMATS as _FORMATS
from .params import ParamError

log = logging.getLogger(__name__)

TRACE_DIR = Path(__file__).resolve().parent.parent / "data" / "traces"
TRACE_FORMATS = tuple(_FORMATS)
MINUTE = 60.0
MIN_SERVICE = 0.001  # seconds: traces round durations to ms, and 0 would make a job free
AZURE2019_LEVELS = (0, 1, 25, 50, 75, 99, 100)
FIELD_FILE = "workload.trace_file"
FIELD_FUNCTION = "workload.trace_function"
_ROW = re.compile(r"^(?:#|row)\s*(\d+)$", re.IGNORECASE)  # '#3' or 'row3' (YAML reads an unquoted #3 as a comment)


class TraceError(ParamError):
    """A trace file that cannot be replayed: names the parameter, the file, where in it, and what is allowed."""

    def __init__(self, path: str | Path, where: str, message: str, field: str = FIELD_FILE):
        super().__init__(field, f"{path}: {where}: {message}" if where else f"{path}: {message}")
        self.path = str(path)
        self.where = where


# -- structures -----------------------------------------------------------------------------------


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class MinuteCounts:
    """Azure Functions 2019 invocations of the selected functions, per minute of the day.

    ``per_function[i, m]`` is the number of invocations of ``functions[i]`` (a HashFunction) in minute
    ``m`` (column ``str(m + 1)`` of the file); ``counts`` is their sum per minute.
    """

    path: str
    functions: tuple[str, ...]
    rows: tuple[int, ...]  # 0-based data rows of the file
    per_function: np.ndarray  # (functions, minutes) int64 >= 0
    notes: tuple[str, ...] = ()

    @property
    def counts(self) -> np.ndarray:
        """Invocations per minute, summed over the selected functions (int64)."""
        return self.per_function.sum(axis=0)

    @property
    def minutes(self) -> int:
        return int(self.per_function.shape[1])

    @property
    def total(self) -> int:
        return int(self.per_function.sum())


@dataclass(frozen=True)
class Invocations:
    """Azure Functions 2021 invocations, sorted by arrival: ``start = end_timestamp - duration`` (s)."""

    path: str
    app: np.ndarray  # str
    func: np.ndarray  # str
    start: np.ndarray  # float64 seconds, non-decreasing (as in the file, not shifted)
    duration: np.ndarray  # float64 seconds >= 0
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return int(len(self.start))


@dataclass(frozen=True)
class PodArrivals:
    """openb pods, sorted by ``creation_time`` (s)."""

    path: str
    name: np.ndarray  # str
    qos: np.ndarray  # str ('' when the file has no qos column)
    creation_time: np.ndarray  # float64 seconds, non-decreasing
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return int(len(self.creation_time))


class Durations(Protocol):
    """A service-time distribution taken from a trace."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` service times in seconds (>= ``MIN_SERVICE``), drawn from ``rng``."""
        ...

    def mean(self) -> float:
        """The mean of :meth:`sample` in seconds."""
        ...


@dataclass(frozen=True)
class PercentileDurations:
    """Azure Functions 2019 execution times as a percentile table per function (seconds).

    A draw picks a function with probability ``weights`` (its share of the replayed invocations), then
    inverts its piecewise-linear CDF through the table: ``levels`` are the cumulative probabilities of
    the columns ``percentile_Average_{0,1,25,50,75,99,100}``.
    """

    path: str
    functions: tuple[str, ...]
    levels: np.ndarray  # (7,) in [0, 1], increasing
    table: np.ndarray  # (functions, 7) seconds, non-decreasing along a row
    weights: np.ndarray  # (functions,) summing to 1
    notes: tuple[str, ...] = ()

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        k = len(self.functions)
        which = np.zeros(n, dtype=np.int64) if k == 1 else rng.choice(k, size=n, p=self.weights)
        u = rng.random(n)
        out = np.empty(n)
        for j in range(k):
            sel = which == j
            out[sel] = np.interp(u[sel], self.levels, self.table[j])
        return np.maximum(out, MIN_SERVICE)

    def mean(self) -> float:
        # mean of a piecewise-linear inverse CDF: trapezoids between the levels
        dl = np.diff(self.levels)
        per = ((self.table[:, 1:] + self.table[:, :-1]) / 2.0 * dl).sum(axis=1)
        return float(np.dot(self.weights, np.maximum(per, MIN_SERVICE)))


@dataclass(frozen=True)
class EmpiricalDurations:
    """Durations of recorded invocations (seconds); a draw picks one of them uniformly."""

    path: str
    values: np.ndarray  # float64 >= MIN_SERVICE

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.values[rng.integers(0, len(self.values), n)]

    def mean(self) -> float:
        return float(self.values.mean())


@dataclass(frozen=True)
class Trace:
    """What the workload replays, in trace seconds from the trace's start.

    Either ``counts`` per bin of ``bin_seconds`` (azure2019: per minute; arrivals are spread uniformly
    within a bin when replayed) or exact arrival ``times`` shifted so that the first arrival is at 0
    (azure2021, openb). ``span`` is the length of one pass, the period when the trace loops: all the
    bins, or the last arrival plus the mean gap between arrivals (60 s for a trace of one arrival).
    """

    source: str
    format: str
    selection: str
    span: float
    counts: np.ndarray | None = None  # int64 per bin
    bin_seconds: float = MINUTE
    times: np.ndarray | None = None  # float64, sorted, times[0] == 0
    notes: tuple[str, ...] = ()
    origin: float = 0.0  # trace time (file units) of times[0], for per-invocation traces

    @property
    def total(self) -> int:
        """Arrivals in one pass of the trace."""
        return int(self.counts.sum()) if self.counts is not None else int(len(self.times))

    def count_between(self, a: float, b: float) -> int:
        """Arrivals in one pass within trace seconds ``[a, b)`` (for counts: whole bins only)."""
        if self.counts is not None:
            lo = max(0, math.ceil(a / self.bin_seconds - 1e-9))
            hi = min(len(self.counts), math.floor(b / self.bin_seconds + 1e-9))
            return int(self.counts[lo:hi].sum()) if hi > lo else 0
        return int(np.searchsorted(self.times, b, "left") - np.searchsorted(self.times, a, "left"))


# -- reading CSV ---------------------------------------------------------------------------------


def resolve_trace_path(name: str | Path) -> Path:
    """``trace_file`` as a path: absolute as given, otherwise relative to ``data/traces``."""
    p = Path(name).expanduser()
    return p if p.is_absolute() else TRACE_DIR / p


def _read_csv(path: Path, text_columns: Sequence[str] = (), field_name: str = FIELD_FILE) -> pd.DataFrame:
    if not path.is_file():
        raise TraceError(path, "", "no such file; allowed: a CSV file, relative to data/traces or absolute", field_name)
    try:
        df = pd.read_csv(path, dtype={c: str for c in text_columns}, keep_default_na=False, na_values=[""], skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise TraceError(path, "", "the file is empty; allowed: a CSV file with a header line and at least one row", field_name) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TraceError(path, "", f"not a readable CSV file ({first})", field_name) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise TraceError(path, "", "empty trace: the file has a header but no rows; allowed: at least one row", field_name)
    return df


def _require(df: pd.DataFrame, path: Path, columns: Sequence[str], fmt: str) -> None:
    for c in columns:
        if c not in df.columns:
            raise TraceError(
                path,
                f"column {c!r}",
                f"missing; the {fmt} format needs columns {', '.join(repr(x) for x in columns)} (found {_listing(df.columns)})",
            )


def _listing(cols: Sequence[Any], n: int = 8) -> str:
    cols = [str(c) for c in cols]
    return ", ".join(repr(c) for c in cols[:n]) + (f", ... ({len(cols)} columns)" if len(cols) > n else "")


def _numeric(
    df: pd.DataFrame,
    col: str,
    path: Path,
    what: str,
    integer: bool = False,
    minimum: float | None = 0.0,
    rows: Sequence[int] | None = None,
    field_name: str = FIELD_FILE,
) -> np.ndarray:
    """Column ``col`` as float64 (or int64), checked: every cell a finite number (>= minimum).

    ``rows`` maps the frame's rows to the file's data rows (when ``df`` is a selection) for messages.
    """
    raw = df[col]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if integer:
        bad |= np.isfinite(values) & (values != np.round(values))
    if bad.any():
        i = int(np.argmax(bad))
        cell = raw.iloc[i]
        shown = "an empty cell" if pd.isna(cell) else repr(str(cell).strip())
        line = (rows[i] if rows is not None else i) + 2
        raise TraceError(path, f"line {line}, column {col!r}", f"{shown} is not {what}; allowed: {_allowed(integer, minimum)}", field_name)
    if minimum is not None and (values < minimum).any():
        i = int(np.argmax(values < minimum))
        kind = "negative" if minimum == 0 else f"below {minimum:g}"
        line = (rows[i] if rows is not None else i) + 2
        raise TraceError(
            path, f"line {line}, column {col!r}", f"{values[i]:g} is {kind}; allowed: {_allowed(integer, minimum)}", field_name
        )
    return values.astype(np.int64) if integer else values


def _allowed(integer: bool, minimum: float | None) -> str:
    kind = "integers" if integer else "numbers"
    return f"{kind} >= {minimum:g}" if minimum is not None else kind


def _sorted(values: np.ndarray, path: Path, column: str, notes: list[str], rows: np.ndarray) -> np.ndarray:
    """Stable sort order of ``values`` (from data rows ``rows``); records a note when they were not in order."""
    if len(values) > 1 and (np.diff(values) < 0).any():
        first = int(np.argmax(np.diff(values) < 0)) + 1
        note = f"{path}: {column} not in increasing order (first at line {int(rows[first]) + 2}); sorted"
        notes.append(note)
        log.info(note)
        return np.argsort(values, kind="stable")
    return np.arange(len(values))


def _selectors(spec: str) -> list[str]:
    return [s.strip() for s in spec.split(",") if s.strip()]


# -- importers ----------------------------------------------------------------------------------------


def read_azure2019_invocations(path: str | Path, function: str = "") -> MinuteCounts:
    """Per-minute invocation counts from an Azure Functions 2019 ``invocations`` CSV.

    ``function`` selects rows: '' all; else comma-separated HashFunction prefixes (case-insensitive,
    each may match several rows) or ``#i`` (0-based data row). A selector that matches nothing raises.
    """
    path = resolve_trace_path(path)
    df = _read_csv(path, text_columns=("HashOwner", "HashApp", "HashFunction", "Trigger"))
    _require(df, path, ["HashFunction"], "azure2019 invocations")
    minute_cols = sorted((c for c in df.columns if c.isdigit()), key=int)
    if not minute_cols:
        raise TraceError(
            path, "columns '1'..'1440'", f"missing; the azure2019 format has one count column per minute (found {_listing(df.columns)})"
        )
    expected = [str(i) for i in range(1, len(minute_cols) + 1)]
    if minute_cols != expected:
        gap = next(e for e, c in zip(expected, minute_cols, strict=True) if e != c)
        raise TraceError(path, f"column {gap!r}", f"missing; allowed: minute columns '1'..'{len(minute_cols)}' without gaps")
    hashes = df["HashFunction"].fillna("").astype(str).str.strip().str.lower().to_numpy()
    rows = _select_rows(hashes, function, path, "HashFunction")
    sub = df.iloc[rows]
    # vectorised check of the whole block first; locate the offending cell only on error
    block = sub[minute_cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(block) & (block >= 0) & (block == np.round(block))
    if not ok.all():
        r, c = map(int, np.argwhere(~ok)[0])
        col = minute_cols[c]
        cell = sub[col].iloc[r]
        v = block[r, c]
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
    )


def _select_rows(
    keys: np.ndarray, spec: str, path: Path, column: str, second: np.ndarray | None = None, second_column: str = ""
) -> np.ndarray:
    """Row indices selected by ``spec`` (see the module doc); raises naming ``trace_function``."""
    items = _selectors(spec)
    if not items:
        return np.arange(len(keys))
    chosen = np.zeros(len(keys), dtype=bool)
    for item in items:
        if item.startswith("#") or item.lower().startswith("row"):
            m = _ROW.match(item)
            i = int(m.group(1)) if m else -1
            if not 0 <= i < len(keys):
                raise TraceError(
                    path,
                    f"trace_function {item!r}",
                    f"no such row; allowed: #0..#{len(keys) - 1} (or row0..row{len(keys) - 1})",
                    FIELD_FUNCTION,
                )
            chosen[i] = True
            continue
        prefix = item.lower()
        hit = np.char.startswith(keys.astype(str), prefix)
        if second is not None:
            hit |= np.char.startswith(second.astype(str), prefix)
        if not hit.any():
            where = f"{column!r}" + (f" or {second_column!r}" if second is not None else "")
            raise TraceError(
                path,
                f"trace_function {item!r}",
                f"matches no {where}; allowed: '' (all), a prefix of {where}, or #0..#{len(keys) - 1}",
                FIELD_FUNCTION,
            )
        chosen |= hit
    return np.flatnonzero(chosen)


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


def read_azure2021(path: str | Path, function: str = "") -> Invocations:
    """Invocations from an Azure Functions 2021 CSV, sorted by arrival ``end_timestamp - duration``.

    ``function`` selects by prefixes of ``func`` or ``app`` (comma-separated; '' all, ``#i`` a row).
    """
    path = resolve_trace_path(path)
    df = _read_csv(path, text_columns=("app", "func"))
    _require(df, path, ["app", "func", "end_timestamp", "duration"], "azure2021")
    end = _numeric(df, "end_timestamp", path, "a time in seconds", minimum=None)
    dur = _numeric(df, "duration", path, "a duration in seconds")
    app = df["app"].fillna("").astype(str).str.strip().str.lower().to_numpy()
    func = df["func"].fillna("").astype(str).str.strip().str.lower().to_numpy()
    rows = _select_rows(func, function, path, "func", second=app, second_column="app")
    start = end[rows] - dur[rows]
    notes: list[str] = []
    order = _sorted(start, path, "end_timestamp - duration", notes, rows)
    rows = rows[order]
    return Invocations(
        path=str(path),
        app=_frozen(app[rows]),
        func=_frozen(func[rows]),
        start=_frozen(start[order]),
        duration=_frozen(dur[rows]),
        notes=tuple(notes),
    )


def read_openb_pods(path: str | Path, qos: str = "") -> PodArrivals:
    """Pod arrivals (``creation_time``) from an Alibaba openb pod list; ``qos`` selects classes ('' all)."""
    path = resolve_trace_path(path)
    df = _read_csv(path, text_columns=("name", "qos", "gpu_spec", "pod_phase"))
    _require(df, path, ["creation_time"], "openb")
    created = _numeric(df, "creation_time", path, "a time in seconds")
    names = df["name"].fillna("").astype(str).to_numpy() if "name" in df.columns else np.array([f"pod-{i}" for i in range(len(df))])
    classes = df["qos"].fillna("").astype(str).str.strip().to_numpy() if "qos" in df.columns else np.full(len(df), "")
    items = _selectors(qos)
    if items:
        if "qos" not in df.columns:
            raise TraceError(
                path, "column 'qos'", "missing; trace_function selects pods by qos class; allowed: '' (all pods)", FIELD_FUNCTION
            )
        known = sorted(set(classes.tolist()))
        for item in items:
            if item not in known:
                raise TraceError(
                    path, f"trace_function {item!r}", f"no pod of this qos class; allowed: '' (all) or {', '.join(known)}", FIELD_FUNCTION
                )
        rows = np.flatnonzero(np.isin(classes, items))
    else:
        rows = np.arange(len(df))
    notes: list[str] = []
    order = rows[_sorted(created[rows], path, "creation_time", notes, rows)]
    return PodArrivals(
        path=str(path), name=_frozen(names[order]), qos=_frozen(classes[order]), creation_time=_frozen(created[order]), notes=tuple(notes)
    )


# -- replay structures, cached ----------------------------------------------------------------------

def clear_cache() -> None:
    """Forget every loaded trace (the next load reads the files again)."""
    filecache.clear()


def _event_span(times: np.ndarray) -> float:
    n = len(times)
    if n < 2 or times[-1] <= 0:
        return MINUTE
    return float(times[-1] * n / (n - 1))


def load_trace(file: str | Path, fmt: str, function: str = "") -> Trace:
    """The replay structure of a trace file (read once, then served from a small cache)."""
    if fmt not in TRACE_FORMATS:
        raise ParamError("workload.trace_format", f"{fmt!r} is not allowed; allowed: one of {', '.join(repr(f) for f in TRACE_FORMATS)}")
    path = resolve_trace_path(file)
    return filecache.cached("trace", path, (fmt, function), lambda: _build_trace(path, fmt, function))


def _build_trace(path: Path, fmt: str, function: str) -> Trace:
    where = f"trace_function {function!r}" if function else ""
    if fmt == "azure2019":
        inv = filecache.cached("azure2019", path, (function,), lambda: read_azure2019_invocations(path, function))
        counts = inv.counts
        if counts.sum() == 0:
            raise TraceError(
                path, where, "empty trace: no invocations in the selected rows; allowed: a selection with at least one invocation"
            )
        return Trace(str(path), fmt, function, span=inv.minutes * MINUTE, counts=_frozen(counts), bin_seconds=MINUTE, notes=inv.notes)
    if fmt == "azure2021":
        inv = filecache.cached("azure2021", path, (function,), lambda: read_azure2021(path, function))
        times = inv.start
        notes = inv.notes
    else:
        pods = filecache.cached("openb", path, (function,), lambda: read_openb_pods(path, function))
        times = pods.creation_time
        notes = pods.notes
    if len(times) == 0:
        raise TraceError(path, where, "empty trace: no arrivals in the selection; allowed: at least one arrival")
    shifted = times - times[0]
    return Trace(str(path), fmt, function, span=_event_span(shifted), times=_frozen(shifted), notes=notes, origin=float(times[0]))


def load_durations(file: str | Path, fmt: str, function: str = "") -> Durations:
    """The service-time distribution of a trace (azure2019: percentile tables; azure2021: empirical)."""
    if fmt == "openb":
        raise ParamError(
            "workload.trace_service", "the openb pod list has no service durations; allowed: trace_format azure2019 or azure2021"
        )
    if fmt not in TRACE_FORMATS:
        raise ParamError("workload.trace_format", f"{fmt!r} is not allowed; allowed: one of {', '.join(repr(f) for f in TRACE_FORMATS)}")
    path = resolve_trace_path(file)
    if fmt == "azure2021":
        inv = filecache.cached("azure2021", path, (function,), lambda: read_azure2021(path, function))
        if inv.total == 0:
            raise TraceError(path, "", "empty trace: no invocations in the selection; allowed: at least one")
        return filecache.cached(
            "durations2021", path, (function,), lambda: EmpiricalDurations(str(path), _frozen(np.maximum(inv.duration, MIN_SERVICE)))
        )
    inv = filecache.cached("azure2019", path, (function,), lambda: read_azure2019_invocations(path, function))
    dpath = azure2019_durations_path(path)

    def build() -> PercentileDurations:
        totals = inv.per_function.sum(axis=1).astype(float)
        # a function may appear in several rows (different apps): merge by hash, weight by invocations
        uniq: dict[str, float] = {}
        for h, w in zip(inv.functions, totals, strict=True):
            uniq[h] = uniq.get(h, 0.0) + w
        weights = list(uniq.values())
        if sum(weights) <= 0:
            raise TraceError(
                path, "", "empty trace: no invocations in the selected rows; allowed: a selection with at least one invocation"
            )
        return read_azure2019_durations(dpath, list(uniq), weights)

    return filecache.cached("durations2019", dpath, (str(path), function), build)


@dataclass
class TraceCursor:
    """Where a replay stands in its trace; advanced window by window by the arrival stream.

    ``pos`` is in trace seconds. For count traces, ``carry`` is ``(bin, remaining)``: the part of a
    bin's arrivals not yet placed because the bin goes on past the last window.
    """

    trace: Trace
    pos: float = 0.0
    carry: tuple[int, int] | None = None
    key: tuple = field(default_factory=tuple)

    def take(self, length: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        """Trace positions of the arrivals in ``[pos, pos + length)`` (sorted); moves ``pos`` on.

        ``multiple`` scales the trace's intensity: each recorded arrival (or each count) counts
        ``floor(multiple)`` times plus once more with probability ``multiple - floor(multiple)``.
        """
        a = self.pos
        b = a + length
        self.pos = b
        if self.trace.counts is not None:
            return self._take_counts(a, b, loop, multiple, rng)
        return self._take_events(a, b, loop, multiple, rng)

    def _take_counts(self, a: float, b: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        tr = self.trace
        counts = tr.counts
        w = tr.bin_seconds
        nb = len(counts)
        m_lo = int(math.floor(a / w))
        m_hi = int(math.ceil(b / w))
        if not loop:
            m_hi = min(m_hi, nb)
        if m_hi <= m_lo:
            self.carry = None
            return np.empty(0)
        ms = np.arange(m_lo, m_hi)
        lo = np.maximum(ms * w, a)
        hi = np.minimum((ms + 1) * w, b)
        raw = counts[ms % nb]
        fresh = _scale(raw, multiple, rng)
        if self.carry is not None and self.carry[0] == m_lo and lo[0] > m_lo * w:
            fresh[0] = self.carry[1]
        share = (hi - lo) / ((ms + 1) * w - lo)  # this window's share of what is left of each bin
        n = rng.binomial(fresh, np.clip(share, 0.0, 1.0))
        self.carry = (int(ms[-1]), int(fresh[-1] - n[-1])) if hi[-1] < (ms[-1] + 1) * w else None
        total = int(n.sum())
        if total == 0:
            return np.empty(0)
        u = rng.random(total)
        start = np.repeat(lo, n)
        end = np.repeat(hi, n)
        # keep every arrival inside its bin even where u * width rounds up to the bin's end
        return np.sort(np.minimum(start + u * (end - start), np.nextafter(end, -np.inf)))

    def _take_events(self, a: float, b: float, loop: bool, multiple: float, rng: np.random.Generator) -> np.ndarray:
        tr = self.trace
        times = tr.times
        span = tr.span
        if not loop:
            i, j = np.searchsorted(times, [a, b], "left")
            pos = times[i:j]
        else:
            parts = []
            for k in range(int(math.floor(a / span)), int(math.floor(b / span)) + 1):
                off = k * span
                i, j = np.searchsorted(times, [a - off, b - off], "left")
                if j > i:
                    parts.append(times[i:j] + off)
            pos = np.concatenate(parts) if parts else np.empty(0)
        if multiple != 1.0 and len(pos):
            pos = np.repeat(pos, _scale(np.ones(len(pos), dtype=np.int64), multiple, rng))
        return pos


def _scale(counts: np.ndarray, multiple: float, rng: np.random.Generator) -> np.ndarray:
    """``counts`` times ``multiple`` in whole arrivals: floor part exactly, fraction by a binomial draw."""
    counts = np.asarray(counts, dtype=np.int64)
    if multiple == 1.0:
        return counts.copy()
    whole = math.floor(multiple)
    frac = multiple - whole
    out = counts * whole
    if frac > 0.0:
        out = out + rng.binomial(counts, frac)
    return out
