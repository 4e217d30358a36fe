"""The KPI row of any world, from what the world declares (``engine.WORLDS[world].ui``): no column is named here.

No UI imports: a :class:`KpiTracker` is pushed the new rows of a run's tables (live, replayed or cut from a
recording) and hands out the KPI values; :func:`kpi_difference` is B - A over the numeric ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from engine import WORLDS


def world_view(world: str) -> Any:
    """The world's UI declaration (``engine.sim.worldview.WorldView``); an unknown world reads as the VM world's."""
    entry = WORLDS.get(world) or WORLDS["vm"]
    return entry.ui


def recording_world(manifest: dict[str, Any]) -> str:
    """The world a recording's scenario runs in (read from its manifest, without rebuilding the scenario)."""
    world = ((manifest.get("scenario") or {}).get("run") or {}).get("world", "vm")
    return world if isinstance(world, str) and world in WORLDS else "vm"


class KpiTracker:
    """Running summaries of a world's KPI columns over the rows pushed so far."""

    def __init__(self, view: Any):
        self.view = view
        self.values: dict[str, Any] = {k.key: (math.nan if k.numeric else "") for k in view.kpis}
        self._sums: dict[str, float] = dict.fromkeys(self.values, 0.0)
        self._counts: dict[str, list[int]] = {k.key: [0, 0] for k in view.kpis}  # share_outside: [outside, measured]
        self.time = math.nan

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k.table for k in self.view.kpis))

    def push(self, new: dict[str, pd.DataFrame]) -> None:
        """New rows of the run's tables (tables the KPIs do not read are ignored; missing columns leave a KPI unknown)."""
        for kpi in self.view.kpis:
            rows = new.get(kpi.table)
            if rows is None or not len(rows) or kpi.column not in rows:
                continue
            if "time" in rows and kpi.table == self.view.sample_table:
                self.time = float(rows["time"].iloc[-1])
            self.values[kpi.key] = self._summarise(kpi, rows)

    def _summarise(self, kpi: Any, rows: pd.DataFrame) -> Any:
        column = rows[kpi.column]
        if not kpi.numeric:
            return str(column.iloc[-1])
        values = column.to_numpy(dtype=float, na_value=np.nan)
        how = kpi.summary
        if how == "last":
            return float(values[-1]) * kpi.scale
        if how == "last_valid":
            valid = values[~np.isnan(values)]
            return float(valid[-1]) * kpi.scale if len(valid) else self.values[kpi.key]
        if how in ("sum_latest", "max_latest"):
            times = rows["time"].to_numpy(dtype=float)
            latest = values[times == times[-1]]
            latest = latest[~np.isnan(latest)]
            if not len(latest):
                return math.nan
            return float(latest.sum() if how == "sum_latest" else latest.max()) * kpi.scale
        if how == "sum":
            self._sums[kpi.key] += float(np.nansum(values))
            return self._sums[kpi.key] * kpi.scale
        if how == "share_outside":
            low, high = (rows[c].to_numpy(dtype=float, na_value=np.nan) for c in kpi.band)
            measured = ~np.isnan(values)
            outside = measured & ((values < low) | (values > high))
            counts = self._counts[kpi.key]
            counts[0] += int(outside.sum())
            counts[1] += int(measured.sum())
            return counts[0] / counts[1] if counts[1] else math.nan
        raise ValueError(f"KPI {kpi.key}: summary {how!r} is not known")

    def kpis(self, now: float = 0.0) -> dict[str, Any]:
        """The KPI values and the time of the newest sample (``now`` before any)."""
        return {**self.values, "time": self.time if math.isfinite(self.time) else float(now)}


def kpi_difference(view: Any, a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """B - A for each numeric KPI of the world (NaN where either is unknown)."""
    return {k.key: float(b[k.key]) - float(a[k.key]) for k in view.kpis if k.numeric}


def kpis_at(view: Any, frames: dict[str, pd.DataFrame], at: float) -> dict[str, Any]:
    """The KPI row as it stood at simulated time ``at`` in a run's tables (the same tracker the live row uses)."""
    tracker = KpiTracker(view)
    cut = {}
    for table in tracker.tables:
        frame = frames.get(table)
        if frame is not None and len(frame) and "time" in frame:
            cut[table] = frame[frame["time"].to_numpy(dtype=float) <= at]
    tracker.push(cut)
    return tracker.kpis(at)
