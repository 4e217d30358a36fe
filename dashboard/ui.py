"""The dashboard's shell: it only wires the parts (template, header, sidebar, tab containers) around one live session.

Every part is handed the app context (:class:`dashboard.context.AppContext`), never this shell; the tabs are the rows
of :data:`dashboard.tabtable.TABS` (one protocol, :class:`dashboard.tabs.Tab`); the clock is
:class:`dashboard.ticker.TickLoop` (plain Python); links are :mod:`dashboard.links`. Inline in Jupyter::

    import panel as pn
    from dashboard.ui import Dashboard
    pn.extension()
    Dashboard()            # or Dashboard("openb-fgd", seed=7), or Dashboard(scenario_object)
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import time
from typing import Any

import panel as pn
import param

from dashboard.cards import FaultCard, RunCard
from dashboard.context import AppContext
from dashboard.header import HEADER_CSS, HINT, STATUS_CSS, status_html, stuck_alert_text
from dashboard.links import LinkResult, apply_link, link_query, link_start
from dashboard.livecontrols import LiveControls
from dashboard.offloop import off_loop
from dashboard.placement import preview_scheduler
from dashboard.recordcard import Recordings
from dashboard.serverlog import quiet_closed_sockets
from dashboard.session import WARM_UP, WARM_UP_BUDGET, LiveSession, warm_up
from dashboard.sessionlife import browser_attached, expire_closed_session, watch_until_started
from dashboard.sidebar import Sidebar
from dashboard.tabset import Parts, TabSet
from dashboard.tabtable import TABS
from dashboard.ticker import TickLoop
from dashboard.views import WINDOW, KpiRow, PlacementTab, SeriesTab
from engine import Scenario


class Dashboard(pn.viewable.Viewer):
    """The scalelab dashboard over one live simulation (see the module docs)."""

    tick_period = param.Integer(100, bounds=(20, 5000), doc="Milliseconds between two ticks of the simulation clock.")

    def __init__(self, scenario: str | Scenario | None = None, seed: int | None = None, **params):
        super().__init__(**params)
        # a served page's link is applied before anything is built: its scenario's world is the only one built, and the
        # controls are made with the link's values (its play state follows the first minutes, at start)
        search = pn.state.location.search if pn.state.curdoc is not None and pn.state.location is not None else ""
        scenario, seed, self._link_playing, search = link_start(search, scenario, seed)
        self.session = s = LiveSession(scenario, seed)
        s.runner = off_loop  # Reset and a new scenario or seed are built off the event loop when served
        self.ctx = ctx = AppContext(s)
        # the Live and Placement tabs' views, each made when its tab is first shown; the sidebar's cards, made when the
        # sidebar joins the page (at start, after the first frame) or when first asked for (a test, a notebook)
        ctx.parts = Parts(
            live_tab=self._make_live_tab,
            placement_tab=self._make_placement_tab,
            run_card=lambda: RunCard(ctx, on_step=self._step, on_reset=self._reset),
            fault_card=lambda: FaultCard(ctx, on_injected=self._mark_urgent),
            # open cards filled at start (after the first frame)
            controls=lambda: LiveControls(s, on_applied=self._applied, defer=True),
        )
        self.recordings = ctx.parts["recordings"] = Recordings(ctx)
        with s.building_inline():  # the link's parameters apply to its scenario's run
            link = apply_link(s, search) if search else None
        self.replay = self.recordings.upload
        self.kpis = KpiRow(s.view)
        self.message = self.fault_alert = ctx.message
        self.stuck_alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=["alert-stuck"])
        self.status = pn.pane.HTML("", stylesheets=[STATUS_CSS], sizing_mode="stretch_width", css_classes=["run-state-pane"])
        self._drawn_scenario = s.scenario
        self.cards = Sidebar(ctx, stopped=lambda: self._stopped)
        self.sidebar, self.controls_holder = self.cards.column, self.cards.controls_holder
        self.tabset = TabSet(ctx, TABS, on_change=self._tab_changed)
        self.loop = TickLoop(ctx, self.tabset, on_new_run=self._swap_run, on_kpis=self._draw_kpis, on_rows=self._show_alerts)
        self.tabset.on_built = self.loop.catch_up
        self.tabs = self.tabset.tabs
        self.main = pn.Column(self.message, self.stuck_alert, self.kpis, self.tabs, sizing_mode="stretch_width")
        self._layout = pn.Row(pn.Column(self.status, self.sidebar, width=360), self.main, sizing_mode="stretch_width")
        self._callback = None
        doc = pn.state.curdoc  # served: the session's document (a page may be let go of before it starts)
        self._doc: Any = doc if doc is not None and doc.session_context is not None else None
        self._stopped = False
        self.released = False  # the page let go of: its simulation released, its plots cleared when it still could (_let_go)
        self._last_wall = time.perf_counter()
        ctx.show_tab, ctx.mark_urgent, ctx.adopt_run = self.show_tab, self.loop.mark_urgent, self.adopt_run
        ctx.sync_run_card = lambda: self.run_card.sync() if "run_card" in ctx.parts.made else None
        ctx.active_own_clock = lambda: self.active_view() is not None and self.active_view().own_clock
        ctx.served = lambda: self._callback is not None
        s.param.watch(self._session_rebuilt, "generation")
        s.param.watch(self._run_state_changed, ["playing", "speed"])
        s.param.watch(self._building_changed, "building")
        if link is not None:
            self._link_applied(link)
        self.loop.poll_and_push()
        self._render_status()

    def _sample_interval(self) -> float:
        return self.session.sim.sections["run"].sample_interval

    def _make_live_tab(self) -> SeriesTab:
        return SeriesTab("live", self._sample_interval())

    def _make_placement_tab(self) -> PlacementTab:
        return PlacementTab(WINDOW * self._sample_interval())

    # -- parts by name (tests, notebooks; each made when first asked for) ----------------------------------------------
    @property
    def live_tab(self) -> SeriesTab:
        """The live run's Live tab: time plots and event log."""
        return self.ctx.parts["live_tab"]

    @property
    def placement_tab(self) -> PlacementTab:
        """The live run's Placement tab: placement, GPU and score heatmaps."""
        return self.ctx.parts["placement_tab"]

    @property
    def run_card(self) -> RunCard:
        return self.ctx.parts["run_card"]

    @property
    def fault_card(self) -> FaultCard:
        return self.ctx.parts["fault_card"]

    @property
    def controls(self) -> LiveControls:
        """The sidebar's parameter cards (their open cards get their widgets at start)."""
        return self.ctx.parts["controls"]

    @controls.setter
    def controls(self, controls: LiveControls) -> None:  # a benchmark's own, with its timed callbacks
        self.ctx.parts["controls"] = controls

    @property
    def views(self):
        return self.live_tab.series

    @property
    def events(self):
        return self.live_tab.events

    @property
    def placement(self):
        return self.placement_tab.placement

    @property
    def scores(self):
        return self.placement_tab.scores

    @property
    def compare(self):
        return self.tabset.ensure("Compare")

    @property
    def speed(self):
        return self.run_card.speed

    @property
    def node_fault(self):
        return self.fault_card.buttons.get("node_failure")

    @property
    def tab_views(self) -> dict[str, Any]:
        return self.tabset.views

    @property
    def active_tab(self) -> str:
        return self.tabset.active

    @property
    def tick_seconds(self):
        return self.loop.tick_seconds

    @property
    def part_seconds(self):
        return self.loop.part_seconds

    def active_view(self) -> Any:
        return self.tabset.active_view()

    def show_tab(self, title: str) -> None:
        """Bring the tab titled ``title`` to the front (the first tab when it does not apply to this run)."""
        self.tabset.show(title if title in self.tabset.titles else self.tabset.titles[0])

    # -- the page ------------------------------------------------------------------------------------------------------
    def page(self, title: str = "scalelab") -> pn.template.BootstrapTemplate:
        """The dashboard in a template (the served app): header with the run state, fixed sidebar, tabs. The first
        simulated minutes are drawn before the page is sent, so its first document already holds data."""
        self.warm_up()
        header = pn.Row(
            pn.pane.HTML(
                f"<div class='app-title'>scalelab: how clusters schedule and autoscale</div><div class='app-hint'>{html.escape(HINT)}</div>",
                stylesheets=[HEADER_CSS],
                margin=(0, 20, 0, 0),
            ),
            self.status,
            sizing_mode="stretch_width",
        )
        self._layout = self.main  # the template holds the sidebar and the header
        # the served page's first document holds the header and the tab on screen with its first minutes; the sidebar's
        # cards are made and join at start, after the first frame (a fifth of the page's models: fewer to make, walk and
        # send first)
        template = pn.template.BootstrapTemplate(
            title=title,
            header=[header],
            sidebar=[self.sidebar],
            main=[self.main],
            sidebar_width=370,
            header_background="#24476b",
            busy_indicator=None,
        )
        pn.state.onload(self.start)
        watch_until_started(lambda: self._callback is not None or self._stopped, self.stop)  # a tab closed before onload
        return template

    def warm_up(self, until: float = WARM_UP, budget: float = WARM_UP_BUDGET) -> None:
        """Simulate the first ``until`` seconds, at least five samples (within ``budget`` wall seconds), and draw them
        into the tab shown."""
        self._warm(self.session, until, budget)
        self.refresh()

    @staticmethod
    def _warm(s: LiveSession, until: float = WARM_UP, budget: float = WARM_UP_BUDGET) -> None:
        """A new run that is to play starts with its first minutes simulated, so that its first frame has data."""
        if s.sim is None or s.sim.now > 0 or not s.playing:
            return
        warm_up(s.sim, until, budget)

    def __panel__(self) -> pn.viewable.Viewable:
        self.cards.fill()
        pn.state.onload(self.start)
        return self._layout

    # -- lifecycle -----------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start ticking (once): the link's play state, the sidebar's open cards filled, the page's link shown; stop and
        free everything when the session goes away."""
        if self._callback is not None or self._stopped:
            return
        self._last_wall = time.perf_counter()
        quiet_closed_sockets()
        if self._link_playing is not None:  # the link's play state, after the first minutes were drawn
            self.session.playing, self._link_playing = self._link_playing, None
        self.cards.fill_in_turns()  # now that the first frame is on screen
        self._callback = pn.state.add_periodic_callback(self._tick, period=self.tick_period)
        self.loop.tick_soon = self._tick_soon
        self._update_link()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            self._doc = pn.state.curdoc
            pn.state.on_session_destroyed(self._destroyed)

    def _destroyed(self, context: Any) -> None:
        self.stop(clear_plots=False)

    def stop(self, clear_plots: bool = True) -> None:
        """Stop the clock and let go of the simulations and every plot's data (the browser tab is gone).

        ``clear_plots=False`` when the server is destroying the session: its document goes with it. Served, from any
        thread: the letting go runs on the session's loop under its lock, after a tick that may be running there."""
        self._stopped = True
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        doc, self._doc = (self._doc, None) if clear_plots else (None, self._doc)
        if doc is not None:  # served
            if doc.session_context is not None and not doc.session_context.destroyed:  # (destroyed: its models emptied)
                with contextlib.suppress(RuntimeError):  # the server is gone: so is the page
                    doc.add_next_tick_callback(lambda: self._let_go(clear_plots=True))
                    return
            clear_plots = False  # the session is gone, and its page with it
        self._let_go(clear_plots)

    def _let_go(self, clear_plots: bool) -> None:
        if self.released:  # once: after its session was destroyed a page's models are emptied (Bokeh's destroy) and
            return  # a page its tick let go of is stopped again when the server ends
        self.released = True
        for view in self.tabset.views.values():
            view.close()
        self.recordings.warmup.forget()  # a branch's warm-up in the off-loop worker stops with the page
        if clear_plots:
            self.session.release()
            self._clear_page()
            return
        # the page is gone: the session's last changes (playing off, stopped) must reach no widget, since a widget
        # linked to it would schedule its update on a server loop that may be closed already ("Event loop is closed")
        with param.parameterized.discard_events(self.session):
            self.session.release()

    def _clear_page(self) -> None:
        for view in self.tabset.views.values():
            view.clear()
        self.main.clear()
        self.sidebar.clear()

    def _tick(self) -> None:
        now = time.perf_counter()
        wall_dt, self._last_wall = now - self._last_wall, now
        if self._stopped:
            return
        if not browser_attached():  # the tab was closed: free everything now, and the server drops the session next
            self._doc = None  # this is the session's loop: its page is let go now, before the session is destroyed
            self.stop()
            expire_closed_session()
            return
        view = self.active_view()
        # never frozen while a new run is swapped in: Panel components made inside a freeze have no document until it
        # ends, and one changed before then gets its stylesheets from the CDN (ReactiveBase._resolve_stylesheets)
        graph_changes = not self.loop.new_run and (view is None or not view.streams_only)
        with pn.io.hold(), self._frozen(graph_changes):  # one document update per tick: a new run replaces every plot's data at once
            self.loop.tick(wall_dt)

    def _tick_soon(self) -> None:
        """A tick on the event loop's next turn, not at the next period (a change shows in the frame it makes)."""
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None and self._callback is not None and not self._stopped:
            pn.state.execute(self._tick, schedule=True)
        else:
            self.loop.tick_asked = False

    @staticmethod
    def _frozen(graph_changes: bool = True) -> Any:
        """One walk of the page's model graph per tick, however many plots it draws (Bokeh's public
        ``Document.models.freeze``: HoloViews walks the graph after each plot update otherwise); none at all when the
        tick only streams rows (``graph_changes`` false: releasing a freeze walks the whole graph once)."""
        doc = pn.state.curdoc
        return doc.models.freeze() if doc is not None and graph_changes else contextlib.nullcontext()

    def refresh(self) -> None:
        """Queue what the session recorded since the last refresh and draw the tab on screen now (tests, notebooks)."""
        if self.loop.new_run:
            self.loop.new_run = False
            self._swap_run()
        self.loop.poll_and_push()
        for view in self.tabset.views.values():
            if not view.own_clock:
                view.flush(self.session.sim.now)
        self._draw_kpis()

    # -- drawing -------------------------------------------------------------------------------------------------------
    def _draw_kpis(self) -> None:
        s = self.session
        view = self.active_view()
        if view is not None and view.own_clock:
            pass  # Compare and Replay show their own KPI rows
        elif s.sim is not None:
            self.kpis.update(s.kpis(), view=s.view)
        self._render_status()

    def _render_status(self) -> None:
        if self.session.sim is not None:
            self.status.object = status_html(self.session, self.active_view())

    def _show_alerts(self, new: dict[str, Any]) -> None:
        """The engine's alert events (the controller stuck in the original's dead end) as a visible warning."""
        text = stuck_alert_text(new.get("events"))
        if text:
            self.stuck_alert.object = text
        if text is not None:
            self.stuck_alert.visible = bool(text)

    def _mark_urgent(self) -> None:
        self.loop.mark_urgent()

    # -- user actions --------------------------------------------------------------------------------------------------
    def _step(self) -> None:
        view = self.active_view()
        if view is not None and view.own_clock:
            view.step()
        else:
            self.session.step()
            self.loop.poll_and_push()
        self.loop.mark_urgent()
        self._render_status()

    def _reset(self) -> None:
        view = self.active_view()
        if view is not None and view.own_clock:
            view.reset()
        else:
            self.session.reset()
        self.loop.mark_urgent()
        self._render_status()

    def _run_state_changed(self, event: Any) -> None:
        """Play/Pause and speed show in the header at once (not at the next KPI update)."""
        self.loop.mark_urgent()
        self._render_status()

    def _building_changed(self, event: Any) -> None:
        """A new run is being built off the loop: say so in the header at once. It is built: swap it in and draw its
        first frame now, in one held update with the header (served), rather than at the next tick."""
        if event.new or self._callback is None or self._stopped:
            self._render_status()
        else:
            self.loop.mark_urgent()  # the header too (a new run, or the line that says why none came)
            self._tick()

    def _applied(self, changes: dict[str, Any]) -> None:
        """A control's change reached the engine: draw as soon as it shows, preview weights, keep the link current."""
        self.loop.mark_urgent(anything=any(k.startswith("scheduler.") for k in changes))
        self.ctx.say("")
        names = {k.split(".", 1)[1] for k in changes if k.startswith("scheduler.")}
        if names and "scheduler" in self.session.sim.sections and "placement_tab" in self.ctx.parts.made:  # a score view exists
            preview_scheduler(self.session.sim.sections["scheduler"], self.scores, names)
        self._update_link()

    def _session_rebuilt(self, event: Any) -> None:
        """Reset, replay or scenario switch: the next tick draws the new run (inside one held update)."""
        self.loop.new_run = True
        # the controls on the new run's sections (a change made before the next tick goes to the new run): at once when
        # the cards stay, another world's once its first frame is on its way (dashboard.sidebar)
        self.cards.follow()
        self.loop.mark_urgent()

    def adopt_run(self, tab: str | None = None) -> None:
        """The session holds a new run: swap it into every view now, in one held update (a branch, an upload); ``tab``:
        the tab to bring to the front with it (in the same change of the tab list)."""
        with pn.io.hold():  # not frozen: see _tick
            self.loop.new_run = False
            self._swap_run(tab)
        if self._callback is None:  # not served (a notebook, a test): draw the new run now
            self.refresh()

    def _swap_run(self, tab: str | None = None) -> None:
        s = self.session
        self.stuck_alert.visible = False
        if s.sim is None:  # released: nothing to draw
            return
        made = self.ctx.parts.made
        if "live_tab" in made:
            self.live_tab.sample_interval = self._sample_interval()
        if "placement_tab" in made:
            self.placement.span = WINDOW * self._sample_interval()
        for view in self.tabset.views.values():
            view.clear()
        self.tabset.arrange(keep=tab)
        self.kpis.update(s.kpis(), view=s.view)
        if s.scenario != self._drawn_scenario:  # another scenario: its first minutes at once (a reset starts at t=0)
            self._drawn_scenario = s.scenario
            self._warm(s)
        self.loop.poll_and_push()
        self._update_link()

    def _tab_changed(self) -> None:
        self.loop.mark_urgent()
        if self.active_tab == "Compare" and self.compare.pair is None:
            self.compare.rebuild()
        self._render_status()
        self._update_link()

    def _recording_file(self) -> io.StringIO:
        return io.StringIO(json.dumps(self.session.recording(), indent=1, default=str))

    def server_tick_ms(self) -> dict[str, float]:
        return self.loop.server_tick_ms()

    # -- links ---------------------------------------------------------------------------------------------------------
    def link_query(self) -> str:
        """``?scenario=...&seed=...&speed=...&tab=...&section.NAME=value...``: a link that reproduces this view."""
        return link_query(self.session, self.active_tab)

    def _apply_link(self, search: str) -> None:
        """Apply a link to the running page (a served page's own link is applied as it is built: see ``__init__``)."""
        with self.session.building_inline():  # the link's parameters apply to its scenario's run: built first
            result = apply_link(self.session, search)
        if self.loop.new_run:  # another scenario or seed: its tabs now, so that the link's tab can be shown
            self.adopt_run()
        if result.changed_params and "controls" in self.ctx.parts.made:
            self.controls.rebind()  # the link's values in the controls
        self._link_applied(result)

    def _link_applied(self, result: LinkResult) -> None:
        if result.tab in self.tabset.titles:
            self.tabset.show(result.tab)
        if result.problems:
            self.ctx.say(result.message())
        if self.ctx.served():
            self._update_link()

    def _update_link(self) -> None:
        if pn.state.location is not None:
            query = self.link_query()
            if pn.state.location.search != query:
                pn.state.location.search = query
