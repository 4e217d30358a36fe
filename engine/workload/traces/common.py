"""What every trace importer shares: where traces live, the error type, CSV reading and cell checks."""

from __future__ import annotations

import csv
import logging
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.core.params import ParamError

log = logging.getLogger("engine.workload.traces")

TRACE_DIR = Path(__file__).resolve().parents[3] / "data" / "traces"
MINUTE = 60.0
MIN_SERVICE = 0.001  # seconds: traces round durations to ms, and 0 would make a job free
FIELD_FILE = "workload.trace_file"
FIELD_FUNCTION = "workload.trace_function"
_ROW = re.compile(r"^(?:#|row)\s*(\d+)$", re.IGNORECASE)  # '#3' or 'row3' (YAML reads an unquoted #3 as a comment)


class TraceError(ParamError):
    """A trace file that cannot be replayed: names the parameter, the file, where in it, and what is allowed."""

    def __init__(self, path: str | Path, where: str, message: str, field: str = FIELD_FILE):
        super().__init__(field, f"{path}: {where}: {message}" if where else f"{path}: {message}")
        self.path = str(path)
        self.where = where


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def resolve_trace_path(name: str | Path) -> Path:
    """``trace_file`` as a path: absolute as given, otherwise relative to ``data/traces``."""
    p = Path(name).expanduser()
    return p if p.is_absolute() else TRACE_DIR / p


_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def _header(path: Path, field_name: str) -> list[str]:
    """The header line's column names (stripped), or a TraceError for a binary file, no header or duplicate names."""
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError as e:
        raise TraceError(path, "", f"cannot be read ({e.strerror or e}); allowed: a readable CSV file", field_name) from None
    if b"\x00" in first:
        raise TraceError(path, "line 1", "holds NUL bytes (a binary file?); allowed: a CSV text file", field_name)
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TraceError(path, "line 1", f"not UTF-8 (byte 0x{first[e.start]:02x}); allowed: a UTF-8 CSV file", field_name) from None
    names = [c.strip() for c in next(csv.reader([text]), [])]
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise TraceError(
                path,
                f"line 1, column {name!r}",
                f"appears twice (columns {seen[name] + 1} and {i + 1}); allowed: each column once",
                field_name,
            )
        seen[name] = i
    return names


def _read_csv(path: Path, text_columns: Sequence[str] = (), field_name: str = FIELD_FILE) -> pd.DataFrame:
    """A trace CSV read by header name, refusing what would be misread silently: duplicate columns, rows with more
    or fewer fields than the header, the header repeated as a data row, non-UTF-8 or binary content."""
    if not path.is_file():
        raise TraceError(path, "", "no such file; allowed: a CSV file, relative to data/traces or absolute", field_name)
    names = _header(path, field_name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(
                path, dtype={c: str for c in text_columns}, keep_default_na=False, na_values=[""], skipinitialspace=True, index_col=False
            )
    except pd.errors.EmptyDataError:
        raise TraceError(path, "", "the file is empty; allowed: a CSV file with a header line and at least one row", field_name) from None
    except pd.errors.ParserWarning:  # every data row has more fields than the header
        raise TraceError(path, "line 2", f"more fields than the header's {len(names)}; allowed: one field per column", field_name) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        match = _FIELDS.search(str(e))
        if match:
            want, line, got = match.groups()
            raise TraceError(
                path, f"line {line}", f"{got} fields where the header has {want}; allowed: one field per column", field_name
            ) from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise TraceError(path, "", f"not a readable CSV file ({first})", field_name) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise TraceError(path, "", "empty trace: the file has a header but no rows; allowed: at least one row", field_name)
    _no_repeated_header(df, path, field_name)
    return df


def _no_repeated_header(df: pd.DataFrame, path: Path, field_name: str) -> None:
    """A data row whose every cell is its column's name is the header again (a concatenated file)."""
    first = df.iloc[:, 0].astype(str).str.strip().to_numpy() == df.columns[0]
    for row in np.flatnonzero(first):  # candidates only: a full comparison of a wide file costs seconds
        cells = [str(v).strip() for v in df.iloc[row].tolist()]
        if cells == list(df.columns):
            line = int(row) + 2
        raise TraceError(path, f"line {line}", "repeats the header (two files joined?); allowed: the header once, on line 1", field_name)


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
