"""Plots: bokeh figures fed by ColumnDataSource.stream(rollover=...) so every window is bounded.

Streaming straight into bokeh sources costs well under a millisecond per tick (a HoloViews Buffer costs
~10 ms); heatmaps are images on numpy grids. Views only read the engine's recorded tables, as the feed
hands them out (:mod:`dashboard.feed`): the same views render a live session, a finished run or a recording.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import (
    BasicTicker,
    ColorBar,
    ColumnDataSource,
    DataRange1d,
    FactorRange,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from dashboard.feed import Feed, FramesSource, KpiTracker
from dashboard.gpu import GpuDeviceView

#: Samples kept on screen per run and plot (a few thousand points at most; see the recipe).
WINDOW = 1500
#: Event-log rows kept.
EVENT_ROWS = 200
#: Time columns of the placement heatmap.
HEATMAP_COLUMNS = 120

RUN_STYLE = {"live": ("#1f77b4", "solid"), "A": ("#1f77b4", "solid"), "B": ("#d62728", "dashed")}
WORKER_STATES = ["workers_booting", "workers_active", "workers_shutting_down", "workers_suspended"]
WORKER_COLORS = ["#fdae61", "#1a9850", "#d73027", "#91bfdb"]
SAMPLE_COLUMNS = [
    "time",
    "queue_length",
    *WORKER_STATES,
    "time_left",
    "band_low",
    "band_high",
    "arrival_rate",
    "completion_rate",
    "wait_p50",
    "wait_p95",
    "wait_p99",
    "vm_hours",
]


def to_columns(samples: pd.DataFrame, sample_interval: float) -> dict[str, np.ndarray]:
    """The plotted columns of a block of samples (rates per second, VM-hours)."""
    out = {}
    for c in SAMPLE_COLUMNS:
        if c == "arrival_rate":
            out[c] = samples["arrivals"].to_numpy(dtype=float) / sample_interval
        elif c == "completion_rate":
            out[c] = samples["completions"].to_numpy(dtype=float) / sample_interval
        elif c == "vm_hours":
            out[c] = samples["vm_seconds"].to_numpy(dtype=float) / 3600.0
        else:
            out[c] = samples[c].to_numpy(dtype=float)
    return out


def empty_columns() -> dict[str, list]:
    return {c: [] for c in SAMPLE_COLUMNS}


def _figure(title: str, x_range: DataRange1d, y_label: str, height: int = 210) -> figure:
    fig = figure(
        title=title,
        x_range=x_range,
        height=height,
        sizing_mode="stretch_width",
        tools="pan,xwheel_zoom,reset,save",
        x_axis_label="simulated time (s)",
        y_axis_label=y_label,
        output_backend="canvas",
    )
    fig.toolbar.logo = None
    fig.y_range.start = 0
    return fig


class TimeSeriesViews:
    """The time plots for one run (live) or two runs overlaid (compare), all on one bounded window."""

    def __init__(self, runs: tuple[str, ...] = ("live",)):
        self.runs = runs
        self.sources = {r: ColumnDataSource(data=empty_columns(), name=f"samples-{r}") for r in runs}
        self.fault_sources = {r: ColumnDataSource(data={"time": [], "y": [], "fault": []}, name=f"faults-{r}") for r in runs}
        self.x_range = DataRange1d(range_padding=0.0)
        single = len(runs) == 1
        self.figures: dict[str, figure] = {}

        fig = _figure("Queue length", self.x_range, "jobs")
        for r in runs:
            color, dash = RUN_STYLE[r]
            fig.line(
                "time",
                "queue_length",
                source=self.sources[r],
                color=color,
                line_dash=dash,
                line_width=2,
                legend_label="queue" if single else f"run {r}",
            )
            fig.scatter(
                "time", "y", source=self.fault_sources[r], marker="inverted_triangle", size=11, color="#b2182b", legend_label="fault"
            )
        fig.add_tools(HoverTool(tooltips=[("t", "@time{0}"), ("queue", "@queue_length")], mode="vline"))
        self.figures["queue"] = fig

        fig = _figure("Drain time_left and the [MIN, MAX] band", self.x_range, "seconds")
        for r in runs:
            color, dash = RUN_STYLE[r]
            fig.varea(
                "time",
                "band_low",
                "band_high",
                source=self.sources[r],
                fill_color=color,
                fill_alpha=0.15,
                legend_label="band" if single else f"band {r}",
            )
            fig.line(
                "time",
                "time_left",
                source=self.sources[r],
                color=color,
                line_dash=dash,
                line_width=2,
                legend_label="time_left" if single else f"time_left {r}",
            )
        self.figures["time_left"] = fig

        fig = _figure("Workers by state", self.x_range, "VMs")
        if single:
            fig.varea_stack(
                WORKER_STATES,
                x="time",
                source=self.sources[runs[0]],
                color=WORKER_COLORS,
                legend_label=[s.removeprefix("workers_").replace("_", " ") for s in WORKER_STATES],
            )
        else:
            for r in runs:
                color, dash = RUN_STYLE[r]
                fig.line(
                    "time", "workers_active", source=self.sources[r], color=color, line_dash=dash, line_width=2, legend_label=f"active {r}"
                )
        self.figures["workers"] = fig

        fig = _figure("Arrival and completion rates", self.x_range, "jobs / s")
        for r in runs:
            color, dash = RUN_STYLE[r]
            if r == runs[0]:
                fig.line("time", "arrival_rate", source=self.sources[r], color="#999999", line_width=1.5, legend_label="arrivals")
            fig.line(
                "time",
                "completion_rate",
                source=self.sources[r],
                color=color,
                line_dash=dash,
                line_width=1.5,
                legend_label="completions" if single else f"completions {r}",
            )
        self.figures["rates"] = fig

        fig = _figure("Wait-time percentiles", self.x_range, "seconds")
        for r in runs:
            color, dash = RUN_STYLE[r]
            if single:
                for col, c, lbl in (("wait_p50", "#74add1", "p50"), ("wait_p95", "#f46d43", "p95"), ("wait_p99", "#a50026", "p99")):
                    fig.line("time", col, source=self.sources[r], color=c, line_width=1.5, legend_label=lbl)
            else:
                fig.line("time", "wait_p95", source=self.sources[r], color=color, line_dash=dash, line_width=2, legend_label=f"p95 {r}")
        self.figures["waits"] = fig

        fig = _figure("Cumulative VM-hours", self.x_range, "VM-hours")
        for r in runs:
            color, dash = RUN_STYLE[r]
            fig.line(
                "time",
                "vm_hours",
                source=self.sources[r],
                color=color,
                line_dash=dash,
                line_width=2,
                legend_label="VM-hours" if single else f"run {r}",
            )
        self.figures["vm_hours"] = fig

        for fig in self.figures.values():
            fig.legend.location = "top_left"
            fig.legend.click_policy = "hide"
            fig.legend.background_fill_alpha = 0.6
            fig.legend.label_text_font_size = "8pt"
            fig.legend.spacing = 0
            fig.legend.padding = 2

        self.layout = pn.GridBox(
            *[pn.pane.Bokeh(f, sizing_mode="stretch_width") for f in self.figures.values()], ncols=2, sizing_mode="stretch_width"
        )

    def clear(self) -> None:
        for src in self.sources.values():
            src.data = empty_columns()
        for src in self.fault_sources.values():
            src.data = {"time": [], "y": [], "fault": []}

    def push(self, run: str, samples: pd.DataFrame, events: pd.DataFrame, sample_interval: float) -> None:
        if len(samples):
            self.sources[run].stream(to_columns(samples, sample_interval), rollover=WINDOW)
        if len(events):
            faults = events[events["kind"] == "fault"]
            if len(faults):
                self.fault_sources[run].stream(
                    {
                        "time": faults["time"].to_numpy(dtype=float),
                        "y": np.zeros(len(faults)),
                        "fault": (faults["command"].astype(str) + " (" + faults["reason"].astype(str) + ")").to_numpy(),
                    },
                    rollover=100,
                )


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(v, spec)


KPI_LABELS = [
    ("queue", "Queue", "d"),
    ("active_workers", "Active workers", "d"),
    ("wait_p95", "p95 wait (s)", ".1f"),
    ("vm_hours", "VM-hours", ".2f"),
    ("outside_band", "Outside band", ".0%"),
    ("master_state", "Master", "s"),
    ("time", "Sim time (s)", ".0f"),
]


def kpi_html(kpis: dict[str, Any], diff: dict[str, Any] | None = None) -> str:
    """The KPI row as HTML (values carry data-kpi attributes for tests)."""
    cells = []
    for key, label, spec in KPI_LABELS:
        value = kpis.get(key)
        extra = ""
        if diff is not None and key in diff:
            extra = f"<div class='kpi-diff'>B-A {_fmt(diff[key], '+' + spec if spec != 's' else spec)}</div>"
        cls = "kpi-value"
        if key == "master_state" and value and not value.upper().endswith("RUNNING"):
            cls += " kpi-alarm"
        cells.append(
            f"<div class='kpi'><div class='kpi-label'>{label}</div>"
            f"<div class='{cls}' data-kpi='{key}'>{html.escape(_fmt(value, spec))}</div>{extra}</div>"
        )
    return "<div class='kpi-row'>" + "".join(cells) + "</div>"


KPI_CSS = """
.kpi-row {display: flex; gap: 10px; flex-wrap: wrap;}
.kpi {border: 1px solid #ddd; border-radius: 6px; padding: 4px 12px; min-width: 110px; background: #fafafa;}
.kpi-label {font-size: 11px; color: #666;}
.kpi-value {font-size: 20px; font-weight: 600;}
.kpi-alarm {color: #b2182b;}
.kpi-diff {font-size: 11px; color: #444;}
"""


class KpiRow:
    def __init__(self):
        self.pane = pn.pane.HTML("", stylesheets=[KPI_CSS], sizing_mode="stretch_width", min_height=60)

    def update(self, kpis: dict[str, Any], diff: dict[str, Any] | None = None) -> None:
        text = kpi_html(kpis, diff)
        if text != self.pane.object:
            self.pane.object = text


EVENT_COLUMNS = ["time", "kind", "command", "rule", "vm", "vm_type", "node", "reason", "value"]


EVENT_CSS = """
.event-log {max-height: 300px; overflow-y: auto; font-size: 12px;}
.event-log table {border-collapse: collapse; width: 100%;}
.event-log th {position: sticky; top: 0; background: #f3f3f3; text-align: left; padding: 2px 6px;}
.event-log td {padding: 1px 6px; border-bottom: 1px solid #eee; white-space: nowrap;}
.event-log tr.fault td {color: #b2182b;}
"""


class EventLog:
    """Commands with the rule that produced each, faults, parameter changes; newest first, bounded.

    A plain HTML table rebuilt on :meth:`flush` (a bounded number of rows): cheaper on the server and in the
    browser than streaming into a data-grid widget.
    """

    def __init__(self):
        self.rows = pd.DataFrame({c: pd.Series(dtype=float if c == "time" else object) for c in EVENT_COLUMNS})
        self.kinds = pn.widgets.CheckButtonGroup(
            options=["command", "fault", "param", "placement", "vm"], value=["command", "fault", "param", "placement", "vm"], color="light"
        )
        self.kinds.param.watch(lambda e: self._send(), "value")
        self.table = pn.pane.HTML("", stylesheets=[EVENT_CSS], sizing_mode="stretch_width", min_height=60)
        self.pane = pn.Column(self.kinds, self.table, sizing_mode="stretch_width")
        self._pending: list[pd.DataFrame] = []

    def clear(self) -> None:
        self._pending = []
        self.rows = self.rows.iloc[0:0]
        self._send()

    def push(self, events: pd.DataFrame) -> None:
        """Queue events; :meth:`flush` sends them (the table costs more than a plot, so it updates less often)."""
        if len(events):
            self._pending.append(events)

    def flush(self) -> None:
        if not self._pending:
            return
        new = pd.concat(self._pending, ignore_index=True) if len(self._pending) > 1 else self._pending[0]
        self._pending = []
        new = new.reindex(columns=EVENT_COLUMNS).iloc[::-1].head(EVENT_ROWS * 4)
        self.rows = pd.concat([new, self.rows], ignore_index=True).head(EVENT_ROWS * 4) if len(self.rows) else new.reset_index(drop=True)
        self._send()

    def _send(self) -> None:
        shown = self.rows[self.rows["kind"].isin(self.kinds.value)].head(EVENT_ROWS)
        cells = {c: shown[c].astype(object).where(shown[c].notna(), "").astype(str).map(html.escape).to_numpy() for c in EVENT_COLUMNS[1:]}
        times = shown["time"].to_numpy(dtype=float)
        body = "".join(
            f"<tr class='{cells['kind'][i]}'><td>{times[i]:.1f}</td>"
            + "".join(f"<td>{cells[c][i]}</td>" for c in EVENT_COLUMNS[1:])
            + "</tr>"
            for i in range(len(shown))
        )
        head = "".join(f"<th>{c}</th>" for c in EVENT_COLUMNS)
        self.table.object = f"<div class='event-log'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


class PlacementHeatmap:
    """Nodes (grouped by region and type) x time, coloured by replicas or cpu allocation; a numpy grid image.

    Built from the ``nodes`` table and the ``placements`` table (each bind adds the pod to its node, each
    release or loss takes it away), so a live session, a finished run and a recording draw the same.
    """

    def __init__(self):
        self.mapper = LinearColorMapper(palette=Viridis256, low=0, high=1)
        self.source = ColumnDataSource(
            {"image": [np.zeros((1, 1))], "x": [0.0], "y": [0.0], "dw": [1.0], "dh": [1.0]}, name="placement-grid"
        )
        self.fig = figure(
            title="Placement over time (nodes grouped by region and type)",
            height=380,
            sizing_mode="stretch_width",
            tools="save,reset",
            x_axis_label="simulated time (s)",
            x_range=DataRange1d(range_padding=0),
            y_range=DataRange1d(range_padding=0),
        )
        self.fig.toolbar.logo = None
        self.fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.source, color_mapper=self.mapper)
        self.fig.add_layout(ColorBar(color_mapper=self.mapper, ticker=BasicTicker(), width=8), "right")
        # invisible rows over the image name the node under the mouse; lines separate the regions
        self.rows = ColumnDataSource({"left": [], "right": [], "bottom": [], "top": [], "node": []}, name="placement-rows")
        rows = self.fig.quad(
            left="left",
            right="right",
            bottom="bottom",
            top="top",
            source=self.rows,
            fill_alpha=0,
            line_alpha=0,
            hover_fill_alpha=0.15,
            hover_fill_color="white",
        )
        self.fig.add_tools(HoverTool(renderers=[rows], tooltips=[("node", "@node")]))
        self.separators = ColumnDataSource({"x0": [], "x1": [], "y": []}, name="placement-regions")
        self.fig.segment(x0="x0", x1="x1", y0="y", y1="y", source=self.separators, line_color="white", line_width=1.5)
        self.note = pn.pane.Markdown("No cluster in this scenario: placement views appear for scenarios with a `cluster`.", visible=False)
        self.metric = pn.widgets.RadioButtonGroup(options=["replicas", "utilisation"], value="replicas", color="light")
        self.metric.param.watch(lambda e: self.render(), "value")
        self.plot = pn.pane.Bokeh(self.fig, sizing_mode="stretch_width")
        self.layout = pn.Column(pn.Row(pn.pane.Markdown("**Colour by**"), self.metric), self.note, self.plot, sizing_mode="stretch_width")
        self.clear()

    def clear(self) -> None:
        self.order: np.ndarray | None = None
        self.cpu_capacity = np.zeros(0)
        self.deltas: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (time, node, replicas, cpu) per batch
        self.times: list[float] = []  # when the live view took a column

    def set_nodes(self, nodes: pd.DataFrame) -> None:
        """The cluster's nodes (the ``nodes`` table): row order, labels, region separators."""
        keys = [k for k in ("region", "locality", "node_class", "node") if k in nodes.columns]
        ordered = nodes.reset_index(drop=True).sort_values(keys, kind="stable")
        self.order = ordered["node_index"].to_numpy()
        self.cpu_capacity = nodes.sort_values("node_index")["cpu_capacity"].to_numpy(dtype=float)
        n = len(ordered)
        labels = [" / ".join(str(ordered.iloc[i][k]) for k in keys) for i in range(n)]
        self._labels = np.array(labels, dtype=object)
        regions = ordered[keys[0]].astype(str).to_numpy()
        self._region_edges = np.array([i for i in range(1, n) if regions[i] != regions[i - 1]], dtype=float)
        if n <= 24:
            ticks = list(np.arange(n) + 0.5)
            overrides = {float(t): lbl for t, lbl in zip(ticks, labels, strict=True)}
        else:  # too many to name: label the middle of each region's block
            starts = [i for i in range(n) if i == 0 or regions[i] != regions[i - 1]] + [n]
            ticks = [(a + b) / 2 for a, b in zip(starts[:-1], starts[1:], strict=True)]
            overrides = {float(t): regions[a] for t, a in zip(ticks, starts[:-1], strict=True)}
            if len(ticks) > 40:
                ticks, overrides = [], {}
        self.fig.yaxis.ticker = FixedTicker(ticks=ticks)
        self.fig.yaxis.major_label_overrides = overrides
        self.fig.yaxis.major_label_text_font_size = "8pt"

    def push(self, nodes: pd.DataFrame, placements: pd.DataFrame) -> None:
        """New rows of the ``nodes`` and ``placements`` tables."""
        if len(nodes):
            self.set_nodes(nodes)
        if len(placements):
            action = placements["action"].astype(str).to_numpy()
            sign = np.where(action == "bind", 1.0, np.where(np.isin(action, ["release", "lost"]), -1.0, 0.0))
            keep = sign != 0
            if keep.any():
                node = placements["node_index"].to_numpy(dtype=float, na_value=np.nan)[keep].astype(int)
                self.deltas.append(
                    (
                        placements["time"].to_numpy(dtype=float)[keep],
                        node,
                        sign[keep],
                        sign[keep] * placements["cpu_millis"].to_numpy(dtype=float)[keep],
                    )
                )

    def grid_at(self, times: np.ndarray) -> np.ndarray:
        """Nodes (in display order) x ``times``: replicas on each node, or its cpu allocation share."""
        n = len(self.cpu_capacity)
        out = np.zeros((n, len(times)), dtype=np.float32)
        if not self.deltas:
            return out
        t, node, rep, cpu = (np.concatenate(parts) for parts in zip(*self.deltas, strict=True))
        value = rep if self.metric.value == "replicas" else cpu / np.maximum(self.cpu_capacity[node], 1e-9)
        state = np.zeros(n)
        j = 0
        for k, at in enumerate(times):
            stop = int(np.searchsorted(t, at, side="right"))
            if stop > j:
                np.add.at(state, node[j:stop], value[j:stop])
                j = stop
            out[:, k] = state
        return out[self.order]

    def tick(self, now: float) -> None:
        """Live: take a column at ``now`` (the newest HEATMAP_COLUMNS are shown)."""
        if not self.times or now > self.times[-1]:
            self.times.append(now)
            del self.times[:-HEATMAP_COLUMNS]
        self.render()

    def show_span(self, start: float, end: float) -> None:
        """A finished run or a recording: HEATMAP_COLUMNS columns evenly over [start, end]."""
        self.times = list(np.linspace(start, end, HEATMAP_COLUMNS)) if end > start else [end]
        self.render()

    def render(self) -> None:
        if self.order is None:
            self.note.visible, self.plot.visible = True, False
            return
        self.note.visible, self.plot.visible = False, True
        if not self.times:
            return
        t = np.asarray(self.times, dtype=float)
        img = self.grid_at(t)
        step = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
        hi = float(np.nanmax(img)) if img.size and np.isfinite(img).any() else 1.0
        self.mapper.high = max(hi, 1.0 if self.metric.value == "replicas" else 1e-6)
        x0, x1 = float(t[0]), float(t[-1] + step)
        self.source.data = {"image": [img], "x": [x0], "y": [0.0], "dw": [x1 - x0], "dh": [float(img.shape[0])]}
        n = img.shape[0]
        self.rows.data = {
            "left": np.full(n, x0),
            "right": np.full(n, x1),
            "bottom": np.arange(n, dtype=float),
            "top": np.arange(n, dtype=float) + 1,
            "node": self._labels,
        }
        e = self._region_edges
        self.separators.data = {"x0": np.full(len(e), x0), "x1": np.full(len(e), x1), "y": e}


LATEST = "latest placement"
#: Placements kept for the score heatmap's picker.
HISTORY = 20


class ScoreHeatmap:
    """Feasible nodes x priorities of one placement, weighted, the chosen node marked; infeasible nodes with reasons."""

    MAX_NODES = 16

    def __init__(self):
        self.source = ColumnDataSource({"priority": [], "node": [], "weighted": [], "label": [], "ink": []}, name="score-cells")
        self.winner_source = ColumnDataSource({"priority": [], "node": []}, name="score-winner")
        self.mapper = LinearColorMapper(palette=Viridis256, low=0, high=1)
        self.fig = figure(
            title="Scores of the latest placement",
            height=420,
            sizing_mode="stretch_width",
            x_range=FactorRange(),
            y_range=FactorRange(),
            tools="save",
            toolbar_location=None,
        )
        self.fig.rect(
            "priority", "node", 1, 1, source=self.source, fill_color={"field": "weighted", "transform": self.mapper}, line_color="white"
        )
        self.fig.text(
            "priority",
            "node",
            text="label",
            source=self.source,
            text_align="center",
            text_baseline="middle",
            text_font_size="8pt",
            text_color="ink",
        )
        self.fig.rect("priority", "node", 1, 1, source=self.winner_source, fill_alpha=0, line_color="#ff2d2d", line_width=3)
        self.fig.add_layout(ColorBar(color_mapper=self.mapper, width=8), "right")
        self.fig.xaxis.major_label_orientation = 0.6
        self.infeasible = pn.pane.Markdown("", sizing_mode="stretch_width")
        self.note = pn.pane.Markdown("No placement yet (or no cluster in this scenario).")
        self.history: dict[str, tuple[pd.DataFrame, float | None]] = {}  # recent placements seen, by label
        self.choice = pn.widgets.Select(label="Placement", options=[LATEST], value=LATEST, width=320)
        self.choice.param.watch(self._chosen, "value")
        self.plot = pn.pane.Bokeh(self.fig, sizing_mode="stretch_width")
        self.layout = pn.Column(self.choice, self.note, self.plot, self.infeasible, sizing_mode="stretch_width")
        self.latest: str | None = None
        self._last_time = 0.0

    @property
    def hold(self) -> bool:
        return self.choice.value != LATEST

    def _chosen(self, event: Any) -> None:
        if event.new in self.history:
            self.show(*self.history[event.new])
        elif event.new == LATEST and self.latest in self.history:
            self.show(*self.history[self.latest])

    def clear(self) -> None:
        self.latest = None
        self.history = {}
        self.choice.options = [LATEST]
        self.choice.value = LATEST
        self.source.data = {"priority": [], "node": [], "weighted": [], "label": [], "ink": []}
        self.winner_source.data = {"priority": [], "node": []}

    def push(self, placements: pd.DataFrame, breakdowns: pd.DataFrame) -> None:
        """New rows of the ``placements`` and ``breakdowns`` tables: one history entry per decision with a breakdown."""
        if not len(breakdowns):
            return
        decided = placements[placements["decision"].notna()] if len(placements) else placements
        when = {
            int(d): (float(t), n)
            for d, t, n in zip(decided.get("decision", []), decided.get("time", []), decided.get("node", []), strict=True)
        }
        for decision, bd in breakdowns.groupby("decision", sort=True):
            at, node = when.get(int(decision), (self._last_time, None))
            self._last_time = at
            node = None if node is None or node is pd.NA else str(node)
            label = f"t={at:.0f} s -> {node or 'pending'} (#{int(decision)})"
            self.history[label] = (bd.reset_index(drop=True), at)
            self.latest = label
        while len(self.history) > HISTORY:
            self.history.pop(next(iter(self.history)))
        self.choice.options = [LATEST, *reversed(self.history)]
        if not self.hold and self.latest in self.history:
            self.show(*self.history[self.latest])

    def show(self, bd: pd.DataFrame, now: float | None = None) -> None:
        self.note.visible = False
        feas = bd[bd["feasible"].astype(bool) & bd["total"].notna()]
        totals = feas.groupby("node", sort=False)["total"].first().sort_values(ascending=False)
        winners = bd.loc[bd["winner"].astype(bool), "node"].unique()
        winner = str(winners[0]) if len(winners) and str(winners[0]) in set(totals.index.astype(str)) else None
        nodes = [str(n) for n in totals.index[: self.MAX_NODES]]
        if winner and winner not in nodes:
            nodes = [winner] + nodes[:-1]
        names = {n: (f"★ {n} ({totals[n]:.2f})" if n == winner else f"{n} ({totals[n]:.2f})") for n in nodes}
        cells = feas[feas["node"].astype(str).isin(nodes)]
        priorities = [str(p) for p in bd["priority"].unique()]
        self.fig.x_range.factors = priorities
        self.fig.y_range.factors = [names[n] for n in reversed(nodes)]
        w = cells["weighted"].to_numpy(dtype=float)
        self.mapper.low = float(np.nanmin(w)) if len(w) else 0.0
        self.mapper.high = float(np.nanmax(w)) if len(w) and np.nanmax(w) > self.mapper.low else self.mapper.low + 1
        self.source.data = {
            "priority": cells["priority"].astype(str).to_numpy(),
            "node": np.array([names[str(n)] for n in cells["node"]]),
            "weighted": w,
            "label": np.array([f"{v:.2f}" for v in w]),
            "ink": np.where(w > (self.mapper.low + self.mapper.high) / 2, "#111111", "#ffffff"),
        }
        self.winner_source.data = (
            {"priority": priorities, "node": [names[winner]] * len(priorities)} if winner else {"priority": [], "node": []}
        )
        when = f" (placed at t={now:.0f} s)" if now is not None else ""
        if len(totals) > len(nodes):
            when += f"; best {len(nodes)} of {len(totals)} scored nodes"
        self.fig.title.text = f"Scores of a placement: chosen {winner or 'none (pending)'}{when}"
        infeas = bd[~bd["feasible"].astype(bool) | (bd["reason"].astype(str) != "")].drop_duplicates("node")
        if len(infeas):
            lines = [f"| {n} | {r} |" for n, r in zip(infeas["node"][:15], infeas["reason"][:15], strict=True)]
            more = f"\n\n…and {len(infeas) - 15} more" if len(infeas) > 15 else ""
            self.infeasible.object = "**Infeasible nodes**\n\n| node | reason |\n|---|---|\n" + "\n".join(lines) + more
        else:
            self.infeasible.object = "All nodes feasible."


class RunView:
    """Every view of one run, fed from its recorded tables: time series, KPI row, event log, placement and score heatmaps.

    :meth:`push` takes what a :class:`~dashboard.feed.Feed` polled; the cheap views update on every push,
    the heavier ones every few (staggered, see :meth:`push`). :meth:`from_frames` draws a finished run or a
    recording with no engine behind it.
    """

    #: The event log and the heatmaps refresh every this many pushes (they cost more than a stream).
    SLOW_EVERY = 5
    LOG_EVERY = 10

    def __init__(self, run: str = "live", sample_interval: float = 5.0):
        self.run = run
        self.sample_interval = sample_interval
        self.series = TimeSeriesViews((run,))
        self.kpi_row = KpiRow()
        self.events = EventLog()
        self.placement = PlacementHeatmap()
        self.scores = ScoreHeatmap()
        self.gpu = GpuDeviceView()  # per-device GPU use, shown when the cluster has GPUs
        self.pushes = 0

    def clear(self) -> None:
        self.series.clear()
        self.events.clear()
        self.placement.clear()
        self.scores.clear()
        self.gpu.clear()
        self.pushes = 0

    def push(self, new: dict[str, pd.DataFrame], now: float, all_views: bool = False, timed: Any = None) -> None:
        """Feed new rows to the views; ``all_views`` refreshes the slow ones too (paused, stepped, or a one-off)."""
        empty = pd.DataFrame()
        call = timed or (lambda part, fn, *args: fn(*args))
        samples, events = new.get("samples", empty), new.get("events", empty)
        call("time_series", self.series.push, self.run, samples, events, self.sample_interval)
        self.events.push(events)
        self.placement.push(new.get("nodes", empty), new.get("placements", empty))
        self.scores.push(new.get("placements", empty), new.get("breakdowns", empty))
        self.gpu.push(new.get("nodes", empty), new.get("placements", empty))
        self.pushes += 1
        phase = self.pushes % self.SLOW_EVERY
        if self.pushes % self.LOG_EVERY == 1 or all_views:
            call("event_log", self.events.flush)
        if phase == 2 or all_views:
            call("placement_heatmap", self.placement.tick, now)
        if phase == 4 or all_views:
            call("gpu_devices", self.gpu.render)

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame], sample_interval: float, run: str = "live") -> RunView:
        """The views of a finished run or a recording, drawn once from its tables."""
        view = cls(run, sample_interval)
        new = Feed(FramesSource(frames)).poll()
        view.push(new, now=0.0)
        view.events.flush()
        samples = frames.get("samples", pd.DataFrame())
        end = float(samples["time"].iloc[-1]) if len(samples) else 0.0
        view.placement.show_span(0.0, end)
        view.gpu.render()
        tracker = KpiTracker()
        tracker.push(samples)
        view.kpi_row.update(tracker.kpis(end))
        return view
