"""The tab containers: the table's tabs that apply to the live run, each built when it is first shown and kept.

A tab that applies but was never shown is an empty holder: its views (and their Bokeh models) are made the first time
a person opens it, so the first page holds only the tab on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from dashboard.context import AppContext
from dashboard.tabs import Tab, TabSpec


class TabSet:
    """``pn.Tabs`` over the tab table; :attr:`views` holds the tabs built so far, by title."""

    def __init__(self, ctx: AppContext, table: list[TabSpec], on_change: Callable[[], None]):
        self.ctx = ctx
        self.table = table
        self.views: dict[str, Tab] = {}
        self.specs: dict[str, TabSpec] = {}
        self.holders: dict[str, pn.Column] = {}
        self.titles: list[str] = []
        self.tabs = pn.Tabs(dynamic=True, sizing_mode="stretch_width")
        self._on_change = on_change
        self.on_built: Callable[[Tab], None] = lambda view: None  # the tick loop hands a new tab the rows so far
        self._building = False
        self.arrange()
        self.tabs.param.watch(self._changed, "active")

    def arrange(self, keep: str | None = None) -> None:
        """Show the tabs that apply to the session's run (the one shown stays in front if it still applies)."""
        active = self.active
        shown = [spec for spec in self.table if spec.applies(self.ctx.session)]
        for spec in shown:
            self.specs[spec.title] = spec
            self.holders.setdefault(spec.title, pn.Column(sizing_mode="stretch_width", css_classes=[f"tab-{spec.title.lower()}"]))
        titles = [spec.title for spec in shown]
        active = keep if keep in titles else active  # ``keep``: the tab to bring to the front, when it applies
        front = titles.index(active) if active in titles else 0
        self._building = True
        try:
            if titles != self.titles or not len(self.tabs):  # the same tabs (a reset, a branch in the same world): kept as they are
                for title in titles:  # built for an earlier world, back now: its top part first
                    if title in self.views and title not in self.titles:
                        self.views[title].rejoin()
                self.titles = titles
                if titles:
                    self.ensure(titles[front])  # its view in its holder before the new list joins the page
                # the new list and the tab in front in one change: the (dynamic) tabs are rendered once, not twice
                self.tabs.param.active.bounds = (-1, len(titles) - 1)
                with param.parameterized.batch_call_watchers(self.tabs):
                    self.tabs[:] = [(t, self.holders[t]) for t in titles]
                    self.tabs.active = front
            self.tabs.active = front
        finally:
            self._building = False
        self.ensure(self.active)

    def ensure(self, title: str) -> Tab | None:
        """The tab titled ``title``, built now if it never was (None when it does not apply)."""
        if title not in self.titles:
            return None
        if title not in self.views:
            view = self.specs[title].build(self.ctx)
            self.views[title] = view
            self.holders[title][:] = [view]
            self.on_built(view)
        return self.views[title]

    @property
    def active(self) -> str:
        titles = self.titles
        return titles[self.tabs.active] if titles and 0 <= self.tabs.active < len(titles) else (titles[0] if titles else "")

    def active_view(self) -> Tab | None:
        return self.views.get(self.active)

    def show(self, title: str) -> None:
        """Bring the tab titled ``title`` to the front (built first if need be)."""
        if title in self.titles:
            self.ensure(title)
            self.tabs.active = self.titles.index(title)

    def feed_tables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for v in self.views.values() for t in v.tables))

    def _changed(self, event: Any) -> None:
        if self._building:
            return
        self.ensure(self.active)
        self._on_change()


class Parts(dict):
    """Shared parts by name (the app context's ``parts``), some made only when first asked for: ``Parts(name=factory)``.

    ``made`` names those that exist (a part nobody asked for is never made, so a page holds only what it shows)."""

    def __init__(self, **factories: Callable[[], Any]):
        super().__init__()
        self.factories = factories

    def __missing__(self, name: str) -> Any:
        if name not in self.factories:
            raise KeyError(name)
        part = self[name] = self.factories[name]()
        return part

    @property
    def made(self) -> set[str]:
        return set(self.keys())
