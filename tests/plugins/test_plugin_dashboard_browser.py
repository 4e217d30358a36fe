"""A plugin's control set in the dashboard, in a real Chromium: ``panel serve dashboard/app.py`` with the example plugin
package installed (on its path), the plugin policy picked in the sidebar, its generated control set, and the run
follows it. Run serially (browser tests); waits are for conditions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
WAIT = 120_000


@pytest.fixture
def served_with_plugins(plugin_site):
    """``panel serve dashboard/app.py`` with the example plugins importable (their entry points found); yields its port."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_site), str(ROOT)]), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "panel", "serve", "dashboard/app.py", "--port", "0", "--address", "127.0.0.1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if m := re.search(r"Bokeh app running at: http://127\.0\.0\.1:(\d+)/", line):
                yield int(m.group(1))
                break
        else:
            pytest.fail("panel serve did not start")
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_plugin_policy_is_picked_in_the_sidebar_and_its_generated_control_drives_the_run(served_with_plugins, page):
    page.set_viewport_size({"width": 1600, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"http://127.0.0.1:{served_with_plugins}/app", wait_until="domcontentloaded", timeout=WAIT)
    workers = page.locator("[data-kpi=active_workers]").first
    expect(workers).to_be_attached(timeout=WAIT)
    page.locator(".ctl-live-policy-kind select").first.select_option("example_fixed")
    replicas = page.locator(".ctl-live-example_fixed-replicas input").first  # the control generated from its section
    expect(replicas).to_be_visible(timeout=WAIT)
    expect(workers).to_have_text("3", timeout=WAIT)  # the plugin decides: its default, 3 workers
    replicas.fill("7")
    replicas.press("Enter")
    expect(workers).to_have_text("7", timeout=WAIT)  # and follows its control
    assert not errors, errors
