"""Widgets generated from the engine's param classes: one control per tunable, nothing declared twice.

Labels, units, slider ranges (``softbounds``), hard bounds, steps and tooltips all come from the param
declarations (``engine`` sections). A number is a slider over its soft range plus a box for a typed value,
which may go beyond the slider up to the hard bounds; every change goes to the engine through ``apply``
(atomic and validated there). A refused value -- out of range, or a combination the section does not allow --
shows its message right under the control, quoting what was typed, and the control returns to the value in
force. The controls always show the engine's values: they are re-read from the live section after each change.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import panel as pn
import param
from param.parameterized import label_formatter

from engine import Section, allowed, tunable_names

Apply = Callable[[dict[str, Any]], str | None]
#: Called with the changes the engine took (the dashboard hooks previews and the URL onto it).
Applied = Callable[[dict[str, Any]], None]

#: The widest range a slider spans without soft bounds; wider ranges get a box only.
SLIDER_SPAN = 5000
MESSAGE_CSS = [":host {margin: 0 5px 4px 5px;} .alert {padding: 4px 8px; font-size: 12px; margin: 0;}"]


def range_pairs(section: Section | type[Section]) -> list[tuple[str, str]]:
    """``MIN_X``/``MAX_X`` parameter pairs of a section, shown as one range."""
    names = tunable_names(section)
    return [(n, "MAX_" + n[4:]) for n in names if n.startswith("MIN_") and "MAX_" + n[4:] in names]


def label_of(p: param.Parameter) -> str:
    """The declared label, or the name in words (``MAX_WORKERS`` -> "Max workers") when none was declared."""
    if p.label and p.label != label_formatter(p.name):
        return p.label
    words = p.name.replace("_", " ").strip()
    return words[:1].upper() + words[1:].lower() if words.isupper() else words[:1].upper() + words[1:]


def tooltip(section_key: str, p: param.Parameter) -> str:
    """What a control's tooltip says: the doc, the parameter's full name and what it accepts."""
    return f"{p.doc or ''} [{section_key}.{p.name}; {allowed(p)}]".strip()


def css_class(scope: str, key: str, name: str) -> str:
    """A stable CSS class per control (``ctl-live-autoscaler-MAX_WORKERS``), for tests and user styles."""
    return f"ctl-{scope}-{key}-{name}".replace(".", "-")


def _message(css: list[str]) -> pn.pane.Alert:
    return pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=css, stylesheets=MESSAGE_CSS)


def _slider_range(p: param.Number) -> tuple[float, float] | None:
    """The slider's span: the soft bounds, else the hard bounds when they are narrow enough to drag across."""
    soft = p.softbounds
    lo, hi = p.bounds or (None, None)
    if soft is not None and soft[0] is not None and soft[1] is not None:
        return float(soft[0]), float(soft[1])
    if lo is not None and hi is not None and hi - lo <= SLIDER_SPAN:
        return float(lo), float(hi)
    return None


class Control(pn.viewable.Viewer):
    """One parameter's widgets; ``on_change(values)`` gets ``{name: value}`` as the user set them."""

    def __init__(self, names: tuple[str, ...], on_change: Callable[[dict[str, Any], Control], None], css: str, msg_css: list[str]):
        super().__init__()
        self.names = names
        self.on_change = on_change
        self._message_css = [f"msg-{css}", *msg_css]
        self._message: pn.pane.Alert | None = None  # made on the first refusal: most controls never need one
        self._syncing = False

    @property
    def message(self) -> pn.pane.Alert:
        """The inline message under the control (created when first needed)."""
        if self._message is None:
            self._message = _message(self._message_css)
            self._layout.append(self._message)
        return self._message

    def hide_message(self) -> None:
        if self._message is not None:
            self._message.visible = False

    def _emit(self, values: dict[str, Any]) -> None:
        if not self._syncing:
            self.on_change(values, self)

    def show(self, values: dict[str, Any]) -> None:
        """Show the values in force (no change is sent)."""
        self._syncing = True
        try:
            self._show(values)
        finally:
            self._syncing = False

    def _show(self, values: dict[str, Any]) -> None:
        raise NotImplementedError

    @property
    def widget(self) -> pn.widgets.Widget:
        """The main widget (tests and gating read it)."""
        raise NotImplementedError

    @property
    def visible(self) -> bool:
        return self._layout.visible

    @visible.setter
    def visible(self, shown: bool) -> None:
        self._layout.visible = shown

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout


class NumberControl(Control):
    """A slider over the soft range and a box for a typed value (any value reaches the engine, which checks it)."""

    def __init__(self, p: param.Number, value: float, section_key: str, on_change, css: str, msg_css: list[str]):
        super().__init__((p.name,), on_change, css, msg_css)
        self.is_int = isinstance(p, param.Integer)
        tip = tooltip(section_key, p)
        span = _slider_range(p)
        entry_cls = pn.widgets.IntInput if self.is_int else pn.widgets.FloatInput
        # the box carries the label and the tooltip; a typed value is not clipped here: the engine judges it
        self.entry = entry_cls(value=value, label=label_of(p), description=tip, sizing_mode="stretch_width", css_classes=["value-entry"])
        self.entry.param.watch(lambda e: self._emit({p.name: e.new}), "value")
        self.slider = None
        rows: list[pn.viewable.Viewable] = [self.entry]
        if span is not None:
            if self.is_int:
                span = (int(span[0]), int(span[1]))
            step = p.step if p.step is not None else (1 if self.is_int else _nice_step((span[1] - span[0]) / 100))
            slider_cls = pn.widgets.IntSlider if self.is_int else pn.widgets.FloatSlider
            self.slider = slider_cls(
                start=span[0], end=span[1], step=step, show_value=False, sizing_mode="stretch_width", margin=(0, 10, 4, 10)
            )
            self._span = span
            self.slider.param.watch(lambda e: self._emit({p.name: e.new}), "value_throttled")
            self.show({p.name: value})
            rows.append(self.slider)
        self._layout = pn.Column(*rows, sizing_mode="stretch_width", margin=0, css_classes=[css])

    def _show(self, values: dict[str, Any]) -> None:
        value = values[self.names[0]]
        self.entry.value = value
        if self.slider is not None:
            # a value typed beyond the soft range widens the slider to reach it (and back when it returns)
            self.slider.param.update(start=min(self._span[0], value), end=max(self._span[1], value), value=value)

    @property
    def widget(self) -> pn.widgets.Widget:
        return self.slider if self.slider is not None else self.entry


class RangeControl(Control):
    """A ``MIN_X``/``MAX_X`` pair: one range slider and a box for each end."""

    def __init__(self, lo: param.Number, hi: param.Number, label: str, values: dict[str, Any], section_key: str, on_change, css, msg_css):
        super().__init__((lo.name, hi.name), on_change, css, msg_css)
        start, end = (_slider_range(lo) or lo.bounds)[0], (_slider_range(hi) or hi.bounds)[1]
        self._span = (float(start), float(end))
        tip = f"{tooltip(section_key, lo)} / {tooltip(section_key, hi)}"
        self.slider = pn.widgets.RangeSlider(
            start=start, end=end, step=lo.step or 1.0, show_value=False, sizing_mode="stretch_width", margin=(0, 10, 4, 10)
        )
        self.slider.param.watch(lambda e: self._emit({lo.name: round(e.new[0], 9), hi.name: round(e.new[1], 9)}), "value_throttled")
        self.low = pn.widgets.FloatInput(
            value=values[lo.name], label=f"{label}: low", description=tip, sizing_mode="stretch_width", css_classes=["range-low"]
        )
        self.high = pn.widgets.FloatInput(value=values[hi.name], label="high", sizing_mode="stretch_width", css_classes=["range-high"])
        # a typed end is sent with the other end in force: the engine checks the pair (MIN below MAX) as typed
        self.low.param.watch(lambda e: self._emit({lo.name: e.new, hi.name: self.high.value}), "value")
        self.high.param.watch(lambda e: self._emit({lo.name: self.low.value, hi.name: e.new}), "value")
        self.show(values)
        boxes = pn.Row(self.low, self.high, sizing_mode="stretch_width", margin=0)
        self._layout = pn.Column(boxes, self.slider, sizing_mode="stretch_width", margin=0, css_classes=[css])

    def _show(self, values: dict[str, Any]) -> None:
        a, b = (float(values[n]) for n in self.names)
        self.low.value, self.high.value = a, b
        self.slider.param.update(start=min(self._span[0], a), end=max(self._span[1], b), value=(a, b))

    @property
    def widget(self) -> pn.widgets.Widget:
        return self.slider


class ChoiceControl(Control):
    """A selector (a Select) or a switch (a Checkbox)."""

    def __init__(self, p: param.Parameter, value: Any, section_key: str, on_change, css: str, msg_css: list[str]):
        super().__init__((p.name,), on_change, css, msg_css)
        tip = tooltip(section_key, p)
        if isinstance(p, param.Boolean):
            self._widget = pn.widgets.Checkbox(label=label_of(p), value=value, sizing_mode="stretch_width")
            self.icon = pn.widgets.TooltipIcon(value=tip, margin=(4, 4, 0, 0), css_classes=["ctl-tooltip"])
            top: pn.viewable.Viewable = pn.Row(self._widget, self.icon, sizing_mode="stretch_width", margin=0)
        else:
            self._widget = pn.widgets.Select(
                label=label_of(p), options=list(p.objects), value=value, description=tip, sizing_mode="stretch_width"
            )
            top = self._widget
        self._widget.param.watch(lambda e: self._emit({p.name: e.new}), "value")
        self._layout = pn.Column(top, sizing_mode="stretch_width", margin=0, css_classes=[css])

    def _show(self, values: dict[str, Any]) -> None:
        self._widget.value = values[self.names[0]]

    @property
    def widget(self) -> pn.widgets.Widget:
        return self._widget


def _nice_step(raw: float) -> float:
    """The 1-2-5 step at or below ``raw`` (a slider over 0-2 steps by 0.02, not 0.0199...)."""
    if raw <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(raw))
    return max(m * exp for m in (1, 2, 5) if m * exp <= raw)


class SectionControls:
    """The controls of one engine section, sending every change to the engine through ``apply``.

    ``copy`` is a copy of the live section (same class: names, bounds, docs, defaults) that code may set
    (presets, tests): its changes are sent like a user's. ``on_applied`` hears every change the engine took.
    """

    def __init__(
        self,
        live: Section,
        apply: Apply,
        key: str,
        exclude: tuple[str, ...] = (),
        alert: pn.pane.Alert | None = None,
        scope: str = "live",
        on_applied: Applied | None = None,
    ):
        self.key = key
        self.scope = scope
        self.live = live
        self.apply = apply
        self.on_applied = on_applied
        self.copy = type(live)(**live.values())
        self.exclude = exclude
        self._msg_css = [f"alert-{scope}-{key}"]
        # messages of changes no control made (presets, code); hidden until needed
        self.alert = alert or _message(self._msg_css)
        self._controls: dict[str, Control] | None = None
        self._syncing = False
        watched = [n for n in tunable_names(live) if n not in exclude]
        self.copy.param.watch(self._copy_changed, watched)

    @property
    def built(self) -> bool:
        """Have the widgets been made? (A collapsed card makes them when first opened: a page loads faster.)"""
        return self._controls is not None

    @property
    def controls(self) -> dict[str, Control]:
        """The controls by parameter name (``MIN_X..MAX_X`` for a range), made on first use."""
        if self._controls is None:
            self._controls = self._build()
        return self._controls

    def _build(self) -> dict[str, Control]:
        live, key, scope, msg_css = self.live, self.key, self.scope, self._msg_css
        controls: dict[str, Control] = {}
        values = live.values()
        paired: set[str] = set()
        for lo_name, hi_name in range_pairs(live):
            label = type(live).range_labels.get((lo_name, hi_name)) or f"{label_of(live.param[lo_name])} .. {label_of(live.param[hi_name])}"
            name = f"{lo_name}..{hi_name}"
            controls[name] = RangeControl(
                live.param[lo_name], live.param[hi_name], label, values, key, self._from_control, css_class(scope, key, name), msg_css
            )
            paired.update((lo_name, hi_name))
        for name in tunable_names(live):
            if name in paired or name in self.exclude:
                continue
            control = self._control(live.param[name], values[name], css_class(scope, key, name), msg_css)
            if control is not None:
                controls[name] = control
        return controls

    def _control(self, p: param.Parameter, value: Any, css: str, msg_css: list[str]) -> Control | None:
        if isinstance(p, param.Boolean | param.Selector) and not isinstance(p, param.ListSelector):
            return ChoiceControl(p, value, self.key, self._from_control, css, msg_css)
        if isinstance(p, param.Number):
            return NumberControl(p, value, self.key, self._from_control, css, msg_css)
        return None  # lists (steps, fault schedules) and file names belong in scenario files, not in a live control

    @property
    def widgets(self) -> dict[str, pn.widgets.Widget]:
        """The main widget of each control, by parameter name (``MIN_X..MAX_X`` for a range)."""
        return {name: c.widget for name, c in self.controls.items()}

    def _from_control(self, values: dict[str, Any], control: Control) -> None:
        self._send(values, control)

    def _copy_changed(self, *events: param.parameterized.Event) -> None:
        if not self._syncing:
            self._send({e.name: e.new for e in events}, None)

    def _send(self, values: dict[str, Any], control: Control | None) -> str | None:
        """Send ``{name: value}``; show the outcome at ``control`` (or the section's alert) and re-read the engine."""
        changes = {f"{self.key}.{k}": v for k, v in values.items()}
        error = self.apply(changes)
        target = control.message if control is not None else self.alert
        for c in (self._controls or {}).values():
            c.hide_message()
        self.alert.visible = False
        if error:
            in_force = ", ".join(f"{label_of(self.live.param[n])} {_fmt(getattr(self.live, n))}" for n in values)
            target.object = f"**Not applied**: {error}. Back to the value in force ({in_force})."
            target.visible = True
        self.sync()
        if not error and self.on_applied is not None:
            self.on_applied(changes)
        return error

    def set_values(self, values: dict[str, Any]) -> str | None:
        """Send ``values`` (e.g. a preset) to the engine as one change; the controls follow."""
        return self._send(dict(values), None)

    def rebind(self, live: Section) -> None:
        """A new run's section of the same class: the same widgets now show and change ``live`` (nothing is sent)."""
        if type(live) is not type(self.live):
            raise TypeError(f"{self.key}: controls of {type(self.live).__name__} cannot show a {type(live).__name__}")
        self.live = live
        for c in (self._controls or {}).values():
            c.hide_message()  # a refusal of the old run's is no longer news
        self.alert.visible = False
        self.sync()

    def sync(self) -> None:
        """Show the engine's values in every control and in ``copy``."""
        values = self.live.values()
        self._syncing = True
        try:
            self.copy.param.update(**{k: v for k, v in values.items() if k in self.copy.param})
        finally:
            self._syncing = False
        for control in (self._controls or {}).values():
            control.show({n: values[n] for n in control.names})

    def panel(self, names: list[str] | None = None) -> pn.Column:
        shown = [c for n, c in self.controls.items() if names is None or n in names]
        return pn.Column(*shown, sizing_mode="stretch_width", margin=0)


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
