"""The Functions view without a browser: fed from the recorded tables, the same from a live session and a finished run."""

from __future__ import annotations

import holoviews as hv
import numpy as np

from dashboard.functions import SERIES, FunctionsView, is_function_slot, is_function_world
from dashboard.session import LiveSession
from engine import Simulation

hv.extension("bokeh")


def test_a_finished_run_and_a_live_session_fill_the_same_buffers():
    sim = Simulation("faas-edge")
    sim.advance(300)
    finished = FunctionsView.from_frames(sim.frames())
    samples = sim.frame("function_samples")
    assert len(finished.buffer.data) == len(samples)
    assert np.allclose(finished.buffer.data["rps"].to_numpy(dtype=float), samples["rps"].to_numpy(dtype=float))
    grid, (x0, x1), names = finished.grid.data  # every node that can take a replica; some held some
    assert grid.shape[0] == len(names) == (~sim.frame("nodes").storage).sum() and grid.max() >= 1 and x1 > x0

    live = LiveSession("faas-edge")
    view = FunctionsView()
    view.bind_controls(live.sim.sections, live.apply)
    while live.sim.now < 300:
        live.sim.advance(live.sim.now + 7.0)
        view.push(live.poll(), live.sim.now, render=live.sim.now >= 300)
    view.render()
    got = view.buffer.data[SERIES].reset_index(drop=True)
    want = live.sim.frame("function_samples")[SERIES].reset_index(drop=True)
    want = want.iloc[: len(got)]
    assert len(got) >= len(live.sim.frame("function_samples")) - 3 and list(got.function) == list(want.function)
    numeric = [c for c in SERIES if c != "function"]
    assert np.allclose(got[numeric].to_numpy(dtype=float), want[numeric].to_numpy(dtype=float), equal_nan=True)
    assert list(view.table.object.function) == ["resnet-inference", "mobilenet-inference", "speech-inference"]


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
