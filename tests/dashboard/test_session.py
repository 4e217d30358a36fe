"""The live session, the controls and the dashboard objects, without a browser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dashboard import session as session_module
from dashboard.controls import SectionControls, label_of, range_pairs
from dashboard.session import ComparePair, LiveSession
from engine import SECTION_CLASSES, Simulation, tunable_names


def ticked(d, n: int = 5, wall: float = 0.5):
    for _ in range(n):
        d.session.tick(wall, budget=10.0)
        d.refresh()
    return d


# -- the session ---------------------------------------------------------------------------------------------------------
def test_tick_advances_by_speed_times_wall_time_and_pause_stops_it():
    s = LiveSession("default")
    s.speed = 100.0
    assert s.tick(0.1) == pytest.approx(10.0)
    assert s.sim.now == pytest.approx(10.0)
    s.playing = False
    s.tick(0.1)
    assert s.sim.now == pytest.approx(10.0)
    s.step()
    assert s.sim.now == pytest.approx(10.0 + s.sim.sections["run"].sample_interval)


def test_a_stalled_tick_does_not_jump_far_ahead():
    s = LiveSession("default")
    s.speed = 10.0
    s.tick(60.0)
    assert s.sim.now <= 10.0 * 0.5 + 1e-9


def test_a_tick_stops_when_its_wall_budget_is_spent_and_the_achieved_speed_says_so(monkeypatch):
    """A slow engine (each slice costs 30 ms on a fake clock) must not hold the server: the tick gives up the rest."""
    s = LiveSession("default")
    s.speed = 3600.0
    clock = [0.0]
    monkeypatch.setattr(session_module.time, "perf_counter", lambda: clock[0])
    real_advance = s.sim.advance

    def slow_advance(until):
        clock[0] += 0.03
        return real_advance(until)

    s.sim.advance = slow_advance
    advanced = s.tick(0.1, budget=0.04)  # asked for 360 simulated seconds
    assert 0 < advanced < 360.0
    assert clock[0] <= 0.04 + 0.03 + 1e-9  # at most one slice past the budget
    assert s.achieved_speed() == pytest.approx(advanced / 0.1)
    assert s.achieved_speed() < s.speed


def test_bad_combination_returns_the_message_and_keeps_the_last_valid_values():
    s = LiveSession("default")
    s.tick(0.5)
    error = s.apply({"autoscaler.MIN_AVG_TIME": 40.0})
    assert error and "MIN_AVG_TIME" in error
    assert s.sim.sections["autoscaler"].MIN_AVG_TIME == 10.0
    before = s.sim.now
    s.tick(0.2)
    assert s.sim.now > before
    assert s.apply({"autoscaler.MAX_WORKERS": 3}) is None
    assert s.sim.sections["autoscaler"].MAX_WORKERS == 3


def test_poll_hands_each_sample_out_once_and_kpis_follow():
    s = LiveSession("default")
    s.speed = 600.0
    seen = 0
    for _ in range(5):
        s.tick(0.2)
        seen += len(s.poll()["samples"])
    assert seen == s.sim.sample_count > 0
    k = s.kpis()
    assert k["time"] == s.sim.now  # the header's time: the KPI row and the header say the same (defect: they differed by 4-5 s)
    assert 0.0 <= k["outside_band"] <= 1.0
    assert k["vm_hours"] > 0


def test_reset_keeps_changes_and_a_scenario_switch_drops_them_and_takes_the_new_scenarios_seed():
    s = LiveSession("default")
    s.apply({"autoscaler.MAX_WORKERS": 4})
    s.tick(0.5)
    gen = s.generation
    s.reset()
    assert s.generation == gen + 1 and s.sim.now == 0.0
    assert s.sim.sections["autoscaler"].MAX_WORKERS == 4
    s.scenario = "edge"  # edge.yaml says run.seed 2; default's seed 1 must not carry over
    assert s.overrides == {} and s.sim.sections["autoscaler"].MAX_WORKERS == 24 and s.sim.now == 0.0
    assert s.seed == 2 and s.sim.seed == 2


def test_release_lets_go_of_the_simulation():
    s = LiveSession("default")
    s.tick(0.5)
    s.release()
    assert s.stopped and s.sim is None and s.feed is None
    s.tick(0.5)  # a late tick is harmless


def test_compare_pair_runs_the_same_seed_with_two_parameter_sets_on_one_clock():
    pair = ComparePair("default", None)
    assert pair.a.sim.seed == pair.b.sim.seed
    assert pair.b.sim.sections["autoscaler"].MAX_WORKERS == pair.a.sim.sections["autoscaler"].MAX_WORKERS // 2
    for _ in range(10):
        pair.tick(0.5, speed=120.0, budget=10.0)  # no wall budget here: the clock, not the machine, decides
    assert pair.a.sim.now == pair.b.sim.now == pytest.approx(600.0)
    for s in pair.sessions:
        s.poll()
    diff = pair.kpi_difference()
    assert list(diff["kpi"]) == ["queue", "active_workers", "wait_p95", "vm_hours", "outside_band"]


def test_compare_can_pit_two_policies_against_each_other():
    pair = ComparePair("default", None, b_overrides={"policy.kind": "hpa"})
    for _ in range(5):
        pair.tick(0.5)
    assert pair.b.sim.sections["policy"].kind == "hpa" and pair.a.sim.sections["policy"].kind != "hpa"
    assert pair.a.sim.now == pair.b.sim.now > 0


def test_session_and_frames_modules_import_no_ui():
    code = (
        "import sys, dashboard.session, dashboard.frames, dashboard.feed; "
        "print(any(m.split('.')[0] in ('panel', 'bokeh', 'holoviews') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


# -- controls --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [k for k in SECTION_CLASSES if k not in ("run",)])
def test_controls_come_from_the_param_classes(key):
    live = SECTION_CLASSES[key]()
    ctl = SectionControls(live, lambda changes: None, key)
    paired = {n for pair in range_pairs(live) for n in pair}
    for name in tunable_names(live):
        if name in paired or name not in ctl.controls:
            continue
        p, control = live.param[name], ctl.controls[name]
        assert control.widget.value == getattr(live, name)
        if hasattr(control, "entry"):  # numbers: the box has the label and a tooltip naming the parameter
            assert control.entry.label == label_of(p) and f"{key}.{name}" in control.entry.description
            assert control.entry.start is None and control.entry.end is None  # typed values reach the engine, which judges them
        if getattr(control, "slider", None) is not None:
            soft = p.softbounds or p.bounds
            assert (control.slider.start, control.slider.end) == tuple(soft), name


def test_labels_are_human_and_the_slider_spans_the_soft_range():
    s = LiveSession("default")
    ctl = SectionControls(s.sim.sections["autoscaler"], s.apply, "autoscaler")
    cap = ctl.controls["MAX_WORKERS"]
    assert cap.entry.label == "Max workers" and (cap.slider.start, cap.slider.end) == (1, 100)  # of the hard 1-1000
    band = ctl.controls["MIN_AVG_TIME..MAX_AVG_TIME"]
    assert band.low.label.startswith("Queue-drain band (s)") and (band.slider.start, band.slider.end) == (0.0, 300.0)
    assert ctl.controls["MIN_MEASURE_LOAD_HB"].entry.label == "Heartbeats per measurement"


def test_an_out_of_range_typed_value_shows_the_allowed_range_and_the_box_returns_to_the_value_in_force():
    s = LiveSession("default")
    ctl = SectionControls(s.sim.sections["autoscaler"], s.apply, "autoscaler")
    cap = ctl.controls["MAX_WORKERS"]
    for typed in (5000, 0):
        cap.entry.value = typed
        assert cap.message.visible and "[1, 1000]" in cap.message.object and str(typed) in cap.message.object
        assert cap.entry.value == 20 and cap.slider.value == 20
        assert s.sim.sections["autoscaler"].MAX_WORKERS == 20
    cap.entry.value = 500  # beyond the slider, inside the bounds: applied, and the slider widens to reach it
    assert not cap.message.visible and s.sim.sections["autoscaler"].MAX_WORKERS == 500
    assert cap.slider.end == 500 and cap.slider.value == 500


def test_min_above_max_quotes_the_typed_value_and_both_ends_return():
    s = LiveSession("default")
    ctl = SectionControls(s.sim.sections["autoscaler"], s.apply, "autoscaler")
    band = ctl.controls["MIN_AVG_TIME..MAX_AVG_TIME"]
    band.low.value = 45.5
    assert band.message.visible and "45.5" in band.message.object and "MAX_AVG_TIME" in band.message.object
    assert (band.low.value, band.high.value) == (10.0, 30.0) and band.slider.value == (10.0, 30.0)
    assert s.sim.sections["autoscaler"].MIN_AVG_TIME == 10.0
    ctl.copy.MAX_WORKERS = 2  # a change made in code goes the same way
    assert not band.message.visible and s.sim.sections["autoscaler"].MAX_WORKERS == 2
    assert ctl.controls["MAX_WORKERS"].entry.value == 2


def test_policy_parameters_open_inside_the_policy_card_and_controls_of_other_policies_hide():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    ctl = d.controls
    ctl.fill()  # what a page does once its first frame is shown (the open cards get their widgets then)
    policy_card = ctl.cards["policy"]
    assert set(ctl.policy_cards) == {"hpa", "kpa", "keda"} and all(c in policy_card.objects for c in ctl.policy_cards.values())
    band = ctl.sections["autoscaler"].controls["MIN_AVG_TIME..MAX_AVG_TIME"]
    assert band.visible and not any(c.visible for c in ctl.policy_cards.values())
    ctl.sections["policy"].controls["kind"].widget.value = "keda"
    assert d.session.sim.sections["policy"].kind == "keda"
    assert ctl.policy_cards["keda"].visible and ctl.policy_cards["hpa"].visible and not ctl.policy_cards["kpa"].visible  # KEDA's HPA
    assert not band.visible and not ctl.sections["autoscaler"].controls["MIN_MEASURE_LOAD_HB"].visible
    assert ctl.sections["autoscaler"].controls["MAX_WORKERS"].visible  # every policy is capped by it
    assert ctl.sections["keda"].built and not ctl.sections["kpa"].built  # a card not shown makes no widgets


def test_controller_extensions_are_toggles_gated_by_seed_exact_mode():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.controls.cards["controller"].collapsed = False  # a collapsed card makes its widgets when opened
    ctl = d.controls.sections["controller"]
    sim = d.session.sim
    assert sim.sections["controller"].seed_exact and ctl.widgets["seed_exact"].value
    for name in ("drain_above_cap", "cap_resumes"):
        assert ctl.widgets[name].disabled and "seed-exact mode off first" in ctl.controls[name].icon.value
    ctl.widgets["seed_exact"].value = False
    assert not sim.sections["controller"].seed_exact and not ctl.widgets["drain_above_cap"].disabled
    ctl.copy.drain_above_cap = True
    assert sim.sections["controller"].drain_above_cap and not ctl.alert.visible
    ctl.copy.seed_exact = True  # an extension is on: refused, with the reason, and the engine keeps its values
    assert ctl.alert.visible and "extension of the seed" in ctl.alert.object
    assert not sim.sections["controller"].seed_exact and not ctl.widgets["seed_exact"].value


# -- views -----------------------------------------------------------------------------------------------------------------
def test_the_live_time_plots_are_bokeh_figures_over_streamed_sources_and_the_heatmaps_dynamic_maps(clustered):
    import panel as pn
    from bokeh.models import ColumnDataSource

    from dashboard.plots import TIME_PLOTS
    from dashboard.ui import Dashboard

    d = ticked(Dashboard(clustered), 2)
    d.show_tab("Placement")  # built when first shown, with the rows so far
    ticked(d, 1)
    d.compare.rebuild()
    for view in (d.views, d.compare.views):  # each time plot: a Bokeh figure over one bounded source per run (and group)
        assert len(view.panes) == 6
        for name, pane in view.panes.items():
            assert isinstance(pane, pn.pane.Bokeh)
            sources = {r.data_source for r in pane.object.renderers}
            assert {st.sources[TIME_PLOTS[name].group] for st in view.streams.values()} <= sources
            assert all(isinstance(src, ColumnDataSource) for src in sources)
    for view in (d.placement, d.scores):  # the heatmaps: one Bokeh figure each, made once, an image source drawn into
        assert isinstance(view.plot, pn.pane.Bokeh) and view.plot.object is view.heat.figure
        assert len(view.heat.image.data["image"]) == 1 and view.heat.image.data["image"][0].size > 0


def test_the_dashboard_streams_into_bounded_buffers_in_time_order():
    from dashboard import views
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.speed = 3600.0
    ticked(d, 6)
    rows = d.views.streams["live"].rows()
    assert 0 < rows <= views.WINDOW
    assert d.session.sim.sample_count > views.WINDOW  # the window rolled over
    assert np.all(np.diff(d.views.streams["live"].frame()["time"].to_numpy()) > 0)
    assert 0 < d.events.table.object.count("<tr class=") <= views.EVENT_ROWS


def test_a_reset_empties_every_plot_which_then_holds_only_the_new_run():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.speed = 600.0
    ticked(d, 4)
    assert d.views.streams["live"].rows() > 100
    d.session.reset()
    d.session.tick(0.1)
    d.refresh()
    times = d.views.streams["live"].frame()["time"].to_numpy()
    assert len(times) and times[0] == d.session.sim.sections["run"].sample_interval and np.all(np.diff(times) > 0)


def test_after_a_reset_the_controls_change_and_show_the_new_runs_values():
    from dashboard.ui import Dashboard

    d = ticked(Dashboard("default"), 2)
    old = d.session.sim
    d.controls.sections["autoscaler"].controls["MAX_WORKERS"].entry.value = 12
    d.session.reset()  # a new Simulation with new section objects, the change kept
    assert d.session.sim is not old and d.session.sim.sections["autoscaler"].MAX_WORKERS == 12
    cap = d.controls.sections["autoscaler"].controls["MAX_WORKERS"]
    cap.slider.value_throttled = 3  # before the next tick
    assert d.session.sim.sections["autoscaler"].MAX_WORKERS == 3
    assert cap.entry.value == 3 and cap.slider.value == 3  # not the old run's 12
    refused = {"autoscaler.MAX_WORKERS": 5000}
    assert d.session.apply(refused)  # and a refused value returns the box to the new run's value in force
    cap.entry.value = 5000
    assert cap.entry.value == 3 and cap.message.visible


def test_the_placement_tab_applies_only_with_a_cluster_and_the_node_fault_says_why_it_is_off(plain):
    from dashboard.ui import Dashboard

    d = ticked(Dashboard(plain), 2)
    assert "Placement" not in d.tabset.titles and "Live" in d.tabset.titles
    assert d.node_fault.disabled and "no cluster" in d.node_fault.description


def test_a_weight_change_previews_the_latest_placement_at_once_and_a_mode_change_says_it_waits(clustered):
    from dashboard.frames import score_grid
    from dashboard.ui import Dashboard

    d = ticked(Dashboard(clustered), 5)
    d.tabs.active = d.tabset.titles.index("Placement")
    block, _ = d.scores._selected()
    chose = str(block.loc[block.winner, "node"].iloc[0])
    sched = d.controls.sections["scheduler"]
    sched.set_values({"weight_balanced_resource": 0.0, "weight_latency_aware_image_locality": 0.0, "weight_least_allocated": 10.0})
    d.scores.flush(d.session.sim.now)  # the next tick draws it (the change is urgent)
    shown_block, weights, _ = d.scores.shown
    assert weights is not None and weights["LeastAllocated"] == 10.0 and weights["BalancedResource"] == 0.0
    title = d.scores.heat.figure.title.text
    assert title.startswith("PREVIEW") and f"chose {chose}" in title
    assert "apply from the next placement" in d.scores.status.object
    preview = score_grid(__import__("dashboard.frames", fromlist=["rescore"]).rescore(shown_block, weights))
    assert np.nanmax(preview.weighted[:, preview.priorities.index("BalancedResource")]) == 0.0
    sched.set_values({"mode": "kube"})
    d.scores.flush(d.session.sim.now)
    assert d.scores.shown[1] is None and "re-normalises" in d.scores.status.object and "next placement" in d.scores.status.object


def test_rescoring_with_the_recorded_weights_reproduces_the_schedulers_totals_and_winner(clustered):
    from dashboard.frames import latest_decision, rescore

    sim = Simulation(clustered).advance(600)
    bd = sim.frame("breakdowns")
    for decision in bd["decision"].unique()[-5:]:
        block = bd[bd.decision == decision].reset_index(drop=True)
        recorded = dict(block.drop_duplicates("priority")[["priority", "weight"]].itertuples(index=False))
        again = rescore(block, recorded)
        np.testing.assert_array_equal(again["total"].to_numpy(), block["total"].to_numpy())  # exact: same order of sums
        assert (again["winner"] == block["winner"]).all()
    assert len(latest_decision(bd)) and latest_decision(bd)["decision"].nunique() == 1


def test_a_finished_run_renders_from_its_tables_with_no_engine_behind_it(clustered):
    from dashboard.views import HEATMAP_COLUMNS, RunView

    sim = Simulation(clustered).advance(900)
    frames = sim.frames()
    interval = sim.sections["run"].sample_interval
    del sim  # nothing live: the views see only the tables
    view = RunView.from_frames(frames, interval)
    series = view.series.streams["live"].frame()
    assert len(series) == len(frames["samples"]) and np.all(np.diff(series["time"]) > 0)
    grid = view.placement.grid()
    assert grid.shape == (len(frames["nodes"]), HEATMAP_COLUMNS) and grid.max() >= 1
    binds = frames["placements"].query("action == 'bind'")
    assert grid[:, -1].sum() == len(binds) - len(frames["placements"].query("action in ['release', 'lost']"))
    assert view.scores.shown is not None and len(view.scores.history) >= 1
    assert view.events.table.object.count("<tr class=") > 0
    assert "data-kpi='vm_hours'" in view.kpi_row.pane.object


def test_a_downloaded_recording_replays_into_a_live_session():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.apply({"autoscaler.MAX_WORKERS": 5})
    d.session.speed = 600.0
    ticked(d, 3)
    d.session.inject("master_crash")
    d.session.tick(0.5)
    text = d._recording_file().getvalue()
    other = Dashboard("default")
    other.replay.value = text.encode()
    assert not other.message.visible, other.message.object
    assert other.session.sim.now == pytest.approx(d.session.sim.now)
    assert other.session.sim.sections["autoscaler"].MAX_WORKERS == 5
    assert other.controls.sections["autoscaler"].copy.MAX_WORKERS == 5
    assert json.loads(text)["seed"] == other.session.sim.seed
    times = other.views.streams["live"].frame()["time"].to_numpy()
    assert len(times) == other.session.sim.sample_count and np.all(np.diff(times) > 0)  # the history once, in order
    other.replay.value = b"{not json"
    assert other.message.visible and "Recording not loaded" in other.message.object


def test_a_link_carries_every_parameter_and_a_bad_one_is_named_while_the_rest_apply():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.apply({"autoscaler.MAX_WORKERS": 7, "policy.kind": "hpa"})
    query = d.link_query()
    assert "scenario=default" in query and "autoscaler.MAX_WORKERS=7" in query and "policy.kind=hpa" in query
    other = Dashboard("default")
    other._apply_link(query)
    assert other.session.sim.sections["autoscaler"].MAX_WORKERS == 7 and other.session.sim.sections["policy"].kind == "hpa"
    assert other.controls.sections["autoscaler"].controls["MAX_WORKERS"].entry.value == 7
    bad = Dashboard("default")
    bad._apply_link("?scenario=nowhere&autoscaler.MAX_WORKERS=5000&autoscaler.DECISION_INTERVAL=20&tab=Placement")
    assert bad.message.visible and "'nowhere' is not here" in bad.message.object and "5000" in bad.message.object
    assert bad.session.scenario == "default" and bad.session.sim.sections["autoscaler"].DECISION_INTERVAL == 20
    assert bad.active_tab == "Placement"


def test_a_row_added_to_the_tab_table_is_built_when_first_shown_and_fed_the_tables_it_names(plain):
    import panel as pn

    from dashboard import tabtable, ui
    from dashboard.tabs import Tab, TabBase, TabSpec

    class CountingTab(TabBase, pn.viewable.Viewer):
        tables = ("decisions",)

        def __init__(self, ctx):
            super().__init__()
            self.rows, self.flushed, self.cleared = 0, 0, 0

        def push(self, new, now):
            self.rows += len(new.get("decisions", []))

        def flush(self, now, budget=float("inf")):
            self.flushed += 1
            return True

        def clear(self):
            self.cleared += 1

        def __panel__(self):
            return pn.pane.Markdown("decisions")

    saved = list(tabtable.TABS)
    try:
        before = [t.title for t in tabtable.TABS].index("Compare")
        tabtable.TABS.insert(before, TabSpec("Decisions", CountingTab, applies=lambda s: "decisions" in s.sim.tables))
        tabtable.TABS.append(TabSpec("Never", CountingTab, applies=lambda s: False))
        d = ticked(ui.Dashboard(plain), 3)
        assert d.tabset.titles == ["Live", "Replay", "Decisions", "Compare", "Sweeps", "What-if"]  # Placement and Branch do not apply
        assert "Decisions" not in d.tab_views  # built when first shown, not before
        d.show_tab("Decisions")
        tab = d.tab_views["Decisions"]
        assert isinstance(tab, Tab)
        assert tab.rows == d.session.feed.cursors["decisions"] > 0  # caught up with the rows recorded before it was built
        ticked(d, 2)
        assert tab.rows == d.session.feed.cursors["decisions"] > 0 and tab.flushed >= 1  # the rows so far, then the new ones
        d.session.reset()
        d.refresh()
        assert tab.cleared == 1
    finally:
        tabtable.TABS[:] = saved


def test_event_log_shows_newest_first_across_batches():
    from dashboard.views import EventLog

    sim = Simulation("default")
    log = EventLog()
    seen = 0
    for t in (100, 200, 300):  # three batches flushed at once, as between two table updates
        sim.advance(t)
        log.push(sim.events(seen))
        seen = sim.event_count
    log.flush()
    times = log.rows["time"].tolist()
    assert len(times) > 10
    assert times == sorted(times, reverse=True)
    assert times[0] == sim.events()["time"].max()


def test_the_dashboard_renders_as_one_object_for_notebooks():
    import panel as pn
    from bokeh.models import Model

    from dashboard.ui import Dashboard

    model = pn.panel(Dashboard("default")).get_root()
    assert isinstance(model, Model)
    names = {m.name for m in model.select({"type": Model}) if m.name}
    assert {"ts-queue", "ts-time_left", "ts-workers", "ts-rates", "ts-waits", "ts-vm_hours"} <= names


def test_stop_releases_the_simulations_and_every_plots_data():
    from dashboard.ui import Dashboard

    d = ticked(Dashboard("default"), 3)
    d.compare.rebuild()
    d.stop()
    assert d.session.sim is None and d.compare.pair is None
    assert d.views.streams["live"].rows() == 0


RECORDINGS = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "bad" / "recordings"


def test_every_bad_uploaded_recording_shows_one_line_with_its_file_name_and_the_session_keeps_running():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    sim = d.session.sim
    names = sorted(p.name for p in RECORDINGS.glob("*.json") if p.name != "good.json")
    assert len(names) >= 12
    for name in names:
        before = sim.now
        d.replay.filename = name
        d.replay.value = (RECORDINGS / name).read_bytes()
        assert d.fault_alert.visible and d.fault_alert.object.startswith(f"Recording not loaded: {name}: "), (name, d.fault_alert.object)
        assert "\n" not in d.fault_alert.object and "Traceback" not in d.fault_alert.object
        assert d.session.sim is sim, name  # nothing half-loaded
        d.session.tick(0.5)
        assert sim.now > before


def test_the_good_recording_of_the_corpus_loads_into_the_dashboard():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.replay.filename = "good.json"
    d.replay.value = (RECORDINGS / "good.json").read_bytes()
    assert not d.fault_alert.visible and d.session.sim.now == 300.0 and d.session.scenario == "edge"


def test_no_private_bokeh_or_panel_name_is_used_by_the_dashboard():
    """Public library API only: the private names the dashboard once reached for are gone from every module."""
    import re

    private = re.compile(r"_push_freeze|_pop_freeze|_freeze_count|models\.invalidate|_change_callbacks|\._session\b|state\._")
    root = Path(__file__).resolve().parents[2] / "dashboard"
    found = {p.name: private.findall(p.read_text()) for p in root.glob("*.py")}
    assert {name: hits for name, hits in found.items() if hits} == {}
