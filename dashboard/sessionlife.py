"""A served page's Bokeh session, seen from the page: is a browser still attached, and letting the server drop it.

Public Bokeh API only (``Document.session_context.session``: the ``ServerSession``). Not served (a notebook, a test
without a browser) there is no session: a browser counts as attached and there is nothing to drop.
"""

from __future__ import annotations

from typing import Any

import panel as pn


def _server_session() -> Any:
    doc = pn.state.curdoc
    context = doc.session_context if doc is not None else None
    return context.session if context is not None else None


def browser_attached() -> bool:
    """Is a browser still attached to the session being served (always, when not served)?"""
    session = _server_session()
    return session is None or session.connection_count > 0


def expire_closed_session() -> None:
    """Have the server drop the session being served (its document, every model of the page, and what only the page
    holds) at its next check for unused sessions, rather than ``--unused-session-lifetime`` after its tab closed
    (``ServerSession.request_expiration``). For a page that stops for good when its tab closes: a browser that came
    back could not resume it, and meanwhile the closed sessions of the tabs that followed would pile up in memory."""
    session = _server_session()
    if session is not None and session.connection_count == 0:
        session.request_expiration()
