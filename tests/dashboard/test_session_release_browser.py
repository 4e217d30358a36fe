"""A served page lets go of everything once its browser tab closes: its dashboard, live session and simulation are
freed (no reference left anywhere in the process), and not only when the server's ``--unused-session-lifetime`` has
passed. Closed tabs otherwise pile up in the server's memory while the next tabs open (issue 18's memory soak).

The server here keeps an unused session for an hour: what frees a closed tab's page in these tests is the page itself.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from served import GUARD_MS, serve_component, stop_servers, wait_until

from dashboard.ui import Dashboard

pytestmark = pytest.mark.browser

#: A session lifetime far beyond any wait here (ms): only the page's own letting go can free it in time.
HOUR_MS = 3_600_000
#: JS: has the live queue plot got rows?
JS_STREAMING = """() => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;
  for (const m of d._all_models.values()) if (m.name === 'ts-queue')
    return m.renderers.some(r => r.data_source && r.data_source.data.time && r.data_source.data.time.length > 3);
  return false; }"""


@pytest.fixture
def tabs(context):
    """Serve the app (each session's Dashboard noted by a weak reference only) and hand out a function that opens one
    more tab on it, waits until it streams, and returns the tab with weak references to what its session made."""
    made: list[weakref.ref] = []
    context.set_default_timeout(GUARD_MS)  # a loaded machine: waits are for conditions, the guard only bounds a hang
    context.set_default_navigation_timeout(GUARD_MS)

    def app():
        dashboard = Dashboard()
        made.append(weakref.ref(dashboard))
        return dashboard.page()

    pages = [context.new_page()]  # serve_component opens the first tab
    _, port = serve_component(pages[0], app, check_unused_sessions_milliseconds=200, unused_session_lifetime_milliseconds=HOUR_MS)

    def open_tab():
        if len(made) > 1 or pages[0].is_closed():
            pages.append(context.new_page())
            pages[-1].goto(f"http://127.0.0.1:{port}", wait_until="domcontentloaded")
        page = pages[-1]
        page.wait_for_function(JS_STREAMING)
        dashboard = made[-1]()
        refs = {"dashboard": made[-1], "live session": weakref.ref(dashboard.session), "simulation": weakref.ref(dashboard.session.sim)}
        del dashboard
        return page, refs

    yield open_tab
    stop_servers()


def alive(refs: dict[str, weakref.ref]) -> list[str]:
    gc.collect()
    return [name for name, ref in refs.items() if ref() is not None]


def assert_freed(refs: dict[str, weakref.ref]) -> None:
    assert alive(refs) == [], "still held after the tab closed"


def test_a_closed_tab_frees_its_dashboard_session_and_simulation_long_before_the_session_lifetime(tabs):
    page, refs = tabs()
    assert alive(refs) == list(refs)
    page.close()
    wait_until(lambda: assert_freed(refs))


def test_tabs_opened_and_closed_one_after_another_leave_nothing_behind(tabs):
    kept: dict[str, weakref.ref] = {}
    for i in range(3):
        page, refs = tabs()
        kept.update({f"{name} {i}": ref for name, ref in refs.items()})
        page.close()
    wait_until(lambda: assert_freed(kept))


def test_a_page_let_go_when_its_tab_left_stops_again_without_error_once_the_server_is_gone(served):
    """The pod world's page is let go by its own tick when its tab navigates away; stopping it again after the server
    ended (what a notebook or the test fixtures do) must neither clear its plots twice nor touch the closed loop."""
    page, port, made, caplog, messages = served
    page.goto(f"http://127.0.0.1:{port}/?scenario=openb-fgd", wait_until="domcontentloaded")
    wait_until(lambda: any(d.session.scenario == "openb-fgd" and d.ctx.served() for d in made), page)
    pod = next(d for d in made if d.session.scenario == "openb-fgd")
    pod.show_tab("GPU")  # its plots exist (the tab's views are what a second clearing would touch)
    page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
    wait_until(lambda: pod.released, page)
    stop_servers()
    for d in made:
        d.stop()  # raised "Event loop is closed" or KeyError 'time' (a pod plot cleared twice) before
    assert pod.released and not len(pod.sidebar)


def test_a_tab_closed_before_its_page_started_ticking_is_let_go_too(tabs, monkeypatch):
    """A busy browser may close a tab after its socket opened but before the page's onload (the page starts ticking
    there, and its tick is what notices a closed tab): the page's watch lets it go all the same. Here onload's start
    never comes: what the page hands to onload is kept on its document, as Panel keeps it until the session ends."""
    import panel as pn

    def never(callback, threaded=False):
        doc = pn.state.curdoc
        doc.pending_onload = [*getattr(doc, "pending_onload", []), callback]

    first, _ = tabs()  # the fixture's tab, started as usual
    first.close()
    monkeypatch.setattr(pn.state, "onload", never)
    page, refs = tabs()
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.close()
    wait_until(lambda: assert_freed(refs))
