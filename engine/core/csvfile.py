"""Reading CSV files users name (traces, node lists, pod lists): columns by header name, every cell checked.

One error style for every importer: a :class:`FileError` (a :class:`~engine.core.params.ParamError`, so
scenario loading and live changes report it like any other bad value) names the parameter that named the
file, the file, the line and column, what was wrong and what is allowed, in one line. Line numbers are the
file's (the header is line 1). Files are read with ``pandas.read_csv`` only: no pickle, no code from the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.core.params import ParamError


class FileError(ParamError):
    """A file that cannot be used: names the parameter, the file, where in it, and what is allowed."""

    def __init__(self, path: str | Path, where: str, message: str, field: str):
        super().__init__(field, f"{path}: {where}: {message}" if where else f"{path}: {message}")
        self.path = str(path)
        self.where = where


def read_csv(
    path: Path,
    field: str,
    text_columns: Sequence[str] = (),
    error: type[FileError] = FileError,
    base: str = "",
    noun: str = "file",
) -> pd.DataFrame:
    """The rows of a CSV file with a header line (names stripped); raises ``error`` for a missing, unreadable or empty file.

    ``base`` names the folder relative paths are read from (for the message), ``noun`` what the file holds.
    """
    if not path.is_file():
        relative = f"relative to {base} or absolute" if base else "an absolute path"
        raise error(path, "", f"no such file; allowed: a CSV file, {relative}", field)
    try:
        df = pd.read_csv(path, dtype={c: str for c in text_columns}, keep_default_na=False, na_values=[""], skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise error(path, "", "the file is empty; allowed: a CSV file with a header line and at least one row", field) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise error(path, "", f"not a readable CSV file ({first})", field) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise error(path, "", f"empty {noun}: the file has a header but no rows; allowed: at least one row", field)
    return df


def require_columns(df: pd.DataFrame, path: Path, columns: Sequence[str], fmt: str, field: str, error: type[FileError] = FileError) -> None:
    """Raise naming the first of ``columns`` the file lacks (and the columns it has)."""
    for c in columns:
        if c not in df.columns:
            raise error(
                path,
                f"column {c!r}",
                f"missing; the {fmt} format needs columns {', '.join(repr(x) for x in columns)} (found {listing(df.columns)})",
                field,
            )


def listing(cols: Sequence[Any], n: int = 8) -> str:
    """The first ``n`` column names, quoted, and how many there are."""
    cols = [str(c) for c in cols]
    return ", ".join(repr(c) for c in cols[:n]) + (f", ... ({len(cols)} columns)" if len(cols) > n else "")


def file_line(i: int, rows: Sequence[int] | None = None) -> int:
    """The file's line number of data row ``i`` (of a selection ``rows``, when given): the header is line 1."""
    return (int(rows[i]) if rows is not None else i) + 2


def numeric_column(
    df: pd.DataFrame,
    col: str,
    path: Path,
    what: str,
    field: str,
    integer: bool = False,
    minimum: float | None = 0.0,
    rows: Sequence[int] | None = None,
    empty_ok: bool = False,
    error: type[FileError] = FileError,
) -> np.ndarray:
    """Column ``col`` as float64 (or int64), checked: every cell a finite number (>= minimum).

    ``empty_ok`` lets empty cells through as NaN (float64 only). ``rows`` maps the frame's rows to the
    file's data rows (when ``df`` is a selection) for messages.
    """
    raw = df[col]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if empty_ok:
        bad &= raw.notna().to_numpy()
    if integer:
        bad |= np.isfinite(values) & (values != np.round(values))
    if bad.any():
        i = int(np.argmax(bad))
        cell = raw.iloc[i]
        shown = "an empty cell" if pd.isna(cell) else repr(str(cell).strip())
        raise error(
            path, f"line {file_line(i, rows)}, column {col!r}", f"{shown} is not {what}; allowed: {allowed(integer, minimum)}", field
        )
    if minimum is not None and (values < minimum).any():
        i = int(np.argmax(values < minimum))
        kind = "negative" if minimum == 0 else f"below {minimum:g}"
        raise error(
            path, f"line {file_line(i, rows)}, column {col!r}", f"{values[i]:g} is {kind}; allowed: {allowed(integer, minimum)}", field
        )
    return values.astype(np.int64) if integer else values


def text_column(df: pd.DataFrame, col: str, default: str = "") -> np.ndarray:
    """Column ``col`` as stripped strings (empty cells, or a missing column, as ``default``)."""
    if col not in df.columns:
        return np.full(len(df), default, dtype=object)
    return df[col].fillna(default).astype(str).str.strip().to_numpy(dtype=object)


def allowed(integer: bool, minimum: float | None) -> str:
    """What a numeric column accepts, for messages."""
    kind = "integers" if integer else "numbers"
    return f"{kind} >= {minimum:g}" if minimum is not None else kind
