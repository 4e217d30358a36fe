"""The Placement tab's views: the placement heatmap (nodes x time), the score heatmap of a decision (with the
weight-change preview) and, on a cluster with GPUs, the per-device GPU heatmap; fed from ``nodes``, ``placements``
and ``breakdowns`` rows.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pandas as pd
import panel as pn

from dashboard import plots
from dashboard.controls import label_of
from dashboard.frames import NodeLayout, placement_deltas, rescore
from dashboard.gpu import GpuDeviceView
from dashboard.heatfigures import PlacementFigure, ScoreFigure
from dashboard.tabs import TabBase
from engine import PRIORITY_WEIGHTS

#: Samples kept on screen per run and plot (the heatmap's span is this many sample intervals).
WINDOW = 1500
#: Time columns of the placement heatmap.
HEATMAP_COLUMNS = 120


class PlacementView(pn.viewable.Viewer):
    """Nodes (grouped by region and type) x time, coloured by replicas or cpu allocation: one Bokeh image
    (:class:`~dashboard.heatfigures.PlacementFigure`, made once; its data replaced only when the grid changed).

    Built from the ``nodes`` table and the ``placements`` table (each bind adds the pod to its node, each
    release or loss takes it away); live it shows the newest ``span`` simulated seconds (the time plots' window).
    """

    def __init__(self, span: float = WINDOW * 5.0, figure: str = "placement-heatmap"):
        super().__init__()
        self.span = span
        self.figure = figure
        self.metric = pn.widgets.RadioButtonGroup(options=["replicas", "utilisation"], value="replicas", color="light")
        self.metric.param.watch(lambda e: self.flush(self._now, force=True), "value")
        self.note = pn.pane.Markdown("No cluster in this scenario: placement views appear for scenarios with a `cluster`.", visible=False)
        self.heat = PlacementFigure(figure)
        self.plot = pn.pane.Bokeh(self.heat.figure, sizing_mode="stretch_width", min_height=300)
        self.layout = pn.Column(pn.Row(pn.pane.Markdown("**Colour by**"), self.metric), self.note, self.plot, sizing_mode="stretch_width")
        self.clear()

    def clear(self) -> None:
        self.nodes: NodeLayout | None = None
        self.rewind()
        self.heat.clear()  # a new run: nothing of the old grid stays

    def rewind(self) -> None:
        """Drop the placements but keep the nodes and the plot (a replay scrubbed back feeds them again from t=0)."""
        self._deltas: list[pd.DataFrame] = []
        self._now = 0.0
        self._dirty = self.nodes is not None
        self.times: np.ndarray = np.zeros(0)

    def push(self, nodes: pd.DataFrame, placements: pd.DataFrame) -> None:
        """New rows of the ``nodes`` and ``placements`` tables."""
        if len(nodes):
            self.nodes = NodeLayout.from_nodes(nodes)
            self._dirty = True
        if len(placements):
            deltas = placement_deltas(placements)
            if len(deltas):
                self._deltas.append(deltas)
                self._dirty = True

    @property
    def deltas(self) -> pd.DataFrame:
        if len(self._deltas) > 1:
            self._deltas = [pd.concat(self._deltas, ignore_index=True)]
        return self._deltas[0] if self._deltas else placement_deltas(pd.DataFrame())

    def flush(self, now: float, force: bool = False, start: float | None = None) -> None:
        """Draw the newest stretch up to ``now`` (or [start, now] for a finished run)."""
        self._now = now
        self.note.visible, self.plot.visible = self.nodes is None, self.nodes is not None
        if self.nodes is None or (not force and not self._dirty and len(self.times) and self.times[-1] >= now):
            return
        lo = max(0.0, now - self.span) if start is None else start
        self.times = np.linspace(lo, max(now, lo + 1.0), HEATMAP_COLUMNS)
        self._dirty = False
        # the figure's own height fits the nodes (set in draw); the pane's is not changed: setting a Bokeh pane's layout
        # parameter after it is shown makes Panel re-sync its properties and fail on the figure's stylesheets
        self.heat.draw(self.nodes, self.deltas, self.times, self.metric.value)

    def grid(self) -> np.ndarray:
        """The grid on screen (display rows x columns)."""
        from dashboard.frames import placement_grid

        return placement_grid(self.nodes, self.deltas, self.times, self.metric.value) if self.nodes is not None else np.zeros((0, 0))

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


LATEST = "latest placement"
#: Placements kept for the score heatmap's picker.
HISTORY = 20


class ScoreView(pn.viewable.Viewer):
    """One placement decision: nodes x priorities, weighted, the chosen node outlined, infeasible nodes with reasons.

    :meth:`preview` re-scores the shown decision with new weights at once (marked as a preview: the scheduler
    uses them from its next placement); a mode change cannot be previewed and says so.
    """

    def __init__(self, figure: str = "score-heatmap"):
        super().__init__()
        self.figure = figure
        self.choice = pn.widgets.Select(
            label="Placement", options=[LATEST], value=LATEST, width=340, description="Recent placement decisions"
        )
        self.choice.param.watch(lambda e: self._redraw(), "value")
        self.note = pn.pane.Markdown("No placement yet (or no cluster in this scenario).")
        self.status = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["score-status"])
        self.heat = ScoreFigure(figure)  # made once; a decision replaces its data
        self.plot = pn.pane.Bokeh(self.heat.figure, sizing_mode="stretch_width", min_height=plots.SCORE_HEIGHT)
        self.infeasible = pn.pane.Markdown("", sizing_mode="stretch_width")
        self.layout = pn.Column(self.choice, self.note, self.status, self.plot, self.infeasible, sizing_mode="stretch_width")
        self.clear()

    def clear(self) -> None:
        self.shown = None  # a new plot follows: nothing to empty in the old one
        self.rewind()
        self.heat.clear()

    def rewind(self) -> None:
        """Drop every decision but keep the plot (a replay scrubbed back feeds them again from t=0)."""
        self.history: dict[str, tuple[pd.DataFrame, float | None]] = {}
        self.latest: str | None = None
        self.weights: dict[str, float] | None = None
        self.preview_note = ""
        self._blank = getattr(self, "shown", None) is not None  # the plot shows a decision the new feed may not have
        self.shown = None
        self._dirty = False
        self._placed: dict[int, float] = {}
        self.choice.options = [LATEST]
        self.choice.value = LATEST
        self.status.object = ""

    def push(self, placements: pd.DataFrame, breakdowns: pd.DataFrame) -> None:
        """New rows of the ``placements`` and ``breakdowns`` tables: one history entry per decision with a breakdown."""
        if len(placements):
            decided = placements[placements["decision"].notna()]
            self._placed.update(zip(decided["decision"].astype(int), decided["time"].astype(float), strict=True))
        if not len(breakdowns):
            return
        nodes = {}
        if len(placements):
            binds = placements[placements["decision"].notna()]
            nodes = dict(zip(binds["decision"].astype(int), binds["node"].astype(object), strict=True))
        for decision, block in breakdowns.groupby("decision", sort=True):
            at = self._placed.get(int(decision))
            node = nodes.get(int(decision))
            node = None if node is None or node is pd.NA else str(node)
            label = f"{plots.hms(at) if at is not None else '?'} -> {node or 'pending'} (#{int(decision)})"
            self.history[label] = (block.reset_index(drop=True), at)
            self.latest = label
        while len(self.history) > HISTORY:
            self.history.pop(next(iter(self.history)))
        self.choice.options = [LATEST, *reversed(self.history)]
        # a new placement was decided with the weights in force: the preview has become the real thing
        self.weights, self.preview_note = None, ""
        self._dirty = True

    def preview(self, weights: dict[str, float] | None, note: str = "") -> None:
        """Re-score the shown placement with ``weights`` (priority name -> weight); ``note`` says what cannot be previewed."""
        self.weights, self.preview_note = weights, note
        self._dirty = True

    def _selected(self) -> tuple[pd.DataFrame, float | None] | None:
        label = self.latest if self.choice.value == LATEST else self.choice.value
        return self.history.get(label) if label else None

    def _redraw(self) -> None:
        self._dirty = True
        self.flush(self._last_now if hasattr(self, "_last_now") else None)

    def flush(self, now: float | None = None) -> None:
        self._last_now = now
        chosen = self._selected()
        self.note.visible = chosen is None
        if chosen is None:
            if self._blank:  # rewound to before the first decision: the empty grid
                self._blank = False
                self.heat.clear()
            return
        self._blank = False
        block, at = chosen
        if self._dirty:
            self._dirty = False
            unchanged = self.weights is not None and all(
                math.isclose(w, self.weights.get(p, w))
                for p, w in block.drop_duplicates("priority")[["priority", "weight"]].itertuples(index=False)
            )
            weights = None if unchanged else self.weights
            self.shown = (block, weights, at)
            self.heat.draw(block, weights, at)
            from dashboard.frames import score_grid

            rejected = score_grid(block).infeasible
            if len(rejected):
                lines = [f"| {n} | {r} |" for n, r in zip(rejected["node"][:15], rejected["reason"][:15], strict=True)]
                more = f"\n\n…and {len(rejected) - 15} more" if len(rejected) > 15 else ""
                self.infeasible.object = "**Nodes not scored**\n\n| node | reason |\n|---|---|\n" + "\n".join(lines) + more
            else:
                self.infeasible.object = "All nodes feasible and scored."
        self.status.object = self._status(at, now)

    def _status(self, at: float | None, now: float | None) -> str:
        previewing = self.shown is not None and self.shown[1] is not None
        age = f", {plots.hms(now - at)} ago (simulated)" if at is not None and now is not None and now >= at else ""
        when = f"Placement at {plots.hms(at)}{age}." if at is not None else "Placement time not recorded."
        text = f"<b>{when}</b>"
        if previewing:
            text += " <span class='score-preview'><b>Preview</b>: the new weights re-score this placement's pod; they apply from the next placement.</span>"
            block = rescore(self.shown[0], self.shown[1])
            if "tie" in block and bool(block["tie"].any()):
                mode = str(block["mode"].iloc[0]) if "mode" in block and len(block) else ""
                rule = "kube mode picks among tied nodes at random" if mode == "kube" else f"{mode or 'this'} mode's own rule picks one"
                text += f" <span class='score-tie'>A tie: {rule}.</span>"
        if self.preview_note:
            text += f" <span class='score-preview-note'>{html.escape(self.preview_note)}</span>"
        return text

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


class PlacementTab(TabBase, pn.viewable.Viewer):
    """The "Placement" tab: the placement heatmap and the score heatmap, fed from ``nodes``, ``placements``, ``breakdowns``."""

    tables = ("nodes", "placements", "breakdowns")

    def __init__(self, span: float = WINDOW * 5.0, prefix: str | None = None, gpu_on_demand: bool = False):
        super().__init__()
        named = f"{prefix}-" if prefix else ""  # the live tab's figures keep their plain names
        self.placement = PlacementView(span, figure=f"{named}placement-heatmap")
        self.scores = ScoreView(figure=f"{named}score-heatmap")
        self.gpu = GpuDeviceView(on_demand=gpu_on_demand)  # per-device GPU use, shown when the cluster has GPUs
        self._layout = pn.Column(self.placement, self.gpu.layout, self.scores, sizing_mode="stretch_width")

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        empty = pd.DataFrame()
        self.placement.push(new.get("nodes", empty), new.get("placements", empty))
        self.scores.push(new.get("placements", empty), new.get("breakdowns", empty))
        self.gpu.push(new.get("nodes", empty), new.get("placements", empty))

    def flush(self, now: float, budget: float = math.inf) -> bool:
        self.placement.flush(now)
        self.gpu.render()
        self.scores.flush(now)
        return True

    def clear(self) -> None:
        self.placement.clear()
        self.gpu.clear()
        self.scores.clear()

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout


#: Scheduler parameters a recorded breakdown cannot re-score: they change which nodes pass or how scores scale.
NOT_PREVIEWABLE = {
    "mode": "a mode change re-normalises every score",
    "kube_version": "it changes the plugins and formulas",
    "percentage_of_nodes_to_score": "it changes which nodes are scored",
    "avoid_storage_nodes": "it changes which nodes pass the filter",
}


def preview_scheduler(section: Any, scores: ScoreView, names: set[str]) -> None:
    """Re-score the newest placement with the weights now in force; say what only the next placement will show."""
    blocked = [f"{label_of(section.param[n])}: {why}" for n, why in NOT_PREVIEWABLE.items() if n in names]
    note = ("Applies from the next placement (" + "; ".join(blocked) + ").") if blocked else ""
    weights = {prio: float(getattr(section, name)) for prio, name in PRIORITY_WEIGHTS.items()}
    scores.preview(None if blocked else weights, note)
