"""The server log, kept readable: a closed browser tab's last, undeliverable update is one info line, not a traceback.

When a tab closes while the server writes the tick's update to it, Tornado's write fails with
``WebSocketClosedError`` in a task no one awaits, and asyncio logs it as an error with a traceback. Nothing is
lost (the session is being closed), so :func:`quiet_closed_sockets` turns that record into one INFO line.
"""

from __future__ import annotations

import logging

MESSAGE = "a closed browser tab missed its last update (its session is closing)"


class ClosedSocketFilter(logging.Filter):
    """Rewrite asyncio's "Task exception was never retrieved ... WebSocketClosedError" records as one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if type(exc).__name__ == "WebSocketClosedError" or "WebSocketClosedError" in str(record.msg):
            record.msg, record.args, record.exc_info, record.exc_text = MESSAGE, (), None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_closed_sockets() -> None:
    """Install the filter on asyncio's logger (once per process)."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, ClosedSocketFilter) for f in logger.filters):
        logger.addFilter(ClosedSocketFilter())
