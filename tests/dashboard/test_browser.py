"""The dashboard in a real Chromium (Debian's package, driven by Playwright). Run serially.

The served page is the app's own (``Dashboard().page()``: the template, its header and sidebar). Plots are found
in the page's Bokeh document by figure name (``ts-queue`` ... for the live tab, ``cmp-*`` for compare,
``placement-heatmap``, ``score-heatmap``).
"""

from __future__ import annotations

import logging
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect
from served import serve_component, stop_servers, wait_until

from dashboard.ui import Dashboard
from dashboard.views import WINDOW

pytestmark = pytest.mark.browser

#: Generous: the condition is what is waited for; a busy machine (two CPU hogs beside the suite) may take long.
WAIT = 120_000
TIME_PLOTS = ["ts-queue", "ts-time_left", "ts-workers", "ts-rates", "ts-waits", "ts-vm_hours"]
#: JS: every renderer of the figures whose name starts with ``prefix``: glyph type and its x values.
JS_PLOTS = """prefix => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return null; const out = {};
  for (const m of d._all_models.values()) {
    if (!m.name || !m.name.startsWith(prefix) || !m.renderers) continue;
    out[m.name] = m.renderers.filter(r => r.data_source && r.data_source.data).map(r => {
      const data = r.data_source.data, x = data.time || data.x || [];
      return {glyph: r.glyph.type, fault: 'fault' in data || r.glyph.type === 'VSpan', x: Array.from(x)}; });
  }
  return out; }"""
#: JS: per figure named ``prefix...``: its x range's end and the newest time of its curves (not its fault markers).
JS_ENDS = """prefix => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return {}; const out = {};
  for (const m of d._all_models.values()) {
    if (!m.name || !m.name.startsWith(prefix) || !m.renderers || !m.x_range) continue;
    const ends = [m.x_range.end];
    for (const r of m.renderers) { const data = r.data_source && r.data_source.data;
      if (data && data.time && data.time.length && !('fault' in data)) ends.push(data.time[data.time.length - 1]); }
    out[m.name] = ends; }
  return out; }"""
#: JS: the title of a named figure.
JS_TITLE = """name => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return null;
  for (const m of d._all_models.values()) if (m.name === name) return m.title ? m.title.text : ''; return null; }"""
JS_EVERY_PLOT_HAS_DATA = """names => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false; const seen = {};
  for (const m of d._all_models.values()) if (names.includes(m.name))
    seen[m.name] = m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length > 2);
  return names.every(n => seen[n]); }"""


class Served:
    def __init__(self, page, made, messages, port, requests, errors):
        self.page, self.made, self.messages, self.port, self.requests, self.errors = page, made, messages, port, requests, errors
        self.dashboard = made[0] if made else None

    def plots(self, prefix: str = "ts-") -> dict:
        return self.page.evaluate(JS_PLOTS, prefix)

    def title(self, name: str) -> str | None:
        return self.page.evaluate(JS_TITLE, name)

    def wait_for_data(self, names=TIME_PLOTS, timeout=WAIT) -> None:
        self.page.wait_for_function(JS_EVERY_PLOT_HAS_DATA, arg=list(names), timeout=timeout)

    def entry(self, css: str):
        return self.page.locator(f".{css} input").first

    def button(self, text: str):
        return self.page.locator(".bk-btn", has_text=text).first

    def tab(self, title: str):
        self.page.locator(".bk-tab", has_text=title).first.click()
        wait_until(lambda: self.dashboard.active_tab == title, self.page, timeout=WAIT)

    def kpi(self, key: str):
        return self.page.locator(f"[data-kpi={key}]").first

    def console_errors(self) -> list[str]:
        return [m.text for m in self.messages if m.type == "error"]

    def server_errors(self) -> list[str]:
        return [r.getMessage() for r in self.errors.records if r.levelno >= logging.ERROR]


def assert_one_run_in_every_plot(plots: dict, first: float, rows: int = 0) -> bool:
    """Every plot's x values strictly increase and start at ``first`` (no second run drawn over, no history twice), and
    each plot holds at least ``rows`` points."""
    assert plots, "no plots found"
    for name, renderers in plots.items():
        for r in renderers:
            if r["fault"] or not r["x"]:
                continue
            x = r["x"][: len(r["x"]) // 2] if r["glyph"] == "Patch" else r["x"]  # an area runs forward, then back
            assert all(b > a for a, b in zip(x, x[1:], strict=False)), f"{name} {r['glyph']}: x not strictly increasing"
            # a run longer than the window has rolled its start out (a fast run on a slow page gets there first)
            assert x[0] == pytest.approx(first) or len(x) >= WINDOW, f"{name} {r['glyph']}: starts at {x[0]}, not {first}"
        assert max((len(r["x"]) for r in renderers if not r["fault"]), default=0) >= rows, f"{name}: fewer than {rows} points"
    return True


@pytest.fixture
def served(page, caplog):
    """The app's page (template, header, sidebar, tabs) served in-process on a free port, opened in Chromium, streaming."""
    made: list[Dashboard] = []
    requests: list[str] = []
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.on("request", lambda r: requests.append(r.url))
    caplog.set_level(logging.WARNING)

    def app():
        d = Dashboard()
        made.append(d)
        return d.page()

    # the flags of `make serve`: a session whose browser never connects is dropped after 60 s
    messages, port = serve_component(page, app, check_unused_sessions_milliseconds=1000, unused_session_lifetime_milliseconds=60000)
    served = Served(page, made, messages, port, requests, caplog)
    served.wait_for_data(["ts-queue"])
    assert len(made) == 1, f"{len(made)} sessions were made for one page (a dropped session was remade)"
    served.dashboard = made[0]
    yield served
    stop_servers()  # first: no tick can then run while the sessions are stopped from this thread
    for d in made:
        d.stop(clear_plots=False)


def test_the_page_loads_offline_without_errors_every_plot_fills_and_the_three_views_are_screenshot(served, artifacts):
    page, d = served.page, served.dashboard
    served.wait_for_data(TIME_PLOTS)
    expect(page.locator(".run-state .state").first).to_have_text("Running")
    expect(page.locator(".app-title").first).to_contain_text("scalelab")
    expect(page.locator(".event-log tbody tr").first).to_be_attached(timeout=WAIT)
    for width, height in ((1600, 1000), (1024, 768)):
        page.set_viewport_size({"width": width, "height": height})
        served.tab("Live")
        served.wait_for_data(TIME_PLOTS)
        page.screenshot(path=str(artifacts / f"first-view-{width}x{height}.png"))
        served.tab("Placement")
        page.wait_for_function(f"() => ({JS_TITLE})('score-heatmap')", timeout=WAIT)
        page.screenshot(path=str(artifacts / f"placement-{width}x{height}.png"), full_page=True)
        served.tab("Compare")
        served.wait_for_data(["cmp-queue", "cmp-workers"])
        page.screenshot(path=str(artifacts / f"compare-{width}x{height}.png"), full_page=True)
    assert d.active_tab == "Compare"
    assert not served.console_errors(), served.console_errors()
    assert not served.server_errors(), served.server_errors()
    hosts = {urlparse(u).hostname for u in served.requests if not u.startswith(("data:", "blob:"))}
    assert hosts <= {"127.0.0.1", "localhost"}, f"requests left the machine: {hosts}"


def test_at_speed_3600_typed_values_and_reset_are_applied_and_reset_draws_only_the_new_run(served):
    # how fast (the 0.5 s goal) is measured by benchmarks/dashboard_latency.py, not asserted here: a shared machine's
    # load decides it; this test asserts that every change is applied (within 5 s) and nothing is lost

    page, d = served.page, served.dashboard
    speed = page.locator(".ctl-run-speed .noUi-handle").first
    speed.focus()
    speed.press("End")  # the top stop: 3600 simulated s per wall s
    wait_until(lambda: d.session.speed == 3600.0, page, timeout=WAIT)
    expect(page.locator(".run-state").first).to_contain_text("3,600")
    wait_until(lambda: d.session.sim.now > 1500, page, timeout=WAIT)  # a fast run: thousands of simulated seconds
    box = served.entry("ctl-live-autoscaler-MAX_WORKERS")
    for value in (12, 13, 14, 13, 14, 12):
        box.fill(str(value))
        box.press("Enter")
        wait_until(lambda v=value: d.session.sim.sections["autoscaler"].MAX_WORKERS == v, page, timeout=WAIT, interval=10)
        expect(box).to_have_value(str(value))
    generation = d.session.generation
    served.button("Reset").click()
    wait_until(lambda: d.session.generation == generation + 1, page, timeout=WAIT, interval=10)
    assert d.session.sim.sections["autoscaler"].MAX_WORKERS == 12  # a reset keeps the changes made
    # the new run streams in: every plot holds it alone (waited for, however busy the machine)
    interval = d.session.sim.sections["run"].sample_interval
    wait_until(lambda: assert_one_run_in_every_plot(served.plots("ts-"), first=interval, rows=3), page, timeout=WAIT)
    assert not served.server_errors(), served.server_errors()
    assert not served.console_errors(), served.console_errors()


def test_replaying_an_uploaded_recording_and_switching_scenario_each_draw_one_run(served, tmp_path):
    page, d = served.page, served.dashboard
    d.session.speed = 600.0
    wait_until(lambda: d.session.sim.now > 600, page, timeout=WAIT)
    served.button("Crash the master").click()
    wait_until(lambda: (d.session.sim.events().command == "master_crash").any(), page, timeout=WAIT)
    wait_until(lambda: d.session.sim.now > 900, page, timeout=WAIT)
    recording = tmp_path / "run.json"
    recording.write_text(d._recording_file().getvalue())
    served.button("Pause").click()
    page.locator("input[type=file]").first.set_input_files(str(recording))
    wait_until(lambda: d.session.sim.now >= 900 and not d.session.playing, page, timeout=WAIT)

    def replayed_once() -> None:  # the recorded history once, its master crash marked (no tail of the old run)
        plots = served.plots("ts-")
        assert_one_run_in_every_plot(plots, first=5.0)
        queue = next(r for r in plots["ts-queue"] if not r["fault"])
        assert len(queue["x"]) == d.session.sim.sample_count
        assert any(r["glyph"] == "VSpan" and r["x"] for r in plots["ts-queue"])

    wait_until(replayed_once, page, timeout=WAIT)
    page.locator(".bk-input-group select").first.select_option("edge")
    # the new run is built off the event loop: the old one is shown until then
    wait_until(lambda: d.session.scenario == "edge" and d.session.sim.scenario.name == "edge", page, timeout=WAIT)
    served.button("Play").click()
    wait_until(lambda: d.session.sim.now > 60, page, timeout=WAIT)
    assert d.session.seed == 2  # edge.yaml's own seed
    expect(page.locator(".run-state").first).to_contain_text("edge · seed 2")
    wait_until(lambda: assert_one_run_in_every_plot(served.plots("ts-"), first=5.0, rows=3), page, timeout=WAIT)
    assert not served.server_errors(), served.server_errors()


def test_a_refused_value_shows_its_message_quoting_what_was_typed_and_the_box_returns(served):
    page, d = served.page, served.dashboard
    box = served.entry("ctl-live-autoscaler-MAX_WORKERS")
    message = page.locator(".msg-ctl-live-autoscaler-MAX_WORKERS").first
    for typed in ("5000", "0"):
        box.fill(typed)
        box.press("Enter")
        expect(message).to_contain_text(f"{typed} is out of range; allowed: an integer in [1, 1000]", timeout=WAIT)
        expect(box).to_have_value("20", timeout=WAIT)
    assert d.session.sim.sections["autoscaler"].MAX_WORKERS == 20
    low = served.entry("ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME .range-low")
    low.fill("45")  # MIN above MAX (30)
    low.press("Enter")
    band = page.locator(".msg-ctl-live-autoscaler-MIN_AVG_TIME--MAX_AVG_TIME").first
    expect(band).to_contain_text("45 >= 30", timeout=WAIT)
    expect(low).to_have_value("10", timeout=WAIT)
    assert d.session.sim.sections["autoscaler"].MIN_AVG_TIME == 10.0
    t = d.session.sim.now
    wait_until(lambda: d.session.sim.now > t + 30, page, timeout=WAIT)  # it keeps running on the values in force
    box.fill("7")
    box.press("Enter")
    wait_until(lambda: d.session.sim.sections["autoscaler"].MAX_WORKERS == 7, page, timeout=WAIT)
    expect(message).to_be_hidden()
    # the link follows (the server sets the page's URL in a message of its own, after the engine has the value)
    page.wait_for_function("() => window.location.search.includes('autoscaler.MAX_WORKERS=7')", timeout=WAIT)
    page.locator(".ctl-live-autoscaler-MAX_WORKERS .bk-description").first.hover()  # the tooltip names the parameter
    expect(page.get_by_text("[autoscaler.MAX_WORKERS; an integer in [1, 1000]]", exact=False).first).to_be_visible(timeout=WAIT)
    assert not served.console_errors()


def test_a_weight_change_shows_at_once_as_a_preview_of_the_latest_placement(served):
    page, d = served.page, served.dashboard
    served.tab("Placement")
    page.wait_for_function(f"() => (({JS_TITLE})('score-heatmap') || '').startsWith('Scores of the placement')", timeout=WAIT)
    before = served.title("score-heatmap")
    d.session.playing = False  # no new placement can come and replace the preview
    box = served.entry("ctl-live-scheduler-weight_latency_aware_image_locality")
    box.fill("0")
    box.press("Enter")
    # at once, with no new placement (the run is paused); its latency is the benchmark's, not asserted here
    page.wait_for_function(f"() => (({JS_TITLE})('score-heatmap') || '').startsWith('PREVIEW')", timeout=WAIT, polling=20)
    expect(page.locator(".score-status").first).to_contain_text("apply from the next placement")
    chose = before.split("chose ")[1].split(";")[0]
    assert f"(chose {chose})" in served.title("score-heatmap")
    page.locator(".ctl-live-scheduler-mode select").first.select_option("kube")
    expect(page.locator(".score-status").first).to_contain_text("re-normalises", timeout=WAIT)
    assert d.session.sim.sections["scheduler"].mode == "kube"


def test_compare_runs_follow_play_pause_and_speed_and_the_live_run_waits(served):
    page, d = served.page, served.dashboard
    served.tab("Compare")
    served.wait_for_data(["cmp-queue"])
    live_at = d.session.sim.now
    expect(page.locator(".run-state .state").first).to_have_text("Compare A/B running")
    expect(page.locator(".run-state").first).to_contain_text("live run waits")
    pair = d.compare.pair
    t = pair.a.sim.now
    wait_until(lambda: pair.a.sim.now > t + 20, page, timeout=WAIT)
    assert d.session.sim.now == live_at  # the live run waits while Compare runs
    served.button("Pause").click()
    expect(page.locator(".run-state .state").first).to_have_text("Compare A/B paused")
    wait_until(lambda: not pair.a.playing, page, timeout=WAIT)
    paused_at = pair.a.sim.now
    ticks = d.loop.ticks
    wait_until(lambda: d.loop.ticks > ticks + 5, page, timeout=WAIT)  # ticks go on; the paused runs do not
    assert pair.a.sim.now == paused_at == pair.b.sim.now
    served.button("Step").click()
    wait_until(lambda: pair.a.sim.now == paused_at + 5.0 == pair.b.sim.now, page, timeout=WAIT)
    served.button("Play").click()
    # A and B advance one after the other in the server's tick, so this thread can read them between the two:
    # in step means equal at some tick boundary, not at whatever instant this thread looks
    wait_until(lambda: pair.a.sim.now > paused_at + 30 and pair.a.sim.now == pair.b.sim.now, page, timeout=WAIT)
    expect(page.locator(".kpi-diff").first).to_contain_text("B-A")
    served.tab("Live")
    wait_until(lambda: d.session.sim.now > live_at + 60, page, timeout=WAIT)  # back: the live run goes on


def test_a_closed_tab_stops_and_releases_its_simulation_within_seconds(served):
    d = served.dashboard
    assert d.session.sim is not None and d.views.streams["live"].rows() > 0
    served.page.close()
    wait_until(lambda: d.session.sim is None, timeout=WAIT)  # the next tick sees no browser and lets go
    assert d.session.stopped and d.session.feed is None  # the run and its tables are let go; its document goes with the session


def test_crashing_the_master_leads_to_a_visible_recovery_marked_on_every_time_plot(served):
    page, d = served.page, served.dashboard
    d.session.speed = 20.0  # slow enough that the outage spans many frames
    master = served.kpi("master_state")
    expect(master).to_have_text("ACTIVE/RUNNING", timeout=WAIT)
    served.button("Crash the master").click()
    # one condition, the master's KPI in alarm (not running): two checks in a row could straddle the end of the outage
    expect(page.locator(".kpi-alarm[data-kpi=master_state]").first).to_be_visible(timeout=WAIT)
    expect(master).to_have_text("ACTIVE/RUNNING", timeout=WAIT)
    assert (d.session.sim.events()["command"] == "master_crash").any()

    def every_plot_marks_it() -> None:  # the secondary plots (rates, waits, VM-hours) follow within a few drawing rounds
        plots = served.plots("ts-")
        for name in TIME_PLOTS:
            assert any(r["glyph"] == "VSpan" and len(r["x"]) >= 1 for r in plots[name]), f"{name} has no fault marker"

    wait_until(every_plot_marks_it, page, timeout=WAIT)


def test_after_pause_all_six_live_plots_end_at_the_same_time_in_the_page(served):
    """Playing, the secondary plots follow the primary ones on a slower cadence; paused, every plot ends at the run's
    last sample (its x range and every curve)."""
    page, d = served.page, served.dashboard
    d.session.speed = 600.0
    served.wait_for_data(TIME_PLOTS)
    served.button("Pause").click()
    expect(served.button("Play")).to_be_visible(timeout=WAIT)

    def all_end_at_the_last_sample() -> None:
        last = float(d.views.streams["live"].frame()["time"].iloc[-1])
        ends = page.evaluate(JS_ENDS, "ts-")
        assert set(ends) == set(TIME_PLOTS), ends
        assert {t for both in ends.values() for t in both} == {last}, (last, ends)

    wait_until(all_end_at_the_last_sample, page, timeout=WAIT)


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
        expect(box).to_be_enabled(timeout=WAIT)  # the extensions unlock once seed_exact is off (a server round trip)
        box.click()
    wait_until(lambda: d.session.sim.sections["controller"].extensions_on == ["drain_above_cap", "cap_resumes"], page, timeout=WAIT)
    # from t=0 with the extensions on: the start-up backlog scales out past the coming cap (a Reset while paused starts
    # at t=0; one while playing would simulate its first minutes, this scale-out included, before it is shown)
    served.button("Reset").click()
    wait_until(lambda: d.session.sim is not sim and not d.session.building, page, timeout=WAIT)
    d.session.playing = True
    wait_until(lambda: d.session.sim.now > 0, page, timeout=WAIT)
    sim = d.session.sim
    wait_until(lambda: sim.samples(max(0, sim.sample_count - 1)).workers_active.max() > 3, page, timeout=WAIT)
    handle = page.locator(".ctl-live-autoscaler-MAX_WORKERS .noUi-handle").first
    handle.focus()
    handle.press("Home")
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    wait_until(lambda: d.session.sim.sections["autoscaler"].MAX_WORKERS == 3, page, timeout=WAIT)
    expect(served.entry("ctl-live-autoscaler-MAX_WORKERS")).to_have_value("3")  # the box follows the slider
    changed = sim.events().query("kind == 'param' and command == 'autoscaler.MAX_WORKERS'").time.iloc[-1]
    wait_until(lambda: sim.now > changed + 200, page, timeout=WAIT)
    engine = sim.samples()
    assert engine[engine.time <= changed].workers_active.max() > 3
    after = engine[engine.time >= changed + 60]
    assert len(after) > 10 and after.workers_active.max() <= 3
    # (which rule brings them down -- cap_shutdown, or a scale-in that comes first -- depends on the queue at that moment)
    assert sim.sections["controller"].extensions_on == ["drain_above_cap", "cap_resumes"]  # the reset kept the extensions
    wait_until(lambda: float(served.kpi("active_workers").inner_text()) <= 3, page, timeout=WAIT)


def test_a_link_reproduces_the_view_and_a_bad_link_says_what_it_could_not_apply(served):
    page, d = served.page, served.dashboard
    base = f"http://127.0.0.1:{served.port}/"
    page.goto(base + "?scenario=edge&autoscaler.MAX_WORKERS=7&speed=120&tab=Placement", wait_until="domcontentloaded")
    wait_until(lambda: len(served.made) == 2, page, timeout=WAIT)
    page.wait_for_function(f"() => ({JS_TITLE})('placement-heatmap')", timeout=WAIT)
    linked = served.made[-1]
    assert linked.session.scenario == "edge" and linked.session.seed == 2 and linked.session.speed == 120.0
    assert linked.session.sim.sections["autoscaler"].MAX_WORKERS == 7 and linked.active_tab == "Placement"
    expect(served.entry("ctl-live-autoscaler-MAX_WORKERS")).to_have_value("7")
    page.goto(base + "?scenario=nowhere&autoscaler.MAX_WORKERS=5000", wait_until="domcontentloaded")
    message = page.locator(".app-message").first
    expect(message).to_contain_text("'nowhere' is not here", timeout=WAIT)
    expect(message).to_contain_text("5000 is out of range")
    served.wait_for_data(["ts-queue"])  # and it runs, on the default scenario
    assert served.made[-1].session.scenario == "default" and d.session.stopped  # the first page's session is gone


def test_the_dark_theme_keeps_the_kpis_and_plots_readable(served, artifacts):
    page = served.page
    page.goto(f"http://127.0.0.1:{served.port}/?theme=dark", wait_until="domcontentloaded")
    page.wait_for_function(f"() => ({JS_EVERY_PLOT_HAS_DATA})(['ts-queue'])", timeout=WAIT)
    # the theme's styles reach the KPI row's shadow roots after its first data on a busy machine: wait for them
    seen: list = []
    wait_until(lambda: seen.append(served.kpi("queue").evaluate(JS_COLOURS)) or _contrast(*seen[-1]) > 4.5, page, timeout=WAIT)
    page.screenshot(path=str(artifacts / "first-view-dark-1600x1000.png"))


#: JS: an element's text colour and the colour behind it (the first opaque background up its ancestors, through
#: shadow roots), both as [r, g, b] in 0-255 (a canvas normalises any CSS colour syntax).
JS_COLOURS = """el => {
  const ctx = document.createElement('canvas').getContext('2d');
  const rgb = css => { ctx.fillStyle = '#000'; ctx.fillStyle = css; ctx.fillRect(0, 0, 1, 1); return Array.from(ctx.getImageData(0, 0, 1, 1).data); };
  let node = el, bg = null;
  while (node && !bg) {
    if (node.nodeType === 1) { const c = getComputedStyle(node).backgroundColor; const v = rgb(c); if (v[3] === 255 && c !== 'transparent') bg = v; }
    node = node.parentNode || node.host;
  }
  return [rgb(getComputedStyle(el).color).slice(0, 3), (bg || rgb(getComputedStyle(document.body).backgroundColor)).slice(0, 3)];
}"""


def _contrast(a: list[float], b: list[float]) -> float:
    """WCAG contrast ratio of two [r, g, b] colours (0-255)."""

    def luminance(parts: list[float]) -> float:
        lin = [(c / 255 / 12.92) if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_a_session_driven_in_the_browser_replays_exactly(served):
    import pandas as pd

    from engine import Simulation

    page, d = served.page, served.dashboard
    sim = d.session.sim
    wait_until(lambda: sim.now > 100, page, timeout=WAIT)
    handle = page.locator(".ctl-live-autoscaler-MAX_WORKERS .noUi-handle").first
    handle.focus()
    handle.press("ArrowLeft")
    handle.press("ArrowLeft")
    wait_until(lambda: sim.sections["autoscaler"].MAX_WORKERS == 18, page, timeout=WAIT)
    served.button("Crash the master").click()
    wait_until(lambda: (sim.events().command == "master_crash").any(), page, timeout=WAIT)
    t = sim.now
    wait_until(lambda: sim.now > t + 120, page, timeout=WAIT)
    served.button("Pause").click()
    wait_until(lambda: not d.session.playing, page, timeout=WAIT)
    rec = sim.recording()
    kinds = [i["kind"] for i in rec["inputs"]]
    assert "params" in kinds and "fault" in kinds
    again = Simulation.replay(rec)  # raises if the samples differ from the recorded digest
    upto = rec["until"]
    live_samples, live_events = sim.samples(0), sim.events(0)
    pd.testing.assert_frame_equal(
        again.samples()[again.samples().time < upto], live_samples[live_samples.time < upto].reset_index(drop=True)
    )
    pd.testing.assert_frame_equal(again.events(), live_events[live_events.time < upto].reset_index(drop=True))
