"""The keep-alive trade-off (cold starts against wasted memory), as a pure function of the benchmark's table.

The table has one row per policy: ``policy`` (``fixed-10`` .. ``hybrid-4h``), ``p75_cold_start_pct`` and
``wasted_memory_norm`` (``benchmarks/keepalive_azure.py``, ``engine.faas.keepalive_replay.tradeoff``). Fixed and
hybrid policies are drawn as two curves, each point labelled, as the paper's Pareto figure.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the bokeh backend, so that options apply without hv.extension
import pandas as pd

FAMILY_COLORS = {"fixed": "#1f77b4", "hybrid": "#d62728"}


def tradeoff_plot(table: pd.DataFrame, title: str = "Keep-alive: cold starts against wasted memory") -> hv.Overlay:
    """One curve per policy family (the part of ``policy`` before '-'), x: wasted memory / fixed-10, y: p75 cold-start %."""
    missing = {"policy", "p75_cold_start_pct", "wasted_memory_norm"} - set(table.columns)
    if missing:
        raise ValueError(f"tradeoff_plot needs columns {sorted(missing)}")
    df = table.assign(family=table["policy"].str.split("-").str[0])
    layers = []
    for family, part in df.groupby("family", sort=True):
        part = part.sort_values("wasted_memory_norm")
        color = FAMILY_COLORS.get(str(family), "#555555")
        kdims, vdims = ["wasted_memory_norm"], ["p75_cold_start_pct", "policy"]
        layers.append(hv.Curve(part, kdims, vdims, label=str(family)).opts(color=color))
        layers.append(hv.Scatter(part, kdims, vdims, label=str(family)).opts(color=color, size=8, tools=["hover"]))
        layers.append(hv.Labels(part, ["wasted_memory_norm", "p75_cold_start_pct"], "policy").opts(text_font_size="8pt", yoffset=0))
    return hv.Overlay(layers).opts(
        title=title,
        width=640,
        height=420,
        xlabel="wasted memory time (normalised to fixed-10)",
        ylabel="75th-percentile app cold starts (%)",
        legend_position="top_right",
        backend="bokeh",
    )
