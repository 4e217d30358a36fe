"""The node autoscaler in running worlds: pods wait for nodes, drains lose no pod, runs repeat whatever the chunks, bad input,
live changes of the groups."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from engine.core.params import ParamError
from engine.sim.scenario import Scenario, load_scenario
from engine.sim.simulation import Simulation

POD_COLUMNS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time"]
GROUPS = {
    "node_autoscaler": {"scan_interval": 10, "expander": "priority", "unneeded_time": 300, "delay_after_add": 0},
    "ng1": {
        "group": "cpu",
        "cpu_millis": 4000,
        "memory_mib": 8192,
        "max_size": 4,
        "priority": 10,
        "boot_seconds": 60,
        "boot_distribution": "fixed",
    },
    "ng2": {"group": "gpu", "cpu_millis": 8000, "memory_mib": 16384, "gpus": 1, "gpu_model": "T4", "max_size": 2, "boot_seconds": 120},
}


def pod_world(tmp_path: Path, pods: list[tuple], duration: float = 3000, **sections) -> Scenario:
    pd.DataFrame([("base", 2000, 4096, 0, "")], columns=["sn", "cpu_milli", "memory_mib", "gpu", "model"]).to_csv(
        tmp_path / "nodes.csv", index=False
    )
    pd.DataFrame(pods, columns=POD_COLUMNS).to_csv(tmp_path / "pods.csv", index=False)
    body = {
        "run": {"world": "pod", "duration": duration, "sample_interval": 30, "breakdown_history": 0},
        "pods": {"pod_file": str(tmp_path / "pods.csv"), "experiment": "replay", "replay_snapshot_interval": 0},
        "cluster": {"topology": "openb", "openb_file": str(tmp_path / "nodes.csv"), "storage_nodes": False},
        "scheduler": {"mode": "kube"},
        **GROUPS,
    }
    for key, values in sections.items():
        body[key] = {**body.get(key, {}), **values}
    return Scenario.from_dict(body, origin="test")


# six 1.5-cpu pods from t=0 to t=2000 (the base node holds one), one GPU pod from 100 to 400; three pods leave at 600
PODS = [
    *[(f"c{i}", 1500, 1024, 0, 0, "", "LS", "Running", 0, 600 if i < 3 else 2000) for i in range(6)],
    ("g0", 1000, 1024, 1, 1000, "", "LS", "Running", 100, 400),
]


def test_pending_pods_wait_for_new_nodes_and_drains_lose_no_pod(tmp_path: Path):
    sim = Simulation(pod_world(tmp_path, PODS)).run()
    d = sim.frame("node_decisions")
    ups = d[d.rule == "scale_up"]
    assert ups.iloc[0].time == 10.0 and ups.iloc[0].group == "cpu" and "5 pending pods" in ups.iloc[0].why
    assert "PodFitsResources" in ups.iloc[0].why  # the reason they wait
    assert (d[d.rule == "scale_up"].group == "gpu").any()  # the GPU pod: only a GPU node takes it
    ready = d[d.rule == "node_ready"]
    assert (ready[ready.group == "cpu"].time == 70.0).all()  # fixed boot: 60 s after the scan that launched them
    pods = sim.frame("pods").set_index("pod")
    assert pods.bound_at[[f"c{i}" for i in range(1, 6)]].min() >= 70.0  # they waited for the nodes
    # after three pods left, the under-used nodes are drained: their pods move through the scheduler, none is lost
    downs = d[d.rule == "scale_down"]
    assert len(downs) >= 1 and (downs.time >= 600 + 300).all()
    moved = int(downs.pods.sum())
    assert moved >= 1
    assert (pods.outcome == "completed").all()  # every pod ran to its deletion_time: none lost, none withdrawn
    placements = sim.frame("placements")
    releases = placements[(placements.action == "release") & (placements.time < 2000)]
    rebinds = placements[(placements.action == "bind") & placements.owner.isin(releases.owner) & (placements.time >= 900)]
    assert len(rebinds) >= moved  # every evicted pod was bound again at once
    assert (sim.samples().pending.iloc[-10:] == 0).all()
    samples = sim.samples().set_index("time")
    gpu_up = d[(d.rule == "node_ready") & (d.group == "gpu")].time.min()
    during = samples.loc[(samples.index > gpu_up) & (samples.index < 400)]
    assert len(during) and (during.gpu_allocated == 1.0).all()  # shares of the nodes that are up: g0 takes the one GPU
    assert (samples.loc[samples.index < gpu_up].gpus_idle == 0).all()  # no GPU is up before the GPU node
    groups = sim.frame("nodes_by_group")
    assert (groups.nodes <= groups.max_size).all() and (groups.nodes >= groups.min_size).all()
    summary = sim.summary()
    assert summary["node_hours"] > 0 and summary["node_cost"] == pytest.approx(sum(v["cost"] for v in summary["node_groups"].values()))
    assert summary["pods_unplaced"] == 0


def test_pods_never_lost_when_a_drain_finds_no_room(tmp_path: Path):
    """Two nodes hold one pod each; the drained node's pod fits the other; no pod ends lost or withdrawn."""
    pods = [(f"p{i}", 3000, 1024, 0, 0, "", "LS", "Running", 0, 5000) for i in range(3)]
    sim = Simulation(pod_world(tmp_path, pods, duration=2000, node_autoscaler={"utilization_threshold": 0.9})).run()
    out = sim.frame("pods")
    assert (out.outcome == "running").all() and out.node.notna().all()
    groups = sim.frame("nodes_by_group")
    assert groups.groupby("time").nodes.sum().max() <= 4


def frames_of(sim: Simulation) -> dict[str, pd.DataFrame]:
    return {name: sim.frame(name) for name in ("nodes_by_group", "node_decisions", "placements")}


def test_the_pod_world_repeats_whatever_chunks_time_advances_in(tmp_path: Path):
    whole = frames_of(Simulation(pod_world(tmp_path, PODS)).run())
    chunked = Simulation(pod_world(tmp_path, PODS))
    t = 0.0
    while t < 3000:
        t = min(3000.0, t + 37.3)
        chunked.advance(t)
    for name, frame in frames_of(chunked).items():
        pd.testing.assert_frame_equal(frame, whole[name], obj=name)


def test_the_function_scenario_repeats_whatever_chunks_and_scales_nodes_under_the_hpa():
    scenario = load_scenario("faas-node-autoscaler")
    names = ("nodes_by_group", "node_decisions", "function_samples", "placements")
    whole = Simulation(scenario).advance(2400)
    chunked = Simulation(scenario)
    for t in range(97, 2400, 97):
        chunked.advance(float(t))
    chunked.advance(2400)
    for name in names:
        pd.testing.assert_frame_equal(chunked.frame(name), whole.frame(name), obj=name)
    d = whole.frame("node_decisions")
    assert {"scale_up", "node_ready", "scale_down_empty", "node_removed"} <= set(d.rule)
    first_up = d[d.rule == "scale_up"].time.min()
    scale = whole.frame("scale")
    assert scale[(scale.policy == "hpa") & (scale.after > scale.before)].time.min() <= first_up  # the HPA asked first
    pending = whole.frame("replica_lifecycle")
    assert (pending.state == "pending").any()  # replicas waited for the nodes


@pytest.mark.parametrize("name", ["faas-node-autoscaler", "openb-node-autoscaler"])
def test_the_shipped_scenarios_run_from_the_cli(tmp_path: Path, name: str):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", f"data/scenarios/{name}.yaml", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["node_autoscaler"] == "cluster_autoscaler" and summary["node_scale_ups"] > 0 and summary["node_cost"] > 0
    decisions = pd.read_parquet(out / "node_decisions.parquet")
    assert (decisions.rule == "scale_up").any() and (decisions.rule == "node_removed").any()


BAD = [
    ({"ng1": {"min_size": 5, "max_size": 2}}, "ng1.min_size: 5 is above max_size (2); allowed: min_size <= max_size"),
    ({"ng2": {"group": "small"}}, "ng2.group: 'small' is already the name of ng1; allowed: a name no other group has"),
    ({"ng1": {"boot_distribution": "gamma"}}, "ng1.boot_distribution: 'gamma' is not allowed; allowed: one of 'fixed', 'uniform'"),
    ({"node_autoscaler": {"expander": "cheapest"}}, "node_autoscaler.expander: 'cheapest' is not allowed"),
    ({"ng1": {"gpu_model": "T4"}}, "ng1.gpu_model: set only with gpus > 0"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_node_autoscaler_input_is_one_line_and_exit_2(tmp_path: Path, change: dict, message: str):
    import yaml

    body = yaml.safe_load(Path("data/scenarios/faas-node-autoscaler.yaml").read_text())
    body.setdefault("ng2", {"group": "other", "max_size": 1})
    for key, values in change.items():
        body[key] = {**body.get(key, {}), **values}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(body))
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(path), "--out", str(tmp_path / "out")], capture_output=True, text=True
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


def test_a_node_autoscaler_without_groups_and_groups_outside_their_worlds_are_refused(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "run: {world: functions}\ncluster: {topology: cloud_regions, nodes: 1, regions: 1}\nnode_autoscaler: {}\nfn1: {images: [faas-workloads/python-pi]}\n"
    )
    done = subprocess.run([sys.executable, "-m", "engine", "run", str(path), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert done.returncode == 2 and "node_autoscaler: a node autoscaler needs at least one node group" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    path.write_text("run: {world: vm}\nng1: {group: a}\n")
    done = subprocess.run([sys.executable, "-m", "engine", "run", str(path), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert done.returncode == 2 and "ng1: not a section of the 'vm' world" in done.stderr


def test_consolidation_bills_fewer_node_hours_than_the_cluster_autoscaler_and_loses_no_request():
    results = {}
    for mode in ("cluster_autoscaler", "consolidation"):
        sim = Simulation(load_scenario("faas-node-autoscaler"))
        sim.set_params({"node_autoscaler.mode": mode})
        sim.run()
        s = sim.summary()
        rules = set(sim.frame("node_decisions").rule)
        assert s["requests_generated"] == s["requests_completed"] + s["requests_in_flight"] + s["requests_queued"] + s["requests_rejected"]
        assert s["requests_rejected"] == 0
        results[mode] = (s["node_hours"], rules)
    assert {"consolidate_delete", "consolidate_empty"} & results["consolidation"][1]
    assert not {r for r in results["consolidation"][1] if r.startswith("scale_down")}
    assert results["consolidation"][0] < results["cluster_autoscaler"][0]


def test_a_live_change_applies_at_the_next_scan():
    sim = Simulation(load_scenario("faas-node-autoscaler")).advance(1000)
    sim.set_params({"node_autoscaler.scale_down": False})
    sim.advance(3600)
    d = sim.frame("node_decisions")
    assert not d[(d.time >= 1000) & d.rule.str.startswith("scale_down")].size
    events = sim.events()
    assert (events.command == "node_autoscaler.scale_down").any()


# -- node groups changed while the run goes on: size range, price, shape of new nodes; recorded, replayed, chunk-independent
def sizes(sim: Simulation, group: str) -> pd.DataFrame:
    groups = sim.frame("nodes_by_group")
    return groups[groups.group == group].set_index("time")


def test_a_max_below_the_size_stops_scale_ups_and_nodes_go_only_by_scale_down(tmp_path: Path):
    sim = Simulation(pod_world(tmp_path, PODS)).advance(100)
    before = sizes(sim, "cpu").nodes.iloc[-1]
    assert before >= 2  # the cpu group grew for the pending pods
    sim.set_params({"ng1.max_size": 1})
    sim.run()
    d = sim.frame("node_decisions")
    changed = d[d.rule == "group_changed"]
    assert list(changed.time) == [100.0] and "max_size 1" in changed.why.iloc[0] and "no scale-up" in changed.why.iloc[0]
    after = sizes(sim, "cpu").loc[100:]
    assert (after.max_size == 1).all()
    assert after.nodes.iloc[0] == before  # nothing is deleted at once
    assert not ((d.time > 100) & (d.rule == "scale_up") & (d.group == "cpu")).any()
    # every drop of the group's size after the change follows a scale-down decision of that group
    cordoned = d[(d.time > 100) & (d.group == "cpu") & d.rule.str.startswith("scale_down")]
    assert len(cordoned) >= before - 1
    assert sizes(sim, "cpu").nodes.iloc[-1] <= 1
    assert (sim.frame("pods").outcome == "completed").all()  # no pod lost on the way down
    assert (sim.events().command == "ng1.max_size").any()


def test_a_max_above_the_built_nodes_and_the_fixed_fields_are_refused_and_nothing_changes(tmp_path: Path):
    sim = Simulation(pod_world(tmp_path, PODS)).advance(50)
    with pytest.raises(ParamError, match=r"^ng1\.max_size: 5 is above the 4 nodes made for group 'cpu' when the run was built"):
        sim.set_params({"ng1.max_size": 5, "ng1.price_per_hour": 9.0})
    assert sim.sections["ng1"].max_size == 4 and sim.sections["ng1"].price_per_hour != 9.0
    for key, value in (("ng1.group", "other"), ("ng2.gpus", 2), ("ng1.initial_size", 2), ("ng1.instance_type", "x")):
        with pytest.raises(ParamError, match=rf"^{key.replace('.', '[.]')}: is fixed for a run"):
            sim.set_params({key: value})
    assert not sim.inputs


def test_a_new_price_bills_the_hours_after_it(tmp_path: Path):
    sim = Simulation(pod_world(tmp_path, PODS)).advance(300)
    price = sim.sections["ng1"].price_per_hour
    at_change = sim.summary()["node_groups"]["cpu"]
    sim.set_params({"ng1.price_per_hour": 10 * price})
    sim.advance(900)
    later = sim.summary()["node_groups"]["cpu"]
    assert later["cost"] - at_change["cost"] == pytest.approx((later["node_hours"] - at_change["node_hours"]) * 10 * price)
    rows = sizes(sim, "cpu")
    assert rows.cost.loc[:300].iloc[-1] == pytest.approx(rows.node_hours.loc[:300].iloc[-1] * price)


def test_a_bigger_node_shape_applies_to_the_nodes_launched_after(tmp_path: Path):
    small = Simulation(pod_world(tmp_path, PODS)).advance(60)
    big = Simulation(pod_world(tmp_path, PODS))
    big.set_params({"ng1.cpu_millis": 8000, "ng1.memory_mib": 16384})  # before the first scan: every cpu node is big
    big.advance(60)
    up = {name: s.frame("node_decisions").query("rule == 'scale_up' and group == 'cpu'").iloc[0] for name, s in (("s", small), ("b", big))}
    assert up["b"]["count"] == 1 and up["s"]["count"] == 3  # five 1.5-cpu pods: on one 8-cpu node, or two per 4-cpu node
    big.advance(200)
    assert big.frame("pods").set_index("pod").bound_at[[f"c{i}" for i in range(1, 6)]].notna().all()


def test_group_changes_replay_and_repeat_whatever_chunks(tmp_path: Path):
    changes = [(100.0, {"ng1.max_size": 2, "ng1.price_per_hour": 0.5}), (700.0, {"ng1.max_size": 4, "ng1.boot_seconds": 20})]

    late = [(f"late{i}", 3000, 1024, 0, 0, "", "LS", "Running", 1000, 1500) for i in range(2)]  # they need new nodes

    def session(step: float) -> Simulation:
        sim = Simulation(pod_world(tmp_path, [*PODS, *late]))
        t = 0.0
        for at, change in [*changes, (3000.0, None)]:
            while t < at:
                t = min(at, t + step)
                sim.advance(t)
            if change:
                sim.set_params(change)
        return sim

    whole, chunked = session(5000.0), session(37.3)
    replayed = Simulation.replay(whole.recording())
    for name in ("nodes_by_group", "node_decisions", "placements", "samples"):
        pd.testing.assert_frame_equal(chunked.frame(name), whole.frame(name), obj=name)
        pd.testing.assert_frame_equal(replayed.frame(name), whole.frame(name), obj=name)
    d = whole.frame("node_decisions")
    assert list(d[d.rule == "group_changed"].time) == [100.0, 700.0]
    ready = d[(d.rule == "node_ready") & (d.group == "cpu") & (d.time > 700)]
    launched = d[(d.rule == "scale_up") & (d.group == "cpu") & (d.time > 700)]
    assert len(launched) and ready.time.min() == launched.time.min() + 20  # launched after the change: the new (fixed) 20 s boot


def test_the_function_scenario_takes_live_group_changes():
    sim = Simulation(load_scenario("faas-node-autoscaler")).advance(600)
    sim.set_params({"ng1.max_size": 2, "ng1.min_size": 0})  # as the load steps up: small may hold 2 nodes at most
    sim.advance(2400)
    groups = sim.frame("nodes_by_group")
    small = groups[(groups.group == "small") & (groups.time > 600)]
    assert (small.max_size == 2).all() and (small.nodes <= 2).all()
    d = sim.frame("node_decisions")
    assert ((d.time > 600) & (d.rule == "scale_up") & (d.group == "large")).any()  # the large group takes the rest
    assert "capped by max_size" in d[(d.time > 600) & (d.rule == "scale_up") & (d.group == "small")].why.iloc[0]
