"""The live time plots (Bokeh figures over streamed sources) through the dashboard's own tick, without a browser."""

from __future__ import annotations

import re

import numpy as np

from dashboard.liveplots import GROUPS, group_plots
from dashboard.plots import TIME_PLOTS
from dashboard.ui import Dashboard


def _ends(d: Dashboard, names=None) -> set[float]:
    """Where the live time plots ``names`` (None: all six) end: their x range's end, and the last time of every source
    their renderers draw."""
    ends = {t for name, t in d.views.end_times().items() if names is None or name in names}
    for name, pane in d.views.panes.items():
        if names is not None and name not in names:
            continue
        for r in pane.object.renderers:
            times = r.data_source.data["time"]
            if len(times) and "fault" not in r.data_source.data:
                ends.add(float(times[-1]))
    return ends


def test_each_group_of_live_plots_ends_at_one_time_after_each_tick_and_after_pause_all_six_do():
    d = Dashboard("default")
    d.session.speed = 3600.0
    d.loop.tick(0.1)
    for _ in range(25):
        d.loop.tick(0.1)
        for group in GROUPS:
            assert len(_ends(d, group_plots(group))) == 1, (group, _ends(d, group_plots(group)))
        held = d.views.streams["live"].frame(GROUPS[0])["time"].to_numpy()
        assert _ends(d, group_plots(GROUPS[0])) == {float(held[-1])}
    d.session.playing = False  # Pause: the tick it asks for shows every plot up to the same time
    d.loop.tick(0.1)
    ends = _ends(d)
    assert len(ends) == 1, ends
    assert ends == {float(d.views.streams["live"].frame()["time"].iloc[-1])}
    assert not d.views.streams["live"].pending()


def test_after_a_reset_every_plot_drops_the_old_runs_axes_at_once():
    d = Dashboard("default")
    d.session.speed = 3600.0
    # a tick simulates what its time budget allows (less on a busy machine): tick until the run is past 1000 s
    for _ in range(10_000):
        d.loop.tick(0.2)
        if max(d.views.end_times().values(), default=0.0) > 1000:
            break
    old_end = max(d.views.end_times().values())
    assert old_end > 1000
    d.session.playing = False
    d.session.reset()
    d.loop.tick(0.1)  # the new run is swapped in; paused at t=0 it has no rows yet
    assert d.views.streams["live"].rows() == 0
    for fig in d.views.plots.figures.values():
        assert (fig.x_range.start, fig.x_range.end) == (0.0, 1.0)
        assert (fig.y_range.start, fig.y_range.end) == (0.0, 1.0)
    assert not any(item.visible for item in d.views.plots.fault_items)
    while d.session.sim.sample_count < 3:
        d.session.step()
    d.loop.poll_and_push()
    d.loop.draw(force=True)
    interval = d.session.sim.sections["run"].sample_interval
    for fig in d.views.plots.figures.values():  # the new run's axes, from its first sample
        assert fig.x_range.start == interval and fig.x_range.end < old_end


def test_a_tick_streams_only_the_new_rows():
    from bokeh.document import Document
    from bokeh.document.events import ColumnDataChangedEvent, ColumnsStreamedEvent, ModelChangedEvent

    d = Dashboard("default")
    d.session.speed = 600.0
    d.loop.tick(0.1)
    source = d.views.streams["live"].source
    doc = Document()
    doc.add_root(d.views.plots.figures["queue"])
    seen: list = []
    doc.on_change(lambda event: seen.append(event))
    held = d.views.streams["live"].rows()
    for _ in range(5):
        d.loop.tick(0.1)
    d.loop.draw(force=True)  # the ticks above may all fall within one drawing period (a fast machine)
    to_source = [e for e in seen if getattr(e, "model", None) is source]
    assert to_source and all(isinstance(e, ColumnsStreamedEvent) for e in to_source)  # never the whole data again
    assert not any(isinstance(e, ModelChangedEvent | ColumnDataChangedEvent) and e.model is source for e in seen)
    streamed = sum(len(e.data["time"]) for e in to_source)
    assert streamed == d.views.streams["live"].rows() - held > 0  # each new row once (the window did not roll over)
    assert np.all(np.diff(d.views.streams["live"].frame()["time"].to_numpy()) > 0)


def test_the_pages_first_document_already_holds_the_first_simulated_minutes():
    from bokeh.document import Document

    d = Dashboard("default")
    doc = Document()
    d.page().server_doc(doc)  # what the server sends first, before any tick
    assert d.loop.ticks == 0
    source = d.views.streams["live"].source
    assert source.document is doc and len(source.data["time"]) >= 5  # five samples at least
    assert d.views.plots.x_range.end == source.data["time"][-1] > 0


def test_a_control_change_asks_for_a_tick_at_once_and_that_tick_draws_it():
    """The slider's new value reaches the plot in the tick the change asks for, with no wall time passing: the tick runs
    the engine on to the next sample (the periodic tick is not waited for)."""
    d = Dashboard("default")
    d.session.speed = 60.0
    for _ in range(3):
        d.loop.tick(0.1)
    asked: list[float] = []
    d.loop.tick_soon = lambda: asked.append(d.session.sim.now)
    band = d.controls.sections["autoscaler"]
    high = float(band.live.MAX_AVG_TIME) + 7.0
    band.copy.MAX_AVG_TIME = high  # sent like a user's change: through the controls, to the engine, then on_applied
    assert d.session.sim.sections["autoscaler"].MAX_AVG_TIME == high
    assert len(asked) == 1  # one tick asked for, now
    source = d.views.streams["live"].source
    assert source.data["band_high"][-1] != high
    secondary = d.views.streams["live"].sources[GROUPS[1]]
    secondary_end, secondary_x = float(secondary.data["time"][-1]), d.views.plots.x_ranges[GROUPS[1]].end
    d.loop.tick(0.0)  # the asked-for tick: no wall time has passed, so the clock alone would not advance the run
    assert source.data["band_high"][-1] == high
    assert float(source.data["time"][-1]) > asked[0]
    assert d.loop.tick_asked is False
    # that tick's frame repaints the primary plots only: the secondary ones (their source, their x range) wait
    assert float(secondary.data["time"][-1]) == secondary_end < float(source.data["time"][-1])
    assert d.views.plots.x_ranges[GROUPS[1]].end == secondary_x
    assert {fig.x_range for name, fig in d.views.plots.figures.items() if name in group_plots(GROUPS[0])} == {d.views.plots.x_range}
    d.session.playing = False  # Pause: every plot up to the same time at once
    d.loop.tick(0.0)
    assert float(secondary.data["time"][-1]) == float(source.data["time"][-1])
    assert len(set(d.views.end_times().values())) == 1


def test_every_column_a_live_plot_draws_or_names_on_hover_is_in_its_groups_source():
    from bokeh.models import GlyphRenderer, HoverTool

    d = Dashboard("default")
    for name, pane in d.views.panes.items():
        fig = pane.object
        held = set(d.views.streams["live"].sources[TIME_PLOTS[name].group].data)
        named = set()
        for r in fig.renderers:
            if isinstance(r, GlyphRenderer) and "fault" not in r.data_source.data:
                assert r.data_source is d.views.streams["live"].sources[TIME_PLOTS[name].group], name
                named |= {v.field for v in r.glyph.properties_with_values().values() if isinstance(getattr(v, "field", None), str)}
        for tool in fig.select(HoverTool):
            if any("fault" in r.data_source.data for r in tool.renderers):
                continue
            named |= {field for _, spec in tool.tooltips for field in re.findall(r"@\{(\w+)\}", spec)}
        assert named <= held, (name, named - held)


def test_a_pan_or_zoom_of_either_group_moves_the_other_groups_x_range_in_the_browser():
    from bokeh.events import RangesUpdate

    d = Dashboard("default")
    ranges = d.views.plots.x_ranges
    assert ranges[GROUPS[0]] is not ranges[GROUPS[1]]  # the server moves them apart while playing
    for name, fig in d.views.plots.figures.items():
        group = TIME_PLOTS[name].group
        (follow,) = fig.js_event_callbacks[RangesUpdate.event_name]  # the user's tools only, never a stream or a fit
        assert follow.args["other"] is ranges[GROUPS[1] if group == GROUPS[0] else GROUPS[0]]
        assert fig.xgrid[0].visible is False and fig.ygrid[0].visible  # no x grid: the time axis's ticks stay
