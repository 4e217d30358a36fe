"""Reading a sweep's frame: its parameter and KPI columns, means over the seeds, the Pareto front.

Pure functions of the DataFrame :func:`~engine.runs.sweep.run_sweep` and :func:`~engine.runs.sweep.read_sweep`
return (its ``attrs`` name the swept parameters and the KPIs); the CLI's sweep summary, the notebooks and the
dashboard's Sweeps tab read sweeps through them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.runs.planning import BOOK_COLUMNS, TIMING_COLUMNS


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """The frame without its timing columns: what two runs of the same sweep must agree on exactly."""
    return df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns])


def parameter_columns(df: pd.DataFrame) -> list[str]:
    """The swept parameters' columns (``section.NAME``) of a sweep frame."""
    names = df.attrs.get("parameters")
    return [c for c in names if c in df.columns] if names else [c for c in df.columns if "." in c]


def kpi_columns(df: pd.DataFrame) -> list[str]:
    """The KPI columns of a sweep frame."""
    names = df.attrs.get("kpis")
    if names:
        return [c for c in names if c in df.columns]
    skip = {"point", "seed", *BOOK_COLUMNS, *parameter_columns(df)}
    return [c for c in df.columns if c not in skip]


def setting_means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean of every numeric KPI over the seeds, one row per point (design order kept), with ``runs`` per point."""
    figures = [c for c in kpi_columns(df) if pd.api.types.is_numeric_dtype(df[c])]
    keys = ["point", *parameter_columns(df)]
    grouped = df.groupby(keys, sort=False, dropna=False)
    out = grouped[figures].mean().reset_index()
    out.insert(len(keys), "runs", grouped.size().to_numpy())
    out.attrs.update(df.attrs)
    return out


def pareto_front(df: pd.DataFrame, x: str, y: str) -> pd.Series:
    """True for rows no other row beats on both ``x`` and ``y`` (both minimised; ties kept; NaN rows never on it)."""
    xs, ys = df[x].to_numpy(dtype=float), df[y].to_numpy(dtype=float)
    ok = ~(np.isnan(xs) | np.isnan(ys))
    on = np.zeros(len(df), dtype=bool)
    for i in np.flatnonzero(ok):
        dominated = ok & (xs <= xs[i]) & (ys <= ys[i]) & ((xs < xs[i]) | (ys < ys[i]))
        on[i] = not dominated.any()
    return pd.Series(on, index=df.index, name="on_front")
