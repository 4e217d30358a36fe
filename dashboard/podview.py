"""The pod/GPU world's live tab: GPU allocation and fragmentation as they grow, GPU devices per node, pods waiting.

Fed from the recorded tables only (``samples``, ``nodes``, ``placements``), by row offset: the time plots are the
curves the world declares (``engine.WORLDS["pod"].ui.series``) over a bounded ``Buffer`` (only new rows go to the
browser); the FGD paper's curves put allocation and fragmentation over the GPU demand that has arrived; the device
heatmap is :class:`dashboard.gpu.GpuDeviceView` (node and device names in its hover). The scheduler's GPU policy is
switchable here, live.
"""

from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn

from dashboard import plots
from dashboard.context import AppContext
from dashboard.gpu import GpuDeviceView
from dashboard.tabs import TabBase
from dashboard.worldplots import DASHES

#: Sample rows kept on screen.
WINDOW = 2000
#: Waiting pods listed at most.
WAITING_ROWS = 30
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


def fgd_plot(curve: pd.DataFrame, figure: str | None = None) -> hv.Overlay:
    """GPU allocation and fragmentation (% of the cluster's GPUs) over the GPU demand arrived (%)."""
    x = hv.Dimension("arrived_pct", label="GPU demand arrived (% of the cluster's GPUs)")
    curves = [
        hv.Curve(curve, x, (col, "% of the cluster's GPUs"), label=label).opts(line_dash=dash, tools=["hover"])
        for (col, label), dash in zip((("allocated_pct", "allocated"), ("frag_pct", "fragmented")), DASHES, strict=False)
    ]
    opts = {"title": "GPU allocation and fragmentation as demand arrives", "responsive": True, "height": plots.PLOT_HEIGHT}
    hooks = [plots.name_hook(figure)] if figure else []
    return hv.Overlay(curves).opts(**opts, show_grid=True, legend_position="top_left", hooks=hooks)


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

    def __init__(self, ctx: AppContext, prefix: str = "pod"):
        super().__init__()
        self.ctx, self.prefix = ctx, prefix
        self.specs = ctx.session.view.series
        self.columns = ["time", *dict.fromkeys(c for spec in self.specs for c, _ in spec.columns)]
        self.gpu = GpuDeviceView()
        self.policy = pn.widgets.RadioButtonGroup(name="GPU policy", options=[""], button_type="primary", css_classes=["gpu-policy"])
        self.policy.param.watch(self._policy_chosen, "value")
        self.policy_note = pn.pane.Markdown("", margin=(0, 10))
        self.waiting = pn.pane.DataFrame(
            pd.DataFrame(columns=WAITING_COLUMNS), index=False, sizing_mode="stretch_width", max_rows=WAITING_ROWS
        )
        self.waiting_note = pn.pane.Markdown("", css_classes=["pods-waiting"])
        self.grid = pn.GridBox(ncols=2, sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.Row(pn.pane.Markdown("**GPU policy** (live: the next pods are placed by it)", margin=(12, 10)), self.policy),
            self.policy_note,
            self.grid,
            self.gpu.layout,
            pn.pane.Markdown("### Pods waiting for a node"),
            self.waiting_note,
            self.waiting,
            sizing_mode="stretch_width",
            css_classes=["pod-view"],
        )
        self.clear()

    # -- feeding -----------------------------------------------------------------------------------------------
    def clear(self) -> None:
        """A new run: new streams and plots (nothing of the old run can stay), the policy switch on the new run."""
        self.buffer = hv.streams.Buffer(pd.DataFrame({c: np.zeros(0) for c in self.columns}), length=WINDOW, index=False)
        self.curve = hv.streams.Buffer(
            pd.DataFrame({c: np.zeros(0) for c in ("arrived_pct", "allocated_pct", "frag_pct")}), length=WINDOW, index=False
        )
        panes = [
            pn.pane.HoloViews(hv.DynamicMap(self._series(spec), streams=[self.buffer]), sizing_mode="stretch_width", linked_axes=False)
            for spec in self.specs
        ]
        fgd = hv.DynamicMap(lambda data: fgd_plot(data, f"{self.prefix}-fgd"), streams=[self.curve])
        panes.append(pn.pane.HoloViews(fgd, sizing_mode="stretch_width", linked_axes=False))
        self.grid[:] = panes
        self.gpu.clear()
        self.pending: dict[str, dict] = {}
        self.queued: list[pd.DataFrame] = []
        self.refused = 0
        self._now = 0.0
        self._bind_policy()

    def _series(self, spec):
        figure = f"{self.prefix}-{spec.name}"

        def draw(data: pd.DataFrame) -> hv.Overlay:
            curves = [
                plots._element(
                    "Curve", data, [col], label, line_dash=DASHES[i % len(DASHES)], line_width=2, tools=["hover"],
                    hover_tooltips=[("time", "@{time}{custom}"), (label, f"@{{{col}}}{{0.[000]}}")],
                )
                for i, (col, label) in enumerate(spec.columns)
            ]  # fmt: skip
            return hv.Overlay(curves).opts(**plots._time_opts(spec.title, spec.ylabel, figure))

        return draw

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
        if samples is not None and len(samples) and all(c in samples for c in self.columns):
            self.queued.append(samples)
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
        if self.queued:
            batch, self.queued = pd.concat(self.queued, ignore_index=True), []
            self.buffer.send(batch[self.columns])
            if {"arrived_gpu_milli", "gpu_milli_allocated", "gpu_milli_idle", "frag_milli"} <= set(batch.columns):
                self.curve.send(arrived_curve(batch))
        self.gpu.render()
        table = waiting_table(self.pending, now)
        if not table.equals(self.waiting.object):
            self.waiting.object = table
        self.waiting_note.object = (
            f"**{len(self.pending)} pod(s) waiting** (oldest first; at most {WAITING_ROWS} listed)."
            if self.pending
            else "No pod is waiting: every pod submitted so far got a node (or, when filling, was refused at once)."
        )
        return True

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
