"""The Functions view: per-function requests, response-time percentiles, replicas by state, cold starts, the gateway
queue, a replica placement heatmap, and live per-function controls generated from the deployment and scaler params.

Fed from the recorded tables only (``function_samples``, ``placements``, ``nodes``), by row offset
(:mod:`dashboard.feed`), so a live session and a finished run (:meth:`FunctionsView.from_frames`) draw the same.
Plain Bokeh figures (:mod:`dashboard.liveplots`): one ``ColumnDataSource`` per function, streamed with only its new
rows and shared by the five time plots (one x range: they all end at the same time); the heatmap (nodes x time) is an
image whose source is replaced only when its grid changed, with the node's name and the time in its hover. The pure
HoloViews plots of :mod:`dashboard.worldplots` draw the same for recordings and exports.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    CustomJSHover,
    CustomJSTickFormatter,
    FixedTicker,
    HoverTool,
    LinearColorMapper,
    Range1d,
)
from bokeh.plotting import figure

from dashboard.controls import SectionControls
from dashboard.feed import Feed, FramesSource
from dashboard.liveplots import DASHES, PALETTE, TOOLS, Streamed, curves_hover, fit_x, fit_y, series_line, style_legend, time_figure
from dashboard.messageline import display_style
from dashboard.plothooks import _time_ticker, hms_js
from dashboard.plots import PLOT_HEIGHT
from dashboard.tabs import TabBase
from dashboard.turns import after_this_turn
from dashboard.worldplots import FUNCTION_PLOTS

#: Sample rows kept on screen per function.
WINDOW = 1500
#: Time columns of the placement heatmap.
HEATMAP_COLUMNS = 120
#: Replicas at which the heatmap's colour is full.
HEATMAP_CAP = 4
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
#: The bokeh figure of each plot of :data:`dashboard.worldplots.FUNCTION_PLOTS` is named ``{prefix}-{this}``.
FIGURES = {"requests": "rps", "latency": "latency", "replicas": "replicas", "cold_starts": "cold_starts", "queue": "queued"}
NUMERIC = [c for c in SERIES if c not in ("time", "function")]
LOG_COLUMNS = tuple(c for name, (_t, _y, cols, log) in FUNCTION_PLOTS.items() if log for c, _s in cols)
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
KPI_COLUMNS = [
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


def is_function_slot(key: str) -> bool:
    """Is ``key`` a function slot (``fn1`` ...)? Its live controls are this view's, not the sidebar's."""
    return key.startswith("fn") and key[2:].isdigit()


def is_function_world(tables: list[str]) -> bool:
    """Does a run record the functions world's tables?"""
    return "function_samples" in tables


class FunctionPlots:
    """The five time plots of one run's functions (:data:`~dashboard.worldplots.FUNCTION_PLOTS`): a source per function,
    streamed; the figures are (re)made when a run's set of functions is first seen (a new run, a new scenario)."""

    def __init__(self, prefix: str = "fn", window: int = WINDOW, staged: bool = True):
        self.prefix, self.window = prefix, window
        self.staged = staged  # the lower plots a turn after the top row (False: all at once, for a caller that takes them)
        self.x_range = Range1d(0.0, 1.0)
        self.ticker = _time_ticker()  # the five plots' time axes and grids share one ticker (as they share the x range)
        self.streams: dict[str, Streamed] = {}
        self.current: list[str] = []  # the run's functions, in the order first seen
        self._pending: list[pd.DataFrame] = []
        self.built: tuple[str, ...] = ()
        self.figures: dict[str, figure] = {}
        self.layout = pn.GridBox(pn.pane.Markdown("*The plots appear with the first samples.*"), ncols=2, sizing_mode="stretch_width")

    @property
    def needs_build(self) -> bool:
        return bool(self.current) and tuple(self.current) != self.built

    def push(self, samples: pd.DataFrame) -> None:
        """New ``function_samples`` rows (queued as they came: split by function when drawn)."""
        if len(samples):
            self._pending.append(samples)

    def _split(self) -> None:
        if not self._pending:
            return
        batch = pd.concat(self._pending, ignore_index=True) if len(self._pending) > 1 else self._pending[0]
        self._pending = []
        for f, rows in batch.groupby("function", sort=False):
            f = str(f)
            if f not in self.streams:
                self.streams[f] = Streamed(["time", *NUMERIC], self.window, positive=LOG_COLUMNS)
            if f not in self.current:
                self.current.append(f)
            self.streams[f].push(rows)

    @property
    def functions(self) -> list[str]:
        """The run's functions (those seen so far)."""
        self._split()
        return self.current

    def flush(self) -> bool:
        """Stream what was queued into every plot (the figures first, if the run's functions are new); True if any."""
        self._split()
        if self.needs_build:
            self._build()
        if not any([self.streams[f].flush() for f in self.built]):
            return False
        self.fit()
        return True

    def fit(self) -> None:
        sources = [self.streams[f].source for f in self.built]
        fit_x(self.x_range, sources)
        for name, fig in self.figures.items():
            _title, _ylabel, columns, log = FUNCTION_PLOTS[name]
            fit_y(fig, [s.data[c] for s in sources for c, _ in columns], log=log)

    def clear(self) -> None:
        """A new run: every plot empty at once (its functions are known again from its first samples)."""
        for st in self.streams.values():
            st.clear()
        self.current, self._pending = [], []
        self.fit()

    def _build(self) -> None:
        self.built = tuple(self.current)
        self.streams = {f: self.streams[f] for f in self.built}
        self.figures = {}
        names = list(FUNCTION_PLOTS)
        # a served page's first frame holds the top row; the other plots are made and join after it (its onload on a page
        # still loading, the event loop's next turn on a loaded page: a new run of another scenario; at once unserved)
        if not self.staged:
            self.layout[:] = self._add_figures(names)
            return
        self.layout[:] = self._add_figures(names[:2])
        built = self.built
        after_this_turn(lambda: self._more_figures(built, names[2:]))

    def top_first(self) -> None:
        """Back after another world's runs: the top row of plots (its figures kept, their models made again by the page)
        first; the others join in the event loop's next turn, unless the plots were made again meanwhile."""
        whole = list(self.layout.objects)
        if not self.staged or len(whole) <= 2 or len(self.figures) < len(FUNCTION_PLOTS):
            return
        self.layout[:] = whole[:2]
        after_this_turn(lambda: self._rejoined(self.built, whole))

    def _rejoined(self, built: tuple[str, ...], whole: list[Any]) -> None:
        if built == self.built and list(self.layout.objects) == whole[:2]:
            with pn.io.hold():
                self.layout[:] = whole
                self.fit()

    def _more_figures(self, built: tuple[str, ...], names: list[str]) -> None:
        if built == self.built and not set(names) & set(self.figures):  # not made again for another run meanwhile
            with pn.io.hold():
                self.layout.extend(self._add_figures(names))
                self.fit()

    def _add_figures(self, names: list[str]) -> list[pn.pane.Bokeh]:
        """The plots ``names`` of the run's functions, made and kept; their panes."""
        for name in names:
            title, ylabel, columns, log = FUNCTION_PLOTS[name]
            fig = time_figure(f"{self.prefix}-{FIGURES[name]}", title, ylabel, self.x_range, log=log, ticker=self.ticker)
            curves = [
                series_line(
                    fig,
                    self.streams[f].source,
                    col,
                    f"{f} {suffix}".strip(),
                    PALETTE[i % len(PALETTE)],
                    DASHES[j % len(DASHES)],
                    hover=False,
                )
                for i, f in enumerate(self.built)
                for j, (col, suffix) in enumerate(columns)
            ]
            curves_hover(fig, curves)  # one hover per plot: a hover per curve was two models each (31 curves, 5 plots)
            style_legend(fig, ncols=len(columns) if len(columns) > 1 else 4)
            self.figures[name] = fig
        return [pn.pane.Bokeh(self.figures[name], sizing_mode="stretch_width", min_height=PLOT_HEIGHT) for name in names]

    def held(self) -> dict[str, int]:
        """Rows on screen per function."""
        return {f: self.streams[f].held() for f in self.built}


class ReplicaHeatmap:
    """Function replicas per node over the last :data:`HEATMAP_COLUMNS` pushes: an image (nodes x time) whose source is
    replaced only when the grid changed; its hover names the node and the time."""

    def __init__(self, name: str = "fn-replica-heatmap"):
        self.name = name
        self.source = ColumnDataSource(self._empty(), name=f"{name}-source")
        self.labels = CustomJSHover(args={"labels": []}, code="return labels[Math.floor(value)] ?? '';")
        self.figure = self._figure()
        self.sent: tuple | None = None

    @staticmethod
    def _empty() -> dict[str, list]:
        return {"image": [], "x": [], "y": [], "dw": [], "dh": []}

    def _figure(self) -> figure:
        fig = figure(
            name=self.name,
            title=f"Function replicas per node over time (nodes grouped by region and type; colour capped at {HEATMAP_CAP})",
            x_range=Range1d(0.0, 1.0),
            y_range=Range1d(0.0, 1.0),
            height=340,
            min_width=300,
            sizing_mode="stretch_width",
            tools=TOOLS,
            active_scroll=None,
            toolbar_location="right",
            x_axis_label="simulated time (h:mm:ss)",
        )
        fig.toolbar.autohide = True
        fig.xaxis.formatter = CustomJSTickFormatter(code=hms_js("tick"))
        fig.xaxis.ticker = _time_ticker()
        fig.grid.visible = False
        mapper = LinearColorMapper(palette="Viridis256", low=0, high=HEATMAP_CAP)
        image = fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=self.source, color_mapper=mapper)
        fig.add_layout(ColorBar(color_mapper=mapper, title="replicas", width=10), "right")
        fig.add_tools(
            HoverTool(
                renderers=[image],
                tooltips=[("node", "$y{custom}"), ("time", "$x{custom}"), ("replicas", "@image{0}")],
                formatters={"$y": self.labels, "$x": CustomJSHover(code=hms_js("value"))},
            )
        )
        fig.yaxis.major_label_text_font_size = "8pt"
        return fig

    def show(self, grid: np.ndarray, x0: float, x1: float, names: list[str], regions: list[str]) -> bool:
        """Draw ``grid`` (rows: nodes in ``names`` order, top first; columns: time from ``x0`` to ``x1``) if it changed."""
        key = (grid.shape, x0, x1, tuple(names))
        if self.sent is not None and self.sent[0] == key and np.array_equal(self.sent[1], grid):
            return False
        n = len(names)
        if self.sent is None or self.sent[0][3] != key[3]:  # the rows: hover names, ticks (every node, or each region's middle)
            self.labels.args = {"labels": names[::-1]}
            if n <= 40:
                ticks = {n - i - 0.5: name for i, name in enumerate(names)}
            else:
                starts = [i for i in range(n) if i == 0 or regions[i] != regions[i - 1]] + [n]
                ticks = {n - (a + b) / 2: regions[a] for a, b in zip(starts[:-1], starts[1:], strict=True)}
            self.figure.yaxis.ticker = FixedTicker(ticks=list(ticks))
            self.figure.yaxis.major_label_overrides = ticks
            self.figure.y_range.update(start=0.0, end=float(max(n, 1)))
        self.figure.x_range.update(start=x0, end=x1)
        self.source.data = {"image": [grid[::-1].astype(np.float32)], "x": [x0], "y": [0.0], "dw": [x1 - x0], "dh": [float(n)]}
        self.sent = (key, grid.copy())
        return True

    def clear(self) -> None:
        self.sent = None
        if len(self.source.data["image"]):
            self.source.data = self._empty()


class FunctionsView:
    """Every function plot and control of one run."""

    def __init__(self, prefix: str = "fn", controls: bool = True) -> None:
        self.plots = FunctionPlots(prefix)
        self.heatmap = ReplicaHeatmap(f"{prefix}-replica-heatmap")
        self.table = pn.pane.DataFrame(pd.DataFrame(), sizing_mode="stretch_width", index=False, css_classes=["function-kpis"])
        self.controls = pn.Row(sizing_mode="stretch_width")
        self._control_cards: dict[tuple, tuple[SectionControls, pn.Card]] = {}  # by (slot, class, scaler): kept across runs
        self.note = pn.pane.Markdown("", visible=False)
        # shown with its first grid, by its display style: a change of ``visible`` lays the whole page out again in the
        # browser (dashboard.messageline)
        self.heatmap_pane = pn.Column(
            pn.pane.Bokeh(self.heatmap.figure, sizing_mode="stretch_width", min_height=340),
            styles=display_style(False),
            sizing_mode="stretch_width",
        )
        parts = [self.note, self.table, self.plots.layout, self.heatmap_pane]
        if controls:
            parts += [pn.pane.Markdown("### Per-function controls (live)"), self.controls]
        self.layout = pn.Column(*parts, sizing_mode="stretch_width", css_classes=["functions-view"])
        self.clear()

    # -- feeding ----------------------------------------------------------------------------------------
    def clear(self) -> None:
        self.plots.clear()
        self.heatmap.clear()
        if self.heatmap_pane.styles != display_style(False):
            self.heatmap_pane.styles = display_style(False)
        self.node_names: dict[int, str] = {}
        self.node_order: dict[str, tuple] = {}
        self.counts = np.zeros(0, dtype=np.int64)  # replicas per node index
        self.columns: list[tuple[float, np.ndarray]] = []
        self.last: dict[str, dict[str, Any]] = {}
        self.last_samples: pd.DataFrame | None = None

    @property
    def needs_build(self) -> bool:
        """Will the next :meth:`render` add figures to the page (a run's first samples)?"""
        return self.plots.needs_build

    def push(self, new: dict[str, pd.DataFrame], now: float, render: bool = True) -> None:
        """New rows of ``function_samples``, ``nodes`` and ``placements``; a heatmap column at ``now``."""
        samples = new.get("function_samples", pd.DataFrame())
        if len(samples):
            self.plots.push(samples)
            self.last_samples = samples  # the table shows each function's newest row (made when drawn)
        nodes = new.get("nodes", pd.DataFrame())
        if len(nodes):
            for row in nodes.itertuples():
                if bool(row.storage):  # storage nodes take no function replicas
                    continue
                self.node_names[int(row.node_index)] = str(row.node)
                self.node_order[str(row.node)] = (str(row.region), str(row.node_class), str(row.node))
            size = max(self.node_names) + 1
            if size > len(self.counts):
                self.counts = np.concatenate([self.counts, np.zeros(size - len(self.counts), dtype=np.int64)])
        placements = new.get("placements", pd.DataFrame())
        if len(placements) and len(self.counts):
            action = placements["action"].astype(str).to_numpy()
            sign = np.where(action == "bind", 1, np.where(np.isin(action, ["release", "lost"]), -1, 0))
            node = placements["node_index"].to_numpy(dtype=float, na_value=np.nan)
            keep = (sign != 0) & np.isfinite(node) & (node < len(self.counts))
            np.add.at(self.counts, node[keep].astype(np.int64), sign[keep])
        if not self.columns or now > self.columns[-1][0]:
            self.columns.append((now, self.counts.copy()))
            del self.columns[:-HEATMAP_COLUMNS]
        if render:
            self.render()

    def render(self) -> None:
        """Draw what arrived since the last render: sample rows streamed into the plots, the heatmap if it changed, the
        per-function table."""
        self.plots.flush()
        if self.last_samples is not None:
            last = self.last_samples.groupby("function", sort=False).tail(1)
            self.last_samples = None
            for row in last[KPI_COLUMNS].to_dict("records"):
                self.last[row["function"]] = row
            table = pd.DataFrame(list(self.last.values()))[KPI_COLUMNS].round(3)
            if not table.equals(self.table.object):
                self.table.object = table
        # every node that can take a replica, in region / class order: a fixed set of rows, so the axes never jump
        held = sorted(self.node_names, key=lambda n: self.node_order[self.node_names[n]])
        if not held or len(self.columns) < 2:
            return
        rows = np.asarray(held)
        grid = np.stack([np.pad(c, (0, max(0, len(self.counts) - len(c))))[rows] for _, c in self.columns], axis=1).astype(np.float32)
        times = [t for t, _ in self.columns]
        step = (times[-1] - times[0]) / max(1, len(times) - 1)
        names = [self.node_names[n] for n in held]
        self.heatmap.show(grid, times[0], times[-1] + step, names, [self.node_order[name][0] for name in names])
        if self.heatmap_pane.styles != display_style(True, "flex"):
            self.heatmap_pane.styles = display_style(True, "flex")

    # -- controls ---------------------------------------------------------------------------------------
    def bind_controls(self, sections: dict[str, Any], apply: Any) -> None:
        """Live controls for every function slot of the run: its common knobs and its scaler's targets. A slot of the same
        class and scaler as one shown before keeps its card and widgets, pointed at the new run's section (they show and
        change the new run); the row of cards changes only when the run's slots do."""
        cards = []
        self.section_controls: dict[str, SectionControls] = {}
        for key, section in sections.items():
            if not is_function_slot(key):
                continue
            pooled = (key, type(section), section.scaler)
            title = f"{section.label} ({section.scaler})"
            if pooled in self._control_cards and self._control_cards[pooled][0].apply == apply:
                ctl, card = self._control_cards[pooled]
                ctl.rebind(section)
                card.title = title  # another scenario may name the slot's function differently
            else:
                ctl = SectionControls(section, apply, key, scope="fn")
                names = COMMON_CONTROLS + SCALER_CONTROLS.get(section.scaler, [])
                card = pn.Card(ctl.alert, ctl.panel(names), title=title, sizing_mode="stretch_width", margin=(4, 4))
                self._control_cards[pooled] = (ctl, card)
            self.section_controls[key] = ctl
            cards.append(card)
        if list(self.controls.objects) != cards:
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
            view.counts[:] = 0
            view.push({"placements": part}, float(t), render=False)
        view.push({"function_samples": new.get("function_samples", pd.DataFrame())}, end + 1e-9)
        return view


class FunctionsTab(TabBase, pn.viewable.Viewer):
    """The Functions tab of the dashboard (``dashboard.tabtable.TABS``): a :class:`FunctionsView` fed the live run's rows,
    its per-function controls bound to whichever run the session holds (rebound after a reset or a switch)."""

    tables = ("function_samples", "nodes", "placements")

    @property
    def streams_only(self) -> bool:  # type: ignore[override]
        """A flush adds no model to the page, unless it makes a new run's figures."""
        return not self.view.needs_build

    def __init__(self, ctx: Any):
        super().__init__()
        self.session = ctx.session
        self.view = FunctionsView()
        self._bound: Any = None
        self._whole = list(self.view.layout.objects)
        self.rejoin()

    def rejoin(self) -> None:
        """The KPI table and the top row of plots first (a new tab, or back after another world's runs); the other plots,
        the replica heatmap and the per-function controls in the event loop's next turn (:mod:`dashboard.turns`)."""
        self.view.plots.top_first()
        self.view.layout.objects = self._whole[:3]
        after_this_turn(self._show_below)

    def _show_below(self) -> None:
        if list(self.view.layout.objects) != self._whole:
            self.view.layout.objects = self._whole

    def _bind(self) -> None:
        sim = self.session.sim
        if sim is not None and sim is not self._bound:
            self._bound = sim
            # the per-function controls (a hundred widgets, below the plots) after the frame with the plots when served
            # (dashboard.turns; at once in a notebook or a test)
            after_this_turn(self._bind_now)

    def _bind_now(self) -> None:
        if self.session.sim is not None:
            self.view.bind_controls(self.session.sim.sections, self.session.apply)

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
