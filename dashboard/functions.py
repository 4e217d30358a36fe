"""The Functions view: per-function requests, response-time percentiles, replicas by state, cold starts, the gateway
queue, a replica placement heatmap, and live per-function controls generated from the deployment and scaler params.

Fed from the recorded tables only (``function_samples``, ``placements``, ``nodes``), by row offset
(:mod:`dashboard.feed`), so a live session and a finished run (:meth:`FunctionsView.from_frames`) draw the same.
HoloViews elements throughout: ``hv.DynamicMap`` over bounded ``Buffer`` streams for the time series, an
``hv.Image`` on a numpy grid (nodes x time) through a ``Pipe`` for the heatmap.
"""

from __future__ import annotations

from typing import Any

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import FixedTicker
from holoviews.streams import Buffer, Pipe

from dashboard.controls import SectionControls
from dashboard.feed import Feed, FramesSource
from dashboard.plots import name_hook
from dashboard.tabs import TabBase

#: Sample rows kept on screen (per function: the buffer holds this many rows for all functions together).
WINDOW = 1500
#: Time columns of the placement heatmap.
HEATMAP_COLUMNS = 120
SERIES = [
    "time",
    "function",
    "rps",
    "response_p50",
    "response_p95",
    "response_p99",
    "replicas_pending",
    "replicas_starting",
    "replicas_running",
    "replicas_draining",
    "cold_starts",
    "queued",
    "in_flight",
    "rejected",
    "completed",
    "generated",
]
#: Live controls of every function, then those of its scaler (names of the slot's params).
COMMON_CONTROLS = ["min_replicas", "max_replicas", "concurrency", "rate"]
SCALER_CONTROLS = {
    "hpa": ["target_utilization", "target_requests_per_replica"],
    "kpa": ["target_concurrency"],
    "keda": ["target_keda_queue"],
    "rps_threshold": ["target_rps", "scale_factor"],
    "average_rps": ["target_average_rps"],
    "queue_per_replica": ["target_queue"],
    "scale_to_zero": ["idle_timeout"],
    "per_request": ["idle_timeout"],
    "queue_drain": ["drain_band_low", "drain_band_high"],
}
OPTS = {"responsive": True, "height": 230, "show_grid": True, "xlabel": "simulated time (s)", "tools": ["hover"], "framewise": True}


def is_function_slot(key: str) -> bool:
    """Is ``key`` a function slot (``fn1`` ...)? Its live controls are this view's, not the sidebar's."""
    return key.startswith("fn") and key[2:].isdigit()


def is_function_world(tables: list[str]) -> bool:
    """Does a run record the functions world's tables?"""
    return "function_samples" in tables


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c == "function" else float) for c in SERIES})


def _by_function(data: pd.DataFrame, column: str, label: str, logy: bool = False) -> hv.Overlay:
    curves = [hv.Curve(g, "time", (column, label), label=str(f)) for f, g in data.groupby("function", sort=True)] if len(data) else []
    if not curves:
        curves = [hv.Curve([], "time", (column, label))]
    figure = name_hook(f"fn-{column}")  # the bokeh figure's name (tests and the benchmark find it)
    return hv.Overlay(curves).opts(
        hv.opts.Curve(**OPTS, logy=logy), hv.opts.Overlay(legend_position="top_left", title=label, hooks=[figure])
    )


class FunctionsView:
    """Every function plot and control of one run."""

    def __init__(self) -> None:
        self.buffer = Buffer(_empty(), length=WINDOW * 6, index=False)
        self.requests = hv.DynamicMap(lambda data: _by_function(data, "rps", "requests / s"), streams=[self.buffer])
        self.latency = hv.DynamicMap(self._latency, streams=[self.buffer])
        self.replicas = hv.DynamicMap(self._replicas, streams=[self.buffer])
        self.cold = hv.DynamicMap(lambda data: _by_function(data, "cold_starts", "cold starts per sample"), streams=[self.buffer])
        self.queue = hv.DynamicMap(lambda data: _by_function(data, "queued", "gateway queue (requests held)"), streams=[self.buffer])
        self.table = pn.pane.DataFrame(pd.DataFrame(), sizing_mode="stretch_width", index=False, css_classes=["function-kpis"])
        self.controls = pn.Row(sizing_mode="stretch_width")
        self.note = pn.pane.Markdown("", visible=False)
        self.heatmap_holder = pn.Column(sizing_mode="stretch_width")
        plots = pn.GridBox(
            *(
                pn.pane.HoloViews(p, sizing_mode="stretch_width", linked_axes=False)
                for p in (self.requests, self.latency, self.replicas, self.cold, self.queue)
            ),
            ncols=2,
            sizing_mode="stretch_width",
        )
        self.layout = pn.Column(
            self.note,
            self.table,
            plots,
            self.heatmap_holder,
            pn.pane.Markdown("### Per-function controls (live)"),
            self.controls,
            sizing_mode="stretch_width",
            css_classes=["functions-view"],
        )
        self.clear()

    # -- plots ------------------------------------------------------------------------------------------
    @staticmethod
    def _latency(data: pd.DataFrame) -> hv.Overlay:
        if not len(data):
            return _by_function(data, "response_p95", "response p50 / p95 / p99 (s)", logy=True)
        curves = []
        for f, g in data.groupby("function", sort=True):
            for col, dash in (("response_p50", "dotted"), ("response_p95", "solid"), ("response_p99", "dashed")):
                part = g[["time", col]].rename(columns={col: "response"})
                curves.append(hv.Curve(part, "time", ("response", "response (s)"), label=f"{f} {col[-3:]}").opts(line_dash=dash))
        return hv.Overlay(curves).opts(
            hv.opts.Curve(**OPTS, logy=True),
            hv.opts.Overlay(legend_position="top_left", title="response p50 / p95 / p99 (s)", hooks=[name_hook("fn-latency")]),
        )

    @staticmethod
    def _replicas(data: pd.DataFrame) -> hv.Overlay:
        if not len(data):
            return _by_function(data, "replicas_running", "replicas by state")
        curves = []
        for f, g in data.groupby("function", sort=True):
            for col, dash in (
                ("replicas_running", "solid"),
                ("replicas_starting", "dashed"),
                ("replicas_pending", "dotted"),
                ("replicas_draining", "dashdot"),
            ):
                part = g[["time", col]].rename(columns={col: "replicas"})
                curves.append(hv.Curve(part, "time", "replicas", label=f"{f} {col.removeprefix('replicas_')}").opts(line_dash=dash))
        return hv.Overlay(curves).opts(
            hv.opts.Curve(**OPTS), hv.opts.Overlay(legend_position="top_left", title="replicas by state", hooks=[name_hook("fn-replicas")])
        )

    def _image(self, data: tuple) -> hv.Image:
        grid, (x0, x1), names = data
        n = max(grid.shape[0], 1)
        self._names = list(names)
        image = hv.Image(grid[::-1], bounds=(x0, 0, x1, n), kdims=["time", "node"], vdims=["replicas"])
        return image.opts(
            responsive=True, height=340, cmap="viridis", colorbar=True, tools=["hover"], hooks=[self._node_labels], clim=(0, 4), framewise=True,
            title="Function replicas per node over time (nodes grouped by region and type; colour capped at 4)", xlabel="simulated time (s)",
        )  # fmt: skip

    def _node_labels(self, plot: Any, element: Any) -> None:
        """Name the heatmap's rows (a hook: plot options cannot change per frame, the axis can)."""
        names = getattr(self, "_names", [])
        n = len(names)
        axis = plot.state.yaxis[0]
        if not n:
            return
        if n <= 40:  # name every row
            ticks = {n - i - 0.5: name for i, name in enumerate(names)}
        else:  # name the middle of each region's block
            regions = [self.node_order.get(name, ("",))[0] for name in names]
            starts = [i for i in range(n) if i == 0 or regions[i] != regions[i - 1]] + [n]
            ticks = {n - (a + b) / 2: regions[a] for a, b in zip(starts[:-1], starts[1:], strict=True)}
        axis.ticker = FixedTicker(ticks=list(ticks))
        axis.major_label_overrides = ticks
        axis.major_label_text_font_size = "8pt"

    # -- feeding ----------------------------------------------------------------------------------------
    def clear(self) -> None:
        self.buffer.clear()
        self.node_names: dict[int, str] = {}
        self.node_order: dict[str, tuple] = {}
        self.counts: dict[int, int] = {}
        self.columns: list[tuple[float, dict[int, int]]] = []
        self.last: dict[str, dict[str, Any]] = {}
        self.pending: list[pd.DataFrame] = []
        # the heatmap is made with its first grid (its rows are fixed for the run, so its axes are right from the start)
        self.grid: Pipe | None = None
        self.heatmap: hv.DynamicMap | None = None
        self.heatmap_holder[:] = [pn.pane.Markdown("*The replica heatmap appears with the first placements.*")]

    def push(self, new: dict[str, pd.DataFrame], now: float, render: bool = True) -> None:
        """New rows of ``function_samples``, ``nodes`` and ``placements``; a heatmap column at ``now``."""
        samples = new.get("function_samples", pd.DataFrame())
        if len(samples):
            self.pending.append(samples[SERIES])
            for row in samples.to_dict("records"):
                self.last[row["function"]] = row
        nodes = new.get("nodes", pd.DataFrame())
        if len(nodes):
            for row in nodes.itertuples():
                if bool(row.storage):  # storage nodes take no function replicas
                    continue
                self.node_names[int(row.node_index)] = str(row.node)
                self.node_order[str(row.node)] = (str(row.region), str(row.node_class), str(row.node))
            self._make_heatmap()
        placements = new.get("placements", pd.DataFrame())
        if len(placements):
            for action, node in zip(placements["action"].astype(str), placements["node_index"], strict=True):
                if node is pd.NA or node is None:
                    continue
                sign = 1 if action == "bind" else -1 if action in ("release", "lost") else 0
                if sign:
                    self.counts[int(node)] = self.counts.get(int(node), 0) + sign
        if not self.columns or now > self.columns[-1][0]:
            self.columns.append((now, dict(self.counts)))
            del self.columns[:-HEATMAP_COLUMNS]
        if render:
            self.render()

    def render(self) -> None:
        """Send what arrived since the last render: sample rows to the buffer (one batch: each send redraws every plot),
        the heatmap grid, the per-function table."""
        if self.pending:
            batch, self.pending = pd.concat(self.pending, ignore_index=True), []
            self.buffer.send(batch)
        if self.last:
            table = pd.DataFrame(list(self.last.values()))
            keep = [
                "function",
                "rps",
                "response_p50",
                "response_p95",
                "replicas_running",
                "queued",
                "in_flight",
                "completed",
                "rejected",
                "generated",
            ]
            self.table.object = table[keep].round(3)
        # every node that can take a replica, in region / class order: a fixed set of rows, so the axes never jump
        held = sorted(self.node_names, key=lambda n: self.node_order[self.node_names[n]])
        if not held or len(self.columns) < 2:
            return
        grid = np.zeros((len(held), len(self.columns)), dtype=np.float32)
        for j, (_, counts) in enumerate(self.columns):
            for i, n in enumerate(held):
                grid[i, j] = counts.get(n, 0)
        times = [t for t, _ in self.columns]
        step = (times[-1] - times[0]) / max(1, len(times) - 1)
        data = (grid, (times[0], times[-1] + step), [self.node_names.get(n, str(n)) for n in held])
        self._make_heatmap()
        self.grid.send(data)

    def _make_heatmap(self) -> None:
        """Build the heatmap once the nodes are known: its rows (every node that can take a replica) are fixed for the
        run, so it is made with the right y extent and only its time axis moves."""
        if self.grid is not None or not self.node_names:
            return
        held = sorted(self.node_names, key=lambda n: self.node_order[self.node_names[n]])
        names = [self.node_names[n] for n in held]
        self.grid = Pipe(data=(np.zeros((len(held), 2), dtype=np.float32), (0.0, 1.0), names))
        self.heatmap = hv.DynamicMap(self._image, streams=[self.grid])
        self.heatmap_holder[:] = [pn.pane.HoloViews(self.heatmap, sizing_mode="stretch_width", linked_axes=False)]

    # -- controls ---------------------------------------------------------------------------------------
    def bind_controls(self, sections: dict[str, Any], apply: Any) -> None:
        """Live controls for every function slot of the run: its common knobs and its scaler's targets."""
        cards = []
        self.section_controls: dict[str, SectionControls] = {}
        for key, section in sections.items():
            if not is_function_slot(key):
                continue
            ctl = SectionControls(section, apply, key, scope="fn")
            self.section_controls[key] = ctl
            names = COMMON_CONTROLS + SCALER_CONTROLS.get(section.scaler, [])
            title = f"{section.label} ({section.scaler})"
            cards.append(pn.Card(ctl.alert, ctl.panel(names), title=title, sizing_mode="stretch_width", margin=(4, 4)))
        self.controls[:] = cards

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame]) -> FunctionsView:
        """The Functions view of a finished run or a recording, drawn once from its tables."""
        view = cls()
        new = Feed(FramesSource(frames), tables=("function_samples", "nodes", "placements")).poll()
        samples = frames.get("function_samples", pd.DataFrame())
        end = float(samples["time"].iloc[-1]) if len(samples) else 0.0
        view.push({"nodes": new.get("nodes", pd.DataFrame())}, 0.0, render=False)
        placements = new.get("placements", pd.DataFrame())
        for t in np.linspace(0.0, end, 60) if end > 0 else [0.0]:
            part = placements[placements["time"] <= t] if len(placements) else placements
            view.counts = {}
            view.push({"placements": part}, float(t), render=False)
        view.push({"function_samples": new.get("function_samples", pd.DataFrame())}, end + 1e-9)
        return view


class FunctionsTab(TabBase, pn.viewable.Viewer):
    """The Functions tab of the dashboard (``dashboard.tabtable.TABS``): a :class:`FunctionsView` fed the live run's rows,
    its per-function controls bound to whichever run the session holds (rebound after a reset or a switch)."""

    tables = ("function_samples", "nodes", "placements")

    def __init__(self, ctx: Any):
        super().__init__()
        self.session = ctx.session
        self.view = FunctionsView()
        self._bound: Any = None

    def _bind(self) -> None:
        sim = self.session.sim
        if sim is not None and sim is not self._bound:
            self.view.bind_controls(sim.sections, self.session.apply)
            self._bound = sim

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        self._bind()
        self.view.push(new, now, render=False)

    def flush(self, now: float, budget: float = float("inf")) -> bool:
        self.view.render()
        return True

    def clear(self) -> None:
        self.view.clear()
        self._bound = None

    def __panel__(self) -> pn.viewable.Viewable:
        return self.view.layout
