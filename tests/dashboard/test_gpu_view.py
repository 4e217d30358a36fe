"""The placement view's per-device GPU use: built from the recorded tables, drawn in Chromium when the cluster has GPUs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import expect
from served import GUARD_MS, serve_component, stop_servers

from dashboard.gpu import SOURCE_NAME, GpuDeviceView
from dashboard.ui import Dashboard
from dashboard.views import RunView
from engine import Scenario, Simulation, load_scenario


def gpu_scenario() -> Scenario:
    """The default workload on 30 GPU nodes of the openb list; each worker asks for 0.3 GPU, placed by FGD."""
    data = load_scenario("default").to_dict()
    data.update(
        name="default-on-gpus",
        cluster={"topology": "openb", "openb_nodes": 30, "openb_gpu_nodes_only": True, "worker_gpus": 0.3, "storage_nodes": False},
        scheduler={"mode": "kube", "gpu_policy": "FGD"},
    )
    return Scenario.from_dict(data, origin="tests")


def test_the_grid_follows_binds_and_releases_device_by_device():
    view = GpuDeviceView()
    nodes = pd.DataFrame({"node_index": [0, 1, 2], "node": list("abc"), "gpu_model": ["T4", "", "A10"], "gpu_count": [2, 0, 1]})
    placements = pd.DataFrame(
        {
            "action": ["bind", "bind", "bind", "pending", "release"],
            "node_index": pd.array([0, 0, 2, None, 0], dtype="Int64"),
            "gpu_milli": [300, 1000, 500, 300, 300],
            "gpu_devices": pd.array([2, 1, 1, None, 2], dtype="Int64"),
        }
    )
    view.push(nodes, placements.iloc[:4])
    assert view.layout.visible and view.models == ["A10", "T4"]  # GPU nodes only, by model
    np.testing.assert_array_equal(view.used, [[0.5, np.nan], [1.0, 0.3]])
    view.push(pd.DataFrame(), placements.iloc[4:])
    np.testing.assert_array_equal(view.used, [[0.5, np.nan], [1.0, 0.0]])
    view.render()
    assert view.summary.object.startswith("2 GPU nodes, 3 devices: 1.50 GPUs in use")
    sent = view.source.data["image"][0]  # what goes to the page: top row first, 4 bytes a device
    assert sent.dtype == np.float32 and sent.nbytes == 4 * view.used.size
    np.testing.assert_array_equal(sent, np.array([[1.0, 0.0], [0.5, np.nan]], dtype=np.float32))


def test_a_finished_run_shows_what_its_placements_took(tmp_path):
    sim = Simulation(gpu_scenario(), seed=3).advance(600)
    view = RunView.from_frames(sim.frames(), 5.0)
    placements = sim.frame("placements")
    on = placements[placements.action == "bind"].gpu_milli.sum() - placements[placements.action.isin(["release", "lost"])].gpu_milli.sum()
    assert view.gpu.layout.visible and np.nansum(view.gpu.used) == pytest.approx(on / 1000)
    assert ((view.gpu.used > 0) & (view.gpu.used < 1)).any()  # 0.3-GPU workers share devices
    # without GPUs the view stays hidden
    cpu_nodes = tmp_path / "cpu.csv"
    pd.DataFrame({"sn": ["x", "y"], "cpu_milli": [64000] * 2, "memory_mib": [65536] * 2, "gpu": [0, 0]}).to_csv(cpu_nodes, index=False)
    no_gpu = load_scenario("default").to_dict()
    no_gpu["cluster"] = {"topology": "openb", "openb_file": str(cpu_nodes)}
    assert not RunView.from_frames(Simulation(Scenario.from_dict(no_gpu), seed=1).advance(120).frames(), 5.0).gpu.layout.visible


@pytest.mark.browser
def test_the_placement_tab_shows_per_device_gpu_use_in_chromium(page, artifacts):
    made: list[Dashboard] = []

    def app():
        d = Dashboard(gpu_scenario(), seed=3)
        made.append(d)
        return d

    page.set_viewport_size({"width": 1500, "height": 1300})
    messages, _ = serve_component(page, app)
    js = f"""() => {{
      const d = window.Bokeh && Bokeh.documents[0]; if (!d) return null;
      const s = d.get_model_by_name('{SOURCE_NAME}'); if (!s || !s.data.image.length) return null;
      const img = s.data.image[0]; return Array.from(img).filter(v => v > 0).length;
    }}"""
    try:
        page.locator(".bk-tab", has_text="Placement").click()
        page.wait_for_function(f"() => ({js})() > 0", timeout=GUARD_MS)  # some device shows a share in use
        shape = page.evaluate(
            f"() => {{ const s = Bokeh.documents[0].get_model_by_name('{SOURCE_NAME}'); return [s.data.image[0].length, s.data.dw[0]]; }}"
        )
        assert shape == [30 * 8, 8]  # 30 GPU nodes (the largest with 8 devices) x 8 devices
        d = made[0]
        engine_used = np.nansum(d.placement_tab.gpu.used)
        assert engine_used > 0
        expect(page.get_by_text(re.compile(r"30 GPU nodes, 148 devices: [0-9.]+ GPUs in use"))).to_be_visible()
        page.screenshot(path=str(artifacts / "dashboard-gpu-devices.png"), full_page=True)
        assert not [m.text for m in messages if m.type == "error"]
    finally:
        stop_servers()  # first: no tick runs while the sessions are stopped from this thread
        for d in made:
            d.stop(clear_plots=False)
