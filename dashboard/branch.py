"""The Branch tab: the live branch (dashed) over its parent recording (solid) from the branch point on, KPIs and B - A."""

from __future__ import annotations

import math
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
from engine import Recording

SIDES = ("parent", "branch")


class SidePlots:
    """Parent and branch of a run of a world other than the VM world, side by side (parent left, branch right): that
    world's own live-tab figures, plain Bokeh, made once per world and kept across branches; the parent's rows are set
    once per branch, the branch's are streamed as it runs. (They were HoloViews plots of both, all rendered anew every
    second: new figures, and a rebuild of them in the browser, each time.)"""

    def __init__(self, view: Any):
        self.functions = "functions" in view.views
        self.table = "function_samples" if self.functions else "samples"
        self.plots: dict[str, Any] = {side: self._plots(view, side) for side in SIDES}
        self.layout = pn.Row(*(self.plots[side].layout for side in SIDES), sizing_mode="stretch_width")

    def _plots(self, view: Any, side: str) -> Any:
        prefix = f"{BRANCH_PREFIX}-{side}"
        if self.functions:
            from dashboard.functions import FunctionPlots

            plots_ = FunctionPlots(prefix)
        else:
            from dashboard.podview import PodPlots

            plots_ = PodPlots(view.series, prefix)
            for fig in plots_.figures.values():
                fig.title.text = f"{side}: {fig.title.text}"
        plots_.layout.ncols = 1  # a column per side: each parent plot beside the branch's
        return plots_

    @property
    def needs_build(self) -> bool:
        """Will the next :meth:`flush` make figures (a function-world side's functions seen for the first time)?"""
        return self.functions and any(p.functions and p.needs_build for p in self.plots.values())

    def clear(self) -> None:
        for side in SIDES:
            self.plots[side].clear()

    def push(self, side: str, frame: pd.DataFrame) -> None:
        if len(frame):
            self.plots[side].push(frame)

    def flush(self) -> None:
        for side in SIDES:
            if self.plots[side].flush() and self.functions:
                for fig in self.plots[side].figures.values():  # a function plot's figures are made with its functions
                    if not fig.title.text.startswith(side):
                        fig.title.text = f"{side}: {fig.title.text}"


class BranchTab(TabBase, pn.viewable.Viewer):
    """The live branch (dashed) over its parent recording (solid) from the branch point on, with KPIs and B - A."""

    tables = ("samples", "events", "function_samples")

    @property
    def streams_only(self) -> bool:  # type: ignore[override]
        """A flush streams rows and sets values, unless a function-world side's figures are to be made: the tick then
        walks no model graph (a frozen tick walked the page's ~1,300 models, 40-70 ms of the loop every tick while the
        tab was shown, paused or not)."""
        return self.sides is None or self.streamed or not self.sides.needs_build

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
        self.side_by_side = pn.Column(sizing_mode="stretch_width", margin=0)  # worlds other than the VM world
        self._sides: dict[tuple, SidePlots] = {}  # by the world's plots: made once per world
        self.sides: SidePlots | None = None
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

    def prepare(self, view: Any) -> None:
        """Make the plots a branch of a recording of ``view``'s world draws (Bokeh figures, not yet on the page), so that
        *Branch here* only fills them: the Replay tab calls this once a recording's first frame is drawn. (A function
        world's figures are made with its functions, when its rows are first drawn.)"""
        if not self.prepared(view):
            if "vm-series" in view.views:
                self.views  # noqa: B018 - made on first use
            else:
                self._side_plots(view)

    def prepared(self, view: Any) -> bool:
        """Are the plots a branch of ``view``'s world draws made (or made only with its rows: a function world's)?"""
        if "vm-series" in view.views:
            return self._views is not None
        return "functions" in view.views or (view.views, tuple(view.series)) in self._sides

    def _side_plots(self, view: Any) -> SidePlots:
        key = (view.views, tuple(view.series))
        if key not in self._sides:
            self._sides[key] = SidePlots(view)
        return self._sides[key]

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
        view = recording_view(parent)
        self.streamed = "vm-series" in view.views
        self.views_holder.visible, self.side_by_side.visible = self.streamed, not self.streamed
        if self.streamed:
            samples, events = (_from(parent.tables.get(t, pd.DataFrame()), self.branch_time) for t in ("samples", "events"))
            self.views.push("parent", samples, events, sample_interval(parent))
        else:
            self.sides = self._side_plots(view)
            self.sides.clear()
            if list(self.side_by_side) != [self.sides.layout]:
                self.side_by_side[:] = [self.sides.layout]
            self.sides.push("parent", _from(parent.tables.get(self.sides.table, pd.DataFrame()), self.branch_time))
        self.info.object = (
            f"**Branch of `{parent.path.name}` at {plots.hms(self.branch_time)}**: the parent (solid) as recorded, the branch "
            "(dashed) as it runs now, from the branch point on. Change parameters in the sidebar and press Play; save the branch "
            "with *Save the live run*: its file names the parent and the branch time."
        )

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        """Queue the branch's new rows from the branch point on."""
        if self.session.sim is not self._for_sim:  # a new run reached this tab before its clear (the tab was just added)
            self.clear()
        if self.branch_time is None:
            return
        if not self.streamed:
            if self.sides is not None:
                self.sides.push("branch", _from(new.get(self.sides.table, pd.DataFrame()), self.branch_time))
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
            if self.sides is not None:
                self.sides.flush()
        parent, branch = kpis_at(self.parent, now), self.session.kpis()
        self.kpi_parent.update(parent, view=view)
        self.kpi_branch.update(branch, kpi_difference(view, parent, branch), view=view)
        return done

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


def _from(frame: pd.DataFrame, t0: float) -> pd.DataFrame:
    return frame[frame["time"] >= t0] if len(frame) and "time" in frame else frame
