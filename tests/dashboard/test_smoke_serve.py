"""End to end: `panel serve dashboard/app.py` as a subprocess, loaded in Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect
from served import GUARD_MS, panel_serve

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser


def test_panel_serve_app_loads_in_browser(page):
    # the flags of `make serve` (a closed tab's session is collected 15 s after it closed), on a free port
    args = [
        "dashboard/app.py",
        "--port",
        "0",
        "--address",
        "127.0.0.1",
        "--check-unused-sessions",
        "1000",
        "--unused-session-lifetime",
        "15000",
    ]
    with panel_serve(args, cwd=ROOT) as (_proc, port, _lines):
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/app", wait_until="domcontentloaded")
        # the simulation streams: the live queue plot (figure ts-queue) gets rows within a few seconds
        page.wait_for_function(
            "() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;"
            " for (const m of d._all_models.values()) if (m.name === 'ts-queue')"
            "   return m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length > 3);"
            " return false; }",
            timeout=GUARD_MS,
        )
        assert page.locator(".app-title").first.inner_text().startswith("scalelab")  # the app's template, not a bare page
        # the open cards' widgets are made right after the first frame (the first document holds the plots first)
        expect(page.locator(".ctl-live-autoscaler-MAX_WORKERS")).to_have_count(1, timeout=GUARD_MS)
        assert not errors, errors


def test_panel_serve_runs_a_notebook_that_ends_in_a_servable(page):
    """`panel serve notebooks/02-placement.ipynb` (nbconvert reads it): the page holds the notebook's plots, no error."""
    args = ["notebooks/02-placement.ipynb", "--port", "0", "--address", "127.0.0.1"]
    with panel_serve(args, cwd=ROOT) as (_proc, port, _lines):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/02-placement", wait_until="domcontentloaded")
        page.wait_for_function(
            "() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;"
            " for (const m of d._all_models.values()) if (m.renderers && m.renderers.length) return true; return false; }",
            timeout=GUARD_MS,  # the notebook runs its simulations when the page is asked for
        )
        assert not errors, errors
