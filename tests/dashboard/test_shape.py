"""The dashboard's shape: no import cycle, nothing below the shell imports it, small modules, every world declared."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import grimp
import pytest

from engine import WORLDS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from test_layering import strongly_connected  # noqa: E402 - the engine's no-cycle test's graph walk

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    g = grimp.build_graph("dashboard")
    return {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}


def test_the_dashboard_import_graph_has_no_cycle(graph):
    cycles = [sorted(c) for c in strongly_connected(graph) if len(c) > 1]
    assert cycles == []


def test_nothing_below_the_shell_imports_it(graph):
    importers = sorted(m for m, imported in graph.items() if "dashboard.ui" in imported)
    assert importers == ["dashboard.app"]


def test_no_dashboard_module_is_over_about_500_lines():
    lengths = {p.name: len(p.read_text().splitlines()) for p in (ROOT / "dashboard").glob("*.py")}
    assert {name: n for name, n in lengths.items() if n > 530} == {}


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_every_world_declares_what_a_ui_shows_of_it(world):
    view = WORLDS[world].ui
    assert view is not None and view.kpis and view.views and view.sample_table in view.tables
    assert len({k.key for k in view.kpis}) == len(view.kpis)
    assert all(k.summary in ("last", "last_valid", "sum_latest", "max_latest", "sum", "share_outside") for k in view.kpis)


@pytest.mark.parametrize("scenario", ["default", "faas-basic", "openb-fgd"])
def test_each_worlds_kpis_read_columns_its_run_records(scenario):
    from dashboard.session import LiveSession

    s = LiveSession(scenario)
    s.sim.advance(300)
    new = s.poll()
    for kpi in s.view.kpis:
        assert kpi.column in new[kpi.table], (kpi.key, kpi.table)
    values = s.kpis()
    assert all(v == v for k, v in values.items() if k not in ("frag_ratio", "wait_p95", "response_p95")), values  # no NaN


def test_a_closed_tabs_undelivered_update_is_one_info_line_not_an_error_with_a_traceback(caplog):
    from tornado.websocket import WebSocketClosedError

    from dashboard.serverlog import MESSAGE, quiet_closed_sockets

    quiet_closed_sockets()
    quiet_closed_sockets()  # once per process, however often a page starts
    logger = logging.getLogger("asyncio")
    assert sum(type(f).__name__ == "ClosedSocketFilter" for f in logger.filters) == 1
    caplog.set_level(logging.INFO)
    try:
        raise WebSocketClosedError()
    except WebSocketClosedError as err:
        logger.error("Task exception was never retrieved\nfuture: <Task exception=%r>", err, exc_info=err)
    logger.error("another asyncio error")
    records = [(r.levelno, r.getMessage(), r.exc_info) for r in caplog.records if r.name == "asyncio"]
    assert records == [(logging.INFO, MESSAGE, None), (logging.ERROR, "another asyncio error", None)]


def test_a_closed_tabs_late_message_is_one_info_line_without_its_content(caplog):
    """A message read just before a tab's socket closed and handled after Bokeh detached its session: Bokeh's
    ``ServerConnection.session`` asserts, and its protocol handler would log the message (an upload's bytes) with a
    traceback. Any other error of that handler stays an error."""
    from bokeh.server.connection import ServerConnection

    from dashboard.serverlog import LATE_MESSAGE, quiet_closed_sockets

    quiet_closed_sockets()
    quiet_closed_sockets()
    logger = logging.getLogger("bokeh.server.protocol_handler")
    assert sum(type(f).__name__ == "LateMessageFilter" for f in logger.filters) == 1
    caplog.set_level(logging.INFO)
    detached = ServerConnection.__new__(ServerConnection)  # as Bokeh leaves it after detach_session()
    detached._session = None
    secret = "UPLOADED-BYTES-" * 20
    try:
        detached.session  # noqa: B018 - the property's assertion is the point
    except AssertionError as err:
        logger.error("error handling message\n message: %r \n error: %r", secret, err, exc_info=True)
    try:
        raise AssertionError("a defect of ours")
    except AssertionError as err:
        logger.error("error handling message\n message: %r \n error: %r", "other", err, exc_info=True)
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger.name]
    assert records[0] == (logging.INFO, LATE_MESSAGE)
    assert records[1][0] == logging.ERROR and "a defect of ours" in records[1][1]
    assert all("UPLOADED-BYTES" not in r.getMessage() for r in caplog.records)


def test_a_tabs_socket_closed_after_its_session_was_released_is_one_info_line(caplog):
    """The page asks for its session to be released when the tab closes; at load the socket's close can be handled
    after that, and Bokeh's ``on_close`` asks the detached connection for its session: Tornado logs "Uncaught exception
    GET /ws" with the ``AssertionError`` (seen in ``make test-busy`` at load ~10). Any other uncaught error stays one."""
    from bokeh.server.connection import ServerConnection

    from dashboard.serverlog import LATE_CLOSE, quiet_closed_sockets

    quiet_closed_sockets()
    quiet_closed_sockets()
    logger = logging.getLogger("tornado.application")
    assert sum(type(f).__name__ == "LateCloseFilter" for f in logger.filters) == 1
    caplog.set_level(logging.INFO)
    detached = ServerConnection.__new__(ServerConnection)  # as Bokeh leaves it after detach_session()
    detached._session = None
    try:
        detached.session.notify_connection_lost()
    except AssertionError:
        logger.error("Uncaught exception GET /ws (127.0.0.1)\nHTTPServerRequest(uri='/ws')", exc_info=True)
    try:
        raise AssertionError("a defect of ours")
    except AssertionError:
        logger.error("Uncaught exception GET / (127.0.0.1)", exc_info=True)
    records = [(r.levelno, r.getMessage(), r.exc_info) for r in caplog.records if r.name == logger.name]
    assert records[0] == (logging.INFO, LATE_CLOSE, None)
    assert records[1][0] == logging.ERROR and records[1][2] is not None
