"""Recorded sessions in the dashboard, without a browser: save, load (no simulation), scrub, branch, bad files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.frames import NodeLayout, cut, latest_decision, placement_deltas, placement_grid
from dashboard.recordings import kpis_at
from dashboard.replay import is_session_file
from dashboard.ui import Dashboard
from engine import InputError, Scenario, Simulation, load_recording, load_scenario

ROOT = Path(__file__).resolve().parents[2]
EDGE = ROOT / "data" / "recordings" / "edge-reweighted.scalelab"
BAD_SESSIONS = sorted(p for p in (ROOT / "tests" / "data" / "bad" / "sessions").glob("*.scalelab") if p.name != "good.scalelab")


def upload(d: Dashboard, path: Path, data: bytes | None = None) -> None:
    """What the browser's file input does: the file's name, then its bytes."""
    d.recordings.upload.param.update(filename=path.name, value=path.read_bytes() if data is None else data)


def at(d: Dashboard, t: float) -> None:
    """Scrub the replay to ``t`` and draw it (what the dashboard's tick and flush do when served)."""
    r = d.recordings.replay_tab
    r.seek(t)
    r.tick(0.1, 60.0, False)
    r.flush(r.now())


@pytest.fixture
def dashboard():
    d = Dashboard("default")
    yield d
    d.stop()


def test_a_saved_session_is_the_live_run_with_its_control_actions(dashboard):
    d = dashboard
    s = d.session
    s.sim.advance(120)
    s.apply({"autoscaler.MAX_WORKERS": 7})
    s.inject("worker_crash")
    d.speed.value = 600.0  # the sidebar's speed slider
    s.playing = False
    s.sim.advance(300)
    data = d.recordings._session_file().getvalue()
    assert d.recordings.save.filename == "default-seed1-t0h05m.scalelab"
    rec = load_recording("saved.scalelab", data=data)
    for table in s.sim.tables:
        pd.testing.assert_frame_equal(rec.tables[table], s.sim.frame(table), obj=table)
    assert [(c["time"], c["action"]) for c in rec.manifest["controls"]] == [
        (0.0, "play"),
        (120.0, "speed"),
        (120.0, "pause"),
        (300.0, "save"),
    ]
    assert rec.changes.query("kind != 'control'")[["time", "kind", "name"]].values.tolist() == [
        [120.0, "param", "autoscaler.MAX_WORKERS"],
        [120.0, "fault", "worker_crash"],
    ]
    rec.replay()  # every table reproduced


def test_loading_a_session_file_builds_no_simulation_and_shows_every_view_at_its_end(dashboard, monkeypatch):
    d = dashboard
    rec = load_recording(EDGE)

    def forbidden(*a, **k):
        raise AssertionError("a simulation was built or advanced")

    monkeypatch.setattr(Simulation, "__init__", forbidden)
    monkeypatch.setattr(Simulation, "advance", forbidden)
    upload(d, EDGE)
    r = d.recordings.replay_tab
    assert d.active_tab == "Replay" and not d.session.playing and r.rec.digest == rec.digest
    assert r.at == rec.until == 1800.0
    assert r.series.rows() == len(rec.tables["samples"])
    assert len(r.events.rows) == min(len(rec.tables["events"]), 800)
    assert r.placement.nodes is not None and r.placement.grid().sum() > 0
    assert r.scores.latest is not None and r.scores.shown is not None
    assert "data-kpi='queue'" in r.kpi_row.pane.object and f">{int(kpis_at(rec, 1800.0)['queue'])}<" in r.kpi_row.pane.object
    assert "edge-reweighted.scalelab" in r.info.object and not r.intro.visible
    assert r.export.filename == "edge-reweighted.html"


@pytest.mark.parametrize("path", [EDGE, ROOT / "data" / "recordings" / "master-crash.scalelab"], ids=lambda p: p.stem)
def test_every_view_shows_the_state_at_the_scrubbed_time_forward_and_back(dashboard, path):
    d = dashboard
    rec = load_recording(path)
    d.recordings.open(rec)
    r = d.recordings.replay_tab
    for t in (650.0, 1200.0, 97.0, 0.0, 1500.0, rec.until):
        at(d, t)
        state = cut(rec.tables, t)
        pd.testing.assert_frame_equal(r.series.shown()["samples"], state["samples"], obj=f"samples at {t}")
        pd.testing.assert_frame_equal(r.series.shown()["events"], state["events"], obj=f"events at {t}")
        shown_events = r.events.rows["time"].to_numpy()
        assert (shown_events <= t).all() and len(shown_events) == min(len(state["events"]), 800), t
        assert r.tracker.kpis(t) == kpis_at(rec, t)
        if "nodes" in rec.tables:
            layout = NodeLayout.from_nodes(rec.tables["nodes"])
            grid = placement_grid(layout, placement_deltas(state["placements"]), r.placement.times)
            np.testing.assert_array_equal(r.placement.grid(), grid)
            latest = latest_decision(state["breakdowns"])
            assert (r.scores.shown is None) == (len(latest) == 0), t
            if len(latest):
                assert int(r.scores.shown[0]["decision"].iloc[0]) == int(latest["decision"].iloc[0])
        assert r.slider.value == t and r.cursor.location == t


def test_the_replay_plays_on_the_sidebar_clock_jumps_to_markers_and_starts_again_when_played_at_its_end(dashboard):
    d = dashboard
    d.recordings.open(load_recording(EDGE))
    r = d.recordings.replay_tab
    assert list(r.jump.options)[1:] == [
        "0:00:00  control  play 60",
        "0:10:00  param  scheduler.weight_locality_type = 0.0",
        "0:10:00  param  scheduler.weight_latency_aware_image_locality = 5.0",
        "0:11:40  fault  worker_crash",
    ]
    r.jump.value = r.jump.options["0:11:40  fault  worker_crash"]
    r.tick(0.1, 60.0, False)
    assert r.at == 700.0
    at(d, 600.0)
    r.tick(0.5, 120.0, True)
    assert r.at == pytest.approx(660.0)
    r.step()
    assert r.at == pytest.approx(665.0)
    r.reset()
    assert r.at == 0.0
    at(d, r.until)
    r.tick(0.1, 60.0, False)
    r.tick(0.1, 60.0, True)  # Play pressed at the end
    assert r.at == 0.0
    assert r.run_state(False) == ("Replay paused", "state replay")


def test_a_branch_from_the_middle_is_the_parent_up_to_the_branch_time_then_goes_its_own_way(dashboard, tmp_path):
    d = dashboard
    rec = load_recording(ROOT / "data" / "recordings" / "cap-lowered.scalelab")
    d.recordings.open(rec)
    at(d, 1200.0)
    d.recordings.replay_tab.branch.clicks += 1  # "Branch here"
    s = d.session
    assert d.active_tab == "Branch" and s.sim.now == 1200.0 and not s.playing
    assert s.sim.parent == {"file": "cap-lowered.scalelab", "digest": rec.digest, "branch_time": 1200.0}
    assert s.branched_from is rec and d.run_card.scenario_select.value == "default" and s.overrides == {"autoscaler.MAX_WORKERS": 20}
    assert d.controls.sections["autoscaler"].live is s.sim.sections["autoscaler"]  # the controls show and change the branch
    assert s.apply({"autoscaler.MAX_WORKERS": 3}) is None  # what if the cap had been lowered again?
    s.sim.advance(1800.0)
    d.refresh()
    for table in ("samples", "events", "decisions", "placements"):
        parent, branch = rec.tables[table], s.sim.frame(table)
        pd.testing.assert_frame_equal(parent[parent.time < 1200], branch[branch.time < 1200], obj=table)
    parent, branch = rec.tables["samples"], s.sim.samples()
    assert parent.query("time > 1500").workers_total.max() > 3 >= branch.query("time > 1500").workers_active.max()
    tab = d.recordings.branch_tab
    assert tab.views.streams["parent"].rows() == (parent.time >= 1200).sum()
    assert tab.views.streams["branch"].rows() == (branch.time >= 1200).sum()
    assert "B-A" in tab.kpi_branch.pane.object
    child = load_recording(s.sim.record(tmp_path / "what-if.scalelab"))
    assert child.parent["branch_time"] == 1200.0 and child.parent["file"] == "cap-lowered.scalelab"
    s.reset()  # from t=0: no longer a branch, its tab goes
    d.refresh()
    assert "Branch" not in d.tabset.titles and s.branched_from is None


@pytest.mark.parametrize("path", BAD_SESSIONS, ids=lambda p: p.name)
def test_a_bad_session_file_gives_one_line_naming_it_and_nothing_is_half_loaded(dashboard, path):
    d = dashboard
    good = load_recording(EDGE)
    d.recordings.open(good)
    d.tabs.active = d.tabset.titles.index("Live")
    d.session.playing = True
    with pytest.raises(InputError) as engine_says:
        load_recording(path)
    upload(d, path)
    message = d.message.object
    assert message == f"Recording not loaded: {path.name}{str(engine_says.value).removeprefix(str(path))}"
    assert "\n" not in message and d.message.visible
    assert d.recordings.replay_tab.rec is good and d.active_tab == "Live"  # the replay shown before stays, whole
    t = d.session.sim.now
    d.session.tick(0.5, budget=10.0)
    assert d.session.sim.now > t  # and the live run carries on


def test_an_old_json_recording_still_loads_into_the_live_run(dashboard, tmp_path):
    d = dashboard
    sim = Simulation("default", seed=4).advance(200)
    sim.set_params({"autoscaler.MAX_WORKERS": 5})
    sim.advance(300)
    path = tmp_path / "old.json"
    path.write_text(__import__("json").dumps(sim.recording()))
    d.tabs.active = d.tabset.titles.index("Replay")
    upload(d, path)
    assert d.active_tab == "Live" and d.session.seed == 4 and d.run_card.seed_input.value == 4
    assert d.session.sim.now == 300.0 and d.session.sim.sections["autoscaler"].MAX_WORKERS == 5
    assert not is_session_file(path.read_bytes(), "old.json") and is_session_file(EDGE.read_bytes(), "x")


def test_the_export_buttons_give_a_page_of_the_live_run_and_of_the_replayed_recording(dashboard):
    d = dashboard
    d.session.sim.advance(300)
    page = d.recordings._page_file().getvalue()
    assert page.startswith(b"<!DOCTYPE html>") and d.recordings.export.filename == "default-seed1-t0h05m.html"
    d.recordings.open(load_recording(EDGE))
    page = d.recordings.replay_tab._page_file()
    assert isinstance(page, io.BytesIO) and b"edge-reweighted.scalelab" in page.getvalue()


def test_a_branch_that_would_hold_the_server_for_minutes_is_refused_in_one_line(dashboard, monkeypatch):
    from engine.core.budget import Estimate

    d = dashboard
    rec = load_recording(EDGE)
    d.recordings.open(rec)
    live = d.session.sim
    monkeypatch.setattr(Simulation, "estimate", lambda self, until: Estimate(until, jobs=1e9, samples=0, heartbeats=0, bytes=0))
    d.recordings.branch(rec, 900.0)
    assert d.message.object.startswith("Branch not made: edge-reweighted.scalelab: re-simulating it up to 0:15:00 would take ~")
    assert d.session.sim is live and d.session.branched_from is None and d.active_tab == "Replay"


def test_a_replay_makes_the_gpu_figure_only_for_a_cluster_with_gpus(dashboard, tmp_path):
    from bokeh.document import Document

    d = dashboard
    doc = Document()
    doc.add_root(d.__panel__().get_root(doc))
    cpu_nodes = tmp_path / "cpu.csv"  # a cluster of two nodes without GPUs
    pd.DataFrame({"sn": ["x", "y"], "cpu_milli": [64000] * 2, "memory_mib": [65536] * 2, "gpu": [0, 0]}).to_csv(cpu_nodes, index=False)
    no_gpu = load_scenario("default").to_dict()
    no_gpu["cluster"] = {"topology": "openb", "openb_file": str(cpu_nodes)}
    path = Simulation(Scenario.from_dict(no_gpu), seed=1).advance(300).record(tmp_path / "vm.scalelab")
    upload(d, path)
    gpu = d.recordings.replay_tab.placement_tab.gpu
    assert d.active_tab == "Replay" and gpu.figure is None and not gpu.layout.visible
    assert doc.select_one({"name": "gpu-device-heatmap"}) is None  # no hidden figure for the page to build
    placed = doc.select_one({"name": "rp-placement-heatmap"})
    assert placed is not None and len(next(iter(d.recordings.replay_tab.placement.heat.image.data.values())))
    path = Simulation("openb-fgd").advance(300).record(tmp_path / "pod.scalelab")
    upload(d, path)
    assert gpu.figure is not None and gpu.layout.visible and np.isfinite(gpu.used).any()
    assert len(gpu.source.data["image"]) == 1 and doc.select_one({"name": "gpu-device-heatmap"}) is gpu.figure


def test_a_functions_replay_draws_its_five_plots_with_data_and_one_hover_per_plot(tmp_path):
    from bokeh.models import GlyphRenderer, HoverTool

    from dashboard.functions import FIGURES

    d = Dashboard("faas-basic")
    try:
        sim = Simulation("faas-basic").advance(300)
        upload(d, sim.record(tmp_path / "fn.scalelab"))
        series = d.recordings.replay_tab.series
        assert list(series.figures) == list(FIGURES)
        functions = set(sim.frame("function_samples")["function"].astype(str))
        for name, fig in series.figures.items():
            curves = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
            assert curves and all(len(r.data_source.data["time"]) for r in curves), name  # every curve has data
            assert {r.name.split(" ")[0] for r in curves} == functions, name
            assert all(r.nonselection_glyph == "auto" and r.muted_glyph == "auto" for r in curves)
            (hover,) = fig.select(HoverTool)  # one hover names each curve under the mouse and its value
            assert set(hover.renderers) == set(curves) and "$name" in hover.tooltips and "$snap_y" in hover.tooltips
            assert "@{time}" in hover.formatters
    finally:
        d.stop()
