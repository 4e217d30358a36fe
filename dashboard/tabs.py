"""What a tab is: one declared protocol (:class:`Tab`), its defaults (:class:`TabBase`), and a row of the tab table.

Every tab is fed the live run's new table rows (``push``, cheap) and draws them while shown (``flush``, within a
budget). A tab with ``own_clock`` (Compare, Replay) runs its own clock: while it is shown, the sidebar's Play/Pause,
Speed, Step and Reset drive it (``tick``, ``step``, ``reset``) and the header shows its time (``now``,
``achieved_speed``, ``run_state``). The tick loop calls these members directly: every tab has all of them.
A tab whose ``flush`` only streams rows into existing Bokeh sources and sets values (``streams_only``: no model is
added to the page or replaced) is drawn without holding the document's model graph frozen, whose release costs one
walk of every model of the page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pandas as pd

#: Why a drawing round starts (:meth:`Tab.begin_round`): its period passed; a control's change is to be shown (what shows
#: it first); everything is to be shown now (a pause, a step, a new run, a tab opened, a forced draw).
ROUND_REASONS = ("period", "change", "all")

if TYPE_CHECKING:
    from dashboard.context import AppContext
    from dashboard.session import LiveSession


@runtime_checkable
class Tab(Protocol):
    """A tab of the dashboard (see the module docs)."""

    tables: tuple[str, ...]
    own_clock: bool
    streams_only: bool

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None: ...

    def flush(self, now: float, budget: float = math.inf) -> bool: ...

    def begin_round(self, reason: str) -> None: ...

    def restart_round(self) -> None: ...

    def clear(self) -> None: ...

    def close(self) -> None: ...

    def rejoin(self) -> None: ...

    # a tab with its own clock
    def tick(self, wall_dt: float, speed: float, playing: bool) -> None: ...

    def step(self) -> None: ...

    def reset(self) -> None: ...

    def now(self) -> float: ...

    def achieved_speed(self) -> float: ...

    def run_state(self, playing: bool) -> tuple[str, str]: ...


class TabBase:
    """Defaults of :class:`Tab` for a tab fed by the live run (no own clock, nothing to close)."""

    tables: tuple[str, ...] = ()
    own_clock = False
    streams_only = False

    def push(self, new: dict[str, pd.DataFrame], now: float) -> None:
        return None

    def flush(self, now: float, budget: float = math.inf) -> bool:
        return True

    def begin_round(self, reason: str) -> None:
        return None

    def restart_round(self) -> None:
        return None

    def clear(self) -> None:
        return None

    def close(self) -> None:
        return None

    def rejoin(self) -> None:
        """The tab joins the page again after runs of another world (it left with them): it may hold its top part only and
        bring the rest in the event loop's next turn (:mod:`dashboard.turns`), so that its first frame is sent sooner."""
        return None

    def tick(self, wall_dt: float, speed: float, playing: bool) -> None:
        return None

    def step(self) -> None:
        return None

    def reset(self) -> None:
        return None

    def now(self) -> float:
        return math.nan

    def achieved_speed(self) -> float:
        return math.nan

    def run_state(self, playing: bool) -> tuple[str, str]:
        return ("Running" if playing else "Paused"), "state" + ("" if playing else " paused")


@dataclass(frozen=True)
class TabSpec:
    """One tab: its title, how to build it from the app's context, when it applies, how often it is drawn while shown."""

    title: str
    build: Callable[[AppContext], Any]
    applies: Callable[[LiveSession], bool] = lambda session: True
    flush_every: float = 0.25
