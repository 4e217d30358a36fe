"""The app's state and the few requests a part may make of the page: what every tab, card and view is handed.

No part of the dashboard receives the shell: each gets an :class:`AppContext` with the live session, the message line
and hooks (show a tab, draw soon, a new run now) that the shell connects when it wires the page. Unconnected hooks do
nothing, so a part works alone in a test or a notebook.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dashboard.messageline import MessageLine
from dashboard.session import LiveSession


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


@dataclass
class AppContext:
    """The live session, the page's message line, and hooks into the shell (set by it; no-ops until then)."""

    session: LiveSession
    message: MessageLine = field(default_factory=MessageLine)
    show_tab: Callable[[str], None] = _nothing  # bring a tab to the front by title
    mark_urgent: Callable[..., None] = _nothing  # draw at the next tick
    adopt_run: Callable[..., None] = _nothing  # the session has a new run: draw it now, in one held update
    sync_run_card: Callable[[], None] = _nothing  # the Run card shows the session's scenario and seed again
    active_own_clock: Callable[[], bool] = lambda: False  # is a tab with its own clock (Compare, Replay) on screen?
    served: Callable[[], bool] = lambda: False  # is the tick loop running (a served page), or not (a notebook, a test)?
    parts: dict[str, Any] = field(default_factory=dict)  # shared parts by name: "live_tab", "placement_tab", "recordings"

    def say(self, text: str) -> None:
        """One line above the tabs (empty: hide it)."""
        self.message.object = text
        self.message.visible = bool(text)
