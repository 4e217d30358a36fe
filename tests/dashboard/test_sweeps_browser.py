"""The Sweeps tab in a real Chromium: start a small sweep on a 2-worker LocalCluster, see its points arrive,
click one on the Pareto plot, and open it as the live session with that point's parameters. Run serially."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect
from served import GUARD_MS, panel_serve, serve_component, stop_servers, wait_until

from dashboard.sweeps import EXPLORERS
from dashboard.ui import Dashboard

pytestmark = pytest.mark.browser

#: 6 points x 2 seeds of an hour each (~0.3 s a run): slow enough that points arrive over several polls.
SWEEP = {
    "name": "browser-sweep",
    "scenario": "default",
    "until": 3600,
    "seeds": [1, 2],
    "parameters": {"autoscaler.MAX_WORKERS": [3, 8, 16], "autoscaler.MAX_AVG_TIME": [20, 60]},
    "kpis": ["wait_p95", "vm_hours", "jobs_completed"],
}
#: JS: the Pareto plot's means (the source with an on_front column): its rows and each point's position on the page.
JS_POINTS = """() => {
  const found = [];
  const walk = (v, depth) => {
    if (depth > 80) return;
    const ds = v.model && v.model.type === 'GlyphRenderer' ? v.model.data_source : null;
    if (ds && ds.data && 'on_front' in ds.data) found.push(v);
    try { for (const c of v.children()) walk(c, depth + 1); } catch (e) {}
  };
  for (const r of (window.Bokeh ? Bokeh.index.roots : [])) walk(r, 0);
  if (!found.length) return null;
  const rv = found[0], data = rv.model.data_source.data;
  const box = (rv.parent.canvas_view ?? rv.parent.canvas).el.getBoundingClientRect();
  const xs = data[rv.model.glyph.x.field], ys = data[rv.model.glyph.y.field];
  return Array.from(data.label).map((label, i) => ({
    label, on_front: !!data.on_front[i],
    x: box.left + rv.coordinates.x_scale.compute(xs[i]), y: box.top + rv.coordinates.y_scale.compute(ys[i]),
  }));
}"""


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sweep_dirs(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A folder with the test's sweep file and an empty output folder, named to the explorer by environment."""
    sweeps, out = tmp_path / "sweeps", tmp_path / "out"
    sweeps.mkdir()
    (sweeps / "browser-sweep.yaml").write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    monkeypatch.setenv("SCALELAB_SWEEPS_DIR", str(sweeps))
    monkeypatch.setenv("SCALELAB_SWEEPS_OUT", str(out))
    return sweeps, out


@pytest.fixture
def served(page, sweep_dirs):
    _, out = sweep_dirs
    made: list[Dashboard] = []
    page.set_viewport_size({"width": 1500, "height": 1300})

    def app():
        d = Dashboard()
        made.append(d)
        return d

    messages, _ = serve_component(page, app)
    yield page, made[0], messages, out
    stop_servers()  # first: no tick runs while the sessions are stopped from this thread
    for d in made:
        d.stop(clear_plots=False)
    for e in list(EXPLORERS):
        e.close()


def test_start_a_sweep_see_points_arrive_click_one_and_it_opens_live_with_its_parameters(served, artifacts):
    page, d, messages, out = served
    page.locator(".bk-tab", has_text="Sweeps").click()  # the tab is built when first shown
    wait_until(lambda: any(e.live is d.session for e in EXPLORERS), page, timeout=GUARD_MS)
    explorer = next(e for e in EXPLORERS if e.live is d.session)
    # sample, in the page, how many points the Pareto plot holds as the sweep runs
    page.evaluate(
        f"() => {{ window.__counts = []; setInterval(() => {{ const p = ({JS_POINTS})(); window.__counts.push(p ? p.length : 0); }}, 50); }}"
    )
    page.locator(".sweep-start .bk-btn").first.click()
    page.wait_for_function(f"() => {{ const p = ({JS_POINTS})(); return p && p.length === 6; }}", timeout=GUARD_MS)
    wait_until(lambda: explorer.running is None, page, timeout=GUARD_MS)
    counts = page.evaluate("() => window.__counts")
    arrived = sorted({c for c in counts if c > 0})
    assert len(arrived) >= 2 and arrived[-1] == 6, f"points did not arrive run by run: {arrived}"
    assert explorer.progress.value == explorer.progress.max == 12
    kept = sorted((out / "browser-sweep" / "runs").glob("*.parquet"))
    assert kept, "the sweep kept nothing on disk"
    page.screenshot(path=str(artifacts / "dashboard-sweeps.png"), full_page=True)

    # click a point: the one with the most VM-hours, not the first drawn
    points = page.evaluate(JS_POINTS)
    target = max(points, key=lambda p: p["x"])
    number = int(target["label"].split()[0].lstrip("#"))
    page.mouse.click(target["x"], target["y"])
    wait_until(lambda: explorer.selected == number, page, timeout=GUARD_MS)
    expect(page.locator(".sweep-point").first).to_contain_text(f"Point #{number}", timeout=GUARD_MS)
    row = explorer.means[explorer.means["point"] == number].iloc[0]
    workers, max_avg = int(row["autoscaler.MAX_WORKERS"]), float(row["autoscaler.MAX_AVG_TIME"])

    page.locator(".sweep-open .bk-btn").first.click()
    wait_until(lambda: d.session.scenario == f"browser-sweep #{number}", page, timeout=GUARD_MS)
    wait_until(lambda: d.tabs.active == 0, page, timeout=GUARD_MS)
    sim = d.session.sim
    assert sim.sections["autoscaler"].MAX_WORKERS == workers and sim.sections["autoscaler"].MAX_AVG_TIME == max_avg
    assert d.session.seed == 1 and sim.seed == 1
    # on screen: the live controls show the point's values and the new run streams from t=0
    expect(page.locator(".ctl-live-autoscaler-MAX_WORKERS input").first).to_have_value(str(workers), timeout=GUARD_MS)
    wait_until(lambda: sim.now > 60, page, timeout=GUARD_MS)
    page.wait_for_function(
        """() => { for (const m of Bokeh.documents[0]._all_models.values()) if (m.name === 'ts-queue')
             return m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length > 3
                                          && r.data_source.data.time[0] < 30);
           return false; }""",
        timeout=GUARD_MS,
    )
    assert sim.samples().workers_total.max() <= workers
    page.screenshot(path=str(artifacts / "dashboard-sweep-point-live.png"), full_page=True)
    assert not [m.text for m in messages if m.type == "error"]
    assert Path(explorer.out_root) == out


def test_panel_serve_starts_a_sweep_from_the_tab_on_its_own_localcluster(page, sweep_dirs):
    """`panel serve dashboard/app.py` (as `make serve` runs it): the tab's LocalCluster workers start and the points arrive."""
    _, out = sweep_dirs
    args = ["dashboard/app.py", "--port", "0", "--address", "127.0.0.1"]
    with panel_serve(args, cwd=ROOT) as (_proc, port, _lines):
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/app", wait_until="domcontentloaded")
        page.locator(".bk-tab", has_text="Sweeps").click()
        page.locator(".sweep-start .bk-btn").first.click()
        page.wait_for_function(f"() => {{ const p = ({JS_POINTS})(); return p && p.length === 6; }}", timeout=GUARD_MS)
        assert not errors, errors
    assert len(list((out / "browser-sweep" / "runs").glob("*.parquet"))) >= 1


#: JS: elements of the page (shadow roots included) whose right edge lies beyond the window (the page would scroll
#: sideways or clip them): their tag and classes, the first few.
JS_OVERFLOW = """() => {
  const out = [], w = document.documentElement.clientWidth;
  const walk = root => root.querySelectorAll('*').forEach(e => {
    const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    if (r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && r.right > w + 1) out.push(`${e.tagName}.${e.className} ${Math.round(r.right)}`);
    if (e.shadowRoot) walk(e.shadowRoot); });
  walk(document);
  if (document.documentElement.scrollWidth > w + 1) out.unshift(`page ${document.documentElement.scrollWidth} > ${w}`);
  return out.slice(0, 8); }"""


def test_the_sweeps_tab_with_its_plots_fits_the_window_at_1400_and_1024_px_wide(sweep_dirs, page):
    page.set_viewport_size({"width": 1400, "height": 900})
    made: list = []

    def app():
        made.append(Dashboard())
        return made[-1].page()  # the served page: template, header, sidebar

    serve_component(page, app)
    try:
        page.locator(".bk-tab", has_text="Sweeps").first.click()
        page.locator(".sweep-start .bk-btn").first.click()
        page.wait_for_function(f"() => {{ const p = ({JS_POINTS})(); return p && p.length === 6; }}")
        for width, height in ((1400, 900), (1024, 768)):
            page.set_viewport_size({"width": width, "height": height})
            wait_until(lambda: page.evaluate(JS_OVERFLOW) == [], page, timeout=GUARD_MS)
    finally:
        print("overflowing:", page.evaluate(JS_OVERFLOW))
        stop_servers()  # first: no tick runs while the sessions are stopped from this thread
        for d in made:
            d.stop(clear_plots=False)
        for e in list(EXPLORERS):
            e.close()
