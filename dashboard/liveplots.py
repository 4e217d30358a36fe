"""The live time plots as Bokeh figures over ``ColumnDataSource`` s, fed with ``ColumnDataSource.stream``.

A tick streams only its new rows (``stream(new, rollover=window)``): its drawing cost is proportional to what
changed, not to the window. The browser repaints every figure of a source it streams into, and every figure of an x
range it moves, so the six plots are two groups (:data:`GROUPS`, from ``TimePlot.group``), each with a source per run
holding only its plots' columns, a fault source and an x range of its own: the primary group (queue, time_left and its
band, workers) is streamed in every drawing round and in the frame a control's change asks for, the secondary group
(rates, waits, VM-hours) on a slower cadence (:mod:`dashboard.views`); a change's frame paints three figures, not six.
Within a group every plot ends at the same simulated time, and so do both groups whenever the run is paused or a
view is drawn whole. The y ranges are set from the server (:meth:`LiveFigures.fit`): a new run empties them at once
(no old axes survive a reset) and the legend keeps its headroom above the data. Faults are a ``VSpan`` per fault;
the queue plot names them on hover.

Styles (colours, dashes, labels, hovers) are those of :mod:`dashboard.plots`, which draws the same plots with
HoloViews for finished runs, recordings and exports. Only public Bokeh API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from bokeh.events import RangesUpdate
from bokeh.models import ColumnDataSource, CustomJS, CustomJSHover, CustomJSTickFormatter, GlyphRenderer, HoverTool, LegendItem, Range1d
from bokeh.plotting import figure

from dashboard.frames import SERIES_COLUMNS, WORKER_STATES
from dashboard.plothooks import _time_ticker, hms_js
from dashboard.plots import FAULT_COLOR, LEGEND_HEADROOM, PLOT_HEIGHT, RUN_STYLE, SECOND_RUNS, TIME_PLOTS, WAIT_STYLE, WORKER_COLORS

TOOLS = "pan,xwheel_zoom,box_zoom,reset,save"
#: The groups of live time plots (``TimePlot.group``), the first one streamed at once after a control's change.
GROUPS = ("primary", "secondary")
#: The series columns each live time plot draws or names on hover (besides ``time``): a group's source holds its plots'.
PLOT_COLUMNS: dict[str, tuple[str, ...]] = {
    "queue": ("queue_length",),
    "time_left": ("time_left", "time_left_shown", "time_left_clipped", "band_low", "band_high"),
    "workers": (*WORKER_STATES, *(f"stack_{i}" for i in range(len(WORKER_STATES) + 1)), "workers_total"),
    "rates": ("arrival_rate", "completion_rate"),
    "waits": ("wait_p50", "wait_p95", "wait_p99"),
    "vm_hours": ("vm_hours",),
}


def group_plots(group: str) -> list[str]:
    """The names of the time plots of ``group``, in display order."""
    return [name for name, spec in TIME_PLOTS.items() if spec.group == group]


def group_columns(group: str) -> list[str]:
    """The series columns of ``group``'s source: ``time`` and its plots' columns, in :data:`SERIES_COLUMNS` order."""
    wanted = {"time"}.union(*(PLOT_COLUMNS[name] for name in group_plots(group)))
    return [c for c in SERIES_COLUMNS if c in wanted]


def empty_series_data(columns: Sequence[str] = SERIES_COLUMNS) -> dict[str, np.ndarray]:
    return {c: np.zeros(0) for c in columns}


def empty_fault_data() -> dict[str, np.ndarray]:
    return {"time": np.zeros(0), "fault": np.array([], dtype=object), "y": np.zeros(0)}


#: A run's series: one source for every group (a recording drawn whole), or one per group.
Sources = ColumnDataSource | Mapping[str, ColumnDataSource]


def of_group(sources: Sources, group: str) -> ColumnDataSource:
    """The source of ``group`` among ``sources`` (one source serves every group)."""
    return sources[group] if isinstance(sources, Mapping) else sources


@dataclass
class LiveFigures:
    """The six time plots of one or two runs, an x range per group of plots (:data:`GROUPS`)."""

    figures: dict[str, figure]
    x_ranges: dict[str, Range1d]
    y_columns: dict[str, list[str]]  # per plot: the series columns its y range covers
    fault_items: list[LegendItem] = field(default_factory=list)

    @property
    def x_range(self) -> Range1d:
        """The primary group's x range."""
        return self.x_ranges[GROUPS[0]]

    def fit(self, sources: Mapping[str, Sources], groups: Sequence[str] = GROUPS) -> None:
        """Axes of ``groups``' plots that hold what the sources hold (an empty run: 0..1), the legend's headroom above
        the data (``sources``: run -> its series)."""
        for group in groups:
            figures = {name: self.figures[name] for name in group_plots(group)}
            held = [d for d in (of_group(s, group).data for s in sources.values()) if len(d["time"])]
            if not held:
                _set(self.x_ranges[group], 0.0, 1.0)
                for fig in figures.values():
                    _set(fig.y_range, 0.0, 1.0)
                continue
            lo = min(float(d["time"][0]) for d in held)
            hi = max(float(d["time"][-1]) for d in held)
            _set(self.x_ranges[group], lo, hi if hi > lo else lo + 1.0)
            for name, fig in figures.items():
                values = [np.asarray(d[c], dtype=float) for d in held for c in self.y_columns[name]]
                ymin = min((float(np.nanmin(v)) for v in values if np.isfinite(v).any()), default=0.0)
                ymax = max((float(np.nanmax(v)) for v in values if np.isfinite(v).any()), default=1.0)
                ymin = min(ymin, 0.0)
                span = ymax - ymin if ymax > ymin else max(abs(ymax), 1.0)
                _set(fig.y_range, ymin, ymax + span * LEGEND_HEADROOM / (1 - LEGEND_HEADROOM))

    def show_faults(self, any_fault: bool) -> None:
        """A legend entry for faults only once there is a fault to show."""
        for item in self.fault_items:
            if item.visible != any_fault:
                item.visible = any_fault


def _set(rng: Range1d, start: float, end: float) -> None:
    if rng.start != start or rng.end != end:
        rng.update(start=start, end=end)


def lean(renderer: GlyphRenderer) -> GlyphRenderer:
    """``renderer`` without its own nonselection and muted glyphs: nothing on these plots selects or mutes a curve, and
    "auto" (BokehJS derives them from the glyph) draws the same; two models fewer per curve for a page to build."""
    renderer.update(nonselection_glyph="auto", muted_glyph="auto")
    return renderer


def hms_hover(fig: figure) -> CustomJSHover:
    """The h:mm:ss formatter of ``fig``'s hovers: one model per figure, shared by its hover tools."""
    for tool in fig.tools:
        if isinstance(tool, HoverTool) and isinstance(tool.formatters, dict) and "@{time}" in tool.formatters:
            return tool.formatters["@{time}"]
    return CustomJSHover(code=hms_js("value"))


def _hover(fig: figure, renderer, items: list[tuple[str, str]], vline: bool = True) -> None:
    fig.add_tools(
        HoverTool(
            renderers=[renderer],
            tooltips=[("time", "@{time}{custom}"), *items],
            formatters={"@{time}": hms_hover(fig)},
            mode="vline" if vline else "mouse",
        )
    )


#: One hover's tooltip for every curve of a plot: the rows BokehJS draws for ``[("time", ...), (name, value)]``, with the
#: curve's name (``$name``) as the second label and its value under the mouse (``$snap_y``) in the given format.
CURVE_TOOLTIP = (
    '<div style="display: table; border-spacing: 2px">'
    '<div style="display: table-row"><div style="display: table-cell" class="bk-tooltip-row-label">time: </div>'
    '<div style="display: table-cell" class="bk-tooltip-row-value">@{time}{custom}</div></div>'
    '<div style="display: table-row"><div style="display: table-cell" class="bk-tooltip-row-label">$name: </div>'
    '<div style="display: table-cell" class="bk-tooltip-row-value">$snap_y{DIGITS}</div></div></div>'
)


def curves_hover(fig: figure, renderers: Sequence[GlyphRenderer], digits: str = "0.[000]") -> None:
    """One hover tool for the time curves ``renderers`` of ``fig``: a tooltip per curve under the mouse with the time, the
    curve's name and its value, as a hover per curve showed (which cost a hover tool and a formatter per curve)."""
    if renderers:
        fig.add_tools(
            HoverTool(
                renderers=list(renderers),
                tooltips=CURVE_TOOLTIP.replace("DIGITS", digits),
                formatters={"@{time}": hms_hover(fig)},
                mode="vline",
            )
        )


def _line(fig, source, y: str, label: str, color: str, dash: str = "solid", width: float = 2.0, hover: list[str] | None = None):
    r = lean(fig.line("time", y, source=source, color=color, line_dash=dash, line_width=width, legend_label=label))
    shown = [y] + [c for c in (hover or []) if c != y]
    _hover(fig, r, [(c.replace("_", " "), f"@{{{c}}}{{0.[00]}}") for c in shown])
    return r


def _suffix(run: str) -> str:
    return "" if run == "live" else f" {run}"


def _body(name: str, fig: figure, source: ColumnDataSource, run: str) -> list[str]:
    """Draw plot ``name`` of ``run`` into ``fig``; returns the columns its y range must cover."""
    color, dash = RUN_STYLE[run]
    s = _suffix(run)
    if name == "queue":
        _line(fig, source, "queue_length", "queue" + s, color, dash)
        return ["queue_length"]
    if name == "time_left":
        band = color if run != "live" else "#1a9850"
        lean(fig.varea("time", "band_low", "band_high", source=source, color=band, alpha=0.15, legend_label="band" + s))
        _line(fig, source, "time_left_shown", "time_left" + s, color, dash, hover=["time_left", "band_low", "band_high"])
        capped = lean(
            fig.scatter(
                "time", "time_left_clipped", source=source, color=color, marker="triangle", size=7, legend_label="off the scale" + s
            )
        )
        _hover(fig, capped, [("time_left", "@{time_left}{0.[0]} s")], vline=False)
        return ["time_left_shown", "band_low", "band_high"]
    if name == "workers":
        if run != "live":
            _line(fig, source, "workers_active", f"active {run}", color, dash, hover=["workers_total"])
            return ["workers_active"]
        for i, state in enumerate(WORKER_STATES):
            label = state.removeprefix("workers_").replace("_", " ")
            lean(
                fig.varea("time", f"stack_{i}", f"stack_{i + 1}", source=source, color=WORKER_COLORS[state], alpha=0.85, legend_label=label)
            )
        _line(fig, source, "workers_total", "total", "#8c8c8c", width=1.5, hover=list(WORKER_STATES))
        return ["stack_0", f"stack_{len(WORKER_STATES)}", "workers_total"]
    if name == "rates":
        if run not in SECOND_RUNS:
            _line(fig, source, "arrival_rate", "arrivals", "#999999", width=1.5)
        _line(fig, source, "completion_rate", "completions" + s, color, dash, width=1.5)
        return ["arrival_rate", "completion_rate"]
    if name == "waits":
        if run != "live":
            _line(fig, source, "wait_p95", f"p95 {run}", color, dash)
            return ["wait_p95"]
        for c, (col, d, lbl) in WAIT_STYLE.items():
            _line(fig, source, c, lbl, col, d, width=1.6)
        return list(WAIT_STYLE)
    if name == "vm_hours":
        _line(fig, source, "vm_hours", "VM-hours" + s, color, dash)
        return ["vm_hours"]
    raise KeyError(name)


def live_figures(sources: Mapping[str, Sources], faults: Sources, prefix: str) -> LiveFigures:
    """The time plots of ``sources`` (run -> its series: a source, or one per group; the first run's ``faults`` marked,
    a source or one per group), named ``prefix-NAME``."""
    split = any(isinstance(s, Mapping) for s in sources.values())
    shared = Range1d(0.0, 1.0)  # one source for every group (a recording drawn whole): one x range for all six
    x_ranges = {group: Range1d(0.0, 1.0) if split else shared for group in GROUPS}
    tickers = {group: _time_ticker() for group in GROUPS} if split else dict.fromkeys(GROUPS, _time_ticker())  # one per x range
    figures, y_columns, fault_items = {}, {}, []
    for name in TIME_PLOTS:
        spec = TIME_PLOTS[name]
        fig = time_figure(f"{prefix}-{name}", spec.title, spec.ylabel, x_ranges[spec.group], ticker=tickers[spec.group])
        cols: list[str] = []
        for run, source in sources.items():
            cols += _body(name, fig, of_group(source, spec.group), run)
        marks = of_group(faults, spec.group)
        spans = lean(fig.vspan(x="time", source=marks, line_color=FAULT_COLOR, line_dash="dashed", line_width=1.2, line_alpha=0.8))
        marked = [spans]
        if name == "queue":  # one plot names the faults on hover (a marker per plot would cost a glyph and a hover each)
            feet = lean(fig.scatter("time", "y", source=marks, color=FAULT_COLOR, marker="inverted_triangle", size=10))
            _hover(fig, feet, [("fault", "@{fault}")], vline=False)
            marked.append(feet)
        fig.xgrid.visible = False  # the y grid and the time axis's ticks stay; a grid renderer is a forced style recalc per paint
        legend = fig.legend[0]
        item = LegendItem(label="fault" if name != "queue" else "fault (hover: which)", renderers=marked, visible=False)
        legend.items.append(item)
        fault_items.append(item)
        legend.update(
            location="top_left",
            ncols=6,
            background_fill_alpha=0.75,
            label_text_font_size="8pt",
            padding=2,
            spacing=0,
            margin=2,
        )
        figures[name], y_columns[name] = fig, cols
    if split:
        _zoom_together(figures, x_ranges)
    return LiveFigures(figures, x_ranges, y_columns, fault_items)


def _zoom_together(figures: dict[str, figure], x_ranges: dict[str, Range1d]) -> None:
    """A pan, zoom or reset of one group's plots moves the other group's x range too, in the browser (``RangesUpdate``
    is emitted for the user's tools only, not for the server's streams and fits)."""
    for group, other in zip(GROUPS, GROUPS[::-1], strict=True):
        follow = CustomJS(
            args={"other": x_ranges[other]},
            code="if (other.start !== cb_obj.x0 || other.end !== cb_obj.x1) { other.start = cb_obj.x0; other.end = cb_obj.x1 }",
        )
        for name in group_plots(group):
            figures[name].js_on_event(RangesUpdate, follow)


# -- any world's streamed plots (the function platform's, the pod world's) ---------------------------------------------
#: Line colours of a world's curves, one per function or per declared column.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
DASHES = ("solid", "dashed", "dotted", "dashdot")


def stream_or_set(source: ColumnDataSource, new: dict[str, Any], rollover: int) -> None:
    """Stream ``new`` rows into ``source``, or set them as its data when it holds none: a source made or emptied in the
    same held document update as a stream would reach the browser with those rows twice (once in the new model or the
    data change, serialized when the update is sent, and once in the stream event)."""
    if len(next(iter(source.data.values()), ())):
        source.stream(new, rollover=rollover)
    else:
        source.data = new


class Streamed:
    """One run's rows of some numeric columns in a bounded :class:`ColumnDataSource`: :meth:`push` queues a frame,
    :meth:`flush` streams only what was queued (``stream(new, rollover=window)``), :meth:`clear` empties it at once.
    ``positive`` columns hold NaN for values <= 0 (a log axis cannot show them: the line has a gap there)."""

    def __init__(self, columns: list[str], window: int, name: str | None = None, positive: tuple[str, ...] = ()):
        self.columns = list(dict.fromkeys(columns))
        self.window = window
        self.positive = set(positive)
        self.source = ColumnDataSource({c: np.zeros(0) for c in self.columns}, **({"name": name} if name else {}))
        self._pending: list[Any] = []

    def push(self, frame: Any) -> None:
        if len(frame):
            self._pending.append(frame)
            if len(self._pending) > 8 and sum(len(p) for p in self._pending) > 2 * self.window:
                self._pending = [pd.concat(self._pending, ignore_index=True).iloc[-self.window :]]

    def flush(self) -> bool:
        """Stream the queued rows; True if there were any."""
        if not self._pending:
            return False
        batch = self._pending[0] if len(self._pending) == 1 else pd.concat(self._pending, ignore_index=True)
        self._pending = []
        batch = batch.iloc[-self.window :]
        new = {}
        for c in self.columns:
            values = batch[c].to_numpy(dtype=float, na_value=np.nan) if c in batch else np.full(len(batch), np.nan)
            new[c] = np.where(values > 0, values, np.nan) if c in self.positive else values
        stream_or_set(self.source, new, self.window)
        return True

    def clear(self) -> None:
        self._pending = []
        if len(self.source.data.get(self.columns[0], ())):
            self.source.data = {c: np.zeros(0) for c in self.columns}

    def held(self) -> int:
        return len(self.source.data[self.columns[0]])


def time_figure(
    name: str, title: str, ylabel: str, x_range: Range1d, log: bool = False, height: int = PLOT_HEIGHT, ticker: Any = None
) -> figure:
    """An empty time plot named ``name`` on the shared ``x_range`` (h:mm:ss ticks), its y range set by :func:`fit_y`;
    ``ticker``: the time ticker of the plots on that range (one model for all of them; a new one if not given)."""
    fig = figure(
        name=name,
        title=title,
        x_range=x_range,
        y_range=Range1d(1.0, 10.0) if log else Range1d(0.0, 1.0),
        y_axis_type="log" if log else "linear",
        height=height,
        min_width=300,
        sizing_mode="stretch_width",
        tools=TOOLS,
        active_scroll=None,
        toolbar_location="right",
        x_axis_label="simulated time (h:mm:ss)",
        y_axis_label=ylabel,
    )
    fig.toolbar.autohide = True
    fig.xaxis.formatter = CustomJSTickFormatter(code=hms_js("tick"))
    fig.xaxis.ticker = fig.xgrid.ticker = ticker if ticker is not None else _time_ticker()
    return fig


def style_legend(fig: figure, ncols: int = 4) -> None:
    """The legend of a streamed plot: top left, compact, see-through (above the data: see :func:`fit_y`)."""
    if fig.legend:
        fig.legend[0].update(
            location="top_left", ncols=ncols, background_fill_alpha=0.75, label_text_font_size="8pt", padding=2, spacing=0, margin=2
        )


def series_line(
    fig: figure,
    source: ColumnDataSource,
    y: str,
    label: str,
    color: str,
    dash: str = "solid",
    x: str = "time",
    digits: str = "0.[000]",
    hover: bool = True,
):
    """A line of column ``y`` of ``source`` with its own hover (the time, or ``x``, and the value under the mouse), or
    none (``hover=False``: the caller gives the plot's curves one, :func:`curves_hover`)."""
    r = lean(fig.line(x, y, source=source, color=color, line_dash=dash, line_width=2.0, legend_label=label, name=label))
    if not hover:
        return r
    if x == "time":
        _hover(fig, r, [(label, f"@{{{y}}}{{{digits}}}")])
    else:
        fig.add_tools(HoverTool(renderers=[r], tooltips=[(x.replace("_", " "), f"@{{{x}}}{{0.[0]}}"), (label, f"@{{{y}}}{{{digits}}}")]))
    return r


def fit_x(x_range: Range1d, sources: list[ColumnDataSource], column: str = "time") -> None:
    """The shared x range over what ``sources`` hold (nothing held: 0..1): every plot of the run ends at the same time."""
    held = [s.data[column] for s in sources if len(s.data[column])]
    if not held:
        _set(x_range, 0.0, 1.0)
        return
    lo = min(float(np.nanmin(h)) for h in held)
    hi = max(float(np.nanmax(h)) for h in held)
    _set(x_range, lo, hi if hi > lo else lo + 1.0)


def fit_y(fig: figure, arrays: list[Any], log: bool = False) -> None:
    """The y range over ``arrays`` with the legend's headroom above the data (a log axis: positive values only)."""
    finite = [np.asarray(a, dtype=float) for a in arrays]
    finite = [a[np.isfinite(a) & ((a > 0) if log else True)] for a in finite]
    finite = [a for a in finite if a.size]
    if log:
        if not finite:
            _set(fig.y_range, 1.0, 10.0)
            return
        lo, hi = min(float(a.min()) for a in finite), max(float(a.max()) for a in finite)
        decades = max(np.log10(hi / lo), 1.0)
        _set(fig.y_range, lo / 1.5, hi * 10 ** (decades * LEGEND_HEADROOM / (1 - LEGEND_HEADROOM)))
        return
    ymin = min([0.0, *(float(a.min()) for a in finite)])
    ymax = max([0.0, *(float(a.max()) for a in finite)]) if finite else 1.0
    span = ymax - ymin if ymax > ymin else max(abs(ymax), 1.0)
    _set(fig.y_range, ymin, ymax + span * LEGEND_HEADROOM / (1 - LEGEND_HEADROOM))
