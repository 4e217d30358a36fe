"""The page's message line above the tabs, shown and hidden without laying the page's plots out again.

BokehJS lays the whole page out again when a component's ``visible`` changes (every figure on screen is measured and
repainted): with the Replay tab's ten figures shown, the line appearing for *Branch here* took 1.5-2 s of the browser's
main thread at load 6, and again when it went. Hidden by its CSS ``display`` instead, the same change took 0.2-0.6 s
(Chromium's own metrics, docs/performance/dashboard-history.md, d18-replay5). So the line's pane stays visible to Bokeh; its
``object`` and ``visible`` are this object's parameters, as they were the pane's.
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param


def display_style(shown: bool, display: str = "block") -> dict[str, str]:
    """The CSS that shows (as ``display``: "flex" for a Column or Row, whose host is a flex box) or hides a component
    without a change of its ``visible`` (see the module docs)."""
    return {"display": display if shown else "none"}


class MessageLine(pn.viewable.Viewer):
    """One line of text above the tabs (Markdown, in a warning box), or nothing."""

    object = param.String(default="", doc="What the line says (Markdown).")
    visible = param.Boolean(default=False, doc="Is the line shown?")

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.pane = pn.pane.Alert(
            self.object,
            alert_type="warning",
            sizing_mode="stretch_width",
            css_classes=["app-message"],
            styles=display_style(self.visible),
        )
        self.param.watch(self._show, ["object", "visible"])

    def _show(self, event: Any) -> None:
        if self.pane.object != self.object:
            self.pane.object = self.object
        styles = display_style(self.visible)
        if self.pane.styles != styles:
            self.pane.styles = styles

    def __panel__(self) -> pn.viewable.Viewable:
        return self.pane
