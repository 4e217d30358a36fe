"""The dashboard: one ``pn.viewable.Viewer`` that displays inline in Jupyter and is ``.servable()`` in app.py."""

from __future__ import annotations

import io
import json
import time
from collections import deque
from typing import Any

import numpy as np
import pandas as pd
import panel as pn
import param

from dashboard.controls import SectionControls
from dashboard.functions import FunctionsView, is_function_slot, is_function_world
from dashboard.session import ComparePair, LiveSession
from dashboard.sweeps import SweepExplorer
from dashboard.views import KpiRow, RunView, TimeSeriesViews
from engine import SCHEDULER_PRESETS, InputError, ParamError, Scenario, parse_recording

#: Order and titles of the control cards; sections not named here follow, collapsed.
SECTION_CARDS = [
    ("policy", "Scaling policy", False),
    ("autoscaler", "Autoscaler (queue drain and VM lifecycle)", False),
    ("controller", "Controller: seed-exact mode and extensions", True),
    ("hpa", "HPA", False),
    ("kpa", "KPA", False),
    ("keda", "KEDA", False),
    ("scheduler", "Scheduler", False),
    ("workload", "Workload", True),
    ("faults", "Random faults", True),
    ("platform", "Platform", True),
    ("cluster", "Cluster", True),
]
#: Sections each side of the compare tab can set on its own.
COMPARE_SECTIONS = ("policy", "autoscaler", "hpa", "kpa", "keda", "scheduler", "workload")
#: Sections that are not live controls (seed and timing are run controls).
NOT_LIVE = {"run", "cluster"}  # seed and timing are run controls; the cluster's layout is fixed per run


def scheduler_presets(section: Any) -> dict[str, dict[str, Any]]:
    """Weight presets offered by the scheduler's param class (Skippy default, kube default), by button label."""
    return {name.capitalize(): type(section).preset(name) for name in SCHEDULER_PRESETS}


class LiveControls:
    """All generated section controls of one session, with policy-dependent cards and scheduler presets."""

    def __init__(self, session: LiveSession, sections: tuple[str, ...] | None = None, collapsed_all: bool = False, scope: str = "live"):
        self.session = session
        live = session.sim.sections
        keys = [k for k, _, _ in SECTION_CARDS if k in live] + [k for k in live if k not in dict((c[0], 0) for c in SECTION_CARDS)]
        keys = [k for k in keys if k not in NOT_LIVE and not is_function_slot(k) and (sections is None or k in sections)]
        titles = {k: (t, c) for k, t, c in SECTION_CARDS}
        self.sections: dict[str, SectionControls] = {}
        cards = []
        policy_sections = self._policy_sections(live)
        for key in keys:
            ctl = SectionControls(live[key], session.apply, key, scope=scope)
            self.sections[key] = ctl
            title, collapsed = titles.get(key, (key.capitalize(), True))
            body = [ctl.alert, ctl.panel()]
            if key == "scheduler":
                body.insert(0, self._presets_row(ctl))
            card = pn.Card(*body, title=title, collapsed=collapsed or collapsed_all, sizing_mode="stretch_width", margin=(4, 0))
            if key in policy_sections:
                card.visible = False
            cards.append((key, card))
        self.cards = dict(cards)
        self._chooser = self._policy_chooser(live)
        if self._chooser is not None and self._chooser[0] in self.sections:
            key, name, _ = self._chooser
            copy = self.sections[key].copy
            self._show_policy(getattr(copy, name))
            copy.param.watch(lambda e: self._show_policy(e.new), name)
        if "controller" in self.sections:
            self._gate_extensions(self.sections["controller"])
        self.layout = pn.Column(*[c for _, c in cards], sizing_mode="stretch_width")

    @staticmethod
    def _gate_extensions(ctl: SectionControls) -> None:
        """The controller's extensions can only be switched on with seed-exact mode off: say so on the toggles."""
        names = [n for n, w in ctl.widgets.items() if n != "seed_exact" and isinstance(w, pn.widgets.Checkbox)]

        def gate(seed_exact: bool) -> None:
            for name in names:
                w = ctl.widgets[name]
                doc = ctl.copy.param[name].doc
                w.disabled = seed_exact and not getattr(ctl.copy, name)
                w.description = f"{doc} (Switch seed_exact off first.)" if w.disabled else doc

        gate(ctl.copy.seed_exact)
        ctl.copy.param.watch(lambda e: gate(e.new), "seed_exact")

    @staticmethod
    def _policy_chooser(live: dict[str, Any]) -> tuple[str, str, set[str]] | None:
        """The selector whose choices name sections (``policy.kind`` -> hpa, kpa, keda): those show only when chosen."""
        for key, section in live.items():
            if key in NOT_LIVE:
                continue
            for name in section.param:
                p = section.param[name]
                if isinstance(p, param.Selector) and not isinstance(p, param.ListSelector):
                    named = {str(o) for o in (p.objects or [])} & set(live)
                    if named:
                        return key, name, named
        return None

    @classmethod
    def _policy_sections(cls, live: dict[str, Any]) -> set[str]:
        chooser = cls._policy_chooser(live)
        return chooser[2] if chooser else set()

    def _show_policy(self, policy: str) -> None:
        for key in self._chooser[2]:
            if key in self.cards:
                self.cards[key].visible = key == policy

    def _presets_row(self, ctl: SectionControls) -> pn.Row:
        buttons = []
        for label, values in scheduler_presets(ctl.copy).items():
            b = pn.widgets.Button(
                label=label,
                color="default",
                sizing_mode="stretch_width",
                css_classes=[f"preset-{ctl.scope}-{label.replace(' ', '-').lower()}"],
            )
            b.on_click(lambda e, v=values: ctl.set_values(dict(v)))
            buttons.append(b)
        return pn.Row(*buttons, sizing_mode="stretch_width")


class CompareView:
    """Two parameter sets on the same workload and seed: controls side by side, plots overlaid, KPI differences."""

    def __init__(self, live: LiveSession):
        self.live = live
        self.views = TimeSeriesViews(("A", "B"))
        self.kpi_a, self.kpi_b = KpiRow(), KpiRow()
        self.restart = pn.widgets.Button(label="Restart both from the live settings", color="primary")
        self.restart.on_click(lambda e: self.rebuild())
        self.controls = pn.Row(sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.pane.Markdown(
                "Run **A** (solid) and run **B** (dashed): same scenario, workload and seed; "
                "B starts as A with half the workers. Change either side below."
            ),
            self.restart,
            pn.Row(
                pn.Column(pn.pane.Markdown("**Run A**"), self.kpi_a.pane),
                pn.Column(pn.pane.Markdown("**Run B** (with B − A)"), self.kpi_b.pane),
                sizing_mode="stretch_width",
            ),
            self.views.layout,
            self.controls,
            sizing_mode="stretch_width",
        )
        self.pair: ComparePair | None = None

    def rebuild(self) -> None:
        if self.pair is not None:
            self.pair.stop()
        self.pair = ComparePair(self.live.scenario_object(), self.live.seed, dict(self.live.overrides))
        self.views.clear()
        sides = []
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            ctl = LiveControls(s, sections=COMPARE_SECTIONS, collapsed_all=True, scope=label)
            sides.append(pn.Column(pn.pane.Markdown(f"### Run {label}"), ctl.layout, sizing_mode="stretch_width"))
        self.controls[:] = sides

    def tick(self, wall_dt: float) -> None:
        if self.pair is None:
            self.rebuild()
        self.pair.tick(wall_dt)
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            new = s.poll()
            self.views.push(
                label, new.get("samples", pd.DataFrame()), new.get("events", pd.DataFrame()), s.sim.sections["run"].sample_interval
            )
        a, b = self.pair.a.kpis(), self.pair.b.kpis()
        diff = {k: b[k] - a[k] for k in ("queue", "active_workers", "wait_p95", "vm_hours", "outside_band")}
        self.kpi_a.update(a)
        self.kpi_b.update(b, diff)

    def stop(self) -> None:
        if self.pair is not None:
            self.pair.stop()


class Dashboard(pn.viewable.Viewer):
    """The scalelab dashboard over one live simulation (plus a compare pair on its own tab)."""

    tick_period = param.Integer(100, bounds=(20, 5000), doc="Milliseconds between two ticks.")

    def __init__(self, scenario: str | Scenario | None = None, seed: int | None = None, **params):
        super().__init__(**params)
        self.session = LiveSession(scenario, seed)
        self.run_view = RunView("live", self.session.sim.sections["run"].sample_interval)
        # the parts by name (tests, notebooks)
        self.views, self.kpis, self.events = self.run_view.series, self.run_view.kpi_row, self.run_view.events
        self.placement, self.scores = self.run_view.placement, self.run_view.scores
        self.compare = CompareView(self.session)
        self.tick_seconds: deque[float] = deque(maxlen=1000)
        self.part_seconds: dict[str, deque[float]] = {}  # where a tick's server time goes (engine, views, send)
        self._callback = None
        self._ticks = 0
        self._last_wall = time.perf_counter()
        self._generation = self.session.generation
        self._controls_scenario = self.session.scenario

        s = self.session
        self.fault_alert = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width")
        self.stuck_alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=["alert-stuck"])
        play = pn.widgets.Toggle.from_param(s.param.playing, label="▶ Play / ❚❚ Pause", color="success")
        step = pn.widgets.Button(label="Step", color="default")
        step.on_click(lambda e: self._step())
        reset = pn.widgets.Button(label="Reset", color="warning")
        reset.on_click(lambda e: s.reset())
        record = pn.widgets.FileDownload(
            callback=self._recording_file,
            filename="scalelab-recording.json",
            label="Download recording",
            color="light",
            sizing_mode="stretch_width",
        )
        self.replay = pn.widgets.FileInput(accept=".json", multiple=False, sizing_mode="stretch_width")
        self.replay.param.watch(self._replay_uploaded, "value")
        self.run_card = pn.Card(
            pn.widgets.Select.from_param(s.param.scenario, sizing_mode="stretch_width"),
            pn.widgets.IntInput.from_param(s.param.seed, sizing_mode="stretch_width"),
            pn.widgets.FloatSlider.from_param(s.param.speed, step=1.0, throttled=True, sizing_mode="stretch_width"),
            pn.Row(play, step, reset),
            record,
            pn.pane.Markdown("Replay a recording (JSON):", margin=(0, 10)),
            self.replay,
            title="Run",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )
        self.outage = pn.widgets.FloatInput(value=30.0, start=1.0, end=3600.0, step=5.0, label="Heartbeat outage (s)", width=140)
        buttons = {
            "Crash the master": lambda: s.inject("master_crash"),
            "Crash a worker": lambda: s.inject("worker_crash"),
            "Drop heartbeats": lambda: s.inject("heartbeat_outage", duration=float(self.outage.value)),
            "Fail a node": lambda: s.inject("node_failure"),
        }
        fault_widgets = []
        for label, action in buttons.items():
            b = pn.widgets.Button(label=label, color="danger", sizing_mode="stretch_width")
            b.on_click(lambda e, a=action: self._fault(a))
            fault_widgets.append(b)
        self.node_fault = fault_widgets[-1]
        self.fault_card = pn.Card(
            self.fault_alert,
            *fault_widgets[:2],
            pn.Row(self.outage, fault_widgets[2]),
            fault_widgets[3],
            title="Faults",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )
        self.controls = LiveControls(s)
        self.controls_holder = pn.Column(self.controls.layout, sizing_mode="stretch_width")
        self.status = pn.pane.Markdown("", styles={"font-size": "11px", "color": "#666"})
        sidebar = pn.Column(pn.pane.Markdown("## scalelab"), self.run_card, self.fault_card, self.controls_holder, self.status, width=340)
        self.tabs = pn.Tabs(
            ("Live", pn.Column(self.views.layout, pn.pane.Markdown("### Event log"), self.events.pane, sizing_mode="stretch_width")),
            ("Placement", pn.Column(self.placement.layout, self.run_view.gpu.layout, self.scores.layout, sizing_mode="stretch_width")),
            ("Compare", self.compare.layout),
            ("Sweeps", SweepExplorer(self.session, on_open=lambda: setattr(self.tabs, "active", 0))),
            dynamic=False,
            sizing_mode="stretch_width",
        )
        self.functions = FunctionsView()  # a Functions tab, shown for function scenarios (_show_functions)
        main = pn.Column(self.stuck_alert, self.kpis.pane, self.tabs, sizing_mode="stretch_width")
        self._layout = pn.Row(sidebar, main, sizing_mode="stretch_width")
        s.param.watch(self._session_rebuilt, "generation")
        self._show_functions()
        self.refresh()

    # -- lifecycle -------------------------------------------------------------------------------
    def __panel__(self) -> pn.viewable.Viewable:
        pn.state.onload(self.start)
        return self._layout

    def start(self) -> None:
        """Start ticking (once); stop when the browser session goes away."""
        if self._callback is not None:
            return
        self._last_wall = time.perf_counter()
        if pn.state.location is not None:  # shareable links: ?scenario=...&seed=...&speed=...
            try:
                pn.state.location.sync(self.session, {"scenario": "scenario", "seed": "seed", "speed": "speed"})
            except ValueError as err:  # a link naming a scenario that is not here: keep the default
                self.fault_alert.object, self.fault_alert.visible = f"Link not applied: {err}", True
        self._callback = pn.state.add_periodic_callback(self._tick, period=self.tick_period)
        try:
            pn.state.on_session_destroyed(lambda ctx: self.stop())
        except Exception:  # noqa: BLE001 - no server session (a notebook): nothing to clean up on close
            pass

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self.session.stop()
        self.compare.stop()

    # -- ticking ---------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.perf_counter()
        wall_dt, self._last_wall = now - self._last_wall, now
        with pn.io.hold():
            if self.tabs.active == 2:
                self.compare.tick(wall_dt)
            else:
                self._timed("engine", self.session.tick, wall_dt)
                self.refresh()
            t_send = time.perf_counter()
        self.part_seconds.setdefault("send", deque(maxlen=1000)).append(time.perf_counter() - t_send)
        self.tick_seconds.append(time.perf_counter() - now)

    def _step(self) -> None:
        self.session.step()
        self.refresh()

    def _timed(self, part: str, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.part_seconds.setdefault(part, deque(maxlen=1000)).append(time.perf_counter() - t0)

    def refresh(self) -> None:
        """Send what the session recorded since the last refresh to the views."""
        s = self.session
        new = self._timed("poll", s.poll)
        self.run_view.sample_interval = s.sim.sections["run"].sample_interval
        self.run_view.push(new, s.sim.now, all_views=not s.playing, timed=self._timed)
        if self._functions_shown:  # the plots redraw every 20th tick (2 s), and only while their tab is open
            visible = self.tabs.active < len(self.tabs.objects) and self.tabs.objects[self.tabs.active] is self.functions.layout
            self._timed("functions", self.functions.push, new, s.sim.now, visible and (self._ticks % 20 == 0 or not s.playing))
        if self._ticks % 2 == 0 or not s.playing:
            self._timed("kpis", lambda: self.kpis.update(s.kpis()))
        self._ticks += 1
        self.node_fault.disabled = not s.has_cluster
        self._show_alerts(new.get("events"))
        if self._ticks % 10 == 0 and self.tick_seconds:
            ms = np.array(self.tick_seconds) * 1000
            self.status.object = f"sim t = {s.sim.now:,.0f} s · server tick {np.median(ms):.1f} ms (p95 {np.percentile(ms, 95):.1f})"

    def _show_functions(self) -> None:
        """The Functions tab (after the others, so their positions stay) for a functions world, with its live controls."""
        self._functions_shown = is_function_world(self.session.sim.tables)
        self.functions.clear()
        shown = [i for i, o in enumerate(self.tabs.objects) if o is self.functions.layout]
        if self._functions_shown:
            self.functions.bind_controls(self.session.sim.sections, self.session.apply)
            if not shown:
                self.tabs.append(("Functions", self.functions.layout))
        elif shown:
            self.tabs.pop(shown[0])

    def _show_alerts(self, events: Any) -> None:
        """The engine's alert events (the controller stuck in the original's dead end) as a visible warning."""
        if events is None or not len(events):
            return
        alerts = events[events["kind"] == "alert"]
        if not len(alerts):
            return
        last = alerts.iloc[-1]
        if last["command"] == "controller_stuck":
            suspended = json.loads(last["value"] or "{}").get("suspended", "some")
            self.stuck_alert.object = (
                f"**Controller stuck since t = {last['time']:.0f} s**: work is queued, no worker serves or starts, and "
                f"{suspended} are suspended. The original controller never resumes them; switch seed-exact mode off and "
                "turn on *resume_when_stuck* in the Controller card to let it."
            )
            self.stuck_alert.visible = True
        else:
            self.stuck_alert.visible = False

    def _session_rebuilt(self, event: param.parameterized.Event) -> None:
        self._show_functions()
        self.run_view.clear()
        self.stuck_alert.visible = False
        if self.session.scenario != self._controls_scenario:
            self._rebuild_controls()
        self.refresh()

    def _rebuild_controls(self) -> None:
        self._controls_scenario = self.session.scenario
        self.controls = LiveControls(self.session)
        self.controls_holder[:] = [self.controls.layout]

    def _fault(self, action: Any) -> None:
        error = action()
        self.fault_alert.object = error or ""
        self.fault_alert.visible = bool(error)

    def _replay_uploaded(self, event: param.parameterized.Event) -> None:
        if not event.new:
            return
        origin = self.replay.filename or "uploaded recording"
        try:
            self.session.load_recording(parse_recording(event.new, origin), origin=origin)
        except (InputError, ParamError) as err:  # one line naming the file; the live session carries on
            self.fault_alert.object = f"Recording not loaded: {err}"
            self.fault_alert.visible = True
            return
        self.fault_alert.visible = False
        self._rebuild_controls()  # the recording's parameter values, whatever the scenario

    def _recording_file(self) -> io.StringIO:
        return io.StringIO(json.dumps(self.session.recording(), indent=1, default=str))
