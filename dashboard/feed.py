"""What the views read: the engine's recorded tables, handed out incrementally by row offset.

A :class:`Feed` reads from any *table source*: a live ``engine.Simulation`` (``tables``, ``count(name)``,
``frame(name, start)``) or the frames of a finished run or a recording (:class:`FramesSource`). Each
:meth:`Feed.poll` returns the rows appended since the previous one, table by table, so the same views
render a live session, a finished run or a recording. No UI imports here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import pandas as pd

#: Tables the dashboard's views read (those a run does not record are skipped).
VIEW_TABLES = (
    "samples",
    "events",
    "decisions",
    "nodes",
    "placements",
    "breakdowns",
    "function_samples",
    "pods",
    "nodes_by_group",
    "node_decisions",
)


class TableSource(Protocol):
    """Recorded tables by name, addressable by absolute row number."""

    @property
    def tables(self) -> list[str]: ...

    def count(self, table: str) -> int: ...

    def frame(self, table: str, start: int = 0) -> pd.DataFrame: ...


@dataclass
class FramesSource:
    """The tables of a finished run or a recording, as DataFrames (row numbers are their index)."""

    frames: Mapping[str, pd.DataFrame]

    @property
    def tables(self) -> list[str]:
        return list(self.frames)

    def count(self, table: str) -> int:
        df = self.frames[table]
        return int(df.index[-1]) + 1 if len(df) else 0

    def frame(self, table: str, start: int = 0) -> pd.DataFrame:
        df = self.frames[table]
        return df[df.index >= start]


class Feed:
    """A cursor per table over a source: :meth:`poll` hands out each row once."""

    def __init__(self, source: TableSource, tables: tuple[str, ...] = VIEW_TABLES):
        self.source = source
        self.tables = tuple(t for t in tables if t in source.tables)
        self.cursors = dict.fromkeys(self.tables, 0)

    def poll(self) -> dict[str, pd.DataFrame]:
        """New rows of every table since the last poll (empty frames where nothing is new)."""
        out = {}
        for table in self.tables:
            n = self.source.count(table)
            if n > self.cursors[table]:
                out[table] = self.source.frame(table, self.cursors[table])
                self.cursors[table] = n
            else:
                out[table] = pd.DataFrame()
        return out
