"""The dashboard: one ``pn.viewable.Viewer`` (inline in Jupyter) that :meth:`Dashboard.page` puts in a template.

Layout: a header (what this is, what to do, and the run state: running/paused, speed, simulated time), a fixed
sidebar (run controls, faults, the engine's sections as cards) and tabs. The tabs are listed in one table,
:data:`TABS`; another module adds one with :func:`register_tab`::

    from dashboard.ui import TabSpec, register_tab

    class FunctionsTab(pn.viewable.Viewer):           # the TabView protocol below
        tables = ("invocations",)                     # recorded tables it reads (fed by row offset)
        def push(self, new, now): ...                 # every tick: queue the new rows (cheap)
        def flush(self, now, budget=math.inf): ...    # draw them while shown; within budget (s), False if more is left
        def restart_round(self): ...                  # optional: after a change, start drawing from the first plot again
        def clear(self): ...                          # a new run (reset, replay, scenario switch): drop everything
        def __panel__(self): ...

    register_tab(TabSpec("Functions", lambda dashboard: FunctionsTab(), applies=lambda s: "invocations" in s.sim.tables))

A tab whose ``applies(session)`` is false is left out (for instance Placement without a cluster). Every view is
fed from the recorded tables through the session's feed; nothing reads the engine's insides.

Ticking: a periodic callback advances the live run in bounded slices (``LiveSession.tick``) and queues the new
rows in every tab; the tab on screen is drawn at most every ``TabSpec.flush_every`` seconds, and at once after a
control changes. A reset, a replay or a scenario switch only marks the run as new; the next tick swaps every
plot's streams inside one held document update, so no plot ever mixes two runs.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode

import numpy as np
import pandas as pd
import panel as pn
import param

from dashboard import plots
from dashboard.controls import SectionControls, label_of
from dashboard.feed import VIEW_TABLES
from dashboard.functions import FunctionsTab, is_function_slot, is_function_world
from dashboard.replay import Recordings
from dashboard.session import ComparePair, LiveSession
from dashboard.sweeps import SweepsTab
from dashboard.views import KpiRow, RunView, TimeSeriesView
from engine import PRIORITY_WEIGHTS, SCHEDULER_PRESETS, InputError, ParamError, Scenario, parse_recording, policies_reading

#: Order and titles of the control cards, and whether each starts collapsed; sections not named follow, collapsed.
SECTION_CARDS = [
    ("policy", "Scaling policy", False),
    ("autoscaler", "Autoscaler (queue drain and VM lifecycle)", False),
    ("scheduler", "Scheduler", False),
    ("controller", "Controller: seed-exact mode and extensions", True),
    ("workload", "Workload", True),
    ("faults", "Random faults", True),
    ("platform", "Platform", True),
]
#: Sections each side of the compare tab can set on its own.
COMPARE_SECTIONS = ("policy", "autoscaler", "hpa", "kpa", "keda", "scheduler", "workload")
#: Sections that are not live controls: seed and timing are run controls; the cluster's layout is fixed per run.
NOT_LIVE = {"run", "cluster"}
#: Scheduler parameters a recorded breakdown cannot re-score: they change which nodes pass or how scores scale.
NOT_PREVIEWABLE = {
    "mode": "a mode change re-normalises every score",
    "kube_version": "it changes the plugins and formulas",
    "percentage_of_nodes_to_score": "it changes which nodes are scored",
}
NOT_PREVIEWABLE["avoid_storage_nodes"] = "it changes which nodes pass the filter"
#: Drawing a tab may take at most 1/FLUSH_DUTY of the time, and DRAW_BUDGET wall seconds per tick (see Dashboard._draw).
FLUSH_DUTY = 3.0
DRAW_BUDGET = 0.05
#: A tick whose engine slice took longer than this (wall s) draws no plot if the tick before drew one.
ENGINE_ALONE = 0.015
HINT = "Press ▶ to run or pause; every control in the sidebar changes the running simulation at once."


def scheduler_presets(section: Any) -> dict[str, dict[str, Any]]:
    """Weight presets offered by the scheduler's param class (Skippy default, kube default), by button label."""
    return {name.capitalize(): type(section).preset(name) for name in SCHEDULER_PRESETS}


#: Speeds that read as time (a second, a minute, an hour of simulated time per wall second): the speed slider's stops.
SPEED_STOPS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 86400)


def speed_steps(lo: float, hi: float) -> list[float]:
    """The :data:`SPEED_STOPS` within the speed parameter's bounds [lo, hi], both ends included (a log-like scale)."""
    return sorted({float(lo), *(float(v) for v in SPEED_STOPS if lo <= v <= hi), float(hi)})


# -- tabs ---------------------------------------------------------------------------------------------------------------
class TabView(Protocol):
    """What a tab is: a Viewer fed the live run's new table rows (see the module docs)."""

    tables: tuple[str, ...]

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None: ...

    def flush(self, now: float, budget: float = math.inf) -> bool | None: ...  # True/None: all drawn; False: more next tick

    def clear(self) -> None: ...


@dataclass(frozen=True)
class TabSpec:
    """One tab: its title, how to build its view, when it applies, how often it is drawn while shown."""

    title: str
    build: Callable[[Dashboard], TabView]
    applies: Callable[[LiveSession], bool] = lambda session: True
    flush_every: float = 0.25


#: The dashboard's tabs, in order (see :func:`register_tab`).
TABS: list[TabSpec] = [
    TabSpec("Live", lambda d: d.run_view.live_tab),
    TabSpec("Placement", lambda d: d.run_view.placement_tab, applies=lambda s: s.has_cluster, flush_every=1.0),
    TabSpec("Replay", lambda d: d.recordings.replay_tab, flush_every=0.25),
    TabSpec("Branch", lambda d: d.recordings.branch_tab, applies=lambda s: s.branched_from is not None, flush_every=0.25),
    TabSpec("Compare", lambda d: d.compare, flush_every=0.25),
    TabSpec("Functions", lambda d: FunctionsTab(d.session), applies=lambda s: is_function_world(s.sim.tables), flush_every=2.0),
    TabSpec("Sweeps", lambda d: SweepsTab(d.session, on_open=lambda: d.show_tab("Live")), flush_every=1.0),
]


def register_tab(spec: TabSpec, before: str | None = None) -> None:
    """Add a tab to every dashboard built afterwards (before the tab titled ``before``, else last)."""
    titles = [t.title for t in TABS]
    if spec.title in titles:
        TABS[titles.index(spec.title)] = spec
    elif before in titles:
        TABS.insert(titles.index(before), spec)
    else:
        TABS.append(spec)


# -- controls -----------------------------------------------------------------------------------------------------------
class LiveControls:
    """All generated section controls of one session: the chosen policy's parameters inside the policy card,
    controls that the chosen policy does not read hidden, scheduler presets, the controller's gated extensions."""

    def __init__(
        self,
        session: LiveSession,
        sections: tuple[str, ...] | None = None,
        collapsed_all: bool = False,
        scope: str = "live",
        on_applied: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.session = session
        live = session.sim.sections
        order = [k for k, _, _ in SECTION_CARDS]
        keys = [k for k in order if k in live] + [k for k in live if k not in order]
        keys = [k for k in keys if k not in NOT_LIVE and not is_function_slot(k) and (sections is None or k in sections)]
        titles = {k: (t, c) for k, t, c in SECTION_CARDS}
        self.sections: dict[str, SectionControls] = {}
        for key in keys:
            self.sections[key] = SectionControls(live[key], session.apply, key, scope=scope, on_applied=self._applied)
        self._on_applied = on_applied
        self.policy_key = "policy" if "policy" in self.sections else None
        self.policy_cards: dict[str, pn.Card] = {}
        self.cards: dict[str, pn.Card] = {}
        for key in keys:
            title, collapsed = titles.get(key, (key.upper() if len(key) <= 4 else key.capitalize(), True))
            if self.policy_key and key != self.policy_key and policies_reading(key) is not None:
                # a policy's own section opens inside the policy card, right under the selector (built when first shown)
                self.policy_cards[key] = self._card(key, f"{title} parameters", collapsed=False, visible=False)
            else:
                self.cards[key] = self._card(key, title, collapsed=collapsed or collapsed_all)
        if self.policy_key:
            self.cards[self.policy_key].extend(self.policy_cards.values())
            self._show_policy(live[self.policy_key].kind)
        self.layout = pn.Column(*self.cards.values(), sizing_mode="stretch_width", margin=0)

    def rebind(self) -> bool:
        """A new run (a reset): point every control at the new run's sections and show their values.

        False (nothing changed) when the new run's sections are not of the same classes: the controls must be rebuilt.
        """
        live = self.session.sim.sections if self.session.sim is not None else {}
        if any(key not in live or type(live[key]) is not type(ctl.live) for key, ctl in self.sections.items()):
            return False
        for key, ctl in self.sections.items():
            ctl.live = live[key]
            ctl.sync()
        if "controller" in self.sections and self.sections["controller"].built:
            self._gate_extensions(self.sections["controller"])
        if self.policy_key:
            self._show_policy(live[self.policy_key].kind)
        return True

    def _card(self, key: str, title: str, collapsed: bool, visible: bool = True) -> pn.Card:
        """A section's card; its controls are made when it is first opened (or shown), not before."""
        ctl = self.sections[key]
        card = pn.Card(ctl.alert, title=title, collapsed=collapsed, visible=visible, sizing_mode="stretch_width", margin=(4, 0))

        def fill(*_: Any) -> None:
            if ctl.built or card.collapsed or not card.visible:
                return
            body: list[Any] = [self._presets_row(ctl)] if key == "scheduler" else []
            body.append(ctl.panel())
            card.extend(body)
            self._show_policy_in(key)
            if key == "controller":
                self._gate_extensions(ctl)

        card.param.watch(fill, ["collapsed", "visible"])
        fill()
        return card

    def _applied(self, changes: dict[str, Any]) -> None:
        if self.policy_key and f"{self.policy_key}.kind" in changes:
            self._show_policy(changes[f"{self.policy_key}.kind"])
        if any(k.startswith("controller.") for k in changes) and "controller" in self.sections and self.sections["controller"].built:
            self._gate_extensions(self.sections["controller"])
        if self._on_applied is not None:
            self._on_applied(changes)

    def _show_policy(self, policy: str) -> None:
        """Show the chosen policy's sections and hide every control that only other policies read."""
        self._policy = policy
        for key, card in self.policy_cards.items():
            card.visible = policy in (policies_reading(key) or {policy})
        for key in self.sections:
            self._show_policy_in(key)

    def _show_policy_in(self, key: str) -> None:
        ctl, policy = self.sections[key], getattr(self, "_policy", None)
        if policy is None or not ctl.built:
            return
        for control in ctl.controls.values():
            readers = [policies_reading(f"{key}.{n}") for n in control.names]
            control.visible = all(r is None or policy in r for r in readers)

    @staticmethod
    def _gate_extensions(ctl: SectionControls) -> None:
        """The controller's extensions can only be switched on with seed-exact mode off: say so on the toggles."""
        seed_exact = ctl.live.seed_exact
        for name, control in ctl.controls.items():
            if name == "seed_exact" or not isinstance(ctl.live.param[name], param.Boolean):
                continue
            w = control.widget
            doc = ctl.live.param[name].doc
            w.disabled = seed_exact and not getattr(ctl.live, name)
            control.icon.value = f"{doc} (Disabled: switch seed-exact mode off first.)" if w.disabled else doc

    def _presets_row(self, ctl: SectionControls) -> pn.Row:
        buttons = []
        for label, values in scheduler_presets(ctl.live).items():
            b = pn.widgets.Button(
                label=label,
                color="default",
                sizing_mode="stretch_width",
                description=f"Set every weight to the {label.lower()}: "
                + ", ".join(f"{k.removeprefix('weight_')} {v:g}" for k, v in values.items()),
                css_classes=[f"preset-{ctl.scope}-{label.replace(' ', '-').lower()}"],
            )
            b.on_click(lambda e, v=values: ctl.set_values(dict(v)))
            buttons.append(b)
        return pn.Row(*buttons, sizing_mode="stretch_width")


# -- compare ------------------------------------------------------------------------------------------------------------
class CompareView(pn.viewable.Viewer):
    """Two parameter sets on the same workload and seed: controls side by side, plots overlaid, KPI differences.

    A tab that runs its own simulations: while it is shown, the sidebar's Play/Pause, Speed, Step and Reset drive
    runs A and B, and the live run waits (the header says so).
    """

    tables = ()
    runs_own_simulations = True

    def __init__(self, live: LiveSession):
        super().__init__()
        self.live = live
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
        self.banner = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["compare-banner"])
        self.layout = pn.Column(
            pn.pane.Markdown(
                "Run **A** (solid) and run **B** (dashed): same scenario, workload and seed; B starts as A with half the workers. "
                "Change either side below. **Play/Pause, Speed, Step and Reset in the sidebar drive A and B while this tab is shown; "
                "the live run waits until you go back.**"
            ),
            self.banner,
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

    def rebuild(self) -> None:
        """A and B again from t=0, with the live run's scenario, seed and changes."""
        if self.pair is not None:
            self.pair.stop()
        if self.views is None:
            self.views = TimeSeriesView(("A", "B"), prefix="cmp")
            self.plots[:] = [self.views]
        self.pair = ComparePair(self.live.scenario_object(), self.live.seed, dict(self.live.overrides))
        sides = []
        self.side_controls = []
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            ctl = LiveControls(s, sections=COMPARE_SECTIONS, collapsed_all=True, scope=label)
            self.side_controls.append(ctl)
            sides.append(pn.Column(pn.pane.Markdown(f"### Run {label}"), ctl.layout, sizing_mode="stretch_width"))
        self.controls[:] = sides
        self._new_pair = True

    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        """Advance A and B (the sidebar's clock) and queue what they recorded (called inside the tick's held update)."""
        if self.pair is None:
            self.rebuild()
        if self._new_pair:  # a new pair: new plots before any of its rows are drawn
            self._new_pair = False
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
                ctl.rebind()  # same scenario, same section classes
        self._new_pair = True

    def _poll(self) -> None:
        if self._new_pair:  # its rows wait for the next tick, which draws the new pair from its first row
            return
        for label, s in (("A", self.pair.a), ("B", self.pair.b)):
            new = s.poll()
            self.views.push(
                label, new.get("samples", pd.DataFrame()), new.get("events", pd.DataFrame()), s.sim.sections["run"].sample_interval
            )

    def now(self) -> float:
        return self.pair.a.sim.now if self.pair is not None else 0.0

    def achieved_speed(self) -> float:
        return self.pair.a.achieved_speed() if self.pair is not None else math.nan

    def run_state(self, playing: bool) -> tuple[str, str]:
        """The header's state label and its CSS class while this tab drives its own runs."""
        return ("Compare A/B running" if playing else "Compare A/B paused"), "state compare"

    # the TabView protocol: the live run's rows are not this tab's
    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        pass

    def flush(self, now: float, budget: float = math.inf) -> bool:
        if self.pair is None:
            return True
        if not self.views.flush(budget):
            return False
        a, b = self.pair.a.kpis(), self.pair.b.kpis()
        diff = {k: b[k] - a[k] for k in ("queue", "active_workers", "wait_p95", "vm_hours", "outside_band")}
        self.kpi_a.update(a)
        self.kpi_b.update(b, diff)
        return True

    def clear(self) -> None:
        pass

    def restart_round(self) -> None:
        if self.views is not None:
            self.views.restart_round()

    def stop(self) -> None:
        if self.pair is not None:
            self.pair.stop()
            self.pair = None

    def __panel__(self) -> pn.viewable.Viewable:
        return self.layout


# -- the dashboard -------------------------------------------------------------------------------------------------------
STATUS_CSS = """
.run-state {display: flex; gap: 14px; align-items: center; font-size: 15px; flex-wrap: wrap;}
.run-state .state {font-weight: 700; padding: 2px 10px; border-radius: 12px; background: #1a9850; color: white;}
.run-state .state.paused {background: #d73027;}
.run-state .state.compare {background: #7b3294;}
.run-state .state.replay {background: #01665e;}
.run-state .behind {color: #fdae61; font-weight: 600;}
"""
HEADER_CSS = ".app-hint {font-size: 13px; opacity: 0.9;} .app-title {font-size: 19px; font-weight: 700;}"


class Dashboard(pn.viewable.Viewer):
    """The scalelab dashboard over one live simulation (plus a compare pair on its own tab)."""

    tick_period = param.Integer(100, bounds=(20, 5000), doc="Milliseconds between two ticks of the simulation clock.")

    def __init__(self, scenario: str | Scenario | None = None, seed: int | None = None, **params):
        super().__init__(**params)
        self.session = LiveSession(scenario, seed)
        s = self.session
        self.run_view = RunView("live", s.sim.sections["run"].sample_interval)
        # the parts by name (tests, notebooks)
        self.views, self.kpis, self.events = self.run_view.series, self.run_view.kpi_row, self.run_view.events
        self.placement, self.scores = self.run_view.placement, self.run_view.scores
        self.compare = CompareView(s)
        self.tick_seconds: deque[float] = deque(maxlen=1000)
        self.part_seconds: dict[str, deque[float]] = {}  # where a tick's server time goes (engine, poll, each tab's flush)
        self._callback = None
        self._ticks = 0
        self._last_wall = time.perf_counter()
        self._flushed: dict[str, float] = {}
        self._urgent = True  # draw soon (a control changed, a tab was opened, a new run): see _draw
        self._urgent_any = True
        self._urgent_at = 0.0
        self._newest_sample = self._drawn_sample = -1.0
        self._flush_cost: dict[str, float] = {}  # wall seconds the last complete drawing round of each tab took
        self._round_open: dict[str, bool] = {}
        self._round_cost: dict[str, float] = {}
        self._new_run = False
        self._drew_last = False
        self._stopped = False
        self._controls_scenario = s.scenario

        self.message = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width", css_classes=["app-message"])
        self.fault_alert = self.message  # one place for messages that belong to no single control
        self.stuck_alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=["alert-stuck"])
        self.status = pn.pane.HTML("", stylesheets=[STATUS_CSS], sizing_mode="stretch_width", css_classes=["run-state-pane"])
        self._build_run_card()
        self._build_fault_card()
        self.recordings = Recordings(self)  # save / load / export, the Replay and Branch tabs
        self.replay = self.recordings.upload
        self.controls = LiveControls(s, on_applied=self._applied)
        self.controls_holder = pn.Column(self.controls.layout, sizing_mode="stretch_width", margin=0)
        self.sidebar = pn.Column(
            self.run_card, self.recordings.card, self.fault_card, self.controls_holder, sizing_mode="stretch_width", margin=0
        )
        self.tab_views: dict[str, TabView] = {}
        self.tab_specs: dict[str, TabSpec] = {}
        self.tabs = pn.Tabs(dynamic=True, sizing_mode="stretch_width")  # only the tab on screen has models: a fast first load
        self._build_tabs()
        self.tabs.param.watch(self._tab_changed, "active")
        self.main = pn.Column(self.message, self.stuck_alert, self.kpis, self.tabs, sizing_mode="stretch_width")
        self._layout = pn.Row(pn.Column(self.status, self.sidebar, width=360), self.main, sizing_mode="stretch_width")
        s.param.watch(self._session_rebuilt, "generation")
        s.param.watch(lambda e: self._mark_urgent(), ["playing", "speed"])
        self._poll_and_push()
        self._render_status()

    # -- building ----------------------------------------------------------------------------------------------------
    def _build_run_card(self) -> None:
        s = self.session
        p = s.param
        self.scenario_select = pn.widgets.Select.from_param(
            p.scenario,
            label="Scenario",
            description="Scenario files in data/scenarios/ (each with its own seed)",
            sizing_mode="stretch_width",
        )
        self.seed_input = pn.widgets.IntInput.from_param(
            p.seed, label="Seed", description="The run's seed: the same seed and changes give the same run", sizing_mode="stretch_width"
        )
        lo, hi = p.speed.bounds
        self.speed = pn.widgets.DiscreteSlider(
            label="Speed (simulated s per wall s)",
            options=speed_steps(lo, hi),
            value=min(speed_steps(lo, hi), key=lambda v: abs(v - s.speed)),
            sizing_mode="stretch_width",
            css_classes=["ctl-run-speed"],
        )
        self.speed.param.watch(lambda e: setattr(s, "speed", float(e.new)), "value")
        speed_tip = pn.widgets.TooltipIcon(
            value=f"{p.speed.doc} [speed; {p.speed.bounds[0]:g} to {p.speed.bounds[1]:g}]", margin=(12, 0, 0, 0)
        )
        self.speed_row = pn.Row(self.speed, speed_tip, sizing_mode="stretch_width", margin=0)
        s.param.watch(lambda e: self._show_speed(e.new), "speed")
        self.play = pn.widgets.Toggle.from_param(p.playing, label="▶ Play / ❚❚ Pause", color="success")
        self.step_button = pn.widgets.Button(label="Step", description="One sample interval on (also while playing)")
        self.step_button.on_click(lambda e: self._step())
        self.reset_button = pn.widgets.Button(
            label="Reset", color="warning", description="Back to t=0: same scenario and seed, with the changes made so far"
        )
        self.reset_button.on_click(lambda e: self._reset())
        self.run_card = pn.Card(
            self.scenario_select,
            self.seed_input,
            self.speed_row,
            pn.Row(self.play, self.step_button, self.reset_button),
            title="Run",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )

    def _show_speed(self, speed: float) -> None:
        nearest = min(self.speed.options, key=lambda v: abs(v - speed))
        if self.speed.value != nearest:
            self.speed.value = nearest

    def _build_fault_card(self) -> None:
        s = self.session
        self.outage = pn.widgets.FloatInput(value=30.0, start=1.0, end=3600.0, step=5.0, label="Heartbeat outage (s)", width=140)
        buttons = {
            "Crash the master": ("master_crash", lambda: s.inject("master_crash")),
            "Crash a worker": ("worker_crash", lambda: s.inject("worker_crash")),
            "Drop heartbeats": ("heartbeat_outage", lambda: s.inject("heartbeat_outage", duration=float(self.outage.value))),
            "Fail a node": ("node_failure", lambda: s.inject("node_failure")),
        }
        self.fault_buttons: dict[str, pn.widgets.Button] = {}
        for label, (kind, action) in buttons.items():
            b = pn.widgets.Button(label=label, color="danger", sizing_mode="stretch_width", css_classes=[f"fault-{kind}"])
            b.on_click(lambda e, a=action: self._fault(a))
            self.fault_buttons[kind] = b
        self.node_fault = self.fault_buttons["node_failure"]
        self.fault_card = pn.Card(
            self.fault_buttons["master_crash"],
            self.fault_buttons["worker_crash"],
            pn.Row(self.outage, self.fault_buttons["heartbeat_outage"]),
            self.node_fault,
            title="Faults",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )
        self._describe_faults()

    def _describe_faults(self) -> None:
        """Fault buttons say what they do; one that does not apply to this run is disabled and says why."""
        kinds = self.session.sim.fault_kinds
        for kind, button in self.fault_buttons.items():
            button.disabled = kind not in kinds or (kind == "node_failure" and not self.session.has_cluster)
            if kind == "node_failure" and not self.session.has_cluster:
                button.description = "Disabled: this scenario has no cluster, so there is no node to fail."
            elif kind not in kinds:
                button.description = f"Disabled: this run's world has no {kind} fault."
            else:
                button.description = kinds[kind]

    def _build_tabs(self) -> None:
        """The tabs of :data:`TABS` that apply to this run, each built once and kept across runs."""
        active = self.active_tab
        shown = []
        for spec in TABS:
            if not spec.applies(self.session):
                continue
            if spec.title not in self.tab_views:
                self.tab_views[spec.title] = spec.build(self)
                self.tab_specs[spec.title] = spec
            shown.append((spec.title, self.tab_views[spec.title]))
        self._tab_titles = [t for t, _ in shown]
        self.tabs[:] = shown
        self.tabs.active = self._tab_titles.index(active) if active in self._tab_titles else 0
        self.feed_tables = tuple(dict.fromkeys([*VIEW_TABLES, *(t for _, v in shown for t in getattr(v, "tables", ()))]))

    def show_tab(self, title: str) -> None:
        """Bring the tab titled ``title`` to the front (the Sweeps tab opens a point in the Live tab)."""
        if title in getattr(self, "_tab_titles", []):
            self.tabs.active = self._tab_titles.index(title)

    @property
    def active_tab(self) -> str:
        titles = getattr(self, "_tab_titles", [])
        return titles[self.tabs.active] if titles and 0 <= self.tabs.active < len(titles) else "Live"

    def page(self, title: str = "scalelab") -> pn.template.BootstrapTemplate:
        """The dashboard in a template (the served app): header with the run state, fixed sidebar, tabs."""
        header = pn.Row(
            pn.pane.HTML(
                "<div class='app-title'>scalelab: how clusters schedule and autoscale</div>"
                f"<div class='app-hint'>{html.escape(HINT)}</div>",
                stylesheets=[HEADER_CSS],
                margin=(0, 20, 0, 0),
            ),
            self.status,
            sizing_mode="stretch_width",
        )
        self._layout = self.main  # the template holds the sidebar and the header
        template = pn.template.BootstrapTemplate(
            title=title,
            header=[header],
            sidebar=[self.sidebar],
            main=[self.main],
            sidebar_width=370,
            header_background="#24476b",
        )
        pn.state.onload(self.start)
        return template

    # -- lifecycle ---------------------------------------------------------------------------------------------------
    def __panel__(self) -> pn.viewable.Viewable:
        pn.state.onload(self.start)
        return self._layout

    def start(self) -> None:
        """Start ticking (once); apply the link's parameters; stop and free everything when the session goes away."""
        if self._callback is not None or self._stopped:
            return
        self._last_wall = time.perf_counter()
        if pn.state.location is not None:
            self._apply_link(pn.state.location.search)
        self._callback = pn.state.add_periodic_callback(self._tick, period=self.tick_period)
        try:
            pn.state.on_session_destroyed(self._destroyed)
        except Exception:  # noqa: BLE001 - no server session (a notebook): nothing to clean up on close
            pass

    def _destroyed(self, context: Any) -> None:
        self.stop(clear_plots=False)

    def stop(self, clear_plots: bool = True) -> None:
        """Stop the clock and let go of the simulations and every plot's data (the browser tab is gone).

        ``clear_plots=False`` when the server is destroying the session: its document goes with it, and touching
        the plots then would only fail.
        """
        self._stopped = True
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self.compare.stop()
        for view in self.tab_views.values():
            if hasattr(view, "close"):  # the Sweeps tab: its polling and any sweep it started
                view.close()
        self.session.release()
        if clear_plots:
            for view in self.tab_views.values():
                view.clear()
            # the page's plots and widgets go too: their bokeh models and HoloViews plots are freed now, not when the
            # server collects the session (seconds later, when the next tabs may already be open)
            self.main.clear()
            self.sidebar.clear()

    @staticmethod
    def _change_pending() -> bool:
        """Has the browser sent a widget change that Panel is about to apply (its debounce timer runs)?

        Such a change needs the document lock, which every tick takes: at high speed ticks follow each other
        without a gap, and the change would wait behind one more. (Panel's pending-change table; absent, False.)
        """
        pending = getattr(pn.state, "_change_callbacks", None) or {}
        return bool(pending.get(pn.state.curdoc))

    def _connected(self) -> bool:
        """Is a browser still attached? (A closed tab stops simulating at once, before its session is collected.)"""
        doc = pn.state.curdoc
        context = getattr(doc, "session_context", None) if doc is not None else None
        server_session = getattr(context, "_session", None)
        count = getattr(server_session, "connection_count", None)
        return count is None or count > 0

    # -- links ---------------------------------------------------------------------------------------------------------
    def link_query(self) -> str:
        """``?scenario=...&seed=...&speed=...&tab=...&section.NAME=value...``: a link that reproduces this view."""
        s = self.session
        query = {
            "scenario": s.scenario,
            "seed": s.seed,
            "speed": f"{s.speed:g}",
            "playing": json.dumps(bool(s.playing)),
            "tab": self.active_tab,
        }
        for key, value in s.overrides.items():
            query[key] = value if isinstance(value, str) else json.dumps(value)
        return "?" + urlencode(query)

    def _apply_link(self, search: str) -> None:
        """Apply a link's parameters; anything that cannot be applied is named in one message, the rest still is."""
        items = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=True))
        s, problems = self.session, []
        scenario = items.pop("scenario", None)
        if scenario is not None:
            if scenario in s.param.scenario.objects:
                s.scenario = scenario
            else:
                problems.append(
                    f"scenario {scenario!r} is not here (allowed: {', '.join(s.param.scenario.objects)}); showing {s.scenario!r}"
                )
        seed = items.pop("seed", None)
        if seed not in (None, ""):
            try:
                s.seed = int(seed)
            except ValueError:
                problems.append(f"seed {seed!r} is not an integer in [0, 2**53-1]")
        speed = items.pop("speed", None)
        if speed is not None:
            try:
                s.speed = float(speed)
            except ValueError:
                problems.append(f"speed {speed!r}: allowed a number in [{s.param.speed.bounds[0]:g}, {s.param.speed.bounds[1]:g}]")
        playing = items.pop("playing", None)
        tab = items.pop("tab", None)
        items.pop("theme", None)
        changes = {k: _from_query(v) for k, v in items.items() if "." in k}
        if changes:
            error = s.apply(changes)
            if error:  # one bad value refuses the lot (atomic): try them one by one so the good ones still apply
                for key, value in changes.items():
                    one = s.apply({key: value})
                    if one:
                        problems.append(one)
            self._rebuild_controls()
        if playing in ("true", "false"):
            s.playing = playing == "true"
        if tab in self._tab_titles:
            self.tabs.active = self._tab_titles.index(tab)
        if problems:
            self._say("Link not fully applied: " + "; ".join(problems) + ".")
        self._update_link()

    def _update_link(self) -> None:
        if pn.state.location is not None:
            query = self.link_query()
            if pn.state.location.search != query:
                pn.state.location.search = query

    # -- ticking ---------------------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.perf_counter()
        wall_dt, self._last_wall = now - self._last_wall, now
        if self._stopped:
            return
        if not self._connected():  # the tab was closed: free everything now, not when the server collects the session
            self.stop()
            return
        if self._change_pending():  # a control's change waits for the document: it goes first, this tick is dropped
            self._part("yielded", 0.0)
            return
        with pn.io.hold():  # one document update per tick: a new run replaces every plot's data at once
            if self._stopped:  # stopped from another thread (a test, the server's clean-up) meanwhile
                return
            if self._new_run:
                self._new_run = False
                with self._models_frozen():
                    self._swap_run()
            self._advance(wall_dt)
            # a tick whose engine slice was long leaves the plots to the next one (but never two in a row): a click
            # waits for at most one of the two, not their sum
            heavy = time.perf_counter() - now > ENGINE_ALONE
            self._draw(draw_plots=not (heavy and self._drew_last))
            t_work = time.perf_counter()
        self._part("send", time.perf_counter() - t_work)  # serialising the tick's changes for the browser
        self.tick_seconds.append(time.perf_counter() - now)

    def _advance(self, wall_dt: float) -> None:
        s = self.session
        view = self.tab_views.get(self.active_tab)
        if getattr(view, "runs_own_simulations", False):
            self._timed("engine", view.tick, wall_dt, s.speed, s.playing)
        else:
            self._timed("engine", s.tick, wall_dt)
            self._poll_and_push()

    def _poll_and_push(self) -> None:
        """Hand the rows recorded since the last poll to every tab (not while a new run waits to be swapped in)."""
        if self._new_run:
            return
        s = self.session
        new = self._timed("poll", s.poll)
        samples = new.get("samples")
        if samples is not None and len(samples):
            self._newest_sample = float(samples["time"].iloc[-1])
        for view in self.tab_views.values():
            view.push(new, s.sim.now)
        self._show_alerts(new.get("events"))

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

    def _draw(self, force: bool = False, draw_plots: bool = True) -> None:
        """Draw the tab on screen in rounds (not when ``draw_plots`` is false); KPIs and the header too.

        A round starts when the tab's period has passed -- its ``flush_every``, or ``FLUSH_DUTY`` times what its last
        round cost, whichever is longer, so that drawing takes at most a third of a core however slow the machine --
        or at once after a change ("urgent": at the first tick that brought rows recorded after it). A round draws
        within ``DRAW_BUDGET`` per tick and goes on at the next tick until all is drawn, so no tick makes a click
        wait long.
        """
        s = self.session
        title = self.active_tab
        spec, view = self.tab_specs.get(title), self.tab_views.get(title)
        wall = time.perf_counter()
        urgent = self._urgent or force
        fresh = self._newest_sample > self._drawn_sample
        self._drew_last = False
        if view is not None and spec is not None and (draw_plots or force):
            period = max(spec.flush_every, FLUSH_DUTY * self._flush_cost.get(title, 0.0))
            now_please = urgent and (fresh or force or self._urgent_any)
            start = now_please or wall - self._flushed.get(title, 0.0) >= period
            restart = getattr(view, "restart_round", None)
            if now_please and self._round_open.get(title) and restart is not None:
                restart()  # a change waits for no round in progress: its plots are drawn from the first again
                self._round_open[title] = False
            if start and not self._round_open.get(title):
                self._round_open[title], self._round_cost[title] = True, 0.0
                self._flushed[title] = wall
                self._drawn_sample = self._newest_sample
                if self._drawn_sample > self._urgent_at or self._urgent_any or force:
                    self._urgent = self._urgent_any = False
            if self._round_open.get(title):
                now = view.now() if getattr(view, "runs_own_simulations", False) else s.sim.now
                with self._models_frozen():
                    done = self._timed(f"flush_{title}", view.flush, now, math.inf if force else DRAW_BUDGET)
                self._drew_last = True
                self._round_cost[title] += time.perf_counter() - wall
                if done is None or done:
                    self._round_open[title] = False
                    self._flush_cost[title] = self._round_cost[title]
        if urgent or wall - self._flushed.get("kpis", 0.0) >= 0.5:
            self._timed("kpis", lambda: self.kpis.update(s.kpis()))
            self._render_status()
            self._flushed["kpis"] = wall
        self._ticks += 1

    def _mark_urgent(self, anything: bool = True) -> None:
        """Draw soon: at the next tick (``anything``), or once rows recorded after now have arrived (a parameter change)."""
        self._urgent = True
        self._urgent_any = self._urgent_any or anything
        self._urgent_at = self.session.sim.now if self.session.sim is not None else 0.0

    @contextlib.contextmanager
    def _models_frozen(self):
        """One walk of the document's model graph for all the plots drawn in a tick (timed as ``models``).

        Bokeh walks every model of the page when a freeze ends, and HoloViews freezes once per plot update: ~25 ms
        per walk on a page of ~700 models. Nested freezes walk once, at the outermost end.
        """
        doc = pn.state.curdoc
        if doc is None:
            yield
            return
        models = doc.models
        changed = []

        def noted() -> None:  # a property holding models changed: the graph may have new models, walk it at the end
            changed.append(True)
            invalidate()

        invalidate = models.invalidate
        models.invalidate = noted
        models._push_freeze()
        try:
            yield
        finally:
            del models.invalidate
            t0 = time.perf_counter()
            if changed or models._freeze_count > 1:
                models._pop_freeze()
            else:  # only data and plain values changed (streamed rows, ranges, titles): no model came or went
                models._freeze_count -= 1
            self._part("models", time.perf_counter() - t0)

    def _part(self, part: str, seconds: float) -> None:
        self.part_seconds.setdefault(part, deque(maxlen=1000)).append(seconds)

    def _timed(self, part: str, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.part_seconds.setdefault(part, deque(maxlen=1000)).append(time.perf_counter() - t0)

    def refresh(self) -> None:
        """Queue what the session recorded since the last refresh and draw every tab now (tests, notebooks)."""
        if self._new_run:
            self._new_run = False
            self._swap_run()
        self._poll_and_push()
        for view in self.tab_views.values():
            if not getattr(view, "runs_own_simulations", False):
                view.flush(self.session.sim.now)
        self.kpis.update(self.session.kpis())
        self._render_status()

    def _render_status(self) -> None:
        s = self.session
        view = self.tab_views.get(self.active_tab)
        compare = getattr(view, "runs_own_simulations", False)  # a tab with its own clock (Compare, Replay) is shown
        sim_now = view.now() if compare else s.sim.now
        achieved = (view if compare else s).achieved_speed()
        if compare:
            state, cls = view.run_state(s.playing)
        else:
            state, cls = ("Running" if s.playing else "Paused"), "state" + ("" if s.playing else " paused")
        behind = ""
        if s.playing and math.isfinite(achieved) and achieved < 0.8 * s.speed:
            behind = f"<span class='behind' title='The server cannot simulate faster'>achieved {achieved:,.0f}×</span>"
        live = f"<span>live run waits at {plots.hms(s.sim.now)}</span>" if compare else ""
        self.status.object = (
            f"<div class='run-state'><span class='{cls}' data-state='{state.lower()}'>{state}</span>"
            f"<span>speed {s.speed:,.0f}× (simulated s per wall s)</span>{behind}"
            f"<span data-kpi='sim-time'>t = {plots.hms(sim_now)}</span>"
            f"<span>{html.escape(s.scenario)} · seed {s.seed}</span>{live}</div>"
        )

    # -- user actions ------------------------------------------------------------------------------------------------
    def _step(self) -> None:
        view = self.tab_views.get(self.active_tab)
        if getattr(view, "runs_own_simulations", False):
            view.step()
        else:
            self.session.step()
            self._poll_and_push()
        self._mark_urgent()

    def _reset(self) -> None:
        view = self.tab_views.get(self.active_tab)
        if getattr(view, "runs_own_simulations", False):
            view.reset()
        else:
            self.session.reset()
        self._mark_urgent()

    def _applied(self, changes: dict[str, Any]) -> None:
        """A control's change reached the engine: draw as soon as it shows, preview weights, keep the link current."""
        self._mark_urgent(anything=any(k.startswith("scheduler.") for k in changes))
        self.message.visible = False
        scheduler = {k.split(".", 1)[1] for k in changes if k.startswith("scheduler.")}
        if scheduler:
            self._preview_scheduler(scheduler)
        self._update_link()

    def _preview_scheduler(self, names: set[str]) -> None:
        """Re-score the newest placement with the weights now in force; say what only the next placement will show."""
        section = self.session.sim.sections["scheduler"]
        blocked = [f"{label_of(section.param[n])}: {why}" for n, why in NOT_PREVIEWABLE.items() if n in names]
        note = ("Applies from the next placement (" + "; ".join(blocked) + ").") if blocked else ""
        weights = {prio: float(getattr(section, name)) for prio, name in PRIORITY_WEIGHTS.items()}
        self.scores.preview(None if blocked else weights, note)

    def _session_rebuilt(self, event: param.parameterized.Event) -> None:
        """Reset, replay or scenario switch: the next tick draws the new run (inside one held update)."""
        self._new_run = True
        # a reset: the same controls, now on the new run's sections (at once: a change made before the next tick
        # must show the new run's value); a new scenario or a recording gets new controls at the next tick
        s = self.session
        if s.scenario != self._controls_scenario or not self.controls.rebind():
            self._controls_stale = True
        self._mark_urgent()

    def _swap_run(self) -> None:
        s = self.session
        self.stuck_alert.visible = False
        if s.sim is None:  # released: nothing to draw
            return
        self.run_view.sample_interval = s.sim.sections["run"].sample_interval
        if s.scenario != getattr(self, "_controls_scenario", s.scenario) or self._controls_stale:
            self._rebuild_controls()
        for view in self.tab_views.values():
            view.clear()
        self._build_tabs()
        self._describe_faults()
        self._poll_and_push()
        self._update_link()

    _controls_stale = False

    def _rebuild_controls(self) -> None:
        self._controls_scenario = self.session.scenario
        self._controls_stale = False
        self.controls = LiveControls(self.session, on_applied=self._applied)
        self.controls_holder[:] = [self.controls.layout]

    def _tab_changed(self, event: param.parameterized.Event) -> None:
        self._mark_urgent()
        title = self.active_tab
        if title == "Compare" and self.compare.pair is None:
            self.compare.rebuild()
        self._render_status()
        self._update_link()

    def _say(self, text: str) -> None:
        self.message.object = text
        self.message.visible = bool(text)

    def _fault(self, action: Any) -> None:
        error = action()
        self._say(error or "")
        self._mark_urgent()

    def _replay_uploaded(self, event: param.parameterized.Event) -> None:
        if not event.new:
            return
        origin = self.replay.filename or "uploaded recording"
        try:
            self.session.load_recording(parse_recording(event.new, origin), origin=origin)
        except (InputError, ParamError) as err:  # one line naming the file; the live session carries on
            self._say(f"Recording not loaded: {err}")
            return
        self._say("")
        self._controls_stale = True  # the recording's parameter values, whatever the scenario
        if self._callback is None:  # not served (a notebook, a test): draw the new run now
            self.refresh()

    def _recording_file(self) -> io.StringIO:
        return io.StringIO(json.dumps(self.session.recording(), indent=1, default=str))

    def server_tick_ms(self) -> dict[str, float]:
        if not self.tick_seconds:
            return {"median": math.nan, "p95": math.nan}
        ms = np.array(self.tick_seconds) * 1000
        return {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95))}


def _from_query(text: str) -> Any:
    """A link's value: JSON when it parses (numbers, booleans, lists), else the text itself (a selector's choice)."""
    try:
        return json.loads(text)
    except ValueError:
        return text
