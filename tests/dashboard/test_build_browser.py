"""Reset and a scenario switch in a real Chromium: the new run is built off the server's event loop, so the page stays
live meanwhile (the old frame on screen, the header saying so, clicks answered), and the page ends with exactly one run
drawn -- also when two Resets race. The build is held by the test until it has seen the page answer (no fixed waits)."""

from __future__ import annotations

import threading

import pytest
import test_browser as browser  # the served app and its page helpers (tests/dashboard is on sys.path)
from playwright.sync_api import expect
from served import wait_until
from test_recordings_browser import _no_pages_of_earlier_servers  # noqa: F401 - an autouse fixture

from dashboard import session as session_module

pytestmark = pytest.mark.browser
served = browser.served
WAIT = browser.WAIT
#: JS: do figures named ``prefix...`` hold at least one renderer with 2 points or more?
JS_FIGURE_WITH_DATA = """prefix => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;
  for (const m of d._all_models.values()) if (m.name && m.name.startsWith(prefix) && m.renderers && m.renderers.some(
      r => r.data_source && r.data_source.data && (r.data_source.data.time || r.data_source.data.x || []).length >= 2)) return true;
  return false; }"""


class HeldBuilds:
    """Every build of a new run waits (in its worker thread) until :meth:`release`; ``started`` counts those begun."""

    def __init__(self, monkeypatch):
        self.started = 0
        self.gate = threading.Event()
        real = session_module.build_run

        def held(request, superseded=lambda: False):
            self.started += 1
            assert self.gate.wait(browser.WAIT / 1000), "the test never released the build"
            return real(request, superseded)

        monkeypatch.setattr(session_module, "build_run", held)

    def release(self) -> None:
        self.gate.set()


def building_badge(page):
    return page.locator(".run-state [data-building]")


def assert_live_while_building(served, old) -> None:
    """The header says a run is building, the old run is still the one shown, the clock ticks and a click is answered."""
    page, d = served.page, served.dashboard
    expect(building_badge(page).first).to_be_visible(timeout=WAIT)
    ticks = d.loop.ticks
    wait_until(lambda: d.loop.ticks > ticks + 5, page, timeout=WAIT)
    served.tab("Replay")
    served.tab(d.tabset.titles[0])
    assert d.session.sim is old and d.session.building


def test_reset_builds_off_the_loop_and_the_page_then_holds_only_the_new_run(served, monkeypatch):
    page, d = served.page, served.dashboard
    d.session.speed = 600.0
    wait_until(lambda: d.session.sim.now > 900, page, timeout=WAIT)  # an old run well past the new one's first frame
    old, generation = d.session.sim, d.session.generation
    held = HeldBuilds(monkeypatch)
    served.button("Reset").click()
    wait_until(lambda: held.started == 1, page, timeout=WAIT)
    try:
        assert_live_while_building(served, old)
    finally:
        held.release()
    wait_until(lambda: d.session.generation == generation + 1 and not d.session.building, page, timeout=WAIT)
    expect(building_badge(page)).to_have_count(0, timeout=WAIT)
    assert d.session.sim is not old
    interval = d.session.sim.sections["run"].sample_interval
    wait_until(lambda: browser.assert_one_run_in_every_plot(served.plots("ts-"), first=interval, rows=3), page, timeout=WAIT)
    assert not served.server_errors(), served.server_errors()


def test_two_resets_racing_end_with_one_new_run(served, monkeypatch):
    page, d = served.page, served.dashboard
    d.session.speed = 600.0
    wait_until(lambda: d.session.sim.now > 900, page, timeout=WAIT)
    old, generation = d.session.sim, d.session.generation
    held = HeldBuilds(monkeypatch)
    served.button("Reset").click()
    wait_until(lambda: held.started == 1, page, timeout=WAIT)
    first = d.session.pending.ticket
    try:
        served.button("Reset").click()  # the second while the first still builds
        wait_until(lambda: d.session.pending is not None and d.session.pending.ticket > first, page, timeout=WAIT)
    finally:
        held.release()
    wait_until(lambda: not d.session.building and d.session.generation > generation, page, timeout=WAIT)
    interval = d.session.sim.sections["run"].sample_interval
    wait_until(lambda: browser.assert_one_run_in_every_plot(served.plots("ts-"), first=interval, rows=3), page, timeout=WAIT)
    assert d.session.generation == generation + 1  # the first Reset's run never became the live run
    assert d.session.sim is not old
    assert not served.server_errors(), served.server_errors()


def test_a_scenario_switch_builds_off_the_loop_and_the_new_worlds_run_replaces_the_old(served, monkeypatch):
    page, d = served.page, served.dashboard
    wait_until(lambda: d.session.sim.now > 60, page, timeout=WAIT)
    old, generation = d.session.sim, d.session.generation
    held = HeldBuilds(monkeypatch)
    page.locator(".bk-input-group select").first.select_option("openb-fgd")
    wait_until(lambda: held.started == 1, page, timeout=WAIT)
    try:
        assert_live_while_building(served, old)
        assert d.session.world == "vm"  # the old world's tabs and plots stay until the new run is built
    finally:
        held.release()
    wait_until(lambda: d.session.generation == generation + 1 and not d.session.building, page, timeout=WAIT)
    assert d.session.world == "pod" and d.session.sim.scenario.name == "openb-fgd"
    expect(page.locator(".run-state").first).to_contain_text(f"openb-fgd · seed {d.session.seed}", timeout=WAIT)
    expect(building_badge(page)).to_have_count(0, timeout=WAIT)
    expect(page.locator(".bk-tab", has_text="GPU").first).to_be_visible(timeout=WAIT)
    page.wait_for_function(JS_FIGURE_WITH_DATA, arg="pod-", timeout=WAIT)
    assert not served.server_errors(), served.server_errors()
