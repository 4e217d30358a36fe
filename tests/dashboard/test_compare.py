"""The Compare tab without a browser: the pair's plots hold its first rows when they join the page, A and B are the same
runs however their first minutes were cut, and they read only what the tab draws. (In Chromium: test_browser.py and
test_world_streams_browser.py.)"""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.compare import build_pair, drawn_tables
from dashboard.session import ComparePair
from dashboard.ui import Dashboard

SCENARIOS = ("default", "faas-basic", "openb-fgd")


def rows_held(figure) -> int:
    return max((len(next(iter(r.data_source.data.values()), [])) for r in figure.renderers if hasattr(r, "data_source")), default=0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_pairs_plots_hold_its_first_minutes_when_they_join_the_tab(name):
    d = Dashboard(name)
    try:
        d.show_tab("Compare")  # not served: the pair is built at once and adopted, no tick has run since
        compare = d.tab_views["Compare"]
        pair = compare.pair
        assert pair is not None and pair.a.sim.now == pair.b.sim.now > 0  # playing: its first minutes were simulated
        plots = (
            compare.views.plots.figures
            if compare.streamed
            else {k: f for side in compare.world_plots.sides.values() for k, f in side.figures.items()}
        )
        assert plots and all(rows_held(f) >= 2 for f in plots.values())
        assert compare.streams_only  # the next ticks only stream
        assert compare.status.visible and compare.status.styles == {"display": "none"}  # hidden by its CSS
        assert "data-kpi=" in compare.kpi_b.pane.object and "B-A" in compare.kpi_b.pane.object
    finally:
        d.stop()


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_and_b_are_the_same_runs_however_their_first_minutes_were_simulated(name):
    warm, first = build_pair(name, None, {}, warm=True)
    at = warm.a.sim.now
    assert at > 0 and warm.b.sim.now == at
    cold = ComparePair(name, None, {})
    for s in cold.sessions:
        s.sim.advance(at)  # in one go, from t = 0
    for built, plain in zip(warm.sessions, cold.sessions, strict=True):
        for table in ("samples", "events", "function_samples"):
            if table in plain.sim.tables:
                pd.testing.assert_frame_equal(built.sim.frame(table), plain.sim.frame(table))
    assert set(first) == {"A", "B"} and all(len(next(iter(rows.values()))) for rows in first.values())


def test_paused_the_pair_starts_at_t0():
    pair, _ = build_pair("default", None, {}, warm=False)
    assert pair.a.sim.now == pair.b.sim.now == 0.0


@pytest.mark.parametrize("name", SCENARIOS)
def test_a_and_b_read_only_the_tables_the_tab_draws_and_their_kpis_read(name):
    pair, first = build_pair(name, None, {}, warm=True)
    for s in pair.sessions:
        wanted = set(drawn_tables(s.view)) | set(s.kpi.tables)
        assert set(s.feed.tables) <= wanted and set(drawn_tables(s.view)) <= set(s.feed.tables)
    assert set(first["A"]) <= set(drawn_tables(pair.a.view)) | set(pair.a.kpi.tables)


def test_a_pair_that_cannot_be_built_says_why_once_and_restart_tries_again(monkeypatch, caplog):
    """A failed build is said in the status line and the server log; ticks do not build it again (no storm of builds),
    the Restart button does."""
    import dashboard.compare as compare_module

    calls = []

    def broken(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("no room for B")

    monkeypatch.setattr(compare_module, "build_pair", broken)
    d = Dashboard("default")
    try:
        d.show_tab("Compare")  # not served: built (and failed) at once
        compare = d.tab_views["Compare"]
        assert compare.pair is None and not compare.building and len(calls) == 1
        assert "could not be built: no room for B" in compare.status.object
        assert compare.status.styles != {"display": "none"}
        assert any("no room for B" in r.getMessage() for r in caplog.records if r.name == "dashboard.compare")
        for _ in range(3):
            compare.tick(0.1, 60.0, True)
        compare.step()
        assert len(calls) == 1
        compare.restart.clicks += 1  # Restart: tried again
        assert len(calls) == 2
    finally:
        d.stop()
