"""The replay's scrubbing in a real Chromium: while the slider is dragged its label, the views and the Branch button
name one time; a click on the timeline jumps there. Run serially (browser tests); waits are for conditions."""

from __future__ import annotations

import re

import pytest
import test_browser as browser  # the served app and its page helpers (tests/dashboard is on sys.path)
from panel.io.state import state
from served import wait_until
from test_recordings_browser import wait_for_rows

from dashboard.plothooks import hms

pytestmark = pytest.mark.browser
served = browser.served
WAIT = browser.WAIT

#: JS: in one go (one frame of the page), the texts of ``inner`` inside every element matching ``host`` (shadow roots
#: included, as Bokeh widgets draw into them), for each [host, inner] pair.
JS_TEXTS = """pairs => {
  const all = (root, sel, out) => { root.querySelectorAll(sel).forEach(e => out.push(e));
    root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) all(e.shadowRoot, sel, out); }); return out; };
  return pairs.map(([host, inner]) => all(document, host, []).flatMap(h =>
    [...all(h, inner, []), ...(h.shadowRoot ? all(h.shadowRoot, inner, []) : [])].map(e => e.textContent.trim())));
}"""
SHOWN = [[".replay-scrub", ".bk-slider-title"], [".replay-branch", "button"], [".replay-kpis", "[data-kpi=time]"]]
#: JS: page coordinates of simulated time ``t`` in the middle of the named figure's plot area.
JS_AT = """([name, t]) => {
  let found = null;
  const walk = (v, depth) => { if (found || depth > 80) return; if (v.model && v.model.name === name && v.frame) { found = v; return; }
    try { for (const c of v.children()) walk(c, depth + 1); } catch (e) {} };
  for (const r of (window.Bokeh ? Bokeh.index.roots : [])) walk(r, 0);
  if (!found) return null;
  const box = (found.canvas_view ?? found.canvas).el.getBoundingClientRect(), frame = found.frame.bbox;
  return {x: box.left + found.frame.x_scale.compute(t), y: box.top + frame.top + frame.height / 2};
}"""


@pytest.fixture(autouse=True)
def _no_pages_of_earlier_servers():
    """Panel's process-wide list of busy indicators, forgotten between tests (as in test_recordings_browser.py)."""
    state.reset()
    yield
    state.reset()


def shown_times(page) -> list[list[str]]:
    """The times the slider's label, the Branch button and the replay's KPI row show, read in one frame."""
    texts = page.evaluate(JS_TEXTS, SHOWN)
    return [[m.group(0) for t in found if (m := re.search(r"\d+:\d\d:\d\d", t))] for found in texts]


def agree(page) -> str | None:
    """The one time the label, the button and the KPI row all show (None if they differ or one is missing)."""
    label, button, kpi = shown_times(page)
    times = {*label, *button, *kpi}
    return times.pop() if len(times) == 1 and label and button and kpi else None


def open_example(served):
    served.tab("Replay")
    served.page.locator(".replay-open .bk-btn").first.click()
    wait_for_rows(served.page, ["rp-queue", "rp-timeline"], least=1, timeout=WAIT)
    replay = served.dashboard.recordings.replay_tab
    wait_until(lambda: agree(served.page) == hms(replay.until), served.page, timeout=WAIT)
    return replay


def test_while_the_replay_slider_is_dragged_its_label_the_views_and_the_branch_button_show_one_time(served):
    page = served.page
    replay = open_example(served)
    track = page.locator(".replay-scrub .noUi-base").first.bounding_box()
    handle = page.locator(".replay-scrub .noUi-handle").first.bounding_box()
    y = handle["y"] + handle["height"] / 2
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    seen = []
    for fraction in (0.8, 0.6, 0.4):  # dragged back in steps, held (the button not released)
        page.mouse.move(track["x"] + track["width"] * fraction, y, steps=4)
        seen.append(shown_times(page))  # right after the move: the label must not run ahead of the views
        wait_until(lambda f=fraction: abs(replay.at - f * replay.until) < 0.05 * replay.until, page, timeout=WAIT)
        wait_until(lambda: agree(page) == hms(replay.at), page, timeout=WAIT)
        seen.append(shown_times(page))
    page.mouse.up()
    for label, button, kpi in seen:
        assert label and label == button == kpi, seen


def test_a_click_on_the_replay_timeline_jumps_there(served):
    page = served.page
    replay = open_example(served)
    target = round(0.3 * replay.until)
    point = page.evaluate(JS_AT, ["rp-timeline", target])
    assert point is not None
    page.mouse.click(point["x"], point["y"])
    wait_until(lambda: abs(replay.at - target) <= 2 * replay.interval, page, timeout=WAIT)
    wait_until(lambda: agree(page) == hms(replay.at), page, timeout=WAIT)
    assert not served.server_errors(), served.server_errors()
