"""The Compare tab: two parameter sets on the same scenario and seed, controls side by side, plots overlaid, B - A.

A tab with its own clock: while it is shown, the sidebar's Play/Pause, Speed, Step and Reset drive runs A and B, and
the live run waits (the header says so). The pair is built off the event loop (:func:`dashboard.offloop.off_loop`),
with its first minutes simulated there when the clock plays (as a new live run is), while the loop makes the pair's
figures (not yet on the page): the page stays live meanwhile and says so. The built pair's first rows are drawn into
those figures before they join the page, so its plots arrive with data, in one layout change (one message, one build in
the browser). Every world streams A and B into plain Bokeh figures (only new rows): the VM world's time plots overlay A
(solid) and B (dashed); the function platform's and the pod world's plots of A and of B stand side by side. The status
line is shown and hidden by its CSS, not by ``visible`` (which lays the whole page out again:
:mod:`dashboard.messageline`).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pandas as pd
import panel as pn

from dashboard.context import AppContext
from dashboard.functions import FunctionPlots
from dashboard.kpis import kpi_difference
from dashboard.livecontrols import LiveControls
from dashboard.messageline import display_style
from dashboard.offloop import off_loop
from dashboard.podview import PodPlots
from dashboard.session import ComparePair, warm_up
from dashboard.tabs import TabBase
from dashboard.views import KpiRow, TimeSeriesView

log = logging.getLogger(__name__)

BUILDING = "*Building runs A and B… the page stays live meanwhile.*"


def build_pair(scenario: Any, seed: int | None, changes: dict[str, Any], warm: bool) -> tuple[ComparePair, dict[str, dict]]:
    """Runs A and B (``changes`` on both, B's difference on B), their first minutes simulated when ``warm`` (B to A's
    clock: they stay in lockstep), and each one's first rows polled. Plain engine work: safe in a worker thread; the
    tables are those of the same runs advanced from t = 0 in any other slices."""
    pair = ComparePair(scenario, seed, changes)
    read_only_drawn(pair)
    if warm:
        warm_up(pair.a.sim)
        pair.b.sim.advance(pair.a.sim.now)
    return pair, {"A": pair.a.poll(), "B": pair.b.poll()}


def drawn_tables(view: Any) -> tuple[str, ...]:
    """The tables Compare draws of a run of ``view``'s world (the VM world's time plots read samples and events)."""
    if "vm-series" in view.views:
        return ("samples", "events")
    return ("function_samples",) if "functions" in view.views else (view.sample_table,)


def read_only_drawn(pair: ComparePair) -> None:
    """A and B poll only the tables Compare draws and their KPIs read (a poll makes a DataFrame of every table it reads
    that grew: 4-13 ms per run and tick for all of them)."""
    for s in pair.sessions:
        wanted = set(drawn_tables(s.view)) | set(s.kpi.tables)
        s.feed.tables = tuple(t for t in s.feed.tables if t in wanted)


class WorldPair:
    """A's and B's streamed plots of a world other than the VM world, side by side (what each side's poll brought)."""

    def __init__(self, view: Any):
        if "functions" in view.views:
            self.table = "function_samples"
            self.sides = {label: FunctionPlots(prefix=f"cmp{label}-fn") for label in ("A", "B")}
        else:
            self.table = view.sample_table
            self.sides = {label: PodPlots(view.series, prefix=f"cmp{label}") for label in ("A", "B")}
        for plots in self.sides.values():
            plots.layout.ncols = 1
        self.layout = pn.Row(
            *(pn.Column(pn.pane.Markdown(f"**Run {label}**"), p.layout, sizing_mode="stretch_width") for label, p in self.sides.items()),
            sizing_mode="stretch_width",
        )

    def push(self, label: str, new: dict[str, pd.DataFrame]) -> None:
        rows = new.get(self.table)
        if rows is not None and len(rows):
            self.sides[label].push(rows)

    def flush(self) -> None:
        for plots in self.sides.values():
            plots.flush()

    def clear(self) -> None:
        for plots in self.sides.values():
            plots.clear()

    @property
    def needs_build(self) -> bool:
        return any(getattr(p, "needs_build", False) for p in self.sides.values())


class CompareView(TabBase, pn.viewable.Viewer):
    """Runs A and B of the live run's scenario and seed (see the module docs)."""

    own_clock = True

    def __init__(self, ctx: AppContext):
        super().__init__()
        self.ctx = ctx
        self.views: TimeSeriesView | None = None  # made when the tab is first opened: the page loads faster
        self.world_plots: WorldPair | None = None
        self.plots = pn.Column(sizing_mode="stretch_width")
        self.kpi_a, self.kpi_b = KpiRow(), KpiRow()
        self.restart = pn.widgets.Button(
            label="Restart both from the live settings",
            color="primary",
            description="A and B start again from t=0 with the live run's parameters",
        )
        self.restart.on_click(lambda e: self.rebuild(force=True))
        self.status = pn.pane.Markdown("", css_classes=["compare-status"], styles=display_style(False))
        self.controls = pn.Row(sizing_mode="stretch_width")
        #: the pair's plots and side controls: set once per pair, so its models are made and sent in one layout change
        self.body = pn.Column(sizing_mode="stretch_width", margin=0)
        self.layout = pn.Column(
            pn.pane.Markdown(
                "Run **A** and run **B**: same scenario, workload and seed; B starts as A with one difference (half the "
                "workers, another GPU policy). Change either side below. **Play/Pause, Speed, Step and Reset in the "
                "sidebar drive A and B while this tab is shown; the live run waits until you go back.**"
            ),
            pn.Row(self.restart, self.status),
            pn.Row(
                pn.Column(pn.pane.Markdown("**Run A**"), self.kpi_a.pane),
                pn.Column(pn.pane.Markdown("**Run B** (with B − A)"), self.kpi_b.pane),
                sizing_mode="stretch_width",
            ),
            self.body,
            sizing_mode="stretch_width",
        )
        self.pair: ComparePair | None = None
        self._world_pairs: dict[tuple, WorldPair] = {}  # by the world's plots: made once per world, kept across pairs
        self.side_controls: list[LiveControls] = []
        self._new_pair = False
        self._building: tuple | None = None  # what is being built off the loop (scenario, seed, changes), or None
        self._failed_for: tuple | None = None  # what could not be built: not tried again by ticks, only by Restart
        self._generation = 0
        self._closed = False

    @property
    def streamed(self) -> bool:
        """Are A and B overlaid in the VM world's shared time plots (or side by side in their world's plots)?"""
        return self.pair is not None and "vm-series" in self.pair.a.view.views

    @property
    def building(self) -> bool:
        return self._building is not None

    @property
    def streams_only(self) -> bool:  # type: ignore[override]
        """A flush adds no model to the page, unless a new pair's plots are made."""
        return not self._new_pair and not (self.world_plots is not None and self.world_plots.needs_build)

    def rebuild(self, force: bool = False) -> None:
        """A and B again from t=0, with the live run's scenario, seed and changes: built off the event loop (with their
        first minutes when the clock plays), while the loop makes their figures. A pair that could not be built is
        tried again only when ``force``d (Restart), not by every tick."""
        live = self.ctx.session
        wanted = (live.scenario_object(), live.seed, dict(live.overrides))
        if self._building is not None and self._building == wanted:
            return  # that very pair is on its way
        if not force and self._failed_for is not None and self._failed_for == wanted:
            return  # it failed: the status line says why
        self._failed_for = None
        if self.pair is not None:
            self.pair.stop()
            self.pair = None
        self._closed = False
        self._generation += 1
        generation = self._generation
        self._building = wanted
        self._say(BUILDING)
        scenario, seed, changes = wanted
        warm = bool(live.playing)
        if live.sim is not None:  # the pair's figures made on the loop while the worker builds A and B (kept for _adopt)
            self._plots_for(live.view)
        off_loop(
            lambda: build_pair(scenario, seed, changes, warm),
            lambda built: self._adopt(built, generation),
            lambda error: self._failed(error, generation),
        )

    def _say(self, line: str) -> None:
        """The status line beside Restart (empty: hidden), shown by its CSS (no page-wide relayout)."""
        if line:
            self.status.object = line
        styles = display_style(bool(line))
        if self.status.styles != styles:
            self.status.styles = styles

    def _plots_for(self, view: Any) -> Any:
        """The plots of a pair of ``view``'s world: the overlaid time plots (VM world) or that world's pair of plots, made
        once and kept (a new pair empties them)."""
        if "vm-series" in view.views:
            if self.views is None:
                self.views = TimeSeriesView(("A", "B"), prefix="cmp")
            return self.views
        key = (view.views, tuple(getattr(view, "series", ())), getattr(view, "sample_table", None))
        if key not in self._world_pairs:
            self._world_pairs[key] = WorldPair(view)
        return self._world_pairs[key]

    def _failed(self, error: BaseException, generation: int) -> None:
        """The build raised (on the event loop): said in the page and the server log; a superseded build's error is let go."""
        if generation != self._generation or self._closed:
            return
        self._failed_for, self._building = self._building, None
        log.warning("Compare: runs A and B could not be built: %s", error, exc_info=error)
        self._say(f"Runs A and B could not be built: {error}")

    def _adopt(self, built: tuple[ComparePair, dict[str, dict]], generation: int) -> None:
        """The built pair (on the event loop): its first rows drawn into its plots, then plots and side controls join
        the page in one held change; a pair overtaken by another is let go."""
        pair, first = built
        if generation != self._generation or self._closed:
            pair.stop()
            return
        self._building = None
        self.pair = pair
        plots = self._plots_for(pair.a.view)  # made by rebuild(), unless the live run changed world meanwhile
        with pn.io.hold():
            if self.streamed:
                self.world_plots = None
            else:
                self.world_plots = plots
            plots.clear()
            self._new_pair = False  # drawn from its first row here
            self._push(first)
            if self.streamed:
                self.views.flush()
            else:
                self.world_plots.flush()
            self._draw_kpis()
            sections = pair.a.view.compare_sections
            sides = []
            self.side_controls = []
            for label, s in (("A", pair.a), ("B", pair.b)):
                ctl = LiveControls(s, sections=sections, collapsed_all=True, scope=label)
                self.side_controls.append(ctl)
                sides.append(pn.Column(pn.pane.Markdown(f"### Run {label}"), ctl.layout, sizing_mode="stretch_width"))
            shown = plots if self.streamed else plots.layout
            if list(self.plots) != [shown]:
                self.plots[:] = [shown]
            self.controls[:] = sides
            if not len(self.body):  # the first pair: its holders filled before they join the page, so the plots and
                self.body[:] = [self.plots, self.controls]  # controls reach it in one layout change (one message), not two
            self._say("")
        self.ctx.mark_urgent()

    # -- its own clock -------------------------------------------------------------------------------------------
    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        """Advance A and B (the sidebar's clock) and queue what they recorded (called inside the tick's held update)."""
        if self.pair is None:
            if not self.building:
                self.rebuild()
            if self.pair is None:  # still being built: nothing to advance
                return
        if self._new_pair:  # a new pair: new plots before any of its rows are drawn
            self._new_pair = False
            if self.streamed:
                self.views.clear()
            else:
                self.world_plots.clear()
        self.pair.set_playing(playing)
        if playing:
            self.pair.tick(wall_dt, speed)
        self._poll()

    def step(self) -> None:
        if self.pair is None:
            if not self.building:
                self.rebuild()
            return
        self.pair.step()
        self._poll()

    def reset(self) -> None:
        if self.pair is not None:
            self.pair.reset()
            read_only_drawn(self.pair)
            for ctl in self.side_controls:  # new runs, new sections: the controls show and change those
                ctl.rebind()
        self._new_pair = True

    def _poll(self) -> None:
        if self._new_pair:  # its rows wait for the next tick, which draws the new pair from its first row
            return
        self._push({"A": self.pair.a.poll(), "B": self.pair.b.poll()})

    def _push(self, new: dict[str, dict[str, pd.DataFrame]]) -> None:
        """Queue A's and B's new rows in their plots."""
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            rows = new[label]
            if self.streamed:
                interval = s.sim.sections["run"].sample_interval
                self.views.push(label, rows.get("samples", pd.DataFrame()), rows.get("events", pd.DataFrame()), interval)
            else:
                self.world_plots.push(label, rows)

    def now(self) -> float:
        return self.pair.a.sim.now if self.pair is not None else 0.0

    def achieved_speed(self) -> float:
        return self.pair.a.achieved_speed() if self.pair is not None else math.nan

    def run_state(self, playing: bool) -> tuple[str, str]:
        """The header's state label and its CSS class while this tab drives its own runs."""
        if self.pair is None:
            return "Compare A/B building", "state compare"
        return ("Compare A/B running" if playing else "Compare A/B paused"), "state compare"

    # -- drawing -------------------------------------------------------------------------------------------------
    def flush(self, now: float, budget: float = math.inf) -> bool:
        if self.pair is None:
            return True
        if self.streamed:
            if not self.views.flush(budget):
                return False
        elif self.world_plots is not None:
            self.world_plots.flush()
        self._draw_kpis()
        return True

    def _draw_kpis(self) -> None:
        a, b = self.pair.a.kpis(), self.pair.b.kpis()
        view = self.pair.a.view
        self.kpi_a.update(a, view=view)
        self.kpi_b.update(b, kpi_difference(view, a, b), view=view)

    def restart_round(self) -> None:
        if self.views is not None:
            self.views.restart_round()

    def close(self) -> None:
        self._closed = True
        self._generation += 1  # a pair still being built is let go when it arrives
        self._building = None
        if self.pair is not None:
            self.pair.stop()
            self.pair = None

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout
