"""A ``whatif`` table (``python -m engine whatif ... --out FILE``) drawn: actual against recommended replicas over time.

Pure functions of the table's DataFrame (columns ``time``, ``replicas``, ``recommended``, ``rule``, ``change``),
returning HoloViews objects, for the dashboard (which opens such a file with ``engine.read_whatif_table``) and
notebooks.
"""

from __future__ import annotations

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the bokeh backend, so that options apply without hv.extension
import pandas as pd

WHATIF_COLUMNS = ("time", "replicas", "recommended", "rule")
ACTUAL_COLOR, RECOMMENDED_COLOR = "#1f77b4", "#d62728"


def whatif_plot(table: pd.DataFrame, title: str = "Actual and recommended replicas") -> hv.Overlay:
    """Two step lines over time (actual, recommended) and a marker at each change of recommendation (hover: its rule)."""
    missing = [c for c in WHATIF_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"a whatif table needs columns {', '.join(WHATIF_COLUMNS)}; missing {', '.join(missing)}")
    actual = hv.Curve(table, "time", "replicas", label="actual").opts(interpolation="steps-post", color=ACTUAL_COLOR, line_width=2)
    recommended = hv.Curve(table, "time", ["recommended"], label="recommended").opts(
        interpolation="steps-post", color=RECOMMENDED_COLOR, line_dash="dashed", line_width=2
    )
    changed = table[table["change"].astype(bool)] if "change" in table.columns else table.iloc[0:0]
    marks = hv.Scatter(changed, "time", ["recommended", "replicas", "rule"], label="change (hover: rule)").opts(
        color=RECOMMENDED_COLOR, size=6, tools=["hover"]
    )
    return (actual * recommended * marks).opts(
        title=title, width=760, height=320, xlabel="time (s)", ylabel="replicas", legend_position="top_left", backend="bokeh"
    )
