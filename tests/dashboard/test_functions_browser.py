"""The Functions view in a real Chromium: it appears for a function scenario, every plot draws data from the recorded
tables, and a per-function slider changes the engine live (the deployment is bounded at once)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from served import GUARD_MS, remote_requests, serve_component, stop_servers, wait_until

from dashboard.ui import Dashboard

pytestmark = pytest.mark.browser

#: JS: how many rows the page's sources hold for a column (HoloViews' sources are unnamed: look at every model).
JS_ROWS = """col => {
  const d = window.Bokeh && Bokeh.documents[0]; if (!d) return 0;
  let n = 0;
  for (const m of d._all_models.values()) {
    if (m.data && m.data[col] !== undefined) n = Math.max(n, m.data[col].length);
  }
  return n;
}"""
JS_IMAGE = """() => {
  const d = window.Bokeh && Bokeh.documents[0]; if (!d) return 0;
  for (const m of d._all_models.values()) {
    if (m.name !== 'placement-grid' && m.data && m.data.image && m.data.image.length && m.data.image[0].length > 1 && m.data.dw[0] > 10)
      return m.data.image[0].length;
  }
  return 0;
}"""  # the Functions view's replica heatmap (not the Placement tab's grid), once it spans some time


@pytest.fixture
def served_functions(page):
    made: list[Dashboard] = []
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.set_viewport_size({"width": 1500, "height": 1300})

    def app():
        d = Dashboard("faas-edge")
        d.session.speed = 120.0
        made.append(d)
        return d

    # the page's session must outlive the browser's loading of it: with a 1 s lifetime a loaded machine (load 20) let the
    # server drop it before the websocket connected, and the websocket then made a second Dashboard (with CDN stylesheet
    # URLs, for its document never had its page rendered) while the test watched the first one's stopped run
    messages, port = serve_component(page, app, check_unused_sessions_milliseconds=1000, unused_session_lifetime_milliseconds=GUARD_MS)
    assert len(made) == 1, f"{len(made)} sessions were made for one page: the first expired before its websocket connected"
    yield page, made[0], messages
    stop_servers()  # first: no tick runs while the sessions are stopped from this thread
    for d in made:
        d.stop(clear_plots=False)
    remote = remote_requests(requests)
    assert not remote, f"requests left the machine: {remote}"


def test_functions_tab_draws_every_plot_and_a_slider_bounds_a_deployment_live(served_functions, artifacts):
    page, d, messages = served_functions
    sim = d.session.sim
    page.locator(".bk-tab", has_text="Functions").click()
    for column in ("rps", "response_p95", "replicas_running"):
        page.wait_for_function(f"() => ({JS_ROWS})('{column}') > 3", timeout=GUARD_MS)
    page.wait_for_function(f"() => ({JS_IMAGE})() > 1", timeout=GUARD_MS)
    expect(page.locator(".functions-view .function-kpis table").first).to_be_attached(timeout=GUARD_MS)
    assert page.locator(".functions-view .function-kpis table").count() == 1
    page.screenshot(path=str(artifacts / "dashboard-functions.png"), full_page=True)

    # KPA on mobilenet runs up to 16 replicas in its bursts (the first from t=510 s): bound it at 3 from the page. A
    # loaded machine ticks the run slowly, so these waits on the run's time fail only when its clock stops moving.
    wait_until(
        lambda: sim.frame("function_samples").query("function == 'mobilenet-inference'").replicas_running.max() > 3,
        page,
        progress=lambda: sim.now,
    )
    handle = page.locator(".ctl-fn-fn2-max_replicas .noUi-handle").first
    handle.focus()
    handle.press("Home")
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    wait_until(lambda: d.session.sim.sections["fn2"].max_replicas == 3, page, timeout=GUARD_MS)
    changed = sim.events().query("kind == 'param' and command == 'fn2.max_replicas'").time.iloc[-1]
    wait_until(lambda: sim.now > changed + 60, page, progress=lambda: sim.now)
    after = sim.frame("function_samples").query("function == 'mobilenet-inference' and time > @changed + 5")
    assert len(after) and (after.replicas_running + after.replicas_starting + after.replicas_pending).max() <= 3
    errors = [m.text for m in messages if m.type == "error"]
    assert not errors, errors


def test_one_hover_per_plot_names_each_curve_under_the_mouse_and_its_value(page, tmp_path, artifacts):
    """A plot's one hover (``liveplots.curves_hover``) shows, per curve under the mouse, the time and the curve's name and
    value, as a hover per curve did."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    from dashboard.functions import FunctionPlots
    from engine import Simulation

    plots = FunctionPlots("fn", staged=False)
    plots.push(Simulation("faas-basic").advance(300).frame("function_samples"))
    plots.flush()
    fig = plots.figures["requests"]
    fig.update(width=900, height=400, sizing_mode="fixed")
    html = tmp_path / "requests.html"
    html.write_text(file_html(fig, INLINE, "requests"))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "ERR_FILE_NOT_FOUND" not in m.text else None)  # no favicon
    page.set_viewport_size({"width": 1000, "height": 600})
    page.goto(html.as_uri())
    canvas = page.locator(".bk-Canvas").first
    expect(canvas).to_be_visible(timeout=GUARD_MS)
    box = canvas.bounding_box()
    tip = page.locator(".bk-Tooltip .bk-tooltip-content").first
    for fraction in (0.5, 0.6, 0.7, 0.4):  # the middle of the run: every function has a sample there
        page.mouse.move(box["x"] + box["width"] * fraction, box["y"] + box["height"] * 0.5)
        if tip.is_visible():
            break
    expect(tip).to_contain_text("time:", timeout=GUARD_MS)
    text = " ".join(page.locator(".bk-Tooltip .bk-tooltip-content").all_inner_texts())
    names = [r.name for r in fig.renderers]
    assert any(f"{name}:" in text for name in names), text  # a curve's name as the label, its value beside it
    assert "NaN" not in text and "$" not in text and "???" not in text, text
    page.screenshot(path=str(artifacts / "functions-one-hover.png"))
    assert not errors, errors
