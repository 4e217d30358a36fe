"""The Compare tab: two parameter sets on the same scenario and seed, controls side by side, plots overlaid, B - A.

A tab with its own clock: while it is shown, the sidebar's Play/Pause, Speed, Step and Reset drive runs A and B, and
the live run waits (the header says so). The VM world's time plots stream A (solid) and B (dashed) into one plot each;
other worlds draw their declared plots of A and of B side by side, redrawn at most once a second.
"""

from __future__ import annotations

import math
import time

import pandas as pd
import panel as pn

from dashboard.context import AppContext
from dashboard.kpis import kpi_difference
from dashboard.livecontrols import LiveControls
from dashboard.session import ComparePair
from dashboard.tabs import TabBase
from dashboard.views import KpiRow, TimeSeriesView
from dashboard.worldplots import time_plots

#: Seconds between two redraws of a non-VM world's compare plots (each redraw sends whole tables).
REDRAW_EVERY = 1.0


class CompareView(TabBase, pn.viewable.Viewer):
    """Runs A and B of the live run's scenario and seed (see the module docs)."""

    own_clock = True

    def __init__(self, ctx: AppContext):
        super().__init__()
        self.ctx = ctx
        self.views: TimeSeriesView | None = None  # made when the tab is first opened: the page loads faster
        self.plots = pn.Column(sizing_mode="stretch_width")
        self.kpi_a, self.kpi_b = KpiRow(), KpiRow()
        self.restart = pn.widgets.Button(
            label="Restart both from the live settings",
            color="primary",
            description="A and B start again from t=0 with the live run's parameters",
        )
        self.restart.on_click(lambda e: self.rebuild())
        self.controls = pn.Row(sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.pane.Markdown(
                "Run **A** and run **B**: same scenario, workload and seed; B starts as A with one difference (half the "
                "workers, another GPU policy). Change either side below. **Play/Pause, Speed, Step and Reset in the "
                "sidebar drive A and B while this tab is shown; the live run waits until you go back.**"
            ),
            self.restart,
            pn.Row(
                pn.Column(pn.pane.Markdown("**Run A**"), self.kpi_a.pane),
                pn.Column(pn.pane.Markdown("**Run B** (with B − A)"), self.kpi_b.pane),
                sizing_mode="stretch_width",
            ),
            self.plots,
            self.controls,
            sizing_mode="stretch_width",
        )
        self.pair: ComparePair | None = None
        self.side_controls: list[LiveControls] = []
        self._new_pair = False
        self._drawn = 0.0

    @property
    def streamed(self) -> bool:
        """Are A and B streamed into shared time plots (the VM world), or redrawn whole (the others)?"""
        return self.pair is not None and "vm-series" in self.pair.a.view.views

    def rebuild(self) -> None:
        """A and B again from t=0, with the live run's scenario, seed and changes."""
        live = self.ctx.session
        if self.pair is not None:
            self.pair.stop()
        self.pair = ComparePair(live.scenario_object(), live.seed, dict(live.overrides))
        if self.streamed:
            if self.views is None:
                self.views = TimeSeriesView(("A", "B"), prefix="cmp")
            self.plots[:] = [self.views]
        else:
            self.plots[:] = []
        sections = self.pair.a.view.compare_sections
        sides = []
        self.side_controls = []
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            ctl = LiveControls(s, sections=sections, collapsed_all=True, scope=label)
            self.side_controls.append(ctl)
            sides.append(pn.Column(pn.pane.Markdown(f"### Run {label}"), ctl.layout, sizing_mode="stretch_width"))
        self.controls[:] = sides
        self._new_pair = True
        self._drawn = 0.0

    # -- its own clock -------------------------------------------------------------------------------------------
    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        """Advance A and B (the sidebar's clock) and queue what they recorded (called inside the tick's held update)."""
        if self.pair is None:
            self.rebuild()
        if self._new_pair:  # a new pair: new plots before any of its rows are drawn
            self._new_pair = False
            if self.streamed:
                self.views.clear()
        self.pair.set_playing(playing)
        if playing:
            self.pair.tick(wall_dt, speed)
        self._poll()

    def step(self) -> None:
        if self.pair is None:
            self.rebuild()
        self.pair.step()
        self._poll()

    def reset(self) -> None:
        if self.pair is not None:
            self.pair.reset()
            for ctl in self.side_controls:  # new runs, new sections: the controls show and change those
                ctl.rebind()
        self._new_pair = True

    def _poll(self) -> None:
        if self._new_pair:  # its rows wait for the next tick, which draws the new pair from its first row
            return
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            new = s.poll()
            if self.streamed:
                interval = s.sim.sections["run"].sample_interval
                self.views.push(label, new.get("samples", pd.DataFrame()), new.get("events", pd.DataFrame()), interval)

    def now(self) -> float:
        return self.pair.a.sim.now if self.pair is not None else 0.0

    def achieved_speed(self) -> float:
        return self.pair.a.achieved_speed() if self.pair is not None else math.nan

    def run_state(self, playing: bool) -> tuple[str, str]:
        """The header's state label and its CSS class while this tab drives its own runs."""
        return ("Compare A/B running" if playing else "Compare A/B paused"), "state compare"

    # -- drawing -------------------------------------------------------------------------------------------------
    def flush(self, now: float, budget: float = math.inf) -> bool:
        if self.pair is None:
            return True
        if self.streamed:
            if not self.views.flush(budget):
                return False
        elif time.perf_counter() - self._drawn >= REDRAW_EVERY or budget == math.inf:
            self._redraw()
        a, b = self.pair.a.kpis(), self.pair.b.kpis()
        view = self.pair.a.view
        self.kpi_a.update(a, view=view)
        self.kpi_b.update(b, kpi_difference(view, a, b), view=view)
        return True

    def _redraw(self) -> None:
        """A's and B's declared plots side by side, from their whole tables (worlds other than the VM world)."""
        self._drawn = time.perf_counter()
        rows = []
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            frames = {t: s.sim.frame(t) for t in s.view.tables if t in s.sim.tables}
            interval = s.sim.sections["run"].sample_interval
            rows.append([draw(frames).opts(title=f"{label}: {name}") for name, draw in time_plots(s.view, interval, f"cmp{label}").items()])
        panes = [pn.pane.HoloViews(el, sizing_mode="stretch_width", linked_axes=False) for pair in zip(*rows, strict=True) for el in pair]
        self.plots[:] = [pn.GridBox(*panes, ncols=2, sizing_mode="stretch_width")]

    def restart_round(self) -> None:
        if self.views is not None:
            self.views.restart_round()

    def close(self) -> None:
        if self.pair is not None:
            self.pair.stop()
            self.pair = None

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
