"""The dashboard in a real Chromium (Debian's package, driven by Playwright). Run serially."""

from __future__ import annotations

import time
from urllib.parse import urlparse

import pytest
from panel.io.state import state
from panel.tests.util import serve_component, wait_until
from playwright.sync_api import expect

from dashboard.session import LIVE_SESSIONS
from dashboard.ui import Dashboard

pytestmark = pytest.mark.browser

LIVE_COLUMNS = [
    "queue_length",
    "time_left",
    "band_low",
    "band_high",
    "workers_active",
    "arrival_rate",
    "completion_rate",
    "wait_p95",
    "vm_hours",
]
#: JS: the named ColumnDataSource of the page's Bokeh document.
JS_SOURCE = "name => { const d = window.Bokeh && Bokeh.documents[0]; return d ? d.get_model_by_name(name) : null; }"
JS_EVERY_PLOT_HAS_DATA = """cols => {
  const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;
  const g = n => d.get_model_by_name(n);
  const s = g('samples-live'); if (!s || s.data.time.length < 5) return false;
  if (!cols.every(c => Array.from(s.data[c]).some(Number.isFinite))) return false;
  const img = g('placement-grid'); if (!img || img.data.image[0].length < 2) return false;
  const cells = g('score-cells'); return !!cells && cells.data.weighted.length > 0;
}"""


class Served:
    def __init__(self, page, dashboard, messages, port, requests):
        self.page, self.dashboard, self.messages, self.port, self.requests = page, dashboard, messages, port, requests

    def source(self, name: str) -> dict:
        return self.page.evaluate(
            f"n => {{ const s = ({JS_SOURCE})(n); return s ? Object.fromEntries("
            "Object.entries(s.data).map(([k, v]) => [k, Array.from(v)])) : null; }",
            name,
        )

    def slider_handle(self, css: str):
        return self.page.locator(f".{css} .noUi-handle").first

    def button(self, text: str):
        return self.page.locator(".bk-btn", has_text=text).first

    def kpi(self, key: str):
        return self.page.locator(f"[data-kpi={key}]").first

    def console_errors(self) -> list[str]:
        return [m.text for m in self.messages if m.type == "error"]


@pytest.fixture
def served(page):
    """The dashboard served in-process on a free port and opened in Chromium, streaming."""
    made: list[Dashboard] = []
    requests: list[str] = []
    page.set_viewport_size({"width": 1500, "height": 1100})
    page.on("request", lambda r: requests.append(r.url))

    def app():
        d = Dashboard()
        made.append(d)
        return d

    messages, port = serve_component(page, app, check_unused_sessions_milliseconds=500, unused_session_lifetime_milliseconds=1000)
    page.wait_for_function(f"() => {{ const s = ({JS_SOURCE})('samples-live'); return s && s.data.time.length > 3; }}", timeout=20000)
    yield Served(page, made[0], messages, port, requests)
    for d in made:
        d.stop()
    state.kill_all_servers()


def test_page_loads_offline_without_console_errors_and_every_plot_has_data(served, artifacts):
    page = served.page
    page.wait_for_function(JS_EVERY_PLOT_HAS_DATA, arg=LIVE_COLUMNS, timeout=30000)
    assert not served.console_errors(), served.console_errors()
    hosts = {urlparse(u).hostname for u in served.requests if not u.startswith(("data:", "blob:"))}
    assert hosts <= {"127.0.0.1", "localhost"}, f"requests left the machine: {hosts}"
    events = page.locator(".event-log tbody tr")
    expect(events.first).to_be_attached(timeout=10000)
    page.screenshot(path=str(artifacts / "dashboard.png"), full_page=True)
    page.locator(".bk-tab", has_text="Placement").click()
    page.wait_for_timeout(1500)
    page.screenshot(path=str(artifacts / "dashboard-placement.png"), full_page=True)


def test_lowering_max_workers_caps_active_workers_in_engine_and_on_screen(served):
    page, d = served.page, served.dashboard
    sim = d.session.sim
    # the scale-out above 3 workers lasts ~45 simulated s (t=155..200): slow enough that the clicks below do not miss it
    d.session.speed = 20.0
    # the original only stops creating at the cap: switch seed-exact mode off and both cap extensions on, in the page
    # (paused meanwhile, so that the start-up backlog is still to come on a loaded machine)
    d.session.playing = False
    page.locator(".card-title", has_text="Controller: seed-exact mode").first.click()
    for name in ("seed_exact", "drain_above_cap", "cap_resumes"):
        box = page.locator(f".ctl-live-controller-{name} input[type=checkbox]").first
        expect(box).to_be_enabled(timeout=10000)  # the extensions unlock once seed_exact is off (a server round trip)
        box.click()
    wait_until(lambda: sim.sections["controller"].extensions_on == ["drain_above_cap", "cap_resumes"], page, timeout=5000)
    d.session.playing = True
    # let the start-up backlog scale the workers out past the cap we are about to set
    wait_until(lambda: sim.samples(max(0, sim.sample_count - 1)).workers_active.max() > 3, page, timeout=30000)
    handle = served.slider_handle("ctl-live-autoscaler-MAX_WORKERS")
    handle.focus()
    handle.press("Home")
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    wait_until(lambda: d.session.sim.sections["autoscaler"].MAX_WORKERS == 3, page, timeout=5000)
    changed = sim.events().query("kind == 'param' and command == 'autoscaler.MAX_WORKERS'").time.iloc[-1]
    # live, no reset: the surplus drains (cap_shutdown) within a couple of decisions
    wait_until(lambda: sim.now > changed + 200, page, timeout=30000)
    engine = sim.samples()
    assert engine[engine.time <= changed].workers_active.max() > 3
    after = engine[engine.time >= changed + 60]
    assert len(after) > 10 and after.workers_active.max() <= 3
    assert (sim.events().rule == "cap_shutdown").any()
    on_screen = served.source("samples-live")
    recent = [w for t, w in zip(on_screen["time"], on_screen["workers_active"], strict=True) if t >= changed + 60]
    assert recent and max(recent) <= 3
    assert int(served.kpi("active_workers").inner_text()) <= 3


def test_invalid_band_shows_an_inline_message_and_the_simulation_keeps_running(served):
    page, d = served.page, served.dashboard
    box = page.locator(".ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME input").first
    box.fill("45")  # MIN above MAX (30)
    box.press("Enter")
    alert = page.locator(".alert-live-autoscaler").first
    expect(alert).to_contain_text("MIN_AVG_TIME", timeout=5000)
    assert d.session.sim.sections["autoscaler"].MIN_AVG_TIME == 10.0
    t = d.session.sim.now
    wait_until(lambda: d.session.sim.now > t + 30, page, timeout=5000)
    assert not served.console_errors()


def test_changing_a_priority_weight_changes_the_next_placement_score_heatmap(served):
    page, d = served.page, served.dashboard
    page.locator(".bk-tab", has_text="Placement").click()
    page.wait_for_function(f"() => {{ const s = ({JS_SOURCE})('score-cells'); return s && s.data.weighted.length > 0; }}", timeout=20000)
    before = served.source("score-cells")
    balanced = [w for p, w in zip(before["priority"], before["weighted"], strict=True) if p == "BalancedResource"]
    assert max(balanced) > 0
    handle = served.slider_handle("ctl-live-scheduler-weight_balanced_resource")
    handle.focus()
    handle.press("Home")  # weight 0
    wait_until(lambda: d.session.sim.sections["scheduler"].weight_balanced_resource == 0.0, page, timeout=5000)
    served.button("Reset").click()  # the scale-out from t=0 places workers with the new weight

    def balanced_is_zero():
        now = served.source("score-cells")
        vals = [w for p, w in zip(now["priority"], now["weighted"], strict=True) if p == "BalancedResource"]
        return bool(vals) and max(vals) == 0.0

    wait_until(balanced_is_zero, page, timeout=30000)


def test_crash_master_button_leads_to_a_visible_recovery(served):
    page, d = served.page, served.dashboard
    d.session.speed = 20.0  # slow enough that the outage spans many frames
    master = served.kpi("master_state")
    expect(master).to_have_text("ACTIVE/RUNNING", timeout=15000)
    served.button("Crash the master").click()
    expect(master).not_to_have_text("ACTIVE/RUNNING", timeout=5000)
    expect(page.locator(".kpi-alarm").first).to_be_visible()
    expect(master).to_have_text("ACTIVE/RUNNING", timeout=30000)
    faults = d.session.sim.events()
    assert (faults["command"] == "master_crash").any()
    markers = served.source("faults-live")
    assert markers and len(markers["time"]) >= 1


def test_compare_mode_shows_two_runs(served):
    page = served.page
    page.locator(".bk-tab", has_text="Compare").click()
    page.wait_for_function(
        f"() => ['samples-A', 'samples-B'].every(n => {{ const s = ({JS_SOURCE})(n); return s && s.data.time.length > 10; }})",
        timeout=30000,
    )
    a, b = served.source("samples-A"), served.source("samples-B")
    assert a["time"][:5] == b["time"][:5]
    pair = served.dashboard.compare.pair
    assert pair.b.sim.sections["autoscaler"].MAX_WORKERS == pair.a.sim.sections["autoscaler"].MAX_WORKERS // 2
    expect(page.locator(".kpi-diff").first).to_contain_text("B-A")


def test_a_closed_tab_stops_its_simulation(served):
    d = served.dashboard
    assert d.session in set(LIVE_SESSIONS) and not d.session.stopped
    served.page.close()
    deadline = time.time() + 60
    while time.time() < deadline and not d.session.stopped:
        time.sleep(0.25)
    assert d.session.stopped
    t = d.session.sim.now
    time.sleep(0.5)
    assert d.session.sim.now == t


def test_a_session_driven_in_the_browser_replays_exactly(served):
    import pandas as pd

    from engine import Simulation

    page, d = served.page, served.dashboard
    sim = d.session.sim
    wait_until(lambda: sim.now > 100, page, timeout=20000)
    handle = served.slider_handle("ctl-live-autoscaler-MAX_WORKERS")
    handle.focus()
    handle.press("ArrowLeft")
    handle.press("ArrowLeft")
    wait_until(lambda: sim.sections["autoscaler"].MAX_WORKERS == 18, page, timeout=5000)
    served.button("Crash the master").click()
    wait_until(lambda: (sim.events().command == "master_crash").any(), page, timeout=5000)
    t = sim.now
    wait_until(lambda: sim.now > t + 120, page, timeout=20000)
    served.button("Pause").click()
    page.wait_for_timeout(500)
    rec = sim.recording()
    kinds = [i["kind"] for i in rec["inputs"]]
    assert "params" in kinds and "fault" in kinds
    again = Simulation.replay(rec)  # raises if the samples differ from the recorded digest
    upto = rec["until"]  # compare only what the recording covers, even if a tick slipped in after it
    live_samples, live_events = sim.samples(0), sim.events(0)
    # (simpy leaves events at exactly `until` for the next advance: compare strictly before it)
    pd.testing.assert_frame_equal(
        again.samples()[again.samples().time < upto], live_samples[live_samples.time < upto].reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(again.events(), live_events[live_events.time < upto].reset_index(drop=True))
