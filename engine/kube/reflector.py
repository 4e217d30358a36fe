"""The reflectors of the scheduler daemon: each lists one resource, then watches it, and feeds the daemon's main loop.

A :class:`Reflector` runs on its own thread. It lists its resource (nodes, or pods in every namespace) and hands
the list to the main loop as one :class:`Listed` item, then watches from the list's resourceVersion (bookmarks on,
``timeoutSeconds`` per watch) and hands every ADDED / MODIFIED / DELETED event over as a :class:`Watched` item.
A watch that expires (410 Gone) makes it relist; a watch the server ends is renewed from the last version seen;
API errors, timeouts and refused connections back off (:class:`Backoff`, doubling up to ``backoff_max``) and
retry; watch lines that are not JSON events are logged and skipped. :meth:`Reflector.stop` cuts the open watch
from another thread. The objects are handed over raw: the daemon (:mod:`engine.kube.daemon`) parses them.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from engine.kube.binding import Denials

log = logging.getLogger("engine.kube")


class Backoff:
    """Doubling delays from ``initial`` up to ``maximum``; :meth:`reset` after a success."""

    def __init__(self, initial: float, maximum: float):
        self.initial, self.maximum = initial, maximum
        self._next = initial

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._next = self.initial


@dataclass(frozen=True)
class Listed:
    """A reflector listed its resource: every object, at ``version``."""

    kind: str
    items: list
    version: str


@dataclass(frozen=True)
class Watched:
    """A reflector's watch delivered an ADDED / MODIFIED / DELETED event."""

    kind: str
    type: str
    obj: dict


def _shutdown(resp: Any) -> None:
    """Cut a streaming response from another thread (its reader then sees the end of the stream)."""
    try:
        resp.shutdown()
    except Exception:  # noqa: BLE001  (already closed, or not a socket any more)
        pass


class Reflector:
    """Lists one resource, then watches it from the list's version, feeding ``out``; relists after 410 Gone.

    ``options`` is the daemon's :class:`~engine.kube.daemon.DaemonOptions` (its back-off, request and watch timeouts).
    """

    def __init__(self, kind: str, list_call: Any, out: queue.Queue, stop: threading.Event, options: Any, denials: Denials | None = None):
        self.kind = kind
        self._denials = denials or Denials()
        self._list_call = list_call
        self._out = out
        self._stop = stop
        self._options = options
        self._lock = threading.Lock()
        self._resp: Any = None
        self.watch_opened = False
        self.lists = 0  # how many times it listed (1 + relists)
        self.thread = threading.Thread(target=self._run, name=f"reflector-{kind}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Cut the open watch (the caller sets the shared stop event first)."""
        with self._lock:
            resp = self._resp
        if resp is not None:
            _shutdown(resp)

    def _run(self) -> None:
        backoff = Backoff(self._options.backoff_initial, self._options.backoff_max)
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                started = time.monotonic()
                version, seen = self._watch(version)
                if seen or time.monotonic() - started >= 1.0:
                    backoff.reset()
                elif not self._stop.is_set():
                    self._stop.wait(backoff.next())  # a server closing watches at once must not make us spin
            except ApiException as e:
                if self._stop.is_set():
                    break
                if e.status == 410:
                    log.info("%s: watch expired (410 Gone); relisting", self.kind)
                    version = None
                    continue
                delay = backoff.next()
                if e.status == 403:
                    self._denials.report(f"list {self.kind}")
                else:
                    log.warning("%s: API error %s (%s); retrying in %.1f s", self.kind, e.status, (e.reason or "").strip(), delay)
                self._stop.wait(delay)
            except Exception as e:  # noqa: BLE001  (timeouts, refused connections, a stream the client cannot read)
                if self._stop.is_set():
                    break
                delay = backoff.next()
                log.warning("%s: %s: %s; retrying in %.1f s", self.kind, type(e).__name__, e, delay)
                self._stop.wait(delay)

    def _list(self) -> str:
        resp = self._list_call(_preload_content=False, _request_timeout=self._options.request_timeout)
        try:
            doc = json.loads(resp.data)
        finally:
            resp.release_conn()
        if not isinstance(doc, dict) or not isinstance(doc.get("items", []), list):
            raise ValueError(f"the {self.kind} list is not a List object")
        version = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        self.lists += 1
        self._out.put(Listed(self.kind, doc.get("items") or [], version))
        log.debug("%s: listed %d at resourceVersion %s", self.kind, len(doc.get("items") or []), version)
        return version

    def _watch(self, version: str) -> tuple[str, int]:
        """One watch from ``version``; returns the version to resume from and how many events came."""

        # No docstring and no return annotation on purpose: Watch.stream then hands out the raw objects
        # (``raw_object``) instead of deserialising them into models that may reject a malformed one.
        def watch_call(**kwargs):
            resp = self._list_call(**kwargs)
            with self._lock:
                self._resp = resp
                stopping = self._stop.is_set()
            if stopping:
                _shutdown(resp)
            self.watch_opened = True
            return resp

        seen = 0
        timeout = self._options.watch_timeout
        stream = watch.Watch().stream(
            watch_call,
            resource_version=version,
            timeout_seconds=int(timeout),
            allow_watch_bookmarks=True,
            _request_timeout=(self._options.request_timeout, timeout + self._options.request_timeout),
        )
        try:
            for event in stream:
                if self._stop.is_set():
                    break
                if not isinstance(event, dict):
                    log.warning("%s: skipped a watch line that is not a JSON event", self.kind)
                    continue
                kind, obj = event.get("type"), event.get("raw_object")
                meta = obj.get("metadata") if isinstance(obj, dict) else None
                new_version = meta.get("resourceVersion") if isinstance(meta, dict) else None
                if kind == "BOOKMARK":
                    version = str(new_version or version)
                    continue
                if kind not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(obj, dict):
                    log.warning("%s: skipped a watch event of type %r", self.kind, kind)
                    continue
                self._out.put(Watched(self.kind, kind, obj))
                seen += 1
                if new_version:
                    version = str(new_version)
        finally:
            stream.close()
            with self._lock:
                self._resp = None
        return version, seen
