"""A served page's Bokeh session, seen from the page: is a browser still attached, and letting the server drop it.

Public Bokeh API only (``Document.session_context.session``: the ``ServerSession``). Not served (a notebook, a test
without a browser) there is no session: a browser counts as attached and there is nothing to drop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn

#: How often a page not ticking yet looks whether its tab went away (ms).
WATCH_MS = 500


def _server_session(doc: Any = None) -> Any:
    doc = pn.state.curdoc if doc is None else doc
    context = doc.session_context if doc is not None else None
    return context.session if context is not None else None


def browser_attached() -> bool:
    """Is a browser still attached to the session being served (always, when not served)?"""
    session = _server_session()
    return session is None or session.connection_count > 0


def expire_closed_session(doc: Any = None) -> None:
    """Have the server drop the session being served (its document, every model of the page, and what only the page
    holds) at its next check for unused sessions, rather than ``--unused-session-lifetime`` after its tab closed
    (``ServerSession.request_expiration``). For a page that stops for good when its tab closes: a browser that came
    back could not resume it, and meanwhile the closed sessions of the tabs that followed would pile up in memory."""
    session = _server_session(doc)
    if session is not None and session.connection_count == 0:
        session.request_expiration()


def watch_until_started(started: Callable[[], bool], on_closed: Callable[[], None]) -> None:
    """Until ``started()`` (a page ticks from Panel's onload on, and its tick lets it go when its tab closes), look every
    :data:`WATCH_MS` whether a browser attached and went away: then ``on_closed()`` and the session is dropped. A tab
    closed after its socket opened but before the page's onload (a busy browser still rendering the first frame) would
    otherwise keep its page until the server's ``--unused-session-lifetime``. Not served: nothing to watch."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return
    seen = False

    def check() -> None:
        nonlocal seen
        context = doc.session_context
        if started() or context is None or context.destroyed:
            doc.remove_periodic_callback(callback)
            return
        session = context.session
        if session is None:
            return
        if session.connection_count > 0:
            seen = True
        elif seen:  # attached once, gone now
            doc.remove_periodic_callback(callback)
            on_closed()
            expire_closed_session(doc)

    callback = doc.add_periodic_callback(check, WATCH_MS)
