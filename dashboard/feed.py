"""What the views read: the engine's recorded tables, handed out incrementally by row offset.

A :class:`Feed` reads from any *table source*: a live ``engine.Simulation`` (``tables``, ``count(name)``,
``frame(name, start)``) or the frames of a finished run or a recording (:class:`FramesSource`). Each
:meth:`Feed.poll` returns the rows appended since the previous one, table by table, so the same views
render a live session, a finished run or a recording. No UI imports here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

#: Tables the dashboard's views read (those a run does not record are skipped).
VIEW_TABLES = ("samples", "events", "decisions", "nodes", "placements", "breakdowns", "function_samples")


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


@dataclass
class KpiTracker:
    """The KPI row from the samples table: queue, active workers, latest p95 wait, VM-hours, share outside the band."""

    measured: int = 0
    outside: int = 0
    last: dict[str, Any] = field(default_factory=dict)
    last_wait_p95: float = math.nan

    def push(self, samples: pd.DataFrame) -> None:
        if not len(samples):
            return
        tl = samples["time_left"].to_numpy(dtype=float)
        measured = ~np.isnan(tl)
        outside = measured & ((tl < samples["band_low"].to_numpy(dtype=float)) | (tl > samples["band_high"].to_numpy(dtype=float)))
        self.measured += int(measured.sum())
        self.outside += int(outside.sum())
        self.last = samples.iloc[-1].to_dict()
        p95 = samples["wait_p95"].dropna()
        if len(p95):
            self.last_wait_p95 = float(p95.iloc[-1])

    def kpis(self, now: float = 0.0) -> dict[str, Any]:
        row = self.last
        return {
            "time": float(row.get("time", now)),
            "queue": int(row.get("queue_length", 0)),
            "active_workers": int(row.get("workers_active", 0)),
            "wait_p95": self.last_wait_p95,
            "vm_hours": float(row.get("vm_seconds", 0.0)) / 3600.0,
            "outside_band": self.outside / self.measured if self.measured else math.nan,
            "master_state": str(row.get("master_state", "")),
        }
