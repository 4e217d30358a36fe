"""Work that waits for the page's next turn, so that what a change shows first reaches the browser first.

A served page's event-loop callback sends its model changes when it ends. Work handed to :func:`after_this_turn` runs in
a later callback: the browser builds what was sent (a new world's first plots) while the server makes the rest (the
sidebar's cards, the plots further down). On a page still loading it waits for Panel's onload (the first frame);
without a server (a notebook, a test) it runs at once. Only public Panel API.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


def after_this_turn(callback: Callable[[], None]) -> None:
    """Run ``callback`` once the changes made in this turn of the event loop are on their way to the page (see above)."""
    doc = pn.state.curdoc
    if doc is not None and doc.session_context is not None and pn.state.loaded:
        pn.state.execute(callback, schedule=True)  # Bokeh's next-tick callback: the document locked, this turn's patch sent
    else:
        pn.state.onload(callback)
