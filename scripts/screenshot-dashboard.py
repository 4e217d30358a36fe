"""Make docs/_static/dashboard.png: the dashboard served as by `make serve`, in Debian's Chromium, once its plots are full.

    .venv/bin/python scripts/screenshot-dashboard.py [--out docs/_static/dashboard.png] [--samples 240]

Starts `panel serve dashboard/app.py` on a free local port, opens the default scenario at speed 60 in Chromium
(Playwright, /usr/bin/chromium: never a downloaded browser), waits until every time plot holds at least
``--samples`` samples, writes the screenshot and stops the server. The README and the docs' landing page show it.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TIME_PLOTS = ["ts-queue", "ts-time_left", "ts-workers", "ts-rates", "ts-waits", "ts-vm_hours"]
#: JS: every named time plot has at least ``n`` samples.
JS_PLOTS_HOLD = """([names, n]) => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false; const seen = {};
  for (const m of d._all_models.values()) if (names.includes(m.name))
    seen[m.name] = m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length >= n);
  return names.every(k => seen[k]); }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_listening(port: int, server: subprocess.Popen) -> None:
    """Return once the server accepts connections (it takes a few seconds to start); fail if it exits."""
    while server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"panel serve exited with code {server.returncode}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "_static" / "dashboard.png")
    parser.add_argument("--samples", type=int, default=240, help="samples every time plot holds before the shot")
    args = parser.parse_args()
    port = free_port()
    origin = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "dashboard/app.py", "--address", "127.0.0.1", "--port", str(port)]
        + ["--allow-websocket-origin", origin],
        cwd=ROOT,
    )
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            wait_for_listening(port, server)
            page.goto(f"http://{origin}/app?scenario=default&seed=1&speed=60", timeout=300_000)
            page.wait_for_function(JS_PLOTS_HOLD, arg=[TIME_PLOTS, args.samples], timeout=300_000)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
