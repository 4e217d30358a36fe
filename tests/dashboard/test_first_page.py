"""The first page is built lean: the link's world only, the open cards' widgets after the first frame (d18-first)."""

from __future__ import annotations

import panel as pn
from bokeh.document import Document
from panel.io.state import set_curdoc

from dashboard.links import link_start
from dashboard.ui import Dashboard


def test_open_cards_get_their_widgets_at_start_and_a_late_widget_still_drives_the_engine():
    d = Dashboard("default")
    ctl = d.controls
    card = ctl.cards["autoscaler"]
    assert not card.collapsed and "autoscaler" not in ctl.filled  # open, but no widgets yet: the first frame comes first
    d.start()
    assert "autoscaler" in ctl.filled and len(card.objects) > 1
    entry = ctl.sections["autoscaler"].controls["MAX_WORKERS"].entry
    entry.value = 7
    assert d.session.sim.sections["autoscaler"].MAX_WORKERS == 7
    d.stop()


def test_a_collapsed_card_opened_later_shows_the_engine_value_and_applies_its_own():
    d = Dashboard("default")
    d.start()
    card = d.controls.cards["workload"]
    assert card.collapsed and "workload" not in d.controls.filled
    card.collapsed = False
    ctl = d.controls.sections["workload"]
    name = next(n for n, c in ctl.controls.items() if hasattr(c, "entry"))
    assert ctl.controls[name].entry.value == getattr(d.session.sim.sections["workload"], name)
    d.stop()


def test_link_start_takes_the_scenario_and_seed_and_leaves_the_rest():
    scenario, seed, playing, rest = link_start("?scenario=faas-basic&seed=4&playing=false&tab=Compare&autoscaler.MAX_WORKERS=3")
    assert (scenario, seed, playing) == ("faas-basic", 4, False)
    assert "scenario=faas-basic" in rest and "playing" not in rest and "MAX_WORKERS=3" in rest
    assert link_start("?scenario=nowhere&seed=x", "default", 5)[:3] == ("default", 5, None)  # apply_link names both


def test_a_served_page_builds_its_links_world_only_with_the_links_values_in_unopened_cards(monkeypatch):
    doc = Document()
    with set_curdoc(doc):
        monkeypatch.setattr(pn.state.location, "search", "?scenario=openb-fgd&seed=3&scheduler.gpu_policy=BestFit&playing=false")
        d = Dashboard()
    assert d.session.scenario == "openb-fgd" and d.session.seed == 3 and d.session.generation == 1  # built once, not twice
    assert "live_tab" not in d.ctx.parts.made  # no VM Live tab was made for a pod world
    assert d.session.sim.sections["scheduler"].gpu_policy == "BestFit"
    sched = d.controls.sections["scheduler"]
    assert sched.controls["gpu_policy"].widget.value == "BestFit"  # made later, it shows the link's value
    assert d.session.playing  # the first minutes are drawn; the link's pause comes at start
    d.start()
    assert not d.session.playing
    d.stop()


def test_a_served_first_document_holds_the_tab_on_screen_and_the_rest_follows_at_onload(monkeypatch):
    """What a served page sends first (d18-first4, d18-first5): the Live tab's primary plots with the first minutes, no
    sidebar card, no Placement view, no event-log row; the page's onload (here run by hand, as Panel runs it once the browser has the
    first frame) brings the sidebar's cards and the log's rows."""
    waiting: list = []
    monkeypatch.setattr(pn.state, "onload", lambda callback, threaded=False: waiting.append(callback))
    d = Dashboard("default")
    template = d.page()
    assert d.live_tab.series.streams["live"].rows() >= 2  # the first minutes are drawn
    made = d.ctx.parts.made
    assert "placement_tab" not in made and not {"run_card", "fault_card", "controls"} & made
    assert not len(d.sidebar) and "<tr class=" not in d.events.table.object
    grid = d.live_tab.series.layout  # the primary group's three plots; the secondary group's follow at onload
    assert [p.object.name for p in grid] == ["ts-queue", "ts-time_left", "ts-workers"]
    assert template.sidebar.objects == [d.sidebar]
    for callback in waiting:
        callback()
    assert len(d.sidebar) == 4 and "autoscaler" in d.controls.filled
    assert d.events.table.object.count("<tr class=") > 0
    assert [p.object.name for p in grid] == [f"ts-{name}" for name in ("queue", "time_left", "workers", "rates", "waits", "vm_hours")]
    d.stop()


def test_a_served_functions_page_sends_the_top_row_of_function_plots_first_and_the_rest_at_onload(monkeypatch):
    """The functions world's first document (d18-first5): the Functions tab's top two plots with the first minutes; the
    other three are made at onload, with the rows drawn so far."""
    waiting: list = []
    monkeypatch.setattr(pn.state, "onload", lambda callback, threaded=False: waiting.append(callback))
    d = Dashboard("faas-basic")
    d.page()
    fn = d.tabset.active_view().view.plots
    names = [p.object.name for p in fn.layout]
    assert names == ["fn-rps", "fn-latency"] and fn.held() and min(fn.held().values()) >= 2
    for callback in waiting:
        callback()
    assert len(fn.layout) == 5 and all(len(p.object.renderers) for p in fn.layout)
    d.stop()


def test_a_served_pod_page_sends_the_top_row_first_and_the_other_plots_devices_and_waiting_pods_at_onload(monkeypatch):
    """The pod world's GPU tab (d18-switch6): its first frame holds the top two plots with the first minutes; the other
    plots, the device heatmap and the waiting pods join at onload (or, on a loaded page, in the event loop's next turn)."""
    waiting: list = []
    monkeypatch.setattr(pn.state, "onload", lambda callback, threaded=False: waiting.append(callback))
    d = Dashboard("openb-fgd")
    d.page()
    tab = d.tabset.active_view()
    assert len(tab.grid) == 2 and tab.gpu.layout not in tab.layout and tab.waiting not in tab.layout
    assert all(len(p.object.renderers[0].data_source.data["time"]) >= 2 for p in tab.grid)
    for callback in waiting:
        callback()
    assert len(tab.grid) == 5 and tab.gpu.layout in tab.layout and tab.waiting in tab.layout
    d.stop()
