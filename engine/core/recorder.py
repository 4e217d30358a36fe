"""What a run records: tables declared once, with typed columns and documentation, handed out as DataFrames.

Each producer declares its tables (:class:`TableSpec`, a list of :class:`Column`) next to its code and the
:class:`Recorder` stores them as columns of plain lists (cheap appends). A table may be *bounded*: it keeps
its newest ``bound`` rows (at least), while row numbers stay absolute, so a reader that asks for "rows
from N on" (a view fed incrementally, by row offset) never sees a row twice or misses one that is still
kept. A table appended in blocks (``layout="blocks"``: a placement's nodes x priorities breakdown) keeps
whole blocks of numpy arrays, so a large block costs no per-value work.

Column dtypes: ``float64``, ``int64``, ``bool``, ``string`` (pandas' nullable string), ``Int64`` (nullable
integer), ``Float64`` (nullable float). ``None`` is the missing value for the nullable kinds and NaN for
``float64``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

DTYPES = ("float64", "int64", "bool", "string", "Int64", "Float64")


@dataclass(frozen=True)
class Column:
    """One column: its name, dtype (one of :data:`DTYPES`) and what it holds."""

    name: str
    dtype: str
    doc: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"column {self.name}: dtype {self.dtype!r}; allowed: {', '.join(DTYPES)}")


@dataclass(frozen=True)
class TableSpec:
    """A table's declaration: name, columns in order, what one row is, and an optional row bound."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    bound: int | None = None  # keep only the newest rows
    layout: str = "rows"  # "rows": appended row by row; "blocks": appended as blocks of arrays

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def describe(self) -> pd.DataFrame:
        """The declaration as a small table (column, dtype, doc), for documentation and notebooks."""
        import pandas as pd

        return pd.DataFrame({"column": self.names, "dtype": [c.dtype for c in self.columns], "doc": [c.doc for c in self.columns]})


def table(name: str, doc: str, columns: Iterable[tuple[str, str, str]], bound: int | None = None, layout: str = "rows") -> TableSpec:
    """Shorthand: ``table("events", "...", [("time", "float64", "simulated seconds"), ...])``."""
    return TableSpec(name, doc, tuple(Column(*c) for c in columns), bound, layout)


@dataclass
class _Store:
    spec: TableSpec
    columns: dict[str, list] = field(default_factory=dict)
    offset: int = 0  # absolute number of the first row kept
    #: blocks given as arrays (:meth:`Recorder.extend` of an unbounded table), after the rows of :attr:`columns`: they
    #: become list values (``tolist``, as :meth:`Recorder.extend` did at once) only when the table is read or appended to
    deferred: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    deferred_rows: int = 0
    #: rows given positionally (:meth:`Recorder.appender`), after the deferred blocks: one tuple each, moved into the
    #: column lists (transposed) when the table is read or appended to otherwise
    rows: list[Sequence[Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.columns = {c: [] for c in self.spec.names}

    @property
    def kept(self) -> int:
        return (len(next(iter(self.columns.values()))) if self.columns else 0) + self.deferred_rows + len(self.rows)

    def lists(self) -> dict[str, list]:
        """The columns as lists, deferred blocks and positional rows included (moved into the lists now, in order)."""
        if self.deferred:
            for _, block in self.deferred:
                for c, col in self.columns.items():
                    values = block[c]
                    col.extend(values.tolist() if isinstance(values, np.ndarray) else values)
            self.deferred.clear()
            self.deferred_rows = 0
        if self.rows:
            for col, values in zip(self.columns.values(), zip(*self.rows, strict=True), strict=True):
                col.extend(values)
            self.rows.clear()
        return self.columns

    def trim(self) -> None:
        bound = self.spec.bound
        if bound is not None and self.kept > 2 * bound:  # trim in chunks: appends stay cheap
            drop = self.kept - bound
            for col in self.columns.values():
                del col[:drop]
            self.offset += drop


@dataclass
class _BlockStore:
    spec: TableSpec
    #: (first row, columns): a deferred block holds the function that computes its columns until it is read
    blocks: list[tuple[int, dict[str, np.ndarray] | Callable[[], Mapping[str, Sequence | np.ndarray]]]] = field(default_factory=list)
    total: int = 0  # rows ever appended
    offset: int = 0

    @property
    def kept(self) -> int:
        return self.total - self.offset

    def _block(self, columns: Mapping[str, Sequence | np.ndarray], n: int | None = None) -> dict[str, np.ndarray]:
        block = {c: np.asarray(columns[c]) for c in self.spec.names}
        rows = len(next(iter(block.values()))) if block else 0
        if any(len(v) != rows for v in block.values()) or (n is not None and rows != n):
            raise ValueError(f"table {self.spec.name}: columns of a block differ in length")
        return block

    def add(self, columns: Mapping[str, Sequence | np.ndarray]) -> tuple[int, int]:
        block = self._block(columns)
        return self._append(block, len(next(iter(block.values()))) if block else 0)

    def add_later(self, n: int, columns: Callable[[], Mapping[str, Sequence | np.ndarray]]) -> tuple[int, int]:
        return self._append(columns, n)

    def _append(self, block: Any, n: int) -> tuple[int, int]:
        start = self.total
        self.blocks.append((start, block))
        self.total += n
        bound = self.spec.bound
        while bound is not None and len(self.blocks) > 1 and self.total - self.blocks[1][0] >= bound:
            self.blocks.pop(0)
        self.offset = self.blocks[0][0] if self.blocks else self.total
        return start, self.total

    def materialised(self) -> list[tuple[int, dict[str, np.ndarray]]]:
        """The kept blocks, each deferred one computed now (once)."""
        for i, (start, block) in enumerate(self.blocks):
            if callable(block):
                end = self.blocks[i + 1][0] if i + 1 < len(self.blocks) else self.total
                self.blocks[i] = (start, self._block(block(), end - start))
        return self.blocks  # type: ignore[return-value]

    def rows(self, lo: int, hi: int) -> dict[str, list | np.ndarray]:
        parts = [(s, b) for s, b in self.materialised() if s < hi and s + len(next(iter(b.values()))) > lo]
        out = {}
        for c in self.spec.names:
            pieces = [b[c][max(lo - s, 0) : hi - s] for s, b in parts]
            out[c] = np.concatenate(pieces) if pieces else np.zeros(0)
        return out


def _series(values: list | np.ndarray, dtype: str) -> pd.Series | np.ndarray:
    import pandas as pd

    if isinstance(values, np.ndarray) and dtype not in ("float64", "int64", "bool"):
        values = values.tolist()
    if dtype == "float64":
        return np.asarray(values, dtype=np.float64) if len(values) else np.zeros(0)
    if dtype == "int64":
        return np.asarray(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    if dtype == "bool":
        return np.asarray(values, dtype=bool) if len(values) else np.zeros(0, dtype=bool)
    return pd.array(values, dtype=dtype)


class Recorder:
    """The tables of one run. Producers :meth:`declare` their tables, then :meth:`append` rows."""

    def __init__(self, specs: Iterable[TableSpec] = ()) -> None:
        self._stores: dict[str, _Store | _BlockStore] = {}
        self._provided: dict[str, tuple[TableSpec, Callable[[], Sequence[Sequence[Any]] | None]]] = {}
        self._columnar: dict[str, tuple[TableSpec, Callable[[], Mapping[str, np.ndarray]]]] = {}
        self._owed: dict[str, Callable[[], None]] = {}  # table -> what appends the rows its producer still owes it
        for spec in specs:
            self.declare(spec)

    def declare(self, spec: TableSpec) -> None:
        """Add a table (a name can be declared once)."""
        if spec.name in self:
            raise ValueError(f"table {spec.name!r} is declared twice")
        self._stores[spec.name] = _BlockStore(spec) if spec.layout == "blocks" else _Store(spec)

    def provide(self, spec: TableSpec, rows: Callable[[], Sequence[Sequence[Any]] | None]) -> None:
        """Declare a table whose rows its producer keeps (``rows()`` in column order; None: not recorded in this run).

        For a table whose rows change after they are written (a job's ``aborted`` flag), read at :meth:`frame` time.
        """
        if spec.name in self:
            raise ValueError(f"table {spec.name!r} is declared twice")
        self._provided[spec.name] = (spec, rows)

    def provide_columns(self, spec: TableSpec, columns: Callable[[], Mapping[str, np.ndarray]]) -> None:
        """Declare a table its producer keeps as numpy columns (``columns()`` -> name -> array, all of one length).

        For large tables whose rows are computed at :meth:`frame` time (per-request rows whose status depends
        on the time they are read at): no Python object per row.
        """
        if spec.name in self:
            raise ValueError(f"table {spec.name!r} is declared twice")
        self._columnar[spec.name] = (spec, columns)

    def owe(self, name: str, settle: Callable[[], None]) -> None:
        """The producer of row table ``name`` may owe it rows: ``settle()`` appends them, and is called before every read
        of the table (:meth:`frame`, :meth:`count`, :meth:`column`, :meth:`raw`, :meth:`first_kept`), so a reader sees
        the rows an eager producer would have appended by then. The producer settles before it appends otherwise."""
        if name not in self._stores:
            raise ValueError(f"table {name!r}: only a declared row table can be owed rows")
        self._owed[name] = settle

    def _settle(self, name: str) -> None:
        settle = self._owed.get(name)
        if settle is not None:
            settle()

    @property
    def specs(self) -> dict[str, TableSpec]:
        return {
            **{name: s.spec for name, s in self._stores.items()},
            **{name: p[0] for name, p in self._provided.items()},
            **{name: c[0] for name, c in self._columnar.items()},
        }

    def __contains__(self, name: str) -> bool:
        return name in self._stores or name in self._provided or name in self._columnar

    def recorded(self, name: str) -> bool:
        """Does this run hold the table (a provided table may be switched off, e.g. jobs without run.record_jobs)?"""
        return name in self._stores or name in self._columnar or (name in self._provided and self._provided[name][1]() is not None)

    def append(self, name: str, row: Mapping[str, Any]) -> int:
        """Append one row (every declared column must be given); returns its absolute row number."""
        store = self._stores[name]
        for c, col in store.lists().items():
            col.append(row[c])
        number = store.offset + store.kept - 1
        store.trim()
        return number

    def extend(self, name: str, columns: Mapping[str, Sequence | np.ndarray]) -> tuple[int, int]:
        """Append a block of rows given column-wise; returns the absolute row range ``[start, stop)``."""
        store = self._stores[name]
        if isinstance(store, _BlockStore):
            return store.add(columns)
        start = store.offset + store.kept
        n = None
        defer = store.spec.bound is None  # an unbounded table keeps the block as given (copied) until it is read
        block = {}
        for c in store.columns:
            values = columns[c]
            if isinstance(values, np.ndarray):
                values = values.copy() if defer else values.tolist()
            else:
                values = list(values)
            if n is None:
                n = len(values)
            elif len(values) != n:
                raise ValueError(f"table {name}: column {c} has {len(values)} values, expected {n}")
            block[c] = values
        if defer:
            if n:
                if store.rows:
                    store.lists()  # the positional rows come first
                store.deferred.append((n, block))
                store.deferred_rows += n
            return start, start + (n or 0)
        for c, col in store.columns.items():
            col.extend(block[c])
        store.trim()
        return start, start + (n or 0)

    def extend_later(self, name: str, rows: int, columns: Callable[[], Mapping[str, Sequence | np.ndarray]]) -> tuple[int, int]:
        """Append a block of ``rows`` rows to a bounded block table, computed by ``columns()`` only when read.

        The row numbers and what the bound keeps are those of :meth:`extend`; a block the bound drops before anyone
        reads the table is never computed (a placement's breakdown: only the newest decisions are kept). ``columns``
        must give what :meth:`extend` would have been given at this moment (it must not read live state).
        """
        store = self._stores[name]
        if not isinstance(store, _BlockStore):
            raise ValueError(f"table {name}: only a block table defers its blocks")
        return store.add_later(rows, columns)

    def appender(self, name: str) -> Callable[[Sequence[Any]], None]:
        """A fast positional append for a hot path: ``add((v1, v2, ...))`` in column order (unbounded row tables only).

        The row is kept as given until the table is read: pass a tuple (or a list no one changes afterwards)."""
        store = self._stores[name]
        if isinstance(store, _BlockStore) or store.spec.bound is not None:
            raise ValueError(f"table {name}: a positional appender needs an unbounded row table")
        width = len(store.columns)
        rows = store.rows

        def add(values: Sequence[Any]) -> None:
            if len(values) != width:
                raise ValueError(f"table {name}: {len(values)} values, expected {width}")
            rows.append(values)  # a tuple: transposed into the columns when read

        return add

    def counter(self, name: str) -> Callable[[], int]:
        """A fast :meth:`count` of one declared row or block table, for a hot path (a call returns the count then)."""
        store = self._stores[name]
        owed = self._owed

        def count() -> int:
            settle = owed.get(name)
            if settle is not None:
                settle()
            return store.offset + store.kept

        return count

    def count(self, name: str) -> int:
        """Rows ever appended to a table (absolute; a bounded table keeps only the newest)."""
        if name in self._provided:
            return len(self._provided[name][1]() or ())
        if name in self._columnar:
            cols = self._columnar[name][1]()
            return len(next(iter(cols.values()))) if cols else 0
        self._settle(name)
        store = self._stores[name]
        return store.offset + store.kept

    def first_kept(self, name: str) -> int:
        """Absolute number of the oldest row a bounded table still holds."""
        self._settle(name)
        return self._stores[name].offset if name in self._stores else 0

    def raw(self, name: str) -> dict[str, list] | list[tuple[int, dict[str, np.ndarray]]]:
        """What a table keeps in memory (column lists, or blocks of arrays), for measuring its size."""
        self._settle(name)
        store = self._stores[name]
        return store.materialised() if isinstance(store, _BlockStore) else store.lists()

    def column(self, name: str, column: str) -> list:
        """One column's kept values of a row table (the live list, not a copy: read it, do not modify it)."""
        self._settle(name)
        store = self._stores[name]
        if isinstance(store, _BlockStore):
            raise ValueError(f"table {name}: a block table has no single column list; use frame()")
        return store.lists()[column]

    def frame(self, name: str, start: int = 0, stop: int | None = None) -> pd.DataFrame:
        """Rows ``[start, stop)`` (absolute numbers; rows no longer kept are left out) with the declared dtypes."""
        import pandas as pd

        if name in self._columnar:
            spec, columns = self._columnar[name]
            cols = columns()
            n = len(next(iter(cols.values()))) if cols else 0
            lo, hi = min(start, n), n if stop is None else min(stop, n)
            df = pd.DataFrame({c.name: _series(cols[c.name][lo:hi], c.dtype) for c in spec.columns})
            df.index = pd.RangeIndex(lo, lo + len(df))
            return df
        if name in self._provided:
            spec, rows = self._provided[name]
            got = list(rows() or ())[start:stop]
            df = pd.DataFrame({c.name: _series([r[i] for r in got], c.dtype) for i, c in enumerate(spec.columns)})
            df.index = pd.RangeIndex(start, start + len(df))
            return df
        self._settle(name)
        store = self._stores[name]
        lo = max(start - store.offset, 0)
        hi = store.kept if stop is None else max(min(stop - store.offset, store.kept), lo)
        if isinstance(store, _BlockStore):
            raw = store.rows(store.offset + lo, store.offset + hi)
        else:
            raw = {c: col[lo:hi] for c, col in store.lists().items()}
        out = {c.name: _series(raw[c.name], c.dtype) for c in store.spec.columns}
        df = pd.DataFrame(out)
        df.index = pd.RangeIndex(store.offset + lo, store.offset + lo + len(df))
        return df

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every table this run holds, whole (what is kept)."""
        return {name: self.frame(name) for name in self if self.recorded(name)}

    def __iter__(self) -> Iterator[str]:
        return iter([*self._stores, *self._provided, *self._columnar])


def normalise(df: pd.DataFrame, dtypes: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """``df`` with exactly the declared ``(column, dtype)`` columns, each cast the way the recorder builds frames.

    A table read back from Parquet comes back with pyarrow-backed or object dtypes; normalised, it is the frame the
    run produced (same values, same dtypes), so digests and comparisons are of content, not of storage.
    """
    import pandas as pd

    out = {}
    for name, dtype in dtypes:
        values = df[name]
        if dtype in ("string", "Int64") and values.dtype == pd.api.types.pandas_dtype(dtype):
            out[name] = values.array  # Parquet gave back the declared dtype (pandas' metadata): its only missing value is NA
        elif dtype in ("string", "Int64", "Float64"):
            # the missing values as None, in one vectorised pass (a Python loop over every value took ~0.5 s for the
            # 180,000 invocations of a 15-minute functions recording); a Float64's NaN becomes NA, as the recorder makes it
            objects = np.array(values.to_numpy(dtype=object, na_value=None), dtype=object)  # a copy: written below
            objects[pd.isna(objects)] = None
            out[name] = pd.array(objects, dtype=dtype)
        else:
            out[name] = _series(values.to_numpy(dtype={"float64": np.float64, "int64": np.int64, "bool": bool}[dtype]), dtype)
    frame = pd.DataFrame(out)
    frame.index = df.index
    return frame


def frame_digest(df: pd.DataFrame) -> str:
    """A stable digest of a DataFrame's values (identical frames, identical digests)."""
    import pandas as pd

    h = hashlib.sha256()
    h.update(",".join(df.columns).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()
