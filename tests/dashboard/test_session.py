"""The live session and the dashboard objects, without a browser."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dashboard.controls import SectionControls, range_pairs
from dashboard.session import ComparePair, LiveSession
from engine import SECTION_CLASSES, tunable_names


def test_tick_advances_by_speed_times_wall_time_and_pause_stops_it():
    s = LiveSession("default")
    s.speed = 100.0
    s.tick(0.1)
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
    assert k["time"] == s.sim.samples()["time"].iloc[-1]
    assert 0.0 <= k["outside_band"] <= 1.0
    assert k["vm_hours"] > 0


def test_reset_keeps_changes_and_scenario_change_drops_them():
    s = LiveSession("default")
    s.apply({"autoscaler.MAX_WORKERS": 4})
    s.tick(0.5)
    gen = s.generation
    s.reset()
    assert s.generation == gen + 1 and s.sim.now == 0.0
    assert s.sim.sections["autoscaler"].MAX_WORKERS == 4
    s.scenario = "edge"
    assert s.overrides == {} and s.sim.sections["autoscaler"].MAX_WORKERS == 24 and s.sim.now == 0.0


def test_compare_pair_runs_the_same_seed_with_two_parameter_sets():
    pair = ComparePair("default", None)
    assert pair.a.sim.seed == pair.b.sim.seed
    assert pair.b.sim.sections["autoscaler"].MAX_WORKERS == pair.a.sim.sections["autoscaler"].MAX_WORKERS // 2
    for _ in range(10):
        pair.tick(0.5)
    assert pair.a.sim.now == pair.b.sim.now > 0
    for s in pair.sessions:
        s.poll()
    diff = pair.kpi_difference()
    assert list(diff["kpi"]) == ["queue", "active_workers", "wait_p95", "vm_hours", "outside_band"]


def test_session_module_imports_no_ui():
    code = "import sys, dashboard.session; print(any(m.split('.')[0] in ('panel', 'bokeh', 'holoviews') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


@pytest.mark.parametrize("key", [k for k in SECTION_CLASSES if k not in ("run",)])
def test_controls_come_from_the_param_classes(key):
    live = SECTION_CLASSES[key]()
    sent = []
    ctl = SectionControls(live, lambda changes: sent.append(changes), key)
    paired = {n for pair in range_pairs(live) for n in pair}
    for name in tunable_names(live):
        p = live.param[name]
        if name in paired or name not in ctl.widgets:
            continue
        w = ctl.widgets[name]
        if getattr(p, "bounds", None) and getattr(w, "start", None) is not None:
            assert (w.start, w.end) == tuple(p.bounds), name
        assert w.value == getattr(live, name)


def test_min_max_pair_is_one_range_and_a_bad_range_shows_an_alert_without_changing_the_engine():
    s = LiveSession("default")
    ctl = SectionControls(s.sim.sections["autoscaler"], s.apply, "autoscaler")
    assert "MIN_AVG_TIME..MAX_AVG_TIME" in ctl.widgets
    ctl._send({"autoscaler.MIN_AVG_TIME": 20.0, "autoscaler.MAX_AVG_TIME": 20.0})
    assert ctl.alert.visible and "MIN_AVG_TIME" in ctl.alert.object
    assert s.sim.sections["autoscaler"].MAX_AVG_TIME == 30.0
    ctl.copy.MAX_WORKERS = 2
    assert not ctl.alert.visible
    assert s.sim.sections["autoscaler"].MAX_WORKERS == 2


def test_dashboard_streams_into_bounded_sources():
    from dashboard import views
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.speed = 3600.0
    for _ in range(6):
        d.session.tick(0.5)
        d.refresh()
    src = d.views.sources["live"]
    n = len(src.data["time"])
    assert 0 < n <= views.WINDOW
    assert d.session.sim.sample_count > views.WINDOW  # the window rolled over
    assert np.all(np.diff(src.data["time"]) > 0)
    d.events.flush()
    assert 0 < d.events.table.object.count("<tr class=") <= views.EVENT_ROWS


def test_placement_views_degrade_without_a_cluster(plain):
    from dashboard.ui import Dashboard

    d = Dashboard(plain)
    d.session.tick(0.5)
    d.refresh()
    d.refresh()
    d.refresh()
    assert d.placement.note.visible and not d.placement.plot.visible
    assert d.node_fault.disabled


def test_score_heatmap_follows_a_weight_change(clustered):
    from dashboard.ui import Dashboard

    d = Dashboard(clustered)
    d.session.speed = 600.0
    for _ in range(5):
        d.session.tick(0.5)
        d.refresh()
    for _ in range(3):
        d.refresh()
    cells = d.scores.source.data
    assert len(cells["weighted"]) > 0
    assert d.placement.source.data["image"][0].shape[0] == len(d.session.sim.frame("nodes"))
    sched = d.controls.sections["scheduler"]
    sched.copy.weight_locality_type = 0.0
    assert d.session.sim.sections["scheduler"].weight_locality_type == 0.0
    d.session.inject("worker_crash")
    for _ in range(20):
        d.session.tick(0.5)
        d.refresh()
        cells = d.scores.source.data
        lt = [w for p, w in zip(cells["priority"], cells["weighted"], strict=True) if p == "LocalityType"]
        if lt and all(v == 0 for v in lt):
            break
    assert lt and all(v == 0 for v in lt)


def test_policy_parameter_cards_show_only_for_the_chosen_policy():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    ctl = d.controls
    key, name, named = ctl._chooser
    assert (key, name, named) == ("policy", "kind", {"hpa", "kpa", "keda"})
    choice = sorted(named)[0]
    ctl.sections[key].copy.param.update(**{name: choice})
    assert getattr(d.session.sim.sections[key], name) == choice
    assert all(ctl.cards[k].visible == (k == choice) for k in named if k in ctl.cards)


def test_a_downloaded_recording_replays_into_a_live_session():
    import json

    from dashboard.ui import Dashboard

    d = Dashboard("default")
    d.session.apply({"autoscaler.MAX_WORKERS": 5})
    d.session.speed = 600.0
    for _ in range(3):
        d.session.tick(0.5)
        d.refresh()
    d.session.inject("master_crash")
    d.session.tick(0.5)
    text = d._recording_file().getvalue()
    other = Dashboard("default")
    other.replay.value = text.encode()
    assert not other.fault_alert.visible, other.fault_alert.object
    assert other.session.sim.now == pytest.approx(d.session.sim.now)
    assert other.session.sim.sections["autoscaler"].MAX_WORKERS == 5
    assert other.controls.sections["autoscaler"].copy.MAX_WORKERS == 5
    assert json.loads(text)["seed"] == other.session.sim.seed
    other.session.tick(0.1)
    other.refresh()
    assert len(other.views.sources["live"].data["time"]) == other.session.sim.sample_count


def test_the_dashboard_renders_as_one_object_for_notebooks():
    import panel as pn
    from bokeh.models import Model

    from dashboard.ui import Dashboard

    model = pn.panel(Dashboard("default")).get_root()
    assert isinstance(model, Model)
    names = {m.name for m in model.select({"type": Model}) if m.name}
    assert {"samples-live", "placement-grid", "score-cells"} <= names


def test_compare_can_pit_two_policies_against_each_other():
    pair = ComparePair("default", None, b_overrides={"policy.kind": "hpa"})
    for _ in range(5):
        pair.tick(0.5)
    assert pair.b.sim.sections["policy"].kind == "hpa" and pair.a.sim.sections["policy"].kind != "hpa"
    assert pair.a.sim.now == pair.b.sim.now > 0


def test_event_log_shows_newest_first_across_batches():
    from dashboard.views import EventLog
    from engine import Simulation

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


def test_a_finished_run_renders_from_its_tables_with_no_engine_behind_it(clustered):
    from dashboard.views import RunView
    from engine import Simulation

    sim = Simulation(clustered).advance(900)
    frames = sim.frames()
    interval = sim.sections["run"].sample_interval
    del sim  # nothing live: the views see only the tables
    view = RunView.from_frames(frames, interval)
    series = view.series.sources["live"].data
    assert len(series["time"]) == len(frames["samples"]) and np.all(np.diff(series["time"]) > 0)
    assert len(view.series.fault_sources["live"].data["time"]) == 0  # no fault in this run
    grid = view.placement.source.data["image"][0]
    assert grid.shape == (len(frames["nodes"]), 120) and grid.max() >= 1
    binds = frames["placements"].query("action == 'bind'")
    assert grid[:, -1].sum() == len(binds) - len(frames["placements"].query("action in ['release', 'lost']"))
    assert len(view.scores.source.data["weighted"]) > 0 and len(view.scores.history) >= 1
    assert view.events.table.object.count("<tr class=") > 0
    assert "data-kpi='vm_hours'" in view.kpi_row.pane.object


def test_controller_extensions_are_toggles_gated_by_seed_exact_mode():
    from dashboard.ui import Dashboard

    d = Dashboard("default")
    ctl = d.controls.sections["controller"]
    sim = d.session.sim
    assert sim.sections["controller"].seed_exact and ctl.widgets["seed_exact"].value
    for name in ("drain_above_cap", "cap_resumes"):
        assert ctl.widgets[name].disabled and "seed_exact off first" in ctl.widgets[name].description
    ctl.copy.seed_exact = False
    assert not sim.sections["controller"].seed_exact
    assert not ctl.widgets["drain_above_cap"].disabled
    ctl.copy.drain_above_cap = True
    assert sim.sections["controller"].drain_above_cap and not ctl.alert.visible
    ctl.copy.seed_exact = True  # an extension is on: refused, with the reason, and the engine keeps its values
    assert ctl.alert.visible and "extension of the seed" in ctl.alert.object
    assert not sim.sections["controller"].seed_exact
    tip = d.controls.sections["autoscaler"].copy.param["MAX_WORKERS"].doc
    assert "only refuses CREATEs" in tip


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
