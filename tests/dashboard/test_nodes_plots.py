"""The node autoscaler's plots: pure functions of the recorded tables, rendered to Bokeh without a server."""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from dashboard import nodes_plots
from engine import Simulation, load_scenario


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = Simulation(load_scenario("faas-node-autoscaler")).advance(2700)
    return sim.frame("nodes_by_group"), sim.frame("node_decisions")


def test_the_frames_follow_the_recorded_nodes_pending_pods_and_cost(tables):
    groups, _ = tables
    long = nodes_plots.nodes_frame(groups)
    assert len(long) == 3 * len(groups) and set(long.state) == {"booting", "ready", "draining"}
    at = groups.time.iloc[len(groups) // 2]
    assert long[long.time == at].nodes.sum() == groups[groups.time == at].nodes.sum()
    cost = nodes_plots.cost_frame(groups)
    total = cost[cost.group == "all"].set_index("time").cost
    assert np.allclose(total.to_numpy(), groups.groupby("time").cost.sum().to_numpy())
    assert total.is_monotonic_increasing and total.iloc[-1] > 0
    pending = nodes_plots.pending_frame(groups)
    assert len(pending) == groups.time.nunique() and pending.pending_pods.max() == groups.pending_pods.max()


def test_the_plots_render_the_groups_and_the_decisions(tables):
    groups, decisions = tables
    layout = nodes_plots.nodes_layout(groups, decisions)
    assert len(layout) == 3 and hv.render(layout) is not None
    labels = {el.label for el in nodes_plots.nodes_plot(groups, decisions)}
    assert {"small", "large", "scale_up", "scale_down_empty"} <= labels
    marks = [el for el in nodes_plots.nodes_plot(groups, decisions) if el.label == "scale_up"][0]
    assert len(marks.data) == (decisions.rule == "scale_up").sum()


def test_empty_tables_give_empty_plots():
    empty = pd.DataFrame({c: [] for c in ("time", "group", "booting", "ready", "draining", "nodes", "pending_pods", "cost", "node_hours")})
    assert nodes_plots.nodes_frame(empty).empty and nodes_plots.cost_frame(empty).empty and nodes_plots.pending_frame(empty).empty
    assert hv.render(nodes_plots.nodes_layout(empty, None)) is not None


def test_the_pending_plot_marks_why_pods_wait_and_the_totals_sum_the_groups(tables):
    groups, decisions = tables
    waiting = nodes_plots.waiting_frame(decisions)
    assert set(waiting.rule) <= {"scale_up", "no_scale_up"} and len(waiting) == decisions.rule.isin(["scale_up", "no_scale_up"]).sum()
    marks = [el for el in nodes_plots.pending_plot(groups, decisions) if el.label == "scale_up"][0]
    assert "PodFitsResources" in " ".join(marks.data["why"])  # the reason the pods waited, on hover
    labels = {el.label for el in nodes_plots.nodes_plot(groups, decisions)}
    assert {"small max", "large max"} <= labels  # each group's max_size (it may change live)
    t = nodes_plots.totals(groups)
    last = groups[groups.time == groups.time.max()]
    assert t["cost"] == pytest.approx(last.cost.sum()) and t["nodes"] == last.nodes.sum()


def test_the_nodes_tab_shows_totals_and_the_newest_decisions_and_group_cards_are_live(tables):
    from dashboard.nodestab import NodesTab
    from dashboard.ui import Dashboard

    d = Dashboard("faas-node-autoscaler")
    ctl = d.controls
    assert {"node_autoscaler", "ng1", "ng2"} <= set(ctl.sections)
    assert ctl.cards["ng1"].title.startswith("Node group small (c5.large")
    ctl.cards["ng1"].collapsed = False
    controls = ctl.sections["ng1"].controls
    assert {"min_size", "max_size", "price_per_hour", "boot_seconds", "cpu_millis", "priority"} <= set(controls)
    assert not {"gpus", "arch", "initial_size", "group"} & set(controls)  # fixed for a run: no control
    controls["max_size"].entry.value = 5
    assert d.session.sim.sections["ng1"].max_size == 5
    controls["max_size"].entry.value = 40  # above the 12 nodes made for it: refused, the box returns
    assert d.session.sim.sections["ng1"].max_size == 5 and controls["max_size"].entry.value == 5
    assert "above the 12 nodes made" in controls["max_size"].message.object
    groups, decisions = tables
    tab = NodesTab(d.ctx)
    tab.push({"nodes_by_group": groups, "node_decisions": decisions}, float(groups.time.max()))
    tab.flush(float(groups.time.max()))
    assert "node-hours" in tab.totals.object and len(tab.decisions.object) == 8
    assert "node_ready" not in set(tab.decisions.object.rule)
