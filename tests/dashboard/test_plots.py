"""The plot functions: pure functions of the recorded tables returning HoloViews objects, shared with the notebooks."""

from __future__ import annotations

import json
from pathlib import Path

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from dashboard import plots
from dashboard.frames import (
    SERIES_COLUMNS,
    TIME_LEFT_CLIP,
    NodeLayout,
    cut,
    fault_frame,
    latest_decision,
    placement_deltas,
    placement_grid,
    rescore,
    series_frame,
)
from engine import Scenario, Simulation, load_scenario

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture(scope="module")
def run():
    """The default scenario on a 12-node cluster, a master crash at 600 s and a cap lowered then, 1200 s."""
    data = load_scenario("default").to_dict()
    data.update(name="default-on-cluster", cluster={"topology": "cloud_regions", "nodes": 12, "regions": 3}, scheduler={})
    sim = Simulation(Scenario.from_dict(data, origin="tests")).advance(600)
    sim.inject("master_crash")
    sim.set_params({"autoscaler.MAX_WORKERS": 6})
    sim.advance(1200)
    return sim.frames(), sim.sections["run"].sample_interval


def test_series_frame_is_row_local_so_chunks_equal_the_whole(run):
    frames, interval = run
    samples = frames["samples"]
    whole = series_frame(samples, interval)
    parts = pd.concat([series_frame(samples.iloc[i : i + 37], interval) for i in range(0, len(samples), 37)], ignore_index=True)
    pd.testing.assert_frame_equal(whole, parts)
    assert list(whole.columns) == list(SERIES_COLUMNS)
    cap = TIME_LEFT_CLIP * whole["band_high"]
    assert (whole["time_left_shown"].dropna() <= cap[whole["time_left_shown"].notna()] + 1e-9).all()
    clipped = whole["time_left"] > cap
    assert (whole.loc[clipped, "time_left_clipped"] == cap[clipped]).all() and whole.loc[~clipped, "time_left_clipped"].isna().all()
    assert np.allclose(whole["stack_4"], samples[[*plots.WORKER_STATES]].sum(axis=1))


def test_every_time_plot_is_an_overlay_whose_elements_hold_the_series_itself(run):
    frames, interval = run
    series = series_frame(frames["samples"], interval)
    faults = fault_frame(frames["events"])
    assert len(faults) == 1 and faults["fault"].iloc[0] == "master_crash"
    for name in plots.TIME_PLOTS:
        overlay = plots.time_plot(name, series, faults)
        assert isinstance(overlay, hv.Overlay)
        body = plots.TIME_PLOTS[name].body(series, "live")
        assert all(el.data is series for el in body)  # no copy: what lets a live Buffer stream only new rows
        assert any(isinstance(el, hv.VLines) for el in overlay)  # faults marked on every time plot
    both = plots.time_plot("queue", {"A": series, "B": series.iloc[:10]})
    labels = {el.label for el in both}
    assert {"queue A", "queue B"} <= labels


def test_the_state_at_time_t_keeps_only_what_was_recorded_by_then(run):
    frames, interval = run
    at = cut(frames, 300.0)
    assert at["samples"]["time"].max() <= 300.0 and at["events"]["time"].max() <= 300.0
    assert len(at["nodes"]) == len(frames["nodes"])
    decided = set(at["placements"]["decision"].dropna().astype(int))
    assert set(at["breakdowns"]["decision"]) <= decided
    layout = plots.run_layout(frames, interval, until=300.0)
    assert isinstance(layout, hv.Layout) and len(layout) == 6 + 2
    queue = layout[0].get(0)
    assert queue.data["time"].max() <= 300.0


def test_run_layout_saves_as_a_page(run, tmp_path):
    frames, interval = run
    path = tmp_path / "run.html"
    hv.save(plots.run_layout(frames, interval), str(path), resources="inline")
    text = path.read_text()
    assert path.stat().st_size > 100_000 and "Bokeh" in text


def test_the_placement_grid_counts_each_nodes_replicas_at_each_time(run):
    frames, _ = run
    layout = NodeLayout.from_nodes(frames["nodes"])
    deltas = placement_deltas(frames["placements"])
    times = np.array([0.0, 300.0, 1200.0])
    grid = placement_grid(layout, deltas, times)
    placements = frames["placements"]
    for k, t in enumerate(times):
        upto = placements[placements["time"] <= t]
        expected = (upto["action"] == "bind").sum() - upto["action"].isin(["release", "lost"]).sum()
        assert grid[:, k].sum() == expected
    assert len(layout.labels) == len(frames["nodes"]) and sorted(layout.order) == sorted(frames["nodes"]["node_index"])
    share = placement_grid(layout, deltas, times, "utilisation")
    assert 0.0 <= share.min() and share.max() <= 1.0
    heat = plots.placement_heatmap(layout, deltas, np.linspace(0, 1200, 50))
    image = heat.get(0)
    assert isinstance(image, hv.Image) and image.data[image.vdims[0].name].shape == (len(layout.labels), 50)


def test_a_preview_rescores_with_new_weights_and_says_so_in_its_title(run):
    frames, _ = run
    block = latest_decision(frames["breakdowns"])
    chose = str(block.loc[block.winner, "node"].iloc[0])
    plain = plots.score_heatmap(block, placed_at=120.0)
    assert plain.opts.get().kwargs["title"].startswith("Scores of the placement at 0:02:00: chose " + chose)
    weights = {p: 0.0 for p in block["priority"].unique()} | {"LeastAllocated": 1.0}
    preview = plots.score_heatmap(block, weights=weights, placed_at=120.0)
    again = rescore(block, weights)
    expected = str(again.loc[again.winner, "node"].iloc[0])
    assert preview.opts.get().kwargs["title"].startswith(f"PREVIEW at 0:02:00: would choose {expected} (chose {chose})")
    scored = again[again.scan_position >= 0]
    best = scored.drop_duplicates("node").sort_values("scan_position")
    assert expected == best.loc[best["total"].idxmax(), "node"]


def test_a_decision_with_one_node_or_one_priority_draws(run):
    """One feasible node or one weighted priority (faas-node-autoscaler's kube mode had such decisions): the heatmap
    still draws, one row or one column, instead of failing to infer the image's bounds."""
    frames, _ = run
    block = latest_decision(frames["breakdowns"])
    one_node = block[block["node"] == block.loc[block.winner, "node"].iloc[0]]
    one_priority = block[block["priority"] == block["priority"].iloc[0]]
    for shown, (cols, rows) in ((one_node, (None, 1)), (one_priority, (1, None))):
        image = plots.score_heatmap(shown, placed_at=120.0).get(0)
        left, bottom, right, top = image.bounds.lbrt()
        assert (left, bottom) == (0, 0) and right >= 1 and top >= 1
        assert (cols is None or right == cols) and (rows is None or top == rows)
        hv.render(plots.score_heatmap(shown, placed_at=120.0))


def test_h_mm_ss():
    assert plots.hms(0) == "0:00:00" and plots.hms(3725.4) == "1:02:05" and plots.hms(90061) == "1d 01:01:01"


def _code(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize(
    "name, uses",
    [
        ("01-autoscaler-tour", ["plots.time_plot("]),
        ("02-placement", ["plots.score_heatmap(", "plots.placement_heatmap("]),
        ("03-sweeps", ["plots.time_plot("]),
    ],
)
def test_the_notebooks_draw_the_dashboards_plots_with_the_same_functions(name, uses):
    code = _code(NOTEBOOKS / f"{name}.ipynb")
    assert "from dashboard import plots" in code
    for call in uses:
        assert call in code, f"{name} does not call {call}"
    # no second copy of a dashboard plot: no hand-made timeline or score heatmap
    for copy in ("hv.HeatMap(", 'hv.Curve(samples, "time"', "def breakdown_map", "WORKER_STATES = {"):
        assert copy not in code, f"{name} draws its own {copy}"
