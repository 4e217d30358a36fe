"""The pod/GPU world's live tab: GPU allocation and fragmentation as they grow, GPU devices per node, pods waiting.

Fed from the recorded tables only (``samples``, ``nodes``, ``placements``), by row offset: the time plots are the
curves the world declares (``engine.WORLDS["pod"].ui.series``), plain Bokeh figures over one ``ColumnDataSource`` of
the run's samples streamed with only its new rows (:class:`PodPlots`; one x range: they all end at the same time);
the FGD paper's curves put allocation and fragmentation over the GPU demand that has arrived (a second streamed
source); the device heatmap is :class:`dashboard.gpu.GpuDeviceView` (node and device names in its hover). The
scheduler's GPU policy is switchable here, live.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import panel as pn
from bokeh.models import Range1d
from bokeh.plotting import figure

from dashboard import plots
from dashboard.context import AppContext
from dashboard.gpu import GpuDeviceView
from dashboard.liveplots import PALETTE, TOOLS, Streamed, curves_hover, fit_x, fit_y, series_line, style_legend, time_figure
from dashboard.plothooks import _time_ticker
from dashboard.tabs import TabBase
from dashboard.turns import after_this_turn
from dashboard.worldplots import DASHES

#: Sample rows kept on screen.
WINDOW = 2000
#: Waiting pods listed at most.
WAITING_ROWS = 30
FGD_COLUMNS = ["arrived_pct", "allocated_pct", "frag_pct"]
FGD_NEEDS = {"arrived_gpu_milli", "gpu_milli_allocated", "gpu_milli_idle", "frag_milli"}
WAITING_COLUMNS = ["pod", "waiting since", "feasible nodes", "cpu (m)", "GPUs", "milli-GPU each", "why"]


def arrived_curve(samples: pd.DataFrame) -> pd.DataFrame:
    """The FGD paper's x-axis from sample rows: arrived GPU demand, allocation and fragmentation, % of the cluster's GPUs."""
    capacity = (samples["gpu_milli_allocated"] + samples["gpu_milli_idle"]).to_numpy(dtype=float)
    capacity = np.where(capacity > 0, capacity, np.nan)
    return pd.DataFrame(
        {
            "arrived_pct": 100 * samples["arrived_gpu_milli"].to_numpy(dtype=float) / capacity,
            "allocated_pct": 100 * samples["gpu_milli_allocated"].to_numpy(dtype=float) / capacity,
            "frag_pct": 100 * samples["frag_milli"].to_numpy(dtype=float) / capacity,
        }
    )


class PodPlots:
    """The pod world's declared time plots and the FGD curves of one run, streamed (see the module docs)."""

    def __init__(self, specs: tuple, prefix: str = "pod", window: int = WINDOW):
        self.specs = specs
        self.columns = ["time", *dict.fromkeys(c for spec in specs for c, _ in spec.columns)]
        self.samples = Streamed(self.columns, window)
        self.curve = Streamed(FGD_COLUMNS, window)
        self.x_range = Range1d(0.0, 1.0)
        self.figures: dict[str, figure] = {}
        ticker = _time_ticker()  # the declared plots' time axes share one ticker (as they share the x range)
        for spec in specs:
            fig = time_figure(f"{prefix}-{spec.name}", spec.title, spec.ylabel, self.x_range, ticker=ticker)
            digits = "0" if spec.fmt == "d" else "0.[000]"
            curves = [
                series_line(fig, self.samples.source, col, label, PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)], hover=False)
                for i, (col, label) in enumerate(spec.columns)
            ]
            curves_hover(fig, curves, digits)  # one hover per plot (a hover per curve was two models each)
            style_legend(fig)
            self.figures[spec.name] = fig
        fgd = figure(
            name=f"{prefix}-fgd",
            title="GPU allocation and fragmentation as demand arrives",
            x_range=Range1d(0.0, 1.0),
            y_range=Range1d(0.0, 1.0),
            height=plots.PLOT_HEIGHT,
            min_width=300,
            sizing_mode="stretch_width",
            tools=TOOLS,
            active_scroll=None,
            x_axis_label="GPU demand arrived (% of the cluster's GPUs)",
            y_axis_label="% of the cluster's GPUs",
        )
        fgd.toolbar.autohide = True
        for i, (col, label) in enumerate((("allocated_pct", "allocated"), ("frag_pct", "fragmented"))):
            series_line(fgd, self.curve.source, col, label, PALETTE[i], DASHES[i], x="arrived_pct", digits="0.[0]")
        style_legend(fgd)
        self.figures["fgd"] = fgd
        self.layout = pn.GridBox(
            *(pn.pane.Bokeh(f, sizing_mode="stretch_width", min_height=plots.PLOT_HEIGHT) for f in self.figures.values()),
            ncols=2,
            sizing_mode="stretch_width",
        )

    def push(self, samples: pd.DataFrame) -> None:
        """New ``samples`` rows (queued)."""
        if len(samples) and all(c in samples for c in self.columns):
            self.samples.push(samples[self.columns])
            if FGD_NEEDS <= set(samples.columns):
                self.curve.push(arrived_curve(samples))

    def flush(self) -> bool:
        """Stream what was queued into every plot and fit the axes; True if anything was."""
        if not any([self.samples.flush(), self.curve.flush()]):
            return False
        self.fit()
        return True

    def fit(self) -> None:
        data = self.samples.source.data
        fit_x(self.x_range, [self.samples.source])
        for spec in self.specs:
            fit_y(self.figures[spec.name], [data[c] for c, _ in spec.columns])
        fgd = self.figures["fgd"]
        fit_x(fgd.x_range, [self.curve.source], "arrived_pct")
        fit_y(fgd, [self.curve.source.data["allocated_pct"], self.curve.source.data["frag_pct"]])

    def clear(self) -> None:
        """A new run: every plot empty at once."""
        self.samples.clear()
        self.curve.clear()
        self.fit()


def waiting_table(pending: dict[str, dict], now: float) -> pd.DataFrame:
    """The pods waiting for a node, oldest first, and why (no node passes the filter, or the chosen one was taken)."""
    rows = sorted(pending.values(), key=lambda r: r["since"])[:WAITING_ROWS]
    out = [
        {
            "pod": r["pod"],
            "waiting since": plots.hms(r["since"]),
            "feasible nodes": r["feasible"],
            "cpu (m)": r["cpu"],
            "GPUs": r["gpus"],
            "milli-GPU each": r["milli"],
            "why": "no node has room for its request" if not r["feasible"] else f"{r['feasible']} node(s) fit; waits its turn",
        }
        for r in rows
    ]
    return pd.DataFrame(out, columns=WAITING_COLUMNS)


class PodTab(TabBase, pn.viewable.Viewer):
    """The pod world's live views and its GPU policy switch (see the module docs)."""

    tables = ("samples", "nodes", "placements")
    streams_only = True  # a flush streams rows and sets values: no model is added to the page

    def __init__(self, ctx: AppContext, prefix: str = "pod"):
        super().__init__()
        self.ctx, self.prefix = ctx, prefix
        self.specs = ctx.session.view.series
        self.plots = PodPlots(self.specs, prefix)
        self.grid = self.plots.layout
        self.gpu = GpuDeviceView()
        self.policy = pn.widgets.RadioButtonGroup(label="GPU policy", options=[""], color="primary", css_classes=["gpu-policy"])
        self.policy.param.watch(self._policy_chosen, "value")
        self.policy_note = pn.pane.Markdown("", margin=(0, 10))
        self.waiting = pn.pane.DataFrame(
            pd.DataFrame(columns=WAITING_COLUMNS), index=False, sizing_mode="stretch_width", max_rows=WAITING_ROWS
        )
        self.waiting_note = pn.pane.Markdown("", css_classes=["pods-waiting"])
        self.layout = pn.Column(
            pn.Row(pn.pane.Markdown("**GPU policy** (live: the next pods are placed by it)", margin=(12, 10)), self.policy),
            self.policy_note,
            self.grid,
            sizing_mode="stretch_width",
            css_classes=["pod-view"],
        )
        # the tab's first frame holds the top row of plots; the others, the devices and the waiting pods follow in the
        # event loop's next turn (dashboard.turns: the page's onload on a page still loading; at once unserved)
        below = [self.gpu.layout, pn.pane.Markdown("### Pods waiting for a node"), self.waiting_note, self.waiting]
        self._whole = (list(self.grid.objects), [*self.layout.objects, *below])
        self.rejoin()
        self.clear()

    def rejoin(self) -> None:
        """The top row of plots first (a new tab, or back after another world's runs); the rest in the next turn."""
        plots, parts = self._whole
        self.grid.objects, self.layout.objects = plots[:2], parts[:3]
        after_this_turn(self._show_below)

    def _show_below(self) -> None:
        plots, parts = self._whole
        with pn.io.hold():
            self.grid.objects, self.layout.objects = plots, parts

    # -- feeding -----------------------------------------------------------------------------------------------
    def clear(self) -> None:
        """A new run: every plot empty at once (nothing of the old run can stay), the policy switch on the new run."""
        self.plots.clear()
        self.gpu.clear()
        self.pending: dict[str, dict] = {}
        self.refused = 0
        self._now = 0.0
        self._bind_policy()

    def _bind_policy(self) -> None:
        sim = self.ctx.session.sim
        section = sim.sections.get("scheduler") if sim is not None else None
        if section is None:
            return
        self._binding = True
        try:
            self.policy.options = list(section.param.gpu_policy.objects)
            self.policy.value = section.gpu_policy
        finally:
            self._binding = False
        self.policy_note.object = f"*{section.param.gpu_policy.doc}*"

    def _policy_chosen(self, event) -> None:
        if getattr(self, "_binding", False) or not event.new:
            return
        error = self.ctx.session.apply({"scheduler.gpu_policy": event.new})
        self.ctx.say(f"GPU policy not changed: {error}" if error else "")
        if error:
            self._bind_policy()
        self.ctx.mark_urgent()

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        samples = new.get("samples")
        if samples is not None:
            self.plots.push(samples)
        nodes, placements = new.get("nodes", pd.DataFrame()), new.get("placements", pd.DataFrame())
        self.gpu.push(nodes, placements)
        if len(placements):
            self._note_waiting(placements)
        self._now = now

    def _note_waiting(self, placements: pd.DataFrame) -> None:
        for row in placements[["time", "action", "pod", "feasible", "cpu_millis", "gpu_count", "gpu_milli"]].itertuples(index=False):
            if row.action == "pending":
                known = self.pending.get(row.pod)
                feasible = 0 if pd.isna(row.feasible) else int(row.feasible)
                self.pending[row.pod] = {
                    "pod": row.pod, "since": known["since"] if known else float(row.time), "feasible": feasible,
                    "cpu": int(row.cpu_millis), "gpus": int(row.gpu_count), "milli": int(row.gpu_milli),
                }  # fmt: skip
            elif row.action in ("bind", "release", "lost"):
                self.pending.pop(row.pod, None)

    def flush(self, now: float, budget: float = math.inf) -> bool:
        self.plots.flush()
        self.gpu.render()
        table = waiting_table(self.pending, now)
        if not table.equals(self.waiting.object):
            self.waiting.object = table
        note = (
            f"**{len(self.pending)} pod(s) waiting** (oldest first; at most {WAITING_ROWS} listed)."
            if self.pending
            else "No pod is waiting: every pod submitted so far got a node (or, when filling, was refused at once)."
        )
        if note != self.waiting_note.object:
            self.waiting_note.object = note
        return True

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
