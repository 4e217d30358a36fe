"""A recording as one self-contained HTML page: plots, timeline markers, the KPI row and the event table, offline.

``python -m engine export REC --html OUT.html`` finds :func:`export_html` through the ``scalelab.exporters`` entry
point (``pyproject.toml``; the engine imports no UI), and the dashboard's Export buttons call it too. The page is
Bokeh's standalone HTML with every resource inline (``bokeh.resources.INLINE``): it opens by double-click with no
network and no server, and stays interactive -- pan and zoom (every time axis moves together), hover on every
plot, the event table sorted and filtered by kind in the browser.

Every plot is a :mod:`dashboard.plots` / :mod:`dashboard.timeline` function of the stored tables, the same ones the
dashboard and the notebooks draw: nothing is re-simulated for a ``.scalelab`` file (a version-1 JSON recording has
no tables, so it is replayed first, and checked).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import holoviews as hv
import numpy as np
import pandas as pd
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import (
    CDSView,
    CheckboxButtonGroup,
    ColumnDataSource,
    CustomJS,
    CustomJSFilter,
    DataTable,
    Div,
    NumberFormatter,
    Range1d,
    TableColumn,
)
from bokeh.resources import Resources

from dashboard import plots
from dashboard.frames import NodeLayout, latest_decision, placement_deltas
from dashboard.kpis import kpis_at as world_kpis_at
from dashboard.recordings import describe, recording_markers, recording_view, sample_interval, scenario_name
from dashboard.timeline import change_lines, markers, timeline_plot
from dashboard.views import EVENT_COLUMNS, KPI_CSS, kpi_html
from dashboard.worldplots import time_plots
from engine import InputError, Recording

#: Time columns of the page's placement heatmap (finer than the live view's: the page is drawn once).
PLACEMENT_COLUMNS = 240
#: Event rows the page's table holds at most (a day of a busy cluster: the rest is in the .scalelab file).
EVENT_ROWS = 20_000
#: Tools on at once in the page's time plots: drag pans, the wheel zooms the time axis (all of them move together).
ACTIVE = ["pan", "xwheel_zoom"]
#: Name prefix of the page's figures and tables (tests and scripts find them in ``Bokeh.documents[0]``).
PREFIX = "export"


class _BokehInline(Resources):
    """Bokeh's own JavaScript and CSS, inline. Bokeh also adds the external files of every model class imported in
    the process -- Panel's (a relative ``es-module-shims`` script) among them, which the page does not use and which
    could not load from a file:// page."""

    def __init__(self, components: list[str] | None = None) -> None:
        super().__init__(mode="inline", components=components)

    def _collect_external_resources(self, resource_attr: str) -> list[str]:
        return []

    def clone(self, *, components: list[str] | None = None) -> _BokehInline:  # bokeh clones to drop unused components
        return _BokehInline(components if components is not None else list(self.components))


PAGE_CSS = """
.rec-head {font-family: system-ui, sans-serif; padding: 6px 4px;}
.rec-head h1 {font-size: 21px; margin: 0 0 4px 0;}
.rec-head .rec-line {font-size: 14px;}
.rec-head .rec-help {font-size: 12px; opacity: 0.75; margin-top: 4px;}
.rec-head code {font-size: 11px;}
"""


def export_html(recording: Recording, out_path: str | os.PathLike[str]) -> int:
    """Write ``recording`` as one self-contained HTML page at ``out_path``; returns its size in bytes.

    Written to a temporary file beside ``out_path`` and renamed into place: a failed export leaves no partial page.
    Raises ``engine.InputError`` (one line naming the file) when the page cannot be written."""
    out = Path(out_path)
    page = page_html(recording).encode("utf-8")
    tmp = out.with_name(f".{out.name}.partial")
    try:
        tmp.write_bytes(page)
        os.replace(tmp, out)
    except OSError as e:
        raise InputError(f"{out}: cannot be written ({e.strerror or e}); allowed: a file path in a writable directory") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(page)


def page_html(recording: Recording) -> str:
    """The page as a string (see :func:`export_html`)."""
    frames = recording.tables or recording.replay().frames()
    title = f"scalelab · {recording.path.name} · {scenario_name(recording)}"
    return file_html(page_layout(recording, frames), resources=_BokehInline(), title=title)


def page_layout(recording: Recording, frames: Mapping[str, pd.DataFrame]) -> Any:
    """The page's Bokeh layout: header, KPI row, timeline, time plots, heatmaps, the event table and the change log."""
    frames = dict(frames)
    until = float(recording.until)
    interval = sample_interval(recording)
    events = frames.get("events", pd.DataFrame())
    marks = recording_markers(recording) if recording.tables else markers(events)
    shared = Range1d(0.0, max(until, 1.0))  # every time axis pans and zooms together

    def render(obj: hv.Element, timed: bool = True) -> Any:
        model = hv.render(obj, backend="bokeh")
        if timed:
            model.x_range = shared
        return model

    header = Div(text=_header_html(recording), stylesheets=[PAGE_CSS], sizing_mode="stretch_width")
    view = recording_view(recording)
    kpis = Div(text=kpi_html(world_kpis_at(view, frames, until), view), stylesheets=[KPI_CSS], sizing_mode="stretch_width")
    parts: list[Any] = [
        header,
        kpis,
        render(timeline_plot(marks, until, figure=f"{PREFIX}-timeline").opts(active_tools=["xpan", "xwheel_zoom"])),
    ]

    changes = change_lines(marks)
    time_figures = []
    for draw in time_plots(view, interval, prefix=PREFIX).values():  # the recording's world's plots
        overlay = draw(frames, changes).opts(active_tools=ACTIVE)
        time_figures.append(render(overlay))
    parts += [row(*time_figures[i : i + 2], sizing_mode="stretch_width") for i in range(0, len(time_figures), 2)]

    nodes = frames.get("nodes")
    if nodes is not None and len(nodes):
        layout = NodeLayout.from_nodes(nodes)
        deltas = placement_deltas(frames.get("placements", pd.DataFrame()))
        times = np.linspace(0.0, max(until, 1.0), PLACEMENT_COLUMNS)
        parts.append(render(plots.placement_heatmap(layout, deltas, times, figure=f"{PREFIX}-placement-heatmap")))
        block = latest_decision(frames.get("breakdowns", pd.DataFrame()))
        if len(block):
            at = plots.decision_time(frames["placements"], int(block["decision"].iloc[0]))
            parts.append(render(plots.score_heatmap(block, placed_at=at, figure=f"{PREFIX}-score-heatmap"), timed=False))

    parts += _event_table(events)
    parts += _change_table(recording)
    return column(*parts, sizing_mode="stretch_width")


def _header_html(rec: Recording) -> str:
    software = ", ".join(f"{k} {v}" for k, v in (rec.manifest.get("software") or {}).items())
    return (
        "<div class='rec-head'>"
        f"<h1>scalelab session: {html.escape(rec.path.name)}</h1>"
        f"<div class='rec-line'>{describe(rec)}</div>"
        f"<div class='rec-help'>Drag to pan, the mouse wheel zooms (every time axis moves with the others), hover for values; "
        "the toolbar's reset returns. Red dashed lines: faults; purple dotted: parameter changes. "
        f"Made by {html.escape(software or 'scalelab')}; digest <code>{html.escape(rec.digest[:16] or 'none')}</code>. "
        "Open the .scalelab file in the dashboard to scrub, replay or branch it.</div></div>"
    )


def _event_table(events: pd.DataFrame) -> list[Any]:
    """The event log as a sortable table, with buttons that filter it by kind (in the browser, no server)."""
    shown = events.reindex(columns=EVENT_COLUMNS).head(EVENT_ROWS)
    data = {c: shown[c].astype(object).where(shown[c].notna(), "").astype(str).to_list() for c in EVENT_COLUMNS if c != "time"}
    times = shown["time"].to_numpy(dtype=float)
    data["time"] = times.tolist()
    data["clock"] = [plots.hms(t) for t in times]
    source = ColumnDataSource(data, name=f"{PREFIX}-events-source")
    kinds = sorted(set(data["kind"]))
    group = CheckboxButtonGroup(labels=kinds, active=list(range(len(kinds))), name=f"{PREFIX}-event-kinds")
    view = CDSView(
        filter=CustomJSFilter(
            args={"group": group},
            code="const on = group.active.map(i => group.labels[i]); return source.data.kind.map(k => on.includes(k));",
        )
    )
    group.js_on_change("active", CustomJS(args={"source": source}, code="source.change.emit();"))
    columns = [
        TableColumn(field="clock", title="h:mm:ss", width=70),
        TableColumn(field="time", title="time (s)", formatter=NumberFormatter(format="0.[0]"), width=70),
    ]
    columns += [TableColumn(field=c, title=c) for c in EVENT_COLUMNS if c != "time"]
    table = DataTable(
        source=source, view=view, columns=columns, height=360, sizing_mode="stretch_width", index_position=None, name=f"{PREFIX}-events"
    )
    more = f" (the first {EVENT_ROWS:,} of {len(events):,})" if len(events) > EVENT_ROWS else f" ({len(events):,} rows)"
    title = Div(text=f"<h3 style='margin:8px 0 2px 0'>Event log{more}: click a column to sort; the buttons filter by kind</h3>")
    return [title, group, table]


def _change_table(rec: Recording) -> list[Any]:
    """What the user did: parameter changes, injected faults, control actions, with their simulated times."""
    changes = rec.changes
    if not len(changes):
        return [Div(text="<p>No parameter change, fault or control action was recorded.</p>")]
    source = ColumnDataSource(
        {
            "clock": [plots.hms(float(t)) for t in changes["time"]],
            "kind": changes["kind"].astype(str).to_list(),
            "name": changes["name"].astype(str).to_list(),
            "value": [str(v) for v in changes["value"]],
        },
        name=f"{PREFIX}-changes-source",
    )
    columns = [TableColumn(field=c, title=t) for c, t in (("clock", "h:mm:ss"), ("kind", "kind"), ("name", "name"), ("value", "value"))]
    table = DataTable(
        source=source, columns=columns, height=min(300, 30 + 26 * len(changes)), sizing_mode="stretch_width", index_position=None
    )
    table.name = f"{PREFIX}-changes"
    return [Div(text="<h3 style='margin:8px 0 2px 0'>Inputs and controls, as recorded</h3>"), table]
