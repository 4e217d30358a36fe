"""The server log, kept readable: a closed browser tab's last messages are one info line, not a traceback.

Three races of a closing tab, both harmless (the session is being closed, nothing is lost):

* the server writes the tick's update while the tab closes: Tornado's write fails with ``WebSocketClosedError`` in a
  task no one awaits, and asyncio logs it as an error with a traceback;
* the tab's last messages (a resize, the URL) are read just before its socket closes and handled just after Bokeh
  detached the session from the connection: Bokeh's protocol handler logs "error handling message" with the whole
  message (which, for an upload, would be its bytes) and an ``AssertionError`` raised by ``ServerConnection.session``;
* the tab's session is released (the page asks for it when it closes) before its socket's close is handled: Bokeh's
  websocket handler asks the detached connection for its session in ``on_close`` and Tornado logs "Uncaught
  exception GET /ws" with the same ``AssertionError`` (seen at load ~10, when the close comes seconds late).

:func:`quiet_closed_sockets` turns each of those records into one INFO line without the message's content.
"""

from __future__ import annotations

import logging
import traceback

MESSAGE = "a closed browser tab missed its last update (its session is closing)"
LATE_MESSAGE = "a closed browser tab's last message came after its session was detached; dropped"
LATE_CLOSE = "a closed browser tab's socket closed after its session was released; nothing left to close"


def _raised_by_a_detached_connection(exc: BaseException | None) -> bool:
    """An ``AssertionError`` from Bokeh's ``ServerConnection.session`` (the connection's session is gone)."""
    if not isinstance(exc, AssertionError) or exc.__traceback__ is None:
        return False
    last = traceback.extract_tb(exc.__traceback__)[-1]
    return last.name == "session" and last.filename.replace("\\", "/").endswith("bokeh/server/connection.py")


def _as_one_info_line(record: logging.LogRecord, text: str) -> None:
    record.msg, record.args, record.exc_info, record.exc_text = text, (), None, None
    record.levelno, record.levelname = logging.INFO, "INFO"


class ClosedSocketFilter(logging.Filter):
    """Rewrite asyncio's "Task exception was never retrieved ... WebSocketClosedError" records as one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if type(exc).__name__ == "WebSocketClosedError" or "WebSocketClosedError" in str(record.msg):
            _as_one_info_line(record, MESSAGE)
        return True


class LateMessageFilter(logging.Filter):
    """Rewrite Bokeh's "error handling message" records of a connection whose session is detached as one INFO line."""

    text = LATE_MESSAGE

    def filter(self, record: logging.LogRecord) -> bool:
        if _raised_by_a_detached_connection(record.exc_info[1] if record.exc_info else None):
            _as_one_info_line(record, self.text)
        return True


class LateCloseFilter(LateMessageFilter):
    """Rewrite Tornado's "Uncaught exception GET /ws" records of a socket closed after its session was released."""

    text = LATE_CLOSE


FILTERS = {
    "asyncio": ClosedSocketFilter,
    "bokeh.server.protocol_handler": LateMessageFilter,
    "tornado.application": LateCloseFilter,
}


def quiet_closed_sockets() -> None:
    """Install the filters on asyncio's, Bokeh's protocol handler's and Tornado's loggers (once per process)."""
    for name, kind in FILTERS.items():
        logger = logging.getLogger(name)
        if not any(type(f) is kind for f in logger.filters):
            logger.addFilter(kind())
