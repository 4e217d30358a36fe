"""Reading CSV files users name (traces, node lists, pod lists): columns by header name, every cell checked.

One error style for every importer: a :class:`FileError` (a :class:`~engine.core.params.ParamError`, so
scenario loading and live changes report it like any other bad value) names the parameter that named the
file, the file, the line and column, what was wrong and what is allowed, in one line. Line numbers are the
file's (the header is line 1). Files are read with ``pandas.read_csv`` only: no pickle, no code from the file.
"""

from __future__ import annotations

import csv
import re
import warnings
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


_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def read_csv(
    path: Path,
    field: str,
    text_columns: Sequence[str] = (),
    error: type[FileError] = FileError,
    base: str = "",
    noun: str = "file",
) -> pd.DataFrame:
    """The rows of a CSV file with a header line (names stripped), refusing what would be misread silently.

    Raises ``error`` for a missing, unreadable, binary, non-UTF-8 or empty file, duplicate column names, a row
    with more or fewer fields than the header, and the header repeated as a data row (two files joined).
    ``base`` names the folder relative paths are read from (for the message), ``noun`` what the file holds.
    """
    if not path.is_file():
        relative = f"relative to {base} or absolute" if base else "an absolute path"
        raise error(path, "", f"no such file; allowed: a CSV file, {relative}", field)
    names = _header(path, field, error)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(
                path, dtype={c: str for c in text_columns}, keep_default_na=False, na_values=[""], skipinitialspace=True, index_col=False
            )
    except pd.errors.EmptyDataError:
        raise error(path, "", "the file is empty; allowed: a CSV file with a header line and at least one row", field) from None
    except pd.errors.ParserWarning:  # every data row has more fields than the header
        raise error(path, "line 2", f"more fields than the header's {len(names)}; allowed: one field per column", field) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        match = _FIELDS.search(str(e))
        if match:
            want, line, got = match.groups()
            raise error(path, f"line {line}", f"{got} fields where the header has {want}; allowed: one field per column", field) from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise error(path, "", f"not a readable CSV file ({first})", field) from None
    df.columns = [str(c).strip() for c in df.columns]
    if len(df) == 0:
        raise error(path, "", f"empty {noun}: the file has a header but no rows; allowed: at least one row", field)
    _no_repeated_header(df, path, field, error)
    _no_short_rows(df, path, field, error)
    return df


def _header(path: Path, field: str, error: type[FileError]) -> list[str]:
    """The header line's column names (stripped); refuses a binary file, a non-UTF-8 one and duplicate names."""
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError as e:
        raise error(path, "", f"cannot be read ({e.strerror or e}); allowed: a readable CSV file", field) from None
    if b"\x00" in first:
        raise error(path, "line 1", "holds NUL bytes (a binary file?); allowed: a CSV text file", field)
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(path, "line 1", f"not UTF-8 (byte 0x{first[e.start]:02x}); allowed: a UTF-8 CSV file", field) from None
    names = [c.strip() for c in next(csv.reader([text]), [])]
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise error(
                path, f"line 1, column {name!r}", f"appears twice (columns {seen[name] + 1} and {i + 1}); allowed: each column once", field
            )
        seen[name] = i
    return names


def _no_short_rows(df: pd.DataFrame, path: Path, field: str, error: type[FileError]) -> None:
    """A row with fewer fields than the header: pandas fills the missing cells as empty, so count them.

    Only a file whose last column has an empty cell can hold one, so only such a file is read again.
    """
    if not df.iloc[:, -1].isna().any():
        return
    want = len(df.columns)
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = csv.reader(f)
        next(rows, None)
        for row in rows:
            if row and len(row) < want:
                raise error(
                    path, f"line {rows.line_num}", f"{len(row)} fields where the header has {want}; allowed: one field per column", field
                )


def _no_repeated_header(df: pd.DataFrame, path: Path, field: str, error: type[FileError]) -> None:
    """A data row whose every cell is its column's name is the header again (a concatenated file)."""
    first = df.iloc[:, 0].astype(str).str.strip().to_numpy() == df.columns[0]
    for row in np.flatnonzero(first):  # candidates only: a full comparison of a wide file costs seconds
        if [str(v).strip() for v in df.iloc[row].tolist()] == list(df.columns):
            raise error(path, f"line {int(row) + 2}", "repeats the header (two files joined?); allowed: the header once, on line 1", field)


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
