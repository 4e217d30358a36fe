"""The dashboard's clock: one plain-Python tick (advance the run, hand new rows to the tabs, draw the tab on screen).

No Panel here: the shell calls :meth:`TickLoop.tick` from a periodic callback inside one held document update; a test
calls it in a loop. A tab is drawn in rounds: a round starts when its period has passed (its ``flush_every``, or
``FLUSH_DUTY`` times what its last round cost, so drawing takes at most a third of a core however slow the machine) or
at once after a change ("urgent"); a round draws within ``DRAW_BUDGET`` per tick and goes on at the next tick, so no
tick makes a click wait long. The KPI row and the header follow at most twice a second, in the tick that starts a
drawing round (one document update, one re-layout in the browser), and at once after a change.

A control's change does not wait for the next period: :meth:`TickLoop.mark_urgent` asks the shell for a tick at once
(``tick_soon``), and that tick runs the engine on to the first sample recorded after the change (at most one sample
interval ahead of the clock), so the plots show the new value in the frame it sends. A tab is told why a round starts
(``begin_round``: its period, a control's change, or everything at once), so it can send first what shows a change
(the live tab: its primary plots only). The browser's cost is per frame (every figure of a streamed source
re-rendered), so the plots follow at most every ``PLOT_EVERY`` seconds when nothing changed.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from dashboard.tabs import Tab

#: Drawing a tab may take at most 1/FLUSH_DUTY of the time, and DRAW_BUDGET wall seconds per tick.
FLUSH_DUTY = 3.0
DRAW_BUDGET = 0.05
#: A tick whose engine slice took longer than this (wall s) draws no plot if the tick before drew one.
ENGINE_ALONE = 0.015
#: Seconds between two KPI/header updates when nothing urgent happened.
KPI_EVERY = 0.5
#: Shortest wall seconds between two drawing rounds of a tab when nothing changed (each round re-renders the figures it
#: streams into in the browser, ~50-150 ms of its main thread for six figures).
PLOT_EVERY = 0.5


class TickLoop:
    """Advance, poll, push, draw: what happens on every tick (see the module docs).

    ``ctx`` is the app's context, ``tabset`` the tab containers (built tabs by title, the one shown); ``on_new_run``
    swaps a new run into every view, ``on_kpis`` draws the KPI row and the header, ``on_rows`` sees every poll
    (alerts).
    """

    def __init__(
        self,
        ctx: Any,
        tabset: Any,
        on_new_run: Callable[[], None],
        on_kpis: Callable[[], None],
        on_rows: Callable[[dict[str, Any]], None] = lambda new: None,
        tick_soon: Callable[[], None] | None = None,
    ):
        self.ctx, self.tabset = ctx, tabset
        self.on_new_run, self.on_kpis, self.on_rows = on_new_run, on_kpis, on_rows
        #: asks the shell for a tick now (served: on the event loop's next turn); None: the next periodic tick
        self.tick_soon = tick_soon
        self.chase_sample = False  # a parameter changed: the next tick runs the engine on to the next sample
        self.tick_asked = False  # a tick was asked for and has not run yet (one is enough for any number of changes)
        self.tick_seconds: deque[float] = deque(maxlen=1000)
        self.part_seconds: dict[str, deque[float]] = {}  # where a tick's server time goes (engine, poll, each tab's flush)
        self.new_run = False
        self.urgent = True  # draw soon (a control changed, a tab was opened, a new run)
        self.urgent_any = True
        self.urgent_at = 0.0
        self.newest_sample = self.drawn_sample = -1.0
        self.flushed: dict[str, float] = {}
        self.flush_cost: dict[str, float] = {}  # wall seconds the last complete drawing round of each tab took
        self.round_open: dict[str, bool] = {}
        self.round_cost: dict[str, float] = {}
        self.drew_last = False
        self.ticks = 0

    # -- what a tick does ----------------------------------------------------------------------------------------
    def tick(self, wall_dt: float) -> None:
        """One tick: a waiting new run is swapped in, the run (or the shown tab's own clock) advances, the shown tab draws."""
        t0 = time.perf_counter()
        self.tick_asked = False
        if self.new_run:
            self.new_run = False
            self.on_new_run()
        self.advance(wall_dt)
        # a tick whose engine slice was long leaves the plots to the next one (never two in a row): a click waits for
        # at most one of the two, not their sum
        heavy = time.perf_counter() - t0 > ENGINE_ALONE
        self.draw(draw_plots=self.urgent or not (heavy and self.drew_last))  # a change is drawn in the tick that has it
        self.tick_seconds.append(time.perf_counter() - t0)

    def advance(self, wall_dt: float) -> None:
        s = self.ctx.session
        view = self.tabset.active_view()
        if view is not None and view.own_clock:
            self.timed("engine", view.tick, wall_dt, s.speed, s.playing)
        else:
            self.timed("engine", s.tick, wall_dt)
            if self.chase_sample:
                self.timed("engine", self.run_to_next_sample)
            self.poll_and_push()

    def run_to_next_sample(self) -> None:
        """After a parameter change: advance to the first sample recorded after it, if the clock has not reached it yet
        (at most one sample interval ahead of the clock; paused runs stay where they are)."""
        self.chase_sample = False
        s = self.ctx.session
        if s.sim is None or not s.playing or getattr(s, "stopped", False):
            return
        interval = s.sim.sections["run"].sample_interval
        due = (math.floor(self.urgent_at / interval) + 1) * interval
        if s.sim.now <= due:
            s.sim.advance(math.nextafter(due, math.inf))  # the sample at ``due`` itself is recorded in this advance

    def poll_and_push(self) -> None:
        """Hand the rows recorded since the last poll to every built tab (not while a new run waits to be swapped in)."""
        s = self.ctx.session
        if self.new_run or s.sim is None:
            return
        new = self.timed("poll", s.poll)
        samples = new.get(s.sim.sample_table)
        if samples is not None and len(samples):
            self.newest_sample = float(samples["time"].iloc[-1])
        for title, view in self.tabset.views.items():
            if title in self.tabset.titles:  # a tab built for another run that does not apply to this one is not fed
                view.push(new, s.sim.now)
        self.on_rows(new)

    def catch_up(self, view: Tab) -> None:
        """A tab built after the run started: the rows recorded so far (up to what the next poll starts from)."""
        s = self.ctx.session
        if s.sim is None or view.own_clock or not view.tables:
            return
        cursors = s.feed.cursors
        old = {t: s.sim.frame(t).iloc[: cursors[t]] for t in view.tables if t in cursors and cursors[t]}
        if old:
            view.push(old, s.sim.now)
        self.mark_urgent()

    def draw(self, force: bool = False, draw_plots: bool = True) -> None:
        """Draw the tab on screen in rounds (not when ``draw_plots`` is false); the KPIs and the header too."""
        s = self.ctx.session
        title = self.tabset.active
        view, spec = self.tabset.views.get(title), self.tabset.specs.get(title)
        wall = time.perf_counter()
        urgent = self.urgent or force
        fresh = self.newest_sample > self.drawn_sample
        self.drew_last = False
        started = False
        if view is not None and spec is not None and (draw_plots or force):
            period = max(spec.flush_every, PLOT_EVERY, FLUSH_DUTY * self.flush_cost.get(title, 0.0))
            now_please = urgent and (fresh or force or self.urgent_any)
            reason = "all" if force or (now_please and self.urgent_any) else "change" if now_please else "period"
            start = now_please or wall - self.flushed.get(title, 0.0) >= period
            if now_please and self.round_open.get(title):
                view.restart_round()  # a change waits for no round in progress: its plots are drawn from the first again
                self.round_open[title] = False
            if start and not self.round_open.get(title):
                self.round_open[title], self.round_cost[title] = True, 0.0
                self.flushed[title] = wall
                view.begin_round(reason)
                started = True
                self.drawn_sample = self.newest_sample
                if self.drawn_sample > self.urgent_at or self.urgent_any or force:
                    self.urgent = self.urgent_any = False
            if self.round_open.get(title):
                now = view.now() if view.own_clock else (s.sim.now if s.sim is not None else 0.0)
                done = self.timed(f"flush_{title}", view.flush, now, math.inf if force else DRAW_BUDGET)
                self.drew_last = True
                self.round_cost[title] += time.perf_counter() - wall
                if done is None or done:
                    self.round_open[title] = False
                    self.flush_cost[title] = self.round_cost[title]
        # the KPI row and the header change with a round's first frame (one update and one re-layout in the browser),
        # or on their own when no round started for twice their period
        since = wall - self.flushed.get("kpis", 0.0)
        if urgent or (started and since >= KPI_EVERY) or since >= 2 * KPI_EVERY:
            self.timed("kpis", self.on_kpis)
            self.flushed["kpis"] = wall
        self.ticks += 1

    def mark_urgent(self, anything: bool = True) -> None:
        """Draw soon: at the next tick (``anything``), or once rows recorded after now have arrived (a parameter change:
        a tick is asked for at once, and it runs the engine on to the next sample)."""
        s = self.ctx.session
        self.urgent = True
        self.urgent_any = self.urgent_any or anything
        self.urgent_at = s.sim.now if s.sim is not None else 0.0
        if not anything:
            self.chase_sample = True
        if self.tick_soon is not None and not self.tick_asked:
            self.tick_asked = True
            self.tick_soon()

    # -- measuring -----------------------------------------------------------------------------------------------
    def timed(self, part: str, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.part_seconds.setdefault(part, deque(maxlen=1000)).append(time.perf_counter() - t0)

    def server_tick_ms(self) -> dict[str, float]:
        if not self.tick_seconds:
            return {"median": math.nan, "p95": math.nan}
        ms = sorted(t * 1000 for t in self.tick_seconds)
        return {"median": ms[len(ms) // 2], "p95": ms[min(len(ms) - 1, int(0.95 * len(ms)))]}
