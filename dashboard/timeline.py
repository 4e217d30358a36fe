"""A recording's timeline: where parameters changed, faults happened and the user pressed play, pause or speed.

Pure functions of DataFrames returning HoloViews objects, like :mod:`dashboard.plots`: the replay tab draws the
strip above its time slider (with a cursor at the scrubbed time), the exported page above its time plots (its time
axis shared with theirs), and every time plot of the page marks the parameter changes with :func:`change_lines`.

    from dashboard.timeline import markers, timeline_plot
    marks = markers(rec.tables["events"], rec.manifest.get("controls", []))
    timeline_plot(marks, rec.until)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 - the bokeh backend, so that options apply without hv.extension (library code)
import numpy as np
import pandas as pd
from bokeh.models import Span

from dashboard import plots
from dashboard.frames import fault_frame

#: The timeline's lanes, top to bottom: y position, colour, marker, legend label.
LANES: dict[str, tuple[float, str, str, str]] = {
    "fault": (2.0, plots.FAULT_COLOR, "inverted_triangle", "fault"),
    "param": (1.0, "#7b3294", "diamond", "parameter change"),
    "control": (0.0, "#636363", "square", "play / pause / speed"),
}
PARAM_COLOR = LANES["param"][1]
TIMELINE_HEIGHT = 150
MARKER_COLUMNS = ("time", "kind", "label")


def markers(events: pd.DataFrame, controls: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    """One row per marker (time, kind, label), in time order: the faults and parameter changes of the ``events``
    table (the scenario's own faults included, which the inputs do not list) and the recorded control actions."""
    parts = []
    for kind in ("fault", "param"):
        rows = fault_frame(events, kinds=(kind,))
        parts.append(pd.DataFrame({"time": rows["time"].to_numpy(dtype=float), "kind": kind, "label": rows["fault"].astype(str)}))
    if controls:
        labels = [f"{c['action']} {c['value']:g}" if isinstance(c.get("value"), int | float) else str(c["action"]) for c in controls]
        parts.append(pd.DataFrame({"time": [float(c["time"]) for c in controls], "kind": "control", "label": labels}))
    out = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else None
    if out is None:
        return pd.DataFrame({"time": np.zeros(0), "kind": np.array([], dtype=object), "label": np.array([], dtype=object)})
    return out.sort_values("time", kind="stable", ignore_index=True)[list(MARKER_COLUMNS)]


def marker_choices(marks: pd.DataFrame, limit: int = 200) -> dict[str, float]:
    """Marker labels for a "jump to" list (``0:15:00 fault master_crash`` -> 900.0), the first ``limit`` of them."""
    return {f"{plots.hms(t)}  {kind}  {label}": float(t) for t, kind, label in marks.head(limit).itertuples(index=False)}


def timeline_plot(marks: pd.DataFrame, until: float, figure: str | None = None, height: int = TIMELINE_HEIGHT) -> hv.Overlay:
    """The strip of markers over [0, ``until``]: one lane per kind, a faint line across at each marker, hover names it."""
    return timeline_body(marks).opts(**timeline_opts(until, figure, height))


def timeline_body(marks: pd.DataFrame) -> hv.Overlay:
    """The strip's elements (:func:`timeline_opts` styles the overlay they end up in, a cursor added or not)."""
    lanes = []
    for kind, (y, color, marker, legend) in LANES.items():
        rows = marks[marks["kind"] == kind]
        lanes.append(
            hv.Scatter(rows.assign(lane=y), plots.TIME, ["lane", "label"], label=legend).opts(
                color=color,
                marker=marker,
                size=11,
                tools=["hover"],
                hover_tooltips=[("time", "@{time}{custom}"), (legend, "@{label}")],
            )
        )
    lines = hv.VLines(marks[["time"]], plots.TIME).opts(color="#999999", line_width=1, alpha=0.35)
    return hv.Overlay([lines, *lanes])


def timeline_opts(until: float, figure: str | None = None, height: int = TIMELINE_HEIGHT) -> dict[str, Any]:
    """The strip's options: the span [0, ``until``], h:mm:ss ticks, no y axis, the legend beside it."""
    return dict(
        title="Timeline: faults, parameter changes, play / pause / speed",
        responsive=True,
        height=height,
        min_width=300,
        xlim=(0.0, max(float(until), 1.0)),
        ylim=(-0.6, 2.6),
        yaxis=None,
        show_grid=True,
        legend_position="right",
        xlabel="simulated time (h:mm:ss)",
        toolbar="right",
        autohide_toolbar=True,
        default_tools=["xpan", "xwheel_zoom", "reset"],
        hooks=[h for h in (plots._time_axis_hook, plots.name_hook(figure) if figure else None) if h is not None],
    )


def cursor(at: float) -> Span:
    """The scrubbed time, as a line across the timeline (a Bokeh ``Span``: a scrub moves it by its ``location`` alone)."""
    return Span(location=float(at), dimension="height", line_color="#1f77b4", line_width=3, line_alpha=0.9)


def change_lines(marks: pd.DataFrame) -> hv.VLines:
    """A dotted purple line at every parameter change (a time plot's faults are drawn by ``plots.fault_markers``)."""
    rows = marks.loc[marks["kind"] == "param", ["time"]]
    return hv.VLines(rows, plots.TIME, label="parameter change").opts(color=PARAM_COLOR, line_dash="dotted", line_width=1.5, alpha=0.9)
