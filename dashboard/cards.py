"""The sidebar's Run and Faults cards, on a live session (the Faults card from what the run's world declares).

Run: scenario, seed, speed, Play/Pause (its label says what a press does), Step and Reset. Faults: one button per fault
kind of the world (``engine.WORLDS[world].ui.faults``), with inputs for their arguments; a fault that does not apply
to this run (no cluster) is disabled and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn

from dashboard.context import AppContext

#: Speeds that read as time (a second, a minute, an hour of simulated time per wall second): the speed slider's stops.
SPEED_STOPS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 86400)
PLAY_LABELS = {True: "❚❚ Pause", False: "▶ Play"}


def speed_steps(lo: float, hi: float) -> list[float]:
    """The :data:`SPEED_STOPS` within the speed parameter's bounds [lo, hi], both ends included (a log-like scale)."""
    return sorted({float(lo), *(float(v) for v in SPEED_STOPS if lo <= v <= hi), float(hi)})


class RunCard:
    """Scenario, seed, speed, Play/Pause, Step, Reset; ``on_step``/``on_reset`` are the shell's (they act on the tab shown)."""

    def __init__(self, ctx: AppContext, on_step: Callable[[], None], on_reset: Callable[[], None]):
        s = ctx.session
        self.ctx = ctx
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
        tip = pn.widgets.TooltipIcon(value=f"{p.speed.doc} [speed; {lo:g} to {hi:g}]", margin=(12, 0, 0, 0))
        s.param.watch(lambda e: self._show_speed(e.new), "speed")
        self.play = pn.widgets.Toggle.from_param(p.playing, label=PLAY_LABELS[bool(s.playing)], color="success", css_classes=["run-play"])
        s.param.watch(lambda e: self._show_playing(e.new), "playing")
        self.step_button = pn.widgets.Button(label="Step", description="One sample interval on (also while playing)")
        self.step_button.on_click(lambda e: on_step())
        self.reset_button = pn.widgets.Button(
            label="Reset", color="warning", description="Back to t=0: same scenario and seed, with the changes made so far"
        )
        self.reset_button.on_click(lambda e: on_reset())
        self.card = pn.Card(
            self.scenario_select,
            self.seed_input,
            pn.Row(self.speed, tip, sizing_mode="stretch_width", margin=0),
            pn.Row(self.play, self.step_button, self.reset_button),
            title="Run",
            sizing_mode="stretch_width",
            margin=(4, 0),
        )

    def _show_speed(self, speed: float) -> None:
        nearest = min(self.speed.options, key=lambda v: abs(v - speed))
        if self.speed.value != nearest:
            self.speed.value = nearest

    def _show_playing(self, playing: bool) -> None:
        self.play.label = PLAY_LABELS[bool(playing)]

    def sync(self) -> None:
        """Show the scenario and seed the session holds (after a recording, a branch or a sweep point was opened).
        Setting a widget to the value in force changes nothing in the session."""
        s = self.ctx.session
        self.scenario_select.options = list(s.param.scenario.objects)
        self.scenario_select.value = s.scenario
        self.seed_input.value = s.seed


class FaultCard:
    """One button per fault the run's world declares, with its arguments' inputs; rebuilt for a run of another world."""

    def __init__(self, ctx: AppContext, on_injected: Callable[[], None]):
        self.ctx = ctx
        self.on_injected = on_injected
        self.card = pn.Card(title="Faults", sizing_mode="stretch_width", margin=(4, 0))
        self.buttons: dict[str, pn.widgets.Button] = {}
        self.inputs: dict[tuple[str, str], Any] = {}
        self._world: str | None = None
        self.rebuild()

    def rebuild(self) -> None:
        """Buttons for the session's world (kept when the world is the same), each saying what it does or why not."""
        s = self.ctx.session
        if s.sim is None:
            return
        rows = None
        if s.world != self._world:
            self._world = s.world
            self.buttons, self.inputs, rows = {}, {}, []
            for fault in s.view.faults:
                button = pn.widgets.Button(
                    label=fault.label, color="danger", sizing_mode="stretch_width", css_classes=[f"fault-{fault.kind}"]
                )
                button.on_click(lambda e, f=fault: self._inject(f))
                self.buttons[fault.kind] = button
                widgets = [self._input(fault.kind, arg) for arg in fault.args]
                rows.append(pn.Row(*widgets, button, sizing_mode="stretch_width") if widgets else button)
        kinds = s.sim.fault_kinds
        for fault in s.view.faults:
            no_cluster = fault.needs_cluster and not s.has_cluster
            if no_cluster:
                description = "Disabled: this scenario has no cluster, so there is no node to fail."
            elif fault.kind not in kinds:
                description = f"Disabled: this run's world has no {fault.kind} fault."
            else:
                description = kinds[fault.kind]
            # unchanged values send nothing; new buttons get theirs before they join the page (a tooltip is a model)
            self.buttons[fault.kind].param.update(disabled=fault.kind not in kinds or no_cluster, description=description)
        if rows is not None:
            self.card[:] = rows

    def _input(self, kind: str, arg: Any) -> Any:
        if arg.kind == "node":
            w = pn.widgets.TextInput(label=arg.label, value=str(arg.default or ""), width=170, css_classes=[f"fault-{kind}-{arg.name}"])
        else:
            lo, hi = arg.bounds or (None, None)
            w = pn.widgets.FloatInput(label=arg.label, value=float(arg.default or 0.0), start=lo, end=hi, width=150)
        self.inputs[(kind, arg.name)] = (arg, w)
        return w

    def _inject(self, fault: Any) -> None:
        kwargs: dict[str, Any] = {}
        for arg in fault.args:
            _, w = self.inputs[(fault.kind, arg.name)]
            value = w.value
            if arg.kind == "node":
                text = str(value or "").strip()
                if not text:
                    if arg.required:
                        self.ctx.say(f"{fault.label}: {arg.label} is needed")
                        return
                    continue
                value = int(text) if text.isdigit() else text
            else:
                value = float(value)
            kwargs[arg.name] = value
        error = self.ctx.session.inject(fault.kind, **kwargs)
        self.ctx.say(error or "")
        self.on_injected()
