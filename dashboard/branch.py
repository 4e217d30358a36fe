"""The Branch tab: the live branch (dashed) over its parent recording (solid) from the branch point on, KPIs and B - A."""

from __future__ import annotations

import math
import time
from typing import Any

import pandas as pd
import panel as pn

from dashboard import plots
from dashboard.context import AppContext
from dashboard.kpis import kpi_difference
from dashboard.recordings import kpis_at, recording_view, sample_interval
from dashboard.replay import BRANCH_PREFIX
from dashboard.tabs import TabBase
from dashboard.views import KpiRow, TimeSeriesView
from dashboard.worldplots import time_plots
from engine import Recording

#: Seconds between two redraws of a non-VM branch's side-by-side plots.
REDRAW_EVERY = 1.0


class BranchTab(TabBase, pn.viewable.Viewer):
    """The live branch (dashed) over its parent recording (solid) from the branch point on, with KPIs and B - A."""

    tables = ("samples", "events")

    def __init__(self, ctx: AppContext):
        super().__init__()
        self.session = ctx.session
        self._views: TimeSeriesView | None = None  # made for the first branch: the page loads faster
        self.views_holder = pn.Column(sizing_mode="stretch_width", margin=0)
        self.kpi_parent, self.kpi_branch = KpiRow(), KpiRow()
        self.info = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["branch-info"])
        self.branch_time: float | None = None
        self.streamed = True
        self.parent: Recording | None = None
        self.side_by_side = pn.GridBox(ncols=2, sizing_mode="stretch_width")  # worlds other than the VM world
        self._drawn = 0.0
        self.layout = pn.Column(
            self.info,
            pn.Row(
                pn.Column(pn.pane.Markdown("**Parent recording** at the branch's time"), self.kpi_parent.pane),
                pn.Column(pn.pane.Markdown("**Branch** (with branch − parent)"), self.kpi_branch.pane),
                sizing_mode="stretch_width",
            ),
            self.views_holder,
            self.side_by_side,
            sizing_mode="stretch_width",
        )
        self.clear()

    @property
    def views(self) -> TimeSeriesView:
        """The overlaid time plots of parent and branch (the VM world), made when first needed."""
        if self._views is None:
            self._views = TimeSeriesView(("branch", "parent"), prefix=BRANCH_PREFIX)
            self.views_holder[:] = [self._views]
        return self._views

    def clear(self) -> None:
        """A new live run: if it is a branch, show its parent from the branch point on (and nothing of the branch yet)."""
        s = self.session
        parent, sim = s.branched_from, s.sim
        self._for_sim = sim
        if self._views is not None and (self.parent is not None or parent is not None):  # no branch after none: nothing to empty
            self.views.clear()
        if parent is None or sim is None or sim.parent is None:
            self.parent, self.branch_time = None, None
            self.info.object = "The live run is not a branch: open a recording in the Replay tab and press *Branch here*."
            return
        self.parent, self.branch_time = parent, float(sim.parent["branch_time"])
        self.streamed = "vm-series" in recording_view(parent).views
        self.views_holder.visible, self.side_by_side.visible = self.streamed, not self.streamed
        self._drawn = 0.0
        if self.streamed:
            samples, events = (_from(parent.tables.get(t, pd.DataFrame()), self.branch_time) for t in ("samples", "events"))
            self.views.push("parent", samples, events, sample_interval(parent))
        self.info.object = (
            f"**Branch of `{parent.path.name}` at {plots.hms(self.branch_time)}**: the parent (solid) as recorded, the branch "
            "(dashed) as it runs now, from the branch point on. Change parameters in the sidebar and press Play; save the branch "
            "with *Save the live run*: its file names the parent and the branch time."
        )

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        """Queue the branch's new rows from the branch point on."""
        if self.session.sim is not self._for_sim:  # a new run reached this tab before its clear (the tab was just added)
            self.clear()
        if self.branch_time is None or not self.streamed:
            return
        samples, events = (_from(new.get(t, pd.DataFrame()), self.branch_time) for t in ("samples", "events"))
        if len(samples) or len(events):
            self.views.push("branch", samples, events, self.session.sim.sections["run"].sample_interval)

    def flush(self, now: float, budget: float = math.inf) -> bool:
        """Draw the queued rows within ``budget`` wall seconds; the KPIs of the parent at ``now`` and of the branch."""
        if self.parent is None:
            return True
        view = recording_view(self.parent)
        if self.streamed:
            done = self.views.flush(budget)
        else:
            done = True
            if time.perf_counter() - self._drawn >= REDRAW_EVERY or budget == math.inf:
                self._redraw(view)
        parent, branch = kpis_at(self.parent, now), self.session.kpis()
        self.kpi_parent.update(parent, view=view)
        self.kpi_branch.update(branch, kpi_difference(view, parent, branch), view=view)
        return done

    def _redraw(self, view: Any) -> None:
        """Parent and branch side by side, their world's plots from the branch point on (worlds other than the VM world)."""
        self._drawn = time.perf_counter()
        sim = self.session.sim
        draws = time_plots(view, sample_interval(self.parent), BRANCH_PREFIX)
        sides = {
            "parent": {t: _from(f, self.branch_time) for t, f in self.parent.tables.items() if t in view.tables and "time" in f},
            "branch": {t: _from(sim.frame(t), self.branch_time) for t in view.tables if t in sim.tables},
        }
        panes = [
            pn.pane.HoloViews(draw(frames).opts(title=f"{label}: {name}"), sizing_mode="stretch_width", linked_axes=False)
            for name, draw in draws.items()
            for label, frames in sides.items()
        ]
        self.side_by_side[:] = panes

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


def _from(frame: pd.DataFrame, t0: float) -> pd.DataFrame:
    return frame[frame["time"] >= t0] if len(frame) and "time" in frame else frame
