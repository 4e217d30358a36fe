"""Every world in a real Chromium: each shipped scenario opens from the scenario list and by link, runs with its world's
tabs and KPIs, and a recording of each world uploads and replays with that world's views. Run serially.

Waits are for conditions in the page (never fixed times); the machine may be busy.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from dashboard.session import scenario_names
from engine import WORLDS, Simulation, load_scenario

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

#: Generous: a busy machine (load 10) builds faas-azure's trace in ~10 s; the condition is what is waited for.
WAIT = 120_000
#: JS: do figures named ``prefix...`` hold at least ``n`` of them with a renderer of at least 2 points (a line)?
JS_FIGURES_WITH_DATA = """([prefix, n]) => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false; let k = 0;
  for (const m of d._all_models.values()) {
    if (!m.name || !m.name.startsWith(prefix) || !m.renderers) continue;
    const xs = m.renderers.filter(r => r.data_source && r.data_source.data).map(r => {
      const data = r.data_source.data; const x = data.time || data.x || data.arrived_pct || []; return x.length; });
    if (xs.some(v => v >= 2)) k += 1; }
  return k >= n; }"""
FIRST_TAB = {"vm": "Live", "functions": "Functions", "pod": "GPU"}
FIRST_PREFIX = {"vm": "ts-", "functions": "fn-", "pod": "pod-"}


def world_of(name: str) -> str:
    return load_scenario(name).world


def first_kpi(world: str) -> str:
    return WORLDS[world].ui.kpis[0].key


def sim_time(page) -> str:
    return page.locator("[data-kpi=time]").first.inner_text()


def wait_running(page, world: str) -> None:
    """The world's KPI row is shown and the simulated time moves (the run is live in the page)."""
    expect(page.locator(f"[data-kpi={first_kpi(world)}]").first).to_be_attached(timeout=WAIT)
    expect(page.locator(".bk-tab", has_text=FIRST_TAB[world]).first).to_be_visible(timeout=WAIT)
    before = sim_time(page)
    expect(page.locator("[data-kpi=time]").first).not_to_have_text(before, timeout=WAIT)
    prefix = FIRST_PREFIX[world]
    if prefix:
        try:
            page.wait_for_function(JS_FIGURES_WITH_DATA, arg=[prefix, 1], timeout=WAIT)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / f"failed-{world}.png"), full_page=True)
            raise


def console_errors(messages) -> list[str]:
    """The console's errors, failed resource loads included (with their URL): none is allowed."""
    return [f"{m.text} {m.location.get('url', '')}".strip() for m in messages if m.type == "error"]


def logged_upload(caplog, signature: str) -> list[str]:
    """Log records that could hold an upload: its signature, or a record far longer than any line the server writes
    (the log's total length grows with the ticks a loaded machine makes, so it is not the measure)."""
    return [r.getMessage()[:80] for r in caplog.records if signature in r.getMessage() or len(r.getMessage()) > 5_000]


def no_server_errors(caplog) -> list[str]:
    return [r.getMessage()[:300] for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.timeout(1800)  # 14 scenarios, each opened and run: at load 10 the suite's 600 s ended it at the 12th
def test_every_shipped_scenario_opens_from_the_list_and_runs_with_its_worlds_tabs(served, artifacts):
    page, port, made, caplog, messages = served
    wait_running(page, "vm")
    select = page.locator("select").first
    names = scenario_names()
    assert {"default", "edge", "faas-basic", "faas-edge", "faas-azure", "openb", "openb-fgd"} <= set(names)
    for name in names:
        world = world_of(name)
        print("opening", name, flush=True)
        select.select_option(name)
        expect(page.locator(".run-state").first).to_contain_text(name, timeout=WAIT)
        wait_running(page, world)
        assert made[0].session.scenario == name and made[0].session.world == world
        if name in ("default", "faas-basic", "openb-fgd"):
            page.screenshot(path=str(artifacts / f"world-{name}.png"))
    assert no_server_errors(caplog) == []
    assert console_errors(messages) == []  # and the fixture: no request left this machine (no CDN stylesheet)


def test_a_scenario_of_each_world_opens_by_link(served):
    page, port, made, caplog, messages = served
    for name in ("edge", "faas-edge", "openb", "openb-fgd"):
        world = world_of(name)
        page.goto(f"http://127.0.0.1:{port}/?scenario={name}&tab={FIRST_TAB[world]}", wait_until="domcontentloaded", timeout=WAIT)
        expect(page.locator(".run-state").first).to_contain_text(name, timeout=WAIT)
        wait_running(page, world)
        assert made[-1].session.scenario == name and made[-1].active_tab == FIRST_TAB[world]
        assert re.search(rf"scenario={name}\b", page.url)
    assert no_server_errors(caplog) == []
    assert console_errors(messages) == []


@pytest.mark.parametrize("name", ["default", "faas-basic", "openb-fgd"])
def test_a_recording_of_each_world_uploads_and_replays_with_its_worlds_views(served, tmp_path, name):
    page, port, made, caplog, messages = served
    wait_running(page, "vm")
    sim = Simulation(name)
    sim.advance(max(600.0, 8 * sim.sections["run"].sample_interval))
    path = sim.record(tmp_path / f"{name}.scalelab")
    page.locator(".rec-load input[type=file]").first.set_input_files(str(path))
    expect(page.locator(".bk-tab.bk-active", has_text="Replay").first).to_be_visible(timeout=WAIT)
    expect(page.locator(".replay-info").first).to_contain_text(name, timeout=WAIT)
    n = {"vm": 6, "functions": 5, "pod": 4}[sim.scenario.world]
    page.wait_for_function(JS_FIGURES_WITH_DATA, arg=["rp-", n], timeout=WAIT)
    assert not made[0].ctx.message.visible, made[0].ctx.message.object
    assert no_server_errors(caplog) == []
    assert console_errors(messages) == []
    assert logged_upload(caplog, "PK\\x03\\x04") == []  # nothing of the upload's bytes in the server log


def test_an_upload_that_cannot_be_shown_gets_one_line_in_the_page_and_nothing_in_the_log(served, tmp_path):
    page, port, made, caplog, _ = served
    wait_running(page, "vm")
    bad = tmp_path / "broken.scalelab"
    bad.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 400)
    page.locator(".rec-load input[type=file]").first.set_input_files(str(bad))
    expect(page.locator(".app-message").first).to_contain_text("broken.scalelab", timeout=WAIT)
    assert no_server_errors(caplog) == []
    assert logged_upload(caplog, "\\x03\\x04") == []


def test_stopping_a_served_dashboard_from_another_thread_clears_its_page(served):
    page, port, made, caplog, messages = served
    wait_running(page, "vm")
    d = made[0]
    d.stop()  # the test's thread, outside the document's lock
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ts-queue') === null", timeout=WAIT)
    assert d.session.sim is None and no_server_errors(caplog) == []
    assert console_errors(messages) == []
