"""Recorded sessions in a real Chromium: record, save, replay in a fresh process, open at once in a fresh dashboard,
branch, bad files, and the exported page opened with the network off. Run serially (browser tests)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import test_browser as browser  # the served app and its page helpers (tests/dashboard is on sys.path)
from panel.io.state import state
from playwright.sync_api import expect
from served import GUARD_MS, wait_until

from dashboard.export import PREFIX, export_html
from engine import Recording, Simulation, load_recording

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
BAD_SESSIONS = sorted(p for p in (ROOT / "tests" / "data" / "bad" / "sessions").glob("*.scalelab") if p.name != "good.scalelab")
served = browser.served  # the app's page served in-process, opened in Chromium, streaming


@pytest.fixture(autouse=True)
def _no_pages_of_earlier_servers():
    """Panel keeps every served template's busy indicator in one process-wide list, and sets them all whenever any
    session is busy: one of a server already stopped (a page navigated away from) then fails on its closed event loop,
    in whichever test comes next. ``state.reset()`` forgets them (no server runs between two tests)."""
    state.reset()
    yield
    state.reset()


TIME_PLOTS = ["queue", "time_left", "workers", "rates", "waits", "vm_hours"]
#: JS: for each name, the largest row count of the data sources of the model so named (0: none; null: no such model).
JS_ROWS = """names => { const d = window.Bokeh && Bokeh.documents[0]; const out = {}; if (!d) return out;
  for (const n of names) out[n] = null;
  for (const m of d._all_models.values()) {
    if (!names.includes(m.name)) continue;
    const sources = m.renderers ? m.renderers.map(r => r.data_source).filter(s => s && s.data) : (m.source ? [m.source] : []);
    out[m.name] = Math.max(0, ...sources.map(s => { const c = Object.values(s.data)[0]; return c ? c.length : 0; }));
  }
  return out; }"""
#: JS: the x range of a named figure.
JS_X_RANGE = """name => { for (const m of Bokeh.documents[0]._all_models.values())
  if (m.name === name) return [m.x_range.start, m.x_range.end]; return null; }"""


def rows(page, names: list[str]) -> dict:
    return page.evaluate(JS_ROWS, names)


def wait_for_rows(page, names: list[str], least: int = 3, timeout: float = GUARD_MS) -> float:
    """Wait until every named figure holds at least ``least`` rows; the seconds it took."""
    t0 = time.perf_counter()
    page.wait_for_function(f"names => Object.values(({JS_ROWS})(names)).every(n => n !== null && n >= {least})", arg=names, timeout=timeout)
    return time.perf_counter() - t0


def download(page, css: str, folder: Path) -> Path:
    """Click a FileDownload button and keep what the browser saved."""
    with page.expect_download(timeout=GUARD_MS) as info:
        page.locator(f".{css} .bk-btn").first.click()
    path = folder / info.value.suggested_filename
    info.value.save_as(path)
    return path


def test_a_session_driven_in_the_browser_is_saved_replays_exactly_elsewhere_and_opens_at_once(served, tmp_path, monkeypatch):
    page, d = served.page, served.dashboard
    s = d.session
    wait_until(lambda: s.sim.now > 100, page, timeout=GUARD_MS)
    handle = page.locator(".ctl-live-autoscaler-MAX_WORKERS .noUi-handle").first  # a slider move
    handle.focus()
    handle.press("ArrowLeft")
    handle.press("ArrowLeft")
    wait_until(lambda: s.sim.sections["autoscaler"].MAX_WORKERS == 18, page, timeout=GUARD_MS)
    weight = served.entry("ctl-live-scheduler-weight_balanced_resource")  # a weight change
    weight.fill("4")
    weight.press("Enter")
    wait_until(lambda: s.sim.sections["scheduler"].weight_balanced_resource == 4.0, page, timeout=GUARD_MS)
    served.button("Crash a worker").click()  # a fault button
    wait_until(lambda: (s.sim.events().command == "worker_crash").any(), page, timeout=GUARD_MS)
    t = s.sim.now
    wait_until(lambda: s.sim.now > t + 120, page, timeout=GUARD_MS)
    served.button("Pause").click()
    wait_until(lambda: not s.playing, page, timeout=GUARD_MS)
    saved = download(page, "rec-save", tmp_path)
    recorded = {name: s.sim.frame(name) for name in s.sim.tables}
    assert saved.name.startswith("default-seed1-") and saved.suffix == ".scalelab"
    changes = load_recording(saved).changes
    assert {"autoscaler.MAX_WORKERS", "scheduler.weight_balanced_resource", "worker_crash", "pause"} <= set(changes.name)

    # a fresh process replays it: every table identical
    r = subprocess.run(
        [sys.executable, "-m", "engine", "replay", str(saved), "--verify"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert "reproduces the recorded tables" in r.stdout

    # a fresh dashboard opens it from its tables alone, every view at once
    page.goto(f"http://127.0.0.1:{served.port}/", wait_until="domcontentloaded")
    wait_until(lambda: len(served.made) == 2, page, timeout=GUARD_MS)
    fresh = served.made[-1]
    served.wait_for_data(["ts-queue"])
    built = []
    monkeypatch.setattr(Simulation, "replay", classmethod(lambda cls, *a, **k: built.append("Simulation.replay")))
    monkeypatch.setattr(Recording, "replay", lambda self, *a, **k: built.append("Recording.replay"))
    real_init = Simulation.__init__

    def init(self, *a, **k):  # the Branch here warm-up (dashboard.warmup) re-simulates in the off-loop worker: not the loading
        if not threading.current_thread().name.startswith("scalelab-offloop"):
            built.append("Simulation()")
        real_init(self, *a, **k)

    monkeypatch.setattr(Simulation, "__init__", init)
    t0 = time.perf_counter()
    page.locator(".rec-load input[type=file]").first.set_input_files(str(saved))
    names = [f"rp-{n}" for n in TIME_PLOTS] + ["rp-timeline", "rp-placement-heatmap", "rp-score-heatmap"]
    wait_for_rows(page, names, least=1, timeout=GUARD_MS)
    shown = time.perf_counter() - t0
    print(f"a saved session of {recorded['samples'].time.max():.0f} simulated s: every replay view drawn {shown:.1f} s after the upload")
    assert built == [], f"loading re-simulated: {built}"
    counts = rows(page, [f"rp-{n}" for n in TIME_PLOTS])
    assert all(n >= len(recorded["samples"]) for n in counts.values()), counts  # the whole history, at its end
    expect(page.locator(".event-log tbody tr").first).to_be_attached(timeout=GUARD_MS)
    expect(page.locator(".run-state .state").first).to_have_text("Replay paused")
    assert fresh.active_tab == "Replay" and fresh.recordings.replay_tab.at == load_recording(saved).until
    for name, frame in recorded.items():
        pd.testing.assert_frame_equal(fresh.recordings.replay_tab.frames[name], frame, obj=name)
    assert not served.server_errors(), served.server_errors()
    assert not served.console_errors(), served.console_errors()


def test_in_the_browser_an_example_is_scrubbed_exported_and_branched_and_the_branch_overlays_its_parent(served, tmp_path, artifacts):
    page, d = served.page, served.dashboard
    served.tab("Replay")
    page.locator(".replay-open .bk-btn").first.click()  # the first example: cap-lowered
    wait_for_rows(page, ["rp-queue", "rp-placement-heatmap"], least=1, timeout=GUARD_MS)
    replay = d.recordings.replay_tab
    parent = replay.rec
    assert parent.path.name == "cap-lowered.scalelab"
    page_file = download(page, "replay-export", tmp_path)  # the Export button
    assert page_file.name == "cap-lowered.html" and page_file.read_bytes().startswith(b"<!DOCTYPE html>")

    marker = next(i for i, label in enumerate(replay.jump.options) if "MAX_WORKERS = 20" in label)
    page.locator(".replay-jump select").first.select_option(index=marker)  # jump to the cap's raise, mid-run
    wait_until(lambda: replay.at == 900.0, page, timeout=GUARD_MS)
    page.wait_for_function(f"() => ({JS_ROWS})(['rp-queue'])['rp-queue'] === 180", timeout=GUARD_MS)  # 5 s ... 900 s
    assert replay.series.rows() == 180 and (replay.events.rows.time <= 900).all()
    page.screenshot(path=str(artifacts / "replay-scrubbed.png"))

    t0 = time.perf_counter()
    page.locator(".replay-branch .bk-btn").first.click()
    wait_until(lambda: d.active_tab == "Branch" and d.session.sim.now == 900.0, page, timeout=GUARD_MS)
    s = d.session
    expect(page.locator(".app-message").first).to_contain_text("Branched from cap-lowered.scalelab at 0:15:00", timeout=GUARD_MS)
    print(f"branched at 0:15:00 and shown in the browser {time.perf_counter() - t0:.1f} s after the click")
    page.locator(".card-title", has_text="Workload").first.click()
    rate = served.entry("ctl-live-workload-rate")
    rate.fill("0.2")  # what if the load had dropped at the cap's raise?
    rate.press("Enter")
    wait_until(lambda: s.sim.sections["workload"].rate == 0.2, page, timeout=GUARD_MS)
    served.button("Play").click()
    wait_until(lambda: s.sim.now > 1500, page, timeout=GUARD_MS)
    served.button("Pause").click()
    page.wait_for_function(f"() => ({JS_ROWS})(['br-queue'])['br-queue'] >= 100", timeout=GUARD_MS)
    page.screenshot(path=str(artifacts / "branch-overlay.png"))
    for table in ("samples", "events", "decisions", "placements"):
        a, b = parent.tables[table], s.sim.frame(table)
        pd.testing.assert_frame_equal(a[a.time < 900], b[b.time < 900], obj=table)
    before, after = parent.tables["samples"].query("1300 <= time <= 1500"), s.sim.samples().query("1300 <= time <= 1500")
    assert after.queue_length.mean() < 0.5 * before.queue_length.mean()  # the branch goes its own way
    branch_file = download(page, "rec-save", tmp_path)
    child = load_recording(branch_file)
    assert child.parent["file"] == "cap-lowered.scalelab" and child.parent["branch_time"] == 900.0
    assert not served.server_errors(), served.server_errors()


def test_bad_session_files_uploaded_each_give_one_line_naming_the_file_and_the_dashboard_keeps_running(served):
    page, d = served.page, served.dashboard
    served.tab("Replay")
    page.locator(".replay-open .bk-btn").first.click()
    wait_for_rows(page, ["rp-queue"], least=1, timeout=GUARD_MS)
    good = d.recordings.replay_tab.rec
    served.tab("Live")
    wait_until(lambda: d.active_tab == "Live", page, timeout=GUARD_MS)
    d.session.playing = True
    served.wait_for_data(["ts-queue"])
    message = page.locator(".app-message").first
    for path in BAD_SESSIONS:
        page.locator(".rec-load input[type=file]").first.set_input_files(str(path))
        expect(message).to_contain_text(f"Recording not loaded: {path.name}: ", timeout=GUARD_MS)
        text = message.inner_text().strip()
        assert "\n" not in text, text
        assert d.recordings.replay_tab.rec is good and d.active_tab == "Live"
    t = d.session.sim.now
    wait_until(lambda: d.session.sim.now > t + 30, page, timeout=GUARD_MS)  # still running
    assert not served.server_errors(), served.server_errors()


def test_the_page_of_a_one_hour_session_opens_offline_with_every_plot_filled_and_interactive(page, tmp_path, artifacts):
    sim = Simulation("default", seed=1)
    sim.note_control("play", 60.0)
    sim.advance(900)
    sim.set_params({"autoscaler.MAX_WORKERS": 8, "scheduler.weight_balanced_resource": 3.0})
    sim.advance(1800)
    sim.inject("master_crash")
    sim.advance(3600)
    rec = load_recording(sim.record(tmp_path / "one-hour.scalelab"))
    t0 = time.perf_counter()
    size = export_html(rec, tmp_path / "one-hour.html")
    took = time.perf_counter() - t0
    print(f"the page of a 1-hour session: {size / 2**20:.2f} MiB, exported in {took:.1f} s")
    assert size < 5 * 2**20

    asked: list[str] = []
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith("file:") else (asked.append(route.request.url), route.abort()),
    )
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": 1500, "height": 1000})
    page.goto((tmp_path / "one-hour.html").as_uri())
    figures = [f"{PREFIX}-{n}" for n in ["timeline", *TIME_PLOTS, "placement-heatmap", "score-heatmap"]]
    wait_for_rows(page, figures, least=1, timeout=GUARD_MS)
    counts = rows(page, [*figures, f"{PREFIX}-events", f"{PREFIX}-changes"])
    assert all(counts[f"{PREFIX}-{n}"] >= 719 for n in TIME_PLOTS), counts  # every sample of the hour
    assert counts[f"{PREFIX}-events"] == len(rec.tables["events"]) and counts[f"{PREFIX}-changes"] == len(rec.changes)
    assert page.locator("canvas").count() >= len(figures)  # Bokeh drew them
    page.screenshot(path=str(artifacts / "export-one-hour.png"), full_page=True)

    # interactive with no server: hover names a value, the wheel zooms every time axis together
    queue = page.locator(".bk-Canvas").nth(1)  # after the timeline: the queue plot
    queue.scroll_into_view_if_needed()
    box = queue.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.55)
    expect(page.locator(".bk-Tooltip .bk-tooltip-content").first).to_contain_text("queue", timeout=GUARD_MS)
    before = page.evaluate(JS_X_RANGE, f"{PREFIX}-vm_hours")
    page.mouse.wheel(0, -600)
    page.wait_for_function(
        f"() => ({JS_X_RANGE})('{PREFIX}-vm_hours')[1] - ({JS_X_RANGE})('{PREFIX}-vm_hours')[0] < {before[1] - before[0]}"
    )
    assert page.evaluate(JS_X_RANGE, f"{PREFIX}-timeline") == page.evaluate(JS_X_RANGE, f"{PREFIX}-vm_hours")
    assert asked == [], f"the page asked the network for {asked}"
    assert not errors, errors
