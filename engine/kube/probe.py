"""The daemon's HTTP probe, as the seed's ``LivenessProbe``: ``/healthz`` (liveness) and ``/readyz`` (readiness).

Plain HTTP on its own thread (``deploy/deployment.yaml`` points the kubelet's probes at port 10251).
``/healthz`` and ``/livez`` answer 200 ``ok`` while the check says healthy, else 500 with the reason;
``/readyz`` answers 200 once the check says ready, else 503 with what is missing. Anything else is 404.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Check = Callable[[], tuple[bool, str]]  # (ok, why not)


class HealthProbe:
    """Serves the two checks on ``host:port`` (port 0: any free port, see :attr:`port`) until :meth:`stop`."""

    def __init__(self, host: str, port: int, healthy: Check, ready: Check):
        checks = {"/healthz": (healthy, 500), "/livez": (healthy, 500), "/readyz": (ready, 503)}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802  (http.server's naming)
                path = self.path.split("?", 1)[0]
                if path not in checks:
                    self._reply(404, "not found; allowed: /healthz, /livez, /readyz")
                    return
                check, failure = checks[path]
                ok, why = check()
                self._reply(200 if ok else failure, "ok" if ok else why)

            def _reply(self, code: int, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the kubelet polls every few seconds)
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HealthProbe:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="health-probe", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()
