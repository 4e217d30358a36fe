"""Every world in the dashboard, without a browser: its tabs, KPIs and faults from its declaration; its recordings
uploaded, replayed, branched and exported; a link to it; Compare on it. (The browser side: test_worlds_browser.py.)"""

from __future__ import annotations

import logging

import pytest

from dashboard.branch import SidePlots
from dashboard.export import page_html
from dashboard.recordings import recording_view
from dashboard.ui import Dashboard
from engine import WORLDS, Simulation, load_recording

#: A scenario of each world, the tab it opens on, and a figure name of that world's replayed plots.
CASES = {
    "default": ("Live", "rp-queue"),
    "faas-basic": ("Functions", "rp-requests"),
    "openb-fgd": ("GPU", "rp-allocation"),
}


def ticked(d: Dashboard, n: int = 3) -> Dashboard:
    for _ in range(n):
        d.loop.tick(0.3)
    return d


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """A ``.scalelab`` of each world (15 simulated minutes, at least 20 samples)."""
    out = {}
    for name in CASES:
        sim = Simulation(name)
        sim.advance(max(900.0, 20 * sim.sections["run"].sample_interval))
        out[name] = sim.record(tmp_path_factory.mktemp("rec") / f"{name}.scalelab")
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_world_opens_on_its_own_tab_with_its_declared_kpis_and_faults(name):
    d = Dashboard(name)
    try:
        tab, _ = CASES[name]
        assert d.active_tab == tab and tab in d.tabset.titles
        view = WORLDS[d.session.world].ui
        d.warm_up()
        for title in d.tabset.titles:  # every tab of the world builds, is fed and draws
            d.show_tab(title)
            ticked(d, 2)
        html = d.kpis.pane.object
        for kpi in view.kpis:
            assert f"data-kpi='{kpi.key}'" in html and kpi.label in html
        assert set(d.fault_card.buttons) == {f.kind for f in view.faults}
    finally:
        d.stop()


def test_a_scenario_switch_shows_the_new_worlds_tabs_and_no_tab_of_the_old_one_is_fed():
    d = ticked(Dashboard("default"))
    live = d.tab_views["Live"]
    d.session.scenario = "openb-fgd"
    ticked(d)
    assert d.active_tab == "GPU" and "Live" not in d.tabset.titles
    rows = live.series.streams["live"].rows()
    ticked(d)
    assert live.series.streams["live"].rows() == rows == 0  # cleared at the switch, and not fed the pod world's rows
    d.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recording_of_each_world_uploads_and_replays_with_its_worlds_plots(name, recordings, caplog):
    caplog.set_level(logging.DEBUG)
    d = Dashboard("default")
    path = recordings[name]
    d.recordings.upload.param.update(filename=path.name, value=path.read_bytes())
    r = d.recordings.replay_tab
    assert not d.message.visible, d.message.object
    assert d.active_tab == "Replay" and r.rec is not None
    figure = CASES[name][1]
    assert figure.removeprefix("rp-") in r.series.figures
    shown = r.series.shown()[r.view.sample_table]
    assert len(shown) == len(load_recording(path).tables[r.view.sample_table])
    for t in (r.until / 3, r.until / 2):  # scrubbing draws the state at each time
        r.seek(t)
        r.tick(0.1, 60.0, False)
        r.flush(r.now())
        assert r.series.shown()[r.view.sample_table]["time"].max() <= t
    assert all(len(rec.getMessage()) < 5000 for rec in caplog.records)  # nothing of the upload's bytes in the log
    d.stop()


def test_an_upload_that_cannot_be_shown_says_so_in_one_line(tmp_path):
    d = Dashboard("default")
    d.recordings.upload.param.update(filename="broken.scalelab", value=b"PK\x03\x04" + bytes(range(256)) * 100)
    assert d.message.visible and "broken.scalelab" in d.message.object and "\n" not in d.message.object
    d.stop()


@pytest.mark.parametrize("name", ["faas-basic", "openb-fgd"])
def test_a_recording_of_each_world_branches_and_the_branch_tab_draws_parent_and_branch(name, recordings):
    d = Dashboard("default")
    rec = load_recording(recordings[name])
    d.recordings.open(rec)
    d.recordings.branch(rec, rec.until / 2)
    assert d.session.branched_from is rec and d.active_tab == "Branch", d.message.object
    d.session.playing = True
    ticked(d)
    tab = d.tab_views["Branch"]
    tab.flush(d.session.sim.now)
    assert len(tab.side_by_side.objects) == 2 * len(tab.side_by_side.objects) // 2 > 0
    d.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_branch_tab_says_it_only_streams_once_its_figures_exist_and_then_makes_none(name, recordings):
    """A tick with the Branch tab shown is drawn unfrozen (no walk of the page's models) when the tab only streams."""
    d = Dashboard("default")
    rec = load_recording(recordings[name])
    d.recordings.open(rec)
    d.recordings.branch(rec, rec.until / 2)
    tab = d.tab_views["Branch"]
    d.session.playing = True
    ticked(d, 4)  # the branch's first samples: a function world's branch side makes its figures
    figures = {id(f) for f in _branch_figures(tab)}
    assert figures and tab.streams_only
    ticked(d, 4)
    tab.flush(d.session.sim.now)
    assert tab.streams_only and {id(f) for f in _branch_figures(tab)} == figures
    d.stop()


def test_a_function_world_branch_tab_does_not_stream_only_while_a_sides_figures_are_to_be_made(recordings):
    d = Dashboard("default")
    rec = load_recording(recordings["faas-basic"])
    d.recordings.open(rec)
    d.recordings.branch(rec, rec.until / 2)
    tab = d.tab_views["Branch"]
    tab.sides = SidePlots(recording_view(rec))  # as for the first branch of this world: no figures yet
    tab.sides.push("parent", rec.tables["function_samples"])
    assert tab.sides.needs_build and not tab.streams_only
    tab.flush(d.session.sim.now)
    assert not tab.sides.needs_build and tab.streams_only
    d.stop()


def _branch_figures(tab):
    if tab.streamed:
        return [pane.object for pane in tab.views.figures.values()]
    return [f for side in tab.sides.plots.values() for f in side.figures.values()]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recording_of_each_world_exports_its_worlds_plots(name, recordings):
    page = page_html(load_recording(recordings[name]))
    assert "export-" + CASES[name][1].removeprefix("rp-") in page


def test_a_link_opens_a_pod_world_scenario_on_its_tab():
    d = Dashboard("default")
    d._apply_link("?scenario=openb-fgd&tab=Placement&scheduler.gpu_policy=BestFit")
    assert d.session.scenario == "openb-fgd" and d.active_tab == "Placement" and not d.message.visible, d.message.object
    assert d.session.sim.sections["scheduler"].gpu_policy == "BestFit"
    assert "scenario=openb-fgd" in d.link_query() and "tab=Placement" in d.link_query()
    d.stop()


def test_compare_on_the_pod_world_pits_two_gpu_policies_and_shows_their_difference():
    d = Dashboard("openb-fgd")
    d.show_tab("Compare")
    compare = d.tab_views["Compare"]
    ticked(d, 4)
    a, b = compare.pair.a.sim.sections["scheduler"], compare.pair.b.sim.sections["scheduler"]
    assert a.gpu_policy != b.gpu_policy
    compare.flush(compare.now())
    assert "data-kpi='gpu_allocated'" in compare.kpi_b.pane.object and "B-A" in compare.kpi_b.pane.object
    d.stop()


def test_the_gpu_policy_switch_changes_the_running_scheduler():
    d = Dashboard("openb-fgd")
    ticked(d)
    tab = d.tab_views["GPU"]
    assert tab.policy.value == "FGD" and set(tab.policy.options) >= {"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"}
    tab.policy.value = "GpuPacking"
    assert d.session.sim.sections["scheduler"].gpu_policy == "GpuPacking" and d.session.overrides["scheduler.gpu_policy"] == "GpuPacking"
    d.stop()


def test_the_gpu_heatmap_hover_names_nodes_and_devices():
    from dashboard.gpu import GpuDeviceView

    d = Dashboard("openb-fgd")
    d.warm_up()
    view: GpuDeviceView = d.tab_views["GPU"].gpu
    assert view.names and all(not n.isdigit() for n in view.names[:5])
    hover = next(t for t in view.figure.tools if type(t).__name__ == "HoverTool")
    labels = hover.formatters["$y"].args["labels"]
    assert labels[-1].startswith(view.names[0]) and "GPU" in hover.formatters["$x"].code
    d.stop()


def test_play_pause_shows_in_its_label_and_in_the_header_at_once_and_the_page_has_no_busy_spinner():
    d = Dashboard("default")
    d.session.playing = False
    assert d.run_card.play.label == "▶ Play" and "data-state='paused'" in d.status.object
    d.session.playing = True
    assert d.run_card.play.label == "❚❚ Pause" and "data-state='running'" in d.status.object
    d.session.speed = 600.0
    assert "speed 600×" in d.status.object
    assert d.page().busy_indicator is None  # a spinner that never stopped while the clock ticked
    d.stop()


def test_the_kpi_row_and_the_header_show_the_same_simulated_time():
    d = ticked(Dashboard("default"), 4)
    d.refresh()
    kpi_time = d.kpis.pane.object.split("data-kpi='time'>")[1].split("<")[0]
    assert f"t = {kpi_time}<" in d.status.object
    d.stop()
