"""The sweep explorer without a browser: a sweep run in the tab's thread fills the plots' data; a point opens
live with its parameters, or from its kept recording; a bad sweep file is shown, and nothing runs."""

from __future__ import annotations

import time

import holoviews as hv
import yaml
from guard import GUARD_S

from dashboard.session import LiveSession
from dashboard.sweeps import SweepExplorer
from engine import Simulation, load_scenario, read_sweep

SWEEP = {
    "name": "kept",
    "scenario": "default",
    "until": 300,
    "seeds": [1, 2],
    "parameters": {"autoscaler.MAX_WORKERS": [3, 9], "autoscaler.MAX_AVG_TIME": [20, 60]},
    "kpis": ["wait_p95", "vm_hours"],
    "keep_recordings": True,
}


def _explorer(tmp_path, sweep: dict, live: LiveSession | None = None) -> SweepExplorer:
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir(exist_ok=True)
    (sweeps / f"{sweep['name']}.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    e = SweepExplorer(live, sweep_dir=str(sweeps), out_root=str(tmp_path / "out"), workers=0)
    e.sweep = sweep["name"]
    return e


def _run(e: SweepExplorer) -> None:
    e.start_sweep()
    deadline = time.monotonic() + GUARD_S
    while e.running is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        e.poll()
    assert e.running is None


def test_a_sweep_in_the_tab_fills_means_front_and_plots_and_is_kept(tmp_path):
    e = _explorer(tmp_path, SWEEP)
    _run(e)
    assert len(e.runs) == 8 and sorted(e.means["point"]) == [0, 1, 2, 3] and (e.means["runs"] == 2).all()
    assert e.progress.value == e.progress.max == 8 and "finished" in e.status.object
    assert e.x_kpi == "vm_hours" and e.y_kpi == "wait_p95" and e.heat_x == "autoscaler.MAX_WORKERS"
    # what the three plots draw: every run and point, the front, one cell per grid pair, one box per point
    pareto = hv.render(e.plots[0].object, backend="bokeh")
    drawn = {(type(r.glyph).__name__, len(next(iter(r.data_source.data.values())))) for r in pareto.renderers}
    assert ("Scatter", 8) in drawn and ("Scatter", 4) in drawn  # the runs, the points
    assert any(kind == "Line" and n >= e.means["on_front"].sum() for kind, n in drawn)  # the front, as steps
    heat = hv.render(e.heat_pane.object, backend="bokeh")
    assert [len(r.data_source.data["wait_p95"]) for r in heat.renderers if "wait_p95" in r.data_source.data] == [4]
    box = e.box_pane.object
    assert sorted(box.data["point"].unique()) == ["#0", "#1", "#2", "#3"] and len(box.data) == 8
    points = e._points(e.runs)
    assert len(points) == 4 and set(points.data["on_front"]) <= {True, False}
    assert e.means["on_front"].any()
    kept = read_sweep(tmp_path / "out" / "kept")
    assert len(kept) == 8 and e.dataset == "kept"


def test_a_point_opens_live_from_its_kept_recording_with_its_parameters(tmp_path):
    live = LiveSession("default", seed=1)
    e = _explorer(tmp_path, SWEEP, live)
    _run(e)
    e.select_point(3)  # MAX_WORKERS 9, MAX_AVG_TIME 60
    assert e.param.open_seed.objects == [1, 2] and not e.open_button.disabled
    e.open_seed = 2
    e.open_selected()
    sim = live.sim
    assert live.scenario == "kept #3" and sim.seed == 2
    assert sim.sections["autoscaler"].MAX_WORKERS == 9 and sim.sections["autoscaler"].MAX_AVG_TIME == 60
    # the kept recording replays the run to its end: the live session goes on from there, as it was
    assert sim.now == 300
    sc = load_scenario("default")
    sc.values["autoscaler"].update(MAX_WORKERS=9, MAX_AVG_TIME=60.0)
    expected = Simulation(sc, seed=2).advance(300).summary()
    row = e.runs[(e.runs.point == 3) & (e.runs.seed == 2)].iloc[0]
    assert sim.summary()["wait_p95"] == expected["wait_p95"] == row["wait_p95"]


def test_without_kept_recordings_a_point_opens_at_t0_and_a_bad_file_is_shown(tmp_path):
    live = LiveSession("default", seed=1)
    e = _explorer(tmp_path, {**SWEEP, "name": "fresh", "keep_recordings": False}, live)
    _run(e)
    e.select_point(0)
    e.open_selected()
    assert live.scenario == "fresh #0" and live.sim.now == 0 and live.sim.sections["autoscaler"].MAX_WORKERS == 3
    bad = _explorer(tmp_path, {**SWEEP, "name": "bad", "parameters": {"autoscaler.MAX_WORKERS": [0, 3]}})
    bad.start_sweep()
    assert bad.running is None and bad.alert.visible and "autoscaler.MAX_WORKERS" in bad.alert.object
    assert not (tmp_path / "out" / "bad").exists()
