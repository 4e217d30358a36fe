"""Long work (a branch's re-simulation, building a compare pair) off the server's event loop.

:func:`off_loop` runs ``work`` in a worker thread and hands its result to ``done`` back on the page's event loop
(``pn.state.execute(..., schedule=True)``: Bokeh's ``add_next_tick_callback`` with the session's document current and
its lock held), so the page keeps ticking and answering clicks meanwhile. Not served (a notebook, a test without a
browser) it runs at once. Only public Panel API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import panel as pn

#: One worker for the whole process: long work queues behind long work instead of taking both cores from the ticks.
EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scalelab-offloop")
_lock = threading.Lock()
_waiting = 0  # jobs handed to off_loop and not finished (queued or running)


def waiting() -> int:
    """Jobs of :func:`off_loop` queued or running now (what a build waits behind: the worker is shared by all pages)."""
    return _waiting


def _count(step: int) -> None:
    global _waiting
    with _lock:
        _waiting += step


def submit(job: Callable[[], None]) -> None:
    """Run ``job`` in the shared worker (counted by :func:`waiting`)."""

    def counted() -> None:
        try:
            job()
        finally:
            _count(-1)

    _count(1)
    EXECUTOR.submit(counted)


def served_doc() -> Any:
    """The document of the session being served, or None (a notebook, a test)."""
    doc = pn.state.curdoc
    return doc if doc is not None and doc.session_context is not None else None


def off_loop(work: Callable[[], Any], done: Callable[[Any], None], failed: Callable[[BaseException], None]) -> bool:
    """``done(work())`` (or ``failed(error)``), ``work`` in a thread when served; True if it went off the loop."""
    doc = served_doc()
    if doc is None:
        try:
            result = work()
        except Exception as err:  # noqa: BLE001 - handed to failed(), as when served
            failed(err)
            return False
        done(result)
        return False

    def run() -> None:
        pn.state.curdoc = doc  # this thread's context: execute() schedules on that session's document
        try:
            try:
                result = work()
            except Exception as err:  # noqa: BLE001 - handed to failed() on the event loop
                pn.state.execute(lambda error=err: failed(error), schedule=True)
                return
            pn.state.execute(lambda: done(result), schedule=True)
        finally:
            pn.state.curdoc = None  # the worker outlives the job: it must not keep a closed tab's document (its whole page)

    submit(run)
    return True
