"""A recording's time plots at a scrubbed time: drawn once whole as plain Bokeh figures, a scrub moves only the cut.

:class:`SeriesAt` renders each of the world's time plots (:func:`dashboard.worldplots.time_plots`, the same pure
functions the exported page draws) once, over the whole recording, so the axes are those of the whole recording and
stay put. Every curve's ``ColumnDataSource`` then holds the rows up to the scrubbed time: a scrub forward streams
only the rows between the two times (``ColumnDataSource.stream``), a scrub back sets the shorter prefix. No HoloViews
plot is redrawn on a scrub. (A ``CDSView`` filter would send less, but Bokeh refuses filters on lines and areas.)

A sample table of more than ``window`` sample times is thinned to every k-th time (and its last), so that the whole
history stays on screen with a few thousand points at most. Only public Bokeh and HoloViews API.
"""

from __future__ import annotations

import math
from typing import Any

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import ColumnDataSource, CustomJSHover, CustomJSTickFormatter, GlyphRenderer, HoverTool, LegendItem, Range1d
from bokeh.plotting import figure

from dashboard import plots
from dashboard.frames import SERIES_COLUMNS, cut, fault_frame, series_frame
from dashboard.liveplots import live_figures
from dashboard.plothooks import _time_ticker, hms_js
from dashboard.timeline import LANES, TIMELINE_HEIGHT, cursor

#: Glyph properties that name a renderer's time column, in the order they are looked for.
X_FIELDS = ("x", "x0", "left")


class _Cut:
    """One source's rows in time order, and how many of them it holds now."""

    def __init__(self, source: ColumnDataSource, column: str):
        self.source = source
        self.whole = {k: np.asarray(v) for k, v in source.data.items()}
        self.times = np.asarray(self.whole[column], dtype=float)
        self.held = len(self.times)

    def to(self, at: float) -> bool:
        """Hold the rows up to ``at`` (True if that changed what the source holds)."""
        n = int(np.searchsorted(self.times, at, side="right"))
        if n == self.held:
            return False
        if n > self.held:
            self.source.stream({k: v[self.held : n] for k, v in self.whole.items()})
        else:
            self.source.data = {k: v[:n] for k, v in self.whole.items()}
        self.held = n
        return True


def _time_column(renderer: GlyphRenderer) -> str | None:
    """The column a renderer's x comes from, when its source is a table in time order (else None: left whole)."""
    source = renderer.data_source
    if not isinstance(source, ColumnDataSource) or not source.data:
        return None
    lengths = {len(v) for v in source.data.values()}
    for name in X_FIELDS:
        field = getattr(renderer.glyph, name, None)
        column = field if isinstance(field, str) else getattr(field, "field", None)
        if isinstance(column, str) and column in source.data and len(lengths) == 1:
            times = np.asarray(source.data[column])
            if times.dtype.kind in "fiu" and (len(times) < 2 or bool(np.all(np.diff(times) >= 0))):
                return column
    return None


class SeriesAt(pn.viewable.Viewer):
    """The time plots of a recording's world as they stood at a time (see the module docs)."""

    def __init__(self, prefix: str, window: int):
        super().__init__()
        self.prefix, self.window = prefix, window
        self.figures: dict[str, Any] = {}
        self.layout = pn.GridBox(ncols=2, sizing_mode="stretch_width")
        self.sample_table = "samples"
        self.frames: dict[str, pd.DataFrame] = {}
        self.at = math.inf
        self._cuts: list[_Cut] = []
        self._faults: list[LegendItem] = []
        self._pending: float | None = None

    def load(self, draws: dict[str, Any], frames: dict[str, pd.DataFrame], sample_table: str) -> None:
        """New plots for a recording (``draws``: its world's plot functions of its tables), drawn whole."""
        self.sample_table = sample_table
        self.frames = self._thin(frames)
        self.figures = {name: hv.render(draw(self.frames), backend="bokeh") for name, draw in draws.items()}
        self._place()

    def load_vm(self, frames: dict[str, pd.DataFrame], sample_interval: float) -> None:
        """New plots for a VM-world recording: the live tab's Bokeh figures (:func:`dashboard.liveplots.live_figures`,
        no HoloViews), over one source of the whole series and one of its faults, their axes fitted to the whole."""
        self.sample_table = "samples"
        self.frames = self._thin(frames)
        series = series_frame(self.frames.get("samples", pd.DataFrame()), sample_interval)
        faults = fault_frame(self.frames.get("events", pd.DataFrame()))
        source = ColumnDataSource({c: series[c].to_numpy(dtype=float) for c in SERIES_COLUMNS})
        marks = ColumnDataSource(
            {"time": faults["time"].to_numpy(dtype=float), "fault": faults["fault"].to_numpy(dtype=object), "y": np.zeros(len(faults))}
        )
        drawn = live_figures({"live": source}, marks, self.prefix)
        drawn.fit({"live": source})
        drawn.show_faults(len(faults) > 0)
        self.figures = dict(drawn.figures)
        self._place()

    def load_functions(self, frames: dict[str, pd.DataFrame]) -> None:
        """New plots for a functions-world recording: the Functions tab's Bokeh figures (a source per function, no
        HoloViews: rendering its overlays of a curve per function and column took most of such a replay's opening)."""
        from dashboard.functions import FunctionPlots

        self.sample_table = "function_samples"
        self.frames = self._thin(frames)
        samples = self.frames.get("function_samples", pd.DataFrame())
        drawn = FunctionPlots(self.prefix, window=max(len(samples), 1), staged=False)  # its figures taken whole below
        drawn.push(samples)
        drawn.flush()
        self.figures = dict(drawn.figures)
        self._place()

    def load_declared(self, frames: dict[str, pd.DataFrame], specs: tuple) -> None:
        """New plots for a recording of a world that declares its time plots (the pod world): the live tab's Bokeh
        figures (:class:`dashboard.podview.PodPlots`, one source of the samples shared by every plot, no HoloViews:
        rendering an overlay per plot was a third of such a replay's opening and twice its models)."""
        from dashboard.podview import PodPlots

        self.sample_table = "samples"
        self.frames = self._thin(frames)
        samples = self.frames.get("samples", pd.DataFrame())
        drawn = PodPlots(specs, self.prefix, window=max(len(samples), 1))
        drawn.push(samples)
        drawn.flush()
        self.figures = {spec.name: drawn.figures[spec.name] for spec in specs}  # the FGD curve's x is not time: not cut
        self._place()

    def _place(self) -> None:
        """Each figure's sources in time order, cut at the scrubbed time from now on; the figures on the page."""
        self._cuts, self._faults = [], []
        seen: set[int] = set()
        for fig in self.figures.values():
            for renderer in fig.renderers:
                column = _time_column(renderer) if isinstance(renderer, GlyphRenderer) else None
                if column is not None and id(renderer.data_source) not in seen:  # a source shared by plots is cut once
                    seen.add(id(renderer.data_source))
                    self._cuts.append(_Cut(renderer.data_source, column))
            for legend in fig.legend:
                self._faults += [i for i in legend.items if str(getattr(i.label, "value", i.label)).startswith("fault")]
        self.layout[:] = [pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_height=plots.PLOT_HEIGHT) for fig in self.figures.values()]
        self.at, self._pending = math.inf, None

    def _thin(self, frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        table = frames.get(self.sample_table)
        if table is None or "time" not in table or not len(table):
            return frames
        times = table["time"].to_numpy(dtype=float)
        distinct = np.unique(times)
        if len(distinct) <= self.window:
            return frames
        kept = distinct[:: -(-len(distinct) // self.window)]
        kept = np.append(kept, distinct[-1])
        return {**frames, self.sample_table: table[np.isin(times, kept)]}

    def show(self, at: float) -> None:
        """Queue the state at ``at`` (drawn by the next :meth:`flush`)."""
        self._pending = float(at)

    def flush(self, budget: float = math.inf) -> bool:
        """Move every curve's cut to the queued time (``budget`` is not needed: a cut costs little); True when done."""
        del budget
        if self._pending is None or self._pending == self.at:
            self._pending = None
            return True
        self.at, self._pending = self._pending, None
        for part in self._cuts:
            part.to(self.at)
        for item in self._faults:
            shown = any(len(next(iter(r.data_source.data.values()), ())) for r in item.renderers)
            if item.visible != shown:
                item.visible = shown
        return True

    def shown(self) -> dict[str, pd.DataFrame]:
        """The tables the plots show (those of the recording up to the time drawn, the sample table thinned)."""
        return cut(self.frames, self.at) if math.isfinite(self.at) else dict(self.frames)

    def rows(self) -> int:
        """Rows of the sample table the plots show."""
        table = self.frames.get(self.sample_table)
        if table is None or not len(table):
            return 0
        return int(np.searchsorted(table["time"].to_numpy(dtype=float), self.at, side="right"))

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


class TimelineFigure:
    """The strip of a recording's markers (:func:`dashboard.timeline.timeline_plot`'s lanes, faint lines and hovers) as
    one Bokeh figure made once per tab, with a cursor at the scrubbed time: a recording replaces its sources' data.

    Not rendered through HoloViews: ``hv.render`` in a served callback themes the session's whole document (a walk of
    every model, and a change to every title made outside HoloViews), and it was a sixth of a replay's opening."""

    def __init__(self, name: str):
        self.lines = ColumnDataSource({"time": np.zeros(0)})
        self.lanes = {kind: ColumnDataSource(_lane_data(pd.DataFrame({"time": [], "label": []}), y)) for kind, (y, *_rest) in LANES.items()}
        fig = figure(
            name=name,
            title="Timeline: faults, parameter changes, play / pause / speed",
            x_range=Range1d(0.0, 1.0),
            y_range=Range1d(-0.6, 2.6),
            height=TIMELINE_HEIGHT,
            min_width=300,
            sizing_mode="stretch_width",
            tools="xpan,xwheel_zoom,reset",
            toolbar_location="right",
            x_axis_label="simulated time (h:mm:ss)",
        )
        fig.toolbar.autohide = True
        fig.yaxis.visible = False
        fig.xaxis.formatter = CustomJSTickFormatter(code=hms_js("tick"))
        fig.xaxis.ticker = _time_ticker()
        fig.xgrid.ticker = fig.xaxis[0].ticker
        fig.vspan(x="time", source=self.lines, line_color="#999999", line_width=1, line_alpha=0.35)
        when = CustomJSHover(code=hms_js("value"))
        for kind, (_y, color, marker, legend) in LANES.items():
            dots = fig.scatter("time", "lane", source=self.lanes[kind], color=color, marker=marker, size=11, legend_label=legend)
            fig.add_tools(
                HoverTool(renderers=[dots], tooltips=[("time", "@{time}{custom}"), (legend, "@{label}")], formatters={"@{time}": when})
            )
        fig.add_layout(fig.legend[0], "right")
        self.cursor = cursor(0.0)
        fig.add_layout(self.cursor)
        self.figure = fig

    def show(self, marks: pd.DataFrame, until: float) -> None:
        """The markers of a recording of ``until`` simulated seconds, the cursor at its end."""
        self.lines.data = {"time": marks["time"].to_numpy(dtype=float)}
        for kind, (y, *_rest) in LANES.items():
            self.lanes[kind].data = _lane_data(marks[marks["kind"] == kind], y)
        self.figure.x_range.update(start=0.0, end=max(float(until), 1.0))
        self.cursor.location = float(until)


def _lane_data(rows: pd.DataFrame, y: float) -> dict[str, np.ndarray]:
    return {
        "time": rows["time"].to_numpy(dtype=float),
        "lane": np.full(len(rows), float(y)),
        "label": rows["label"].astype(str).to_numpy(dtype=object),
    }
