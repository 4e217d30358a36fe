"""End to end: `panel serve dashboard/app.py` as a subprocess, loaded in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from panel.tests.util import run_panel_serve, wait_for_regex

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser


def test_panel_serve_app_loads_in_browser(page):
    # the flags of `make serve` (closed tabs are cleaned up within a minute), on a free port
    args = [
        "dashboard/app.py",
        "--port",
        "0",
        "--address",
        "127.0.0.1",
        "--check-unused-sessions",
        "10000",
        "--unused-session-lifetime",
        "30000",
    ]
    with run_panel_serve(args, cwd=ROOT) as proc:
        port = int(wait_for_regex(proc.stdout, re.compile(r"Bokeh app running at: http://127\.0\.0\.1:(\d+)/"))[0])
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/app", wait_until="domcontentloaded")
        # the simulation streams: the live queue source gets rows within a few seconds
        page.wait_for_function(
            "() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;"
            " const s = d.get_model_by_name('samples-live'); return s && s.data.time.length > 3; }",
            timeout=30000,
        )
        assert page.locator(".ctl-live-autoscaler-MAX_WORKERS").count() == 1
        assert not errors, errors
