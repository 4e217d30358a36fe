"""Azure Functions 2021: one row per invocation (``app, func, end_timestamp, duration``)."""

from __future__ import annotations

from pathlib import Path

from engine.workload.traces.common import _frozen, _numeric, _read_csv, _require, _select_rows, _sorted, resolve_trace_path
from engine.workload.traces.model import Invocations


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
