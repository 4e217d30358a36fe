"""Serving the dashboard to the test browser, and waiting on it, in ways that hold on a busy machine.

``panel.tests.util`` (Panel's own test helpers, not a public API) waits fixed short times: 3 s for the server to
answer, 5 s for the document and for the first render, 30 lines of 0.5 s for ``panel serve`` to print its address.
On two cores at load 15 a page takes 10-14 s to render, and three browser tests failed in their set-up. Here every
wait is for a condition, and its guard (:data:`GUARD_MS`) only bounds a hang: it is never a performance bound.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import panel as pn
from guard import GUARD_S

#: How long a wait may last before the test fails as hung (milliseconds): :data:`guard.GUARD_S`.
GUARD_MS = int(GUARD_S * 1000)


def wait_until(
    fn: Callable[[], Any], page: Any = None, timeout: float = GUARD_MS, interval: float = 100, progress: Callable[[], Any] | None = None
) -> None:
    """Call ``fn`` until it returns a true value or None without raising AssertionError; fail after ``timeout`` ms.

    With ``progress`` (e.g. the run's simulated clock) the guard counts from the last change of its value: a wait for
    the run to reach some time fails only when the run stops moving, however slowly a loaded machine ticks it.
    """
    __tracebackhide__ = True
    if page is not None:
        page.wait_for_load_state("networkidle", timeout=GUARD_MS)
    budget = max(timeout, GUARD_MS) / 1000
    deadline = time.monotonic() + budget
    moved = progress() if progress is not None else None
    while True:
        if progress is not None and (now := progress()) != moved:
            moved, deadline = now, time.monotonic() + budget
        failed = f"still not true after {budget:g} s" + (f" with no progress (stuck at {moved!r})" if progress is not None else "")
        try:
            result = fn()
        except AssertionError as error:
            if time.monotonic() > deadline:
                raise AssertionError(f"{failed}: {error}") from error
        else:
            if result is None or result:
                return
            if time.monotonic() > deadline:
                raise AssertionError(failed)
        if page is not None:
            page.wait_for_timeout(interval)
        else:
            time.sleep(interval / 1000)


#: Hosts a served page may load anything from: this machine (``panel serve`` must never fetch from a remote host).
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def remote_requests(urls: list[str]) -> list[str]:
    """The requests that left this machine (data: and blob: URLs stay in the page)."""
    from urllib.parse import urlparse

    return [u for u in urls if not u.startswith(("data:", "blob:")) and urlparse(u).hostname not in LOCAL_HOSTS]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status == 200
    except OSError:
        return False


# Chromium gives a stylesheet that failed to load an empty sheet, so only one still in flight has none.
_STYLESHEETS_SETTLED = """() => {
    const settled = (root) => [...root.querySelectorAll('*')].every((el) => el.shadowRoot == null || (
        [...el.shadowRoot.querySelectorAll('link[rel="stylesheet"]')].every((link) => link.sheet != null)
        && settled(el.shadowRoot)
    ))
    return settled(document)
}"""


def serve_component(page: Any, app: Any, suffix: str = "", wait: bool = True, **kwargs: Any) -> tuple[list, int]:
    """Serve ``app`` (a Panel object or a function building one) on a free loopback port in a thread of this
    process (``pn.serve``; ``pn.state.kill_all_servers()`` stops it), open it in ``page`` and, with ``wait``, wait
    until its websocket is open and its first render is done. Returns the console messages (a live list) and the
    port."""
    messages: list = []
    page.on("console", lambda message: messages.append(message))
    port = free_port()
    pn.serve(
        app,
        port=port,
        address="127.0.0.1",
        websocket_origin=[f"127.0.0.1:{port}", f"localhost:{port}"],
        threaded=True,
        show=False,
        liveness=True,
        **kwargs,
    )
    wait_until(lambda: _answers(f"http://127.0.0.1:{port}/liveness"))
    page.goto(f"http://127.0.0.1:{port}{suffix}", wait_until="domcontentloaded", timeout=GUARD_MS)
    if wait:
        wait_until(lambda: any("Websocket connection 0 is now open" in str(m) for m in messages), page, interval=20)
        page.wait_for_function("document.readyState === 'complete'", timeout=GUARD_MS)
        wait_until(
            lambda: any("items were rendered successfully" in str(m) or "Error rendering Bokeh items" in str(m) for m in messages),
            page,
            interval=20,
        )
        page.wait_for_function(_STYLESHEETS_SETTLED, timeout=GUARD_MS)
    return messages, port


def stop_servers() -> None:
    """Stop every server ``serve_component`` started and wait until their threads have ended (their event loops
    closed). ``pn.state.kill_all_servers()`` only asks: a teardown right after it raced the loop's closing, and what
    it then did from the test's thread behaved differently from run to run. After this, the servers are gone for sure."""
    from panel.io.threads import StoppableThread

    threads = [t for t in threading.enumerate() if isinstance(t, StoppableThread)]
    pn.state.kill_all_servers()
    for t in threads:
        t.join(GUARD_MS / 1000)
        assert not t.is_alive(), f"server thread {t.name} did not end"


class Lines:
    """The lines a process prints, read on a thread so that a wait can give up."""

    def __init__(self, stream: Any) -> None:
        self._queue: Queue[bytes] = Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self._queue.put(line)

    def wait_for(self, regex: re.Pattern[str], timeout_s: float = GUARD_MS / 1000) -> re.Match[str]:
        """The first line (from now on) that ``regex`` matches; fails with what was printed after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.5).decode(errors="replace")
            except Empty:
                continue
            self.seen.append(line)
            if match := regex.search(line):
                return match
        printed = "".join(self.seen[-50:])
        raise AssertionError(f"no line matched {regex.pattern!r} after {timeout_s:g} s; printed:\n{printed}")


APP_ADDRESS = re.compile(r"Bokeh app running at: http://127\.0\.0\.1:(\d+)/")


@contextmanager
def panel_serve(args: list[str], cwd: Path | str | None = None) -> Iterator[tuple[subprocess.Popen, int, Lines]]:
    """``python -m panel serve ARGS`` as a process of its own session; yields it, its port and its printed lines,
    and stops it (its whole process group) afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        lines = Lines(proc.stdout)
        port = int(lines.wait_for(APP_ADDRESS).group(1))
        yield proc, port, lines
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
