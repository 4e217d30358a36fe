"""The sidebar's cards: Run, Recordings, Faults and the parameter cards, made from the app context's parts.

A page's first frame holds none of them; :meth:`Sidebar.fill` brings the Run card first (the scenario list usable at
once), then the rest. After a new run, :meth:`Sidebar.follow` rebinds the parameter cards and the fault buttons: at once
when the cards stay (a Reset, a branch in the same world), else in the loop's next turn (:mod:`dashboard.turns`), so a
new world's plots reach the browser before its cards.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn

from dashboard.context import AppContext
from dashboard.turns import after_this_turn


class Sidebar:
    """The sidebar's column of cards over ``ctx.parts`` (``run_card``, ``recordings``, ``fault_card``, ``controls``)."""

    def __init__(self, ctx: AppContext, stopped: Callable[[], bool]):
        self.ctx = ctx
        self.stopped = stopped  # the page stopped for good: nothing more is made for it
        self.controls_holder = pn.Column(sizing_mode="stretch_width", margin=0)  # the parameter cards' column
        self.column = pn.Column(sizing_mode="stretch_width", margin=0)
        self.world = ctx.session.world  # the world whose cards are shown

    def fill(self, run_card_only: bool = False, fill: bool = False) -> None:
        """The cards (made now if they were not); ``fill``: the open parameter cards with their widgets."""
        parts = self.ctx.parts
        cards = [parts["run_card"].card]
        if not run_card_only:
            cards += [parts["recordings"].card, parts["fault_card"].card, self.controls_holder]
        with pn.io.hold():
            if fill:
                parts["controls"].fill()
            if len(self.column) < len(cards):
                if not run_card_only:
                    self.controls_holder[:] = [parts["controls"].layout]
                self.column[:] = cards

    def fill_in_turns(self) -> None:
        """The Run card now; then a turn each (at once unserved): the other cards, then each open card's widgets. Between
        two turns the page takes what the person did meanwhile: a scenario chosen in the Run card right after the first
        frame waits for one card, not for the whole sidebar, on the server and in the browser. Called at the page's
        onload, so not through :func:`~dashboard.turns.after_this_turn`, which waits for it."""
        self.fill(run_card_only=True)
        pn.state.execute(self._fill_turn, schedule=True)

    def _fill_turn(self) -> None:
        if self.stopped():
            return
        if len(self.column) < 2:
            self.fill()  # the cards, open ones without their widgets yet
        elif not self.ctx.parts["controls"].fill_one():
            return
        pn.state.execute(self._fill_turn, schedule=True)

    def follow(self) -> None:
        """The session holds a new run: its cards (see the module docs)."""
        parts = self.ctx.parts
        same = "controls" not in parts.made or parts["controls"].same_cards()
        if same and self.ctx.session.world == self.world:
            self.rebind()
        else:
            after_this_turn(self.rebind)

    def rebind(self) -> None:
        """The parameter cards on the live run's sections, the fault buttons of its world."""
        parts, self.world = self.ctx.parts, self.ctx.session.world
        if self.stopped():
            return
        with pn.io.hold():
            if "controls" in parts.made:
                parts["controls"].rebind()
            if "fault_card" in parts.made:
                parts["fault_card"].rebuild()
