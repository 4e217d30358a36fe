"""The pod world end to end: lifetime replay and cluster filling on small hand-made traces, and on the openb samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.cluster.importers.openb import OPENB_NODES, openb
from engine.core.params import ParamError
from engine.podworld.workload import POD_IMAGE, select_phases, trace_pod, tune_workload
from engine.scheduling import Scheduler, SchedulerParams
from engine.sim.scenario import Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation
from engine.workload.traces.common import resolve_trace_path
from engine.workload.traces.openb import read_openb_pod_list

OPENB_PODS = resolve_trace_path("alibaba-openb/openb_pod_list_default.csv")

POD_COLUMNS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time"]


def write_nodes(path: Path, nodes: list[tuple[str, int, int, int, str]]) -> Path:
    pd.DataFrame(nodes, columns=["sn", "cpu_milli", "memory_mib", "gpu", "model"]).to_csv(path, index=False)
    return path


def write_pods(path: Path, pods: list[tuple]) -> Path:
    pd.DataFrame(pods, columns=POD_COLUMNS).to_csv(path, index=False)
    return path


def world(tmp_path: Path, nodes, pod_rows, seed: int = 1, **sections) -> Simulation:
    body = {
        "run": {"world": "pod", "duration": 1000, "sample_interval": 10, "breakdown_history": 0},
        "pods": {"pod_file": str(write_pods(tmp_path / "pods.csv", pod_rows)), "experiment": "replay"},
        "cluster": {"topology": "openb", "openb_file": str(write_nodes(tmp_path / "nodes.csv", nodes)), "storage_nodes": False},
        "scheduler": {"mode": "kube", "gpu_policy": "BestFit"},
    }
    for key, values in sections.items():
        body.setdefault(key, {}).update(values)
    return Simulation(Scenario.from_dict(body, origin="test"), seed=seed)


TWO_NODES = [("a", 8000, 1024, 1, "T4"), ("b", 8000, 1024, 0, "")]


def test_replay_waits_retries_and_withdraws(tmp_path: Path):
    pods = [
        ("p0", 1000, 1, 1, 1000, "", "LS", "Running", 0, 100),  # takes a's GPU until 100
        ("p1", 1000, 1, 1, 600, "", "LS", "Running", 10, 300),  # waits for the GPU: placed at 100
        ("p2", 1000, 1, 1, 500, "", "BE", "Pending", 20, 50),  # waits, leaves at 50 before getting a node
        ("p3", 7000, 1, 0, 0, "", "BE", "Running", 30, 400),  # CPU only: a has 7 CPU left after p0 -> a or b
        ("p4", 2000, 1, 0, 0, "", "BE", "Succeeded", 40, 40),  # leaves the instant it comes
    ]
    sim = world(tmp_path, TWO_NODES, pods).run()
    p = sim.frame("pods").set_index("pod")
    assert p.outcome.to_dict() == {"p0": "completed", "p1": "completed", "p2": "withdrawn", "p3": "completed", "p4": "withdrawn"}
    assert p.bound_at["p1"] == 100.0 and p.waited_s["p1"] == 90.0 and p.node["p1"] == "a" and p.gpu_devices["p1"] == 1
    assert pd.isna(p.bound_at["p2"]) and p.leaves_at["p2"] == 50.0 and p.line.tolist() == [2, 3, 4, 5, 6]
    s = sim.samples().set_index("time")  # a sample at t shows the state after what happened at t
    assert s.pending[10.0] == 1 and s.pending[20.0] == 2 and s.pending[50.0] == 1 and s.pending[100.0] == 0
    assert s.gpu_allocated[50.0] == 1.0 and s.gpu_allocated[150.0] == 0.6 and s.gpus_shared[150.0] == 1
    summary = sim.summary()
    assert (summary["pods_scheduled"], summary["pods_unplaced"], summary["max_waiting"]) == (3, 2, 2)
    bind = sim.frame("placements").query("action == 'bind'")
    assert bind.owner.tolist() == [0, 3, 1] and bind.gpu_milli.tolist() == [1000, 0, 600]


def test_phase_rules_choose_the_pods(tmp_path: Path):
    pods = [(f"p{i}", 100, 1, 0, 0, "", "LS", phase, i, i + 5) for i, phase in enumerate(["Running", "Pending", "Failed", "Succeeded"])]
    path = write_pods(tmp_path / "phases.csv", pods)
    table = read_openb_pod_list(path)
    assert select_phases(table, "all").tolist() == [0, 1, 2, 3]
    assert select_phases(table, "skip_pending").tolist() == [0, 2, 3]
    assert select_phases(table, "ran_only").tolist() == [0, 3]
    sim = world(tmp_path, TWO_NODES, pods, pods={"phases": "ran_only"}).run()
    assert sim.frame("pods").pod.tolist() == ["p0", "p3"]


def test_fill_submits_in_order_refuses_what_fits_nowhere_and_bins_the_curve(tmp_path: Path):
    nodes = [("a", 16000, 4096, 2, "T4"), ("b", 16000, 4096, 2, "V100")]  # 4 GPUs
    pods = [
        ("s1", 1000, 1, 1, 500, "T4", "LS", "Running", 0, 1),
        ("s2", 1000, 1, 1, 700, "T4", "LS", "Running", 0, 1),
        ("w1", 1000, 1, 2, 1000, "V100", "LS", "Running", 0, 1),
        ("w2", 1000, 1, 2, 1000, "", "LS", "Running", 0, 1),
    ]
    sim = world(tmp_path, nodes, pods, pods={"experiment": "fill", "tune_ratio": 1.5, "shuffle": False}, run={"duration": 100}).run()
    p = sim.frame("pods")
    assert p.pod.tolist()[:4] == ["s1", "s2", "w1", "w2"] and p.submitted_at.tolist()[:4] == [0.0, 1.0, 2.0, 3.0]
    assert p.outcome.tolist()[:4] == ["running", "running", "running", "refused"]  # w2 finds no node with 2 free devices
    assert (p.node.tolist()[:3], p.gpu_devices.tolist()[:3]) == (["a", "a", "b"], [1, 2, 3])
    s = sim.samples()
    assert len(s) == len(p) and s.arrived_gpu_milli.iloc[3] == 5200 and s.gpu_milli_allocated.iloc[3] == 3200
    assert 6000 - 1000 < s.arrived_gpu_milli.iloc[-1] <= 6000  # tuned up to 1.5 x 4 GPUs (shares of 1000 at most)
    curve = sim.frame("allocation_curve").set_index("arrived_pct")
    assert list(curve.index) == list(range(151))
    # s1 arrives at 12.5 %, binned at 12 (rounded half to even, as the artifact's Python does); 13 has no submission
    # and takes those within 1 %
    assert (curve.gpu_allocated_pct[12], curve.submissions[12]) == (12.5, 1)
    assert (curve.gpu_allocated_pct[13], curve.submissions[13]) == (12.5, 0) and np.isnan(curve.gpu_allocated_pct[5])
    summary = sim.summary()
    assert summary["experiment"] == "fill" and summary["pods_unplaced"] == int((p.outcome == "refused").sum())
    # node snapshots every 10 % of arrived demand (and at the end): the nodes' fragmentation sums to the cluster's
    snaps = sim.frame("node_samples")
    assert (snaps.groupby("time").size() == 2).all() and snaps.time.iloc[-1] == s.time.iloc[-1]
    per_time = snaps.groupby("time").frag_milli.sum()
    assert np.allclose(per_time.to_numpy(), s.set_index("time").frag_milli[per_time.index].to_numpy())
    assert (snaps.groupby("time").gpu_milli_free.sum() == s.set_index("time").gpu_milli_idle[per_time.index]).all()


def test_tuning_appends_draws_until_the_target_and_the_artifacts_stop_rule_can_overshoot():
    names = np.array(["c", "a", "b"])
    each = np.array([500, 1000, 0])
    total = np.array([500, 8000, 0])  # "a" is an 8-GPU pod
    order = tune_workload(names, each, total, 10000, 1.3, np.random.default_rng(3))
    assert sorted(order[:3].tolist()) == [0, 1, 2]  # the whole trace first, shuffled
    demand = total[order].sum()
    assert 13000 - 1000 < demand <= 13000 + 7000  # the artifact tests the per-device share: an 8-GPU draw overshoots
    strict = tune_workload(names, each, total, 10000, 1.3, np.random.default_rng(3), stop="total")
    assert total[strict].sum() <= 13000
    assert (tune_workload(names, each, total, 10000, 1.3, np.random.default_rng(3)) == order).all()  # seeded
    down = tune_workload(names, each, total, 10000, 0.5, np.random.default_rng(3))
    assert total[down].sum() <= 5000 and len(down) < 3  # above the target: random pods removed
    assert tune_workload(names, each, total, 10000, 1.3, np.random.default_rng(3), shuffle=False)[:3].tolist() == [1, 2, 0]


def test_a_node_failure_sends_its_pods_back_to_wait(tmp_path: Path):
    nodes = [("a", 8000, 1024, 1, "T4"), ("b", 8000, 1024, 1, "T4")]
    pods = [("p0", 1000, 1, 1, 1000, "", "LS", "Running", 0, 500), ("p1", 1000, 1, 1, 1000, "", "LS", "Running", 0, 500)]
    sim = world(tmp_path, nodes, pods)
    sim.advance(100)
    first = sim.frame("pods").node[0]
    hit = sim.inject("node_failure", node=first)
    assert hit["node"] == first and hit["pods"] == [0]
    sim.advance(200)
    assert sim.frame("pods").outcome.tolist() == ["waiting", "running"]
    sim.inject("node_recovery", node=first)
    sim.advance(300)
    p = sim.frame("pods")
    assert p.outcome.tolist() == ["running", "running"] and p.bound_at.tolist() == [0.0, 0.0] and p.node[0] == first
    assert sim.frame("placements").action.tolist() == ["bind", "bind", "lost", "bind"]
    with pytest.raises(ParamError, match="node_recovery needs"):
        sim.inject("node_recovery")
    with pytest.raises(ParamError, match=r"^pods\.tune_ratio: is fixed for a run"):
        sim.set_params({"pods.tune_ratio": 1.0})
    sim.set_params({"scheduler.gpu_policy": "FGD"})  # the scheduler changes live, at the next placement
    assert sim.sections["scheduler"].gpu_policy == "FGD"


def test_chunked_advances_give_identical_frames(tmp_path: Path):
    pods = [(f"p{i}", 500 * (i % 5 + 1), 1, i % 3, 300 * (i % 4), "", "LS", "Running", 3 * i, 3 * i + 40 + i % 7) for i in range(60)]
    nodes = [("a", 8000, 1024, 2, "T4"), ("b", 4000, 1024, 1, "T4"), ("c", 8000, 1024, 0, "")]
    whole = world(tmp_path, nodes, pods).run()
    chunked = world(tmp_path, nodes, pods)
    for t in (7.5, 33, 100, 101, 250, 1000):
        chunked.advance(t)
    for name in ("samples", "pods", "placements"):
        pd.testing.assert_frame_equal(whole.frame(name), chunked.frame(name))


def test_bad_input_is_one_line_naming_the_file_line_and_column(tmp_path: Path):
    pods = [("p0", 1000, 1, 1, 500, "K80", "LS", "Running", 0, 10)]
    with pytest.raises(
        ParamError, match=r"^test: pods\.pod_file: .*pods\.csv: line 2, column 'gpu_spec': 'K80' is on no node of the cluster; allowed: T4$"
    ):
        world(tmp_path, TWO_NODES, pods)
    bad = write_pods(tmp_path / "bad.csv", [("p0", 1000, 1, 1, 500, "", "LS", "Running", 5, 1)])
    body = load_scenario("openb").to_dict()
    body["pods"]["pod_file"] = str(bad)
    with pytest.raises(ScenarioError, match=r"bad\.csv: line 2, column 'deletion_time': 1 is before creation_time 5"):
        Scenario.from_dict(body, origin="test")
    body["pods"] = {"pod_file": str(tmp_path / "none.csv")}
    with pytest.raises(ScenarioError, match=r"^test: pods\.pod_file: .*none\.csv: no such file"):
        Scenario.from_dict(body, origin="test")


def test_the_pods_section_belongs_to_the_pod_world():
    with pytest.raises(ScenarioError, match=r"pods: not a section of the 'vm' world"):
        Scenario.from_dict({"pods": {"experiment": "fill"}}, origin="test")


# -- the openb samples ---------------------------------------------------------------------------------


def test_the_openb_cluster_filling_with_fgd_is_near_the_artifact():
    sim = Simulation("openb-fgd").run()
    s = sim.summary()
    assert (s["nodes"], s["gpus"]) == (1213, 6212) and 10700 < s["pods_submitted"] < 10900
    # the artifact's cached results (mean over its seeds 42..51): 95.23 at 100 %, 95.39 at 130 %, sd 0.08
    assert abs(s["gpu_alloc_at_100"] - 95.23) < 0.5 and abs(s["gpu_alloc_at_end"] - 95.39) < 0.5
    curve = sim.frame("allocation_curve")
    assert curve.gpu_allocated_pct.is_monotonic_increasing or curve.gpu_allocated_pct.diff().min() > -0.5
    assert curve.gpu_allocated_pct[50] == pytest.approx(50, abs=0.6)  # below saturation everything fits


def test_the_openb_lifetime_replay_schedules_every_pod_with_a_lifetime():
    sim = Simulation("openb").run()
    s = sim.summary()
    assert (s["pods_submitted"], s["nodes"]) == (8152, 1523)
    assert s["pods_scheduled"] == 8151 and s["pods_unplaced"] == 1  # the one pod deleted the instant it was created
    samples = sim.samples()
    assert len(samples) == 3584 and samples.submitted.iloc[-1] == 8152
    assert samples.running.max() <= 56  # the trace never has more than 56 pods alive at once
    pods = sim.frame("pods")
    assert (pods.outcome == "completed").sum() == 8151 and pods.qos.value_counts()["LS"] == 4647


def test_on_a_real_node_a_share_goes_to_the_partly_used_device_and_small_fragments_refuse_a_pod(tmp_path: Path):
    nodes = pd.read_csv(OPENB_NODES)
    one = tmp_path / "one.csv"
    nodes[nodes.sn == "openb-node-1116"].to_csv(one, index=False)  # 104 CPUs, 2 T4
    cluster = openb(one, storage=False)
    cluster.registry.add(POD_IMAGE, {"amd64": 0})
    trace = read_openb_pod_list(OPENB_PODS)
    row = {name: i for i, name in enumerate(trace.name.tolist())}
    share, small, tiny = (trace_pod(trace, row[f"openb-pod-{i:04d}"]) for i in (1, 109, 25))  # 0.46, 0.16 and 0.11 GPU
    s = Scheduler(cluster, SchedulerParams(mode="kube"))
    assert [s.schedule(share).devices for _ in range(3)] == [(0,), (0,), (1,)]  # the second shares device 0
    assert cluster.gpu_milli_free[0].tolist() == [80, 540]
    assert [s.schedule(small).devices for _ in range(3)] == [(1,), (1,), (1,)]  # the partly used device that fits
    assert cluster.gpu_milli_free[0].tolist() == [80, 60]
    # 140 milli-GPU free on the node, but no device has 110: the 0.11-GPU pod is refused (pooled GPUs took it)
    assert s.schedule(tiny, bind=False).node is None


def test_gpu_spec_is_honoured_on_the_openb_samples(tmp_path: Path):
    df = pd.read_csv(OPENB_PODS, dtype={"gpu_spec": str}).iloc[4000:4400].copy()
    gpu = (df.num_gpu > 0) & (df.gpu_milli > 0)
    df.loc[gpu, "gpu_spec"] = "V100M16|V100M32"
    path = tmp_path / "v100.csv"
    df.to_csv(path, index=False)
    body = load_scenario("openb").to_dict()
    body["pods"]["pod_file"] = str(path)
    sim = Simulation(Scenario.from_dict(body, origin="test"), seed=2).run()
    pods = sim.frame("pods").merge(sim.frame("nodes")[["node", "gpu_model"]], on="node", how="left")
    placed = pods[pods.bound_at.notna()]
    assert (placed.num_gpu > 0).sum() > 200 and (placed.num_gpu == 0).sum() > 20
    assert set(placed[placed.num_gpu > 0].gpu_model) <= {"V100M16", "V100M32"}
    assert set(placed[placed.num_gpu == 0].gpu_model) - {"V100M16", "V100M32"}  # CPU pods go anywhere


def test_the_pod_world_estimates_its_cost_from_the_pods_still_to_come():
    sim = Simulation("openb-fgd")
    whole = sim.estimate(sim.sections["run"].duration)
    half = sim.estimate(sim.sections["run"].duration / 2)
    assert whole.unit == "pods" and 10_000 < whole.jobs < 11_000 and whole.scored == whole.jobs * 1213
    assert 0.4 < half.jobs / whole.jobs < 0.6 and not whole.too_long and "pods" in whole.describe()
