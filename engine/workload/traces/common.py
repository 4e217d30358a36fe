"""What every trace importer shares: where traces live, the error type, CSV reading and cell checks."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.core.csvfile import FileError, numeric_column, read_csv, require_columns
from engine.core.csvfile import listing as _listing  # noqa: F401 - the importers' name for it

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("engine.workload.traces")

TRACE_DIR = Path(__file__).resolve().parents[3] / "data" / "traces"
MINUTE = 60.0
MIN_SERVICE = 0.001  # seconds: traces round durations to ms, and 0 would make a job free
FIELD_FILE = "workload.trace_file"
FIELD_FUNCTION = "workload.trace_function"
_ROW = re.compile(r"^(?:#|row)\s*(\d+)$", re.IGNORECASE)  # '#3' or 'row3' (YAML reads an unquoted #3 as a comment)


class TraceError(FileError):
    """A trace file that cannot be replayed: names the parameter, the file, where in it, and what is allowed."""

    def __init__(self, path: str | Path, where: str, message: str, field: str = FIELD_FILE):
        super().__init__(path, where, message, field)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def resolve_trace_path(name: str | Path) -> Path:
    """``trace_file`` as a path: absolute as given, otherwise relative to ``data/traces``."""
    p = Path(name).expanduser()
    return p if p.is_absolute() else TRACE_DIR / p


# The CSV checks every importer shares (engine.core.csvfile), raising TraceError naming a trace parameter.


def _read_csv(path: Path, text_columns: Sequence[str] = (), field_name: str = FIELD_FILE) -> pd.DataFrame:
    return read_csv(path, field_name, text_columns, TraceError, base="data/traces", noun="trace")


def _require(df: pd.DataFrame, path: Path, columns: Sequence[str], fmt: str, field_name: str = FIELD_FILE) -> None:
    require_columns(df, path, columns, fmt, field_name, TraceError)


def _numeric(
    df: pd.DataFrame,
    col: str,
    path: Path,
    what: str,
    integer: bool = False,
    minimum: float | None = 0.0,
    rows: Sequence[int] | None = None,
    field_name: str = FIELD_FILE,
    empty_ok: bool = False,
) -> np.ndarray:
    """Column ``col`` as float64 (or int64), checked: every cell a finite number (>= minimum)."""
    return numeric_column(df, col, path, what, field_name, integer, minimum, rows, empty_ok, TraceError)


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
