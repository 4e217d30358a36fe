"""The Functions view without a browser: fed from the recorded tables, the same from a live session and a finished run."""

from __future__ import annotations

import numpy as np

from dashboard.functions import NUMERIC, FunctionsView, is_function_slot, is_function_world
from dashboard.session import LiveSession
from engine import Simulation


def held(view: FunctionsView, function: str) -> dict[str, np.ndarray]:
    return view.plots.streams[function].source.data


def test_a_finished_run_and_a_live_session_fill_the_same_sources():
    sim = Simulation("faas-edge")
    sim.advance(300)
    finished = FunctionsView.from_frames(sim.frames())
    samples = sim.frame("function_samples")
    for f, rows in samples.groupby("function"):
        assert np.allclose(held(finished, f)["rps"], rows["rps"].to_numpy(dtype=float))
    data = finished.heatmap.source.data  # every node that can take a replica; some held some
    grid = data["image"][0]
    assert grid.shape[0] == data["dh"][0] == (~sim.frame("nodes").storage).sum() and grid.max() >= 1 and data["dw"][0] > 0
    # shown by its display style (a change of visible lays the whole page out again in the browser)
    assert finished.heatmap_pane.visible and finished.heatmap_pane.styles["display"] == "flex"

    live = LiveSession("faas-edge")
    view = FunctionsView()
    view.bind_controls(live.sim.sections, live.apply)
    while live.sim.now < 300:
        live.sim.advance(live.sim.now + 7.0)
        view.push(live.poll(), live.sim.now, render=live.sim.now >= 300)
    view.render()
    want_all = live.sim.frame("function_samples")
    assert list(view.plots.built) == list(dict.fromkeys(want_all.function))
    for f, want in want_all.groupby("function"):
        got = held(view, f)
        assert len(got["time"]) == len(want)
        for c in NUMERIC:
            w = want[c].to_numpy(dtype=float)
            if c.startswith("response_"):  # a log axis: zero shows as a gap
                w = np.where(w > 0, w, np.nan)
            assert np.allclose(got[c], w, equal_nan=True), c
    assert list(view.table.object.function) == ["resnet-inference", "mobilenet-inference", "speech-inference"]
    # every plot ends at the same time: one x range, the newest sample
    assert view.plots.x_range.end == float(want_all.time.max())
    view.clear()
    assert all(len(held(view, f)["time"]) == 0 for f in view.plots.built) and not len(view.heatmap.source.data["image"])
    assert view.heatmap_pane.visible and view.heatmap_pane.styles["display"] == "none"


def test_controls_are_generated_per_function_and_apply_live():
    live = LiveSession("faas-edge")
    view = FunctionsView()
    view.bind_controls(live.sim.sections, live.apply)
    assert set(view.section_controls) == {"fn1", "fn2", "fn3"}
    hpa = view.section_controls["fn1"]
    assert "target_utilization" in hpa.widgets and "max_replicas" in hpa.widgets
    hpa.copy.max_replicas = 4
    assert live.sim.sections["fn1"].max_replicas == 4
    hpa.copy.min_replicas = 9  # above max: refused inline, the engine keeps its values
    assert hpa.alert.visible and live.sim.sections["fn1"].min_replicas == 1
    assert is_function_slot("fn3") and not is_function_slot("faas") and is_function_world(live.sim.tables)
