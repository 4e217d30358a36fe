"""Widgets generated from the engine's param classes.

Each section gets a COPY of the live param object (same class: same names, bounds, docs and defaults);
the widgets edit the copy and a watcher sends the change to the engine through ``apply``. A refused
change shows an inline alert and leaves the engine on its last valid values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from engine import Section, tunable_names

Apply = Callable[[dict[str, Any]], str | None]

#: Widest range still shown as a slider; wider numbers get an input box.
SLIDER_SPAN = 5000


def range_pairs(section: Section) -> list[tuple[str, str]]:
    """``MIN_X``/``MAX_X`` parameter pairs of a section, shown as one range slider."""
    names = tunable_names(section)
    pairs = []
    for n in names:
        if n.startswith("MIN_") and "MAX_" + n[4:] in names:
            pairs.append((n, "MAX_" + n[4:]))
    return pairs


def label_of(p: param.Parameter) -> str:
    return p.label if p.label else p.name


def css_class(scope: str, key: str, name: str) -> str:
    """A stable CSS class per control (``ctl-live-autoscaler-MAX_WORKERS``), for tests and user styles."""
    return f"ctl-{scope}-{key}-{name}".replace(".", "-")


def widget_for(obj: param.Parameterized, name: str, css: str = "") -> pn.widgets.Widget | None:
    """One widget for parameter ``name`` of ``obj``, chosen from its type and bounds; None for lists."""
    p = obj.param[name]
    kw: dict[str, Any] = {"sizing_mode": "stretch_width", "css_classes": [css] if css else []}
    if isinstance(p, param.Boolean):
        return pn.widgets.Checkbox.from_param(p, **kw)
    if isinstance(p, param.Selector):
        return pn.widgets.Select.from_param(p, **kw)
    if isinstance(p, param.Number):
        lo, hi = p.bounds or (None, None)
        is_int = isinstance(p, param.Integer)
        if lo is not None and hi is not None and hi - lo <= SLIDER_SPAN:
            cls = pn.widgets.EditableIntSlider if is_int else pn.widgets.EditableFloatSlider
            step = p.step if p.step is not None else (1 if is_int else (hi - lo) / 100)
            return cls.from_param(p, step=step, start=lo, end=hi, throttled=True, **kw)
        cls = pn.widgets.IntInput if is_int else pn.widgets.FloatInput
        return cls.from_param(p, **kw)
    return None  # lists (steps, fault schedules) belong in scenario files, not in a live control


class SectionControls:
    """The widgets of one engine section, applying every change to the engine through ``apply``."""

    def __init__(
        self, live: Section, apply: Apply, key: str, exclude: tuple[str, ...] = (), alert: pn.pane.Alert | None = None, scope: str = "live"
    ):
        self.key = key
        self.scope = scope
        self.copy = type(live)(**live.values())
        self.apply = apply
        self.alert = alert or pn.pane.Alert(
            "", alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=[f"alert-{scope}-{key}"]
        )
        self.widgets: dict[str, pn.widgets.Widget] = {}
        self._syncing = False
        paired = set()
        for lo_name, hi_name in range_pairs(self.copy):
            self.widgets[f"{lo_name}..{hi_name}"] = self._range_widget(lo_name, hi_name)
            paired.update((lo_name, hi_name))
        for name in tunable_names(self.copy):
            if name in paired or name in exclude:
                continue
            w = widget_for(self.copy, name, css_class(scope, key, name))
            if w is not None:
                self.widgets[name] = w
        names = [n for n in tunable_names(self.copy) if n not in paired and n in self.widgets]
        self.copy.param.watch(self._changed, names)

    def _range_widget(self, lo_name: str, hi_name: str) -> pn.widgets.EditableRangeSlider:
        lo_p, hi_p = self.copy.param[lo_name], self.copy.param[hi_name]
        start = min(lo_p.bounds[0], hi_p.bounds[0])
        end = max(lo_p.bounds[1], hi_p.bounds[1])
        w = pn.widgets.EditableRangeSlider(
            label=f"{label_of(lo_p)} .. {label_of(hi_p)}",
            start=start,
            end=end,
            value=(getattr(self.copy, lo_name), getattr(self.copy, hi_name)),
            step=lo_p.step or 1.0,
            sizing_mode="stretch_width",
            css_classes=[css_class(self.scope, self.key, f"{lo_name}..{hi_name}")],
        )

        def on_range(event: param.parameterized.Event) -> None:
            lo, hi = (round(v, 9) for v in event.new)  # the browser's slider steps leave float dust (29.999999999999996)
            self._send({f"{self.key}.{lo_name}": lo, f"{self.key}.{hi_name}": hi})

        w.param.watch(on_range, "value_throttled")
        return w

    def _changed(self, *events: param.parameterized.Event) -> None:
        if self._syncing:
            return
        self._send({f"{self.key}.{e.name}": e.new for e in events})

    def _send(self, changes: dict[str, Any]) -> None:
        error = self.apply(changes)
        if error:
            self.alert.object = f"**Not applied** ({error}). The simulation keeps running on the last valid values."
            self.alert.visible = True
        else:
            self.alert.visible = False

    def set_values(self, values: dict[str, Any]) -> None:
        """Move widgets to ``values`` (e.g. a preset) and send them to the engine as one change."""
        self._syncing = True
        try:
            self.copy.param.update(**values)
        finally:
            self._syncing = False
        self._send({f"{self.key}.{k}": v for k, v in values.items()})

    def panel(self, names: list[str] | None = None) -> pn.Column:
        ws = [w for n, w in self.widgets.items() if names is None or n in names]
        return pn.Column(*ws, sizing_mode="stretch_width")
