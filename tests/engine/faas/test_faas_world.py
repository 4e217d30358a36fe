"""The functions world end to end: scalers on a bursty load, stabilisation, scale to zero, the gateway, the ranking,
faults, determinism under chunking and replay, and the CLI's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support_faas import function, scenario

from engine import Simulation, load_scenario
from engine.core.recorder import frame_digest

BURST = {"rate": 4.0, "burst_factor": 8.0, "burst_every": 600.0, "burst_duration": 120.0}  # 32 rps in [480, 600)

SCALERS = {
    "rps_threshold": {"target_rps": 10.0, "scale_factor": 10, "scale_interval": 10.0, "faas_sim_exact": False},
    "average_rps": {"target_average_rps": 3.0, "faas_sim_exact": False, "scale_interval": 20.0},
    "queue_per_replica": {"target_queue": 2.0, "scale_interval": 10.0, "faas_sim_exact": False},
    "hpa": {"cpu_millis": 1000, "target_utilization": 50},
    "kpa": {"min_replicas": 1},
    "keda": {"target_keda_queue": 2.0, "min_replicas": 1},
    "queue_drain": {"drain_band_low": 0.5, "drain_band_high": 2.0},
    "per_request": {"min_replicas": 0, "idle_timeout": 60.0, "concurrency": 1},
}


def replicas_over_time(sim: Simulation, name: str) -> pd.DataFrame:
    s = sim.frame("function_samples")
    s = s[s.function == name]
    return s.assign(replicas=s.replicas_running + s.replicas_starting + s.replicas_pending)


@pytest.mark.parametrize("kind", sorted(SCALERS))
def test_each_scaler_scales_a_burst_up_and_back_down(kind):
    spec = function(function="f", scaler=kind, max_replicas=20, **BURST, **SCALERS[kind])
    sim = Simulation(scenario({"fn1": spec}, duration=1060.0, hpa={"scale_down_stabilization": 60}, kpa={"stable_window": 60}))
    sim.run()  # the next burst starts at 1080
    r = replicas_over_time(sim, "f")
    before = r[(r.time > 300) & (r.time < 470)].replicas.max()
    peak = r[(r.time >= 480) & (r.time <= 660)].replicas.max()
    after = r[r.time >= 980].replicas.max()
    assert peak > before, (kind, before, peak)
    rows = sim.frame("scale")
    mine = rows[rows.policy == kind]
    first_up = mine[(mine.after > mine.before) & (mine.time >= 480)].time.min()
    assert (mine[mine.time > first_up].after < mine[mine.time > first_up].before).any(), kind  # and back down
    if kind != "queue_per_replica":  # the median of the replica queues flaps: new replicas' empty queues outvote the backlog
        assert after < peak, (kind, peak, after)
    assert (r.replicas_running <= 20).all()


def _first_scale_down_after_burst(stabilization: float) -> float:
    spec = function(function="f", scaler="hpa", cpu_millis=1000, target_utilization=50, max_replicas=20, **BURST)
    sim = Simulation(scenario({"fn1": spec}, duration=1060.0, hpa={"scale_down_stabilization": stabilization}))
    sim.run()
    rows = sim.frame("scale")
    downs = rows[(rows.policy == "hpa") & (rows.after < rows.before) & (rows.time > 600)]
    return float(downs.time.min())


def test_hpa_scale_down_waits_its_stabilization_window():
    quick, slow = _first_scale_down_after_burst(30.0), _first_scale_down_after_burst(240.0)
    assert slow >= 600.0 + 240.0 - 15.0  # the burst's high recommendations hold the count for the window
    assert slow - quick >= 150.0


def test_scale_to_zero_and_a_cold_start_from_zero():
    spec = function(
        function="z", scaler="scale_to_zero", idle_timeout=60.0, rate=2.0, steps=[[0, 1], [200, 0], [500, 1]], startup_seconds=5.0
    )
    sim = Simulation(scenario({"fn1": spec}, duration=700.0))
    sim.run()
    r = replicas_over_time(sim, "z")
    assert (r[(r.time > 320) & (r.time < 495)].replicas == 0).all()
    rows = sim.frame("scale")
    assert ((rows.policy == "scale_to_zero") & (rows.after == 0)).any()
    woken = rows[(rows.policy == "gateway") & (rows.time >= 500)]
    assert len(woken) == 1 and woken.after.iloc[0] == 1
    inv = sim.frame("invocations")
    late = inv[inv.arrival >= 500].sort_values("arrival")
    first = late.iloc[0]
    assert bool(first.cold_start) and first.gateway_wait >= 5.0 and first.response >= 5.5
    life = sim.frame("replica_lifecycle")
    assert (life[(life.state == "conceived") & (life.time >= 500)].cause == "gateway").any()


def test_the_gateway_rejects_beyond_its_bounded_queue_and_reports_every_status():
    spec = function(function="g", rate=20.0, startup_seconds=30.0, min_replicas=1)
    sim = Simulation(scenario({"fn1": spec}, duration=120.0, faas={"gateway_queue_limit": 50}))
    sim.advance(20.0)
    inv = sim.frame("invocations")
    assert set(inv.status) == {"queued", "rejected"}  # nothing ready yet: held or refused, nothing dropped
    assert (inv[inv.status == "rejected"].reason == "queue_full").all() and (inv.status == "queued").sum() == 50
    sim.run()
    inv = sim.frame("invocations")
    counts = inv.status.value_counts().to_dict()
    last = sim.frame("function_samples").iloc[-1]
    assert counts.get("rejected", 0) == last.rejected > 0
    assert len(inv) == inv.request.nunique() == sim.platform.flow.functions[0].generated


def test_per_request_rejects_beyond_its_concurrency_limit_and_instances_expire():
    spec = function(
        function="p",
        scaler="per_request",
        concurrency=1,
        max_replicas=3,
        min_replicas=0,
        rate=20.0,
        idle_timeout=30.0,
        steps=[[0, 1], [200, 0]],
    )
    sim = Simulation(scenario({"fn1": spec}, duration=400.0))
    sim.run()
    inv = sim.frame("invocations")
    assert (inv.reason == "concurrency_limit").any()
    assert inv[inv.status != "rejected"].cold_start.any()
    life = sim.frame("replica_lifecycle")
    expired = life[(life.state == "removed") & (life.cause == "expired")]
    assert len(expired) >= 3 and expired.time.min() >= 200.0


def test_the_deployment_ranking_falls_back_to_the_next_image():
    spec = function(
        function="m", images=["faas-workloads/mobilenet-inference-tpu", "faas-workloads/mobilenet-inference-tflite"], simulator="measured"
    )
    sim = Simulation(scenario({"fn1": spec}, duration=600.0))  # cloud VMs: no Edge TPU anywhere
    sim.run()
    sched = sim.frame("schedule")
    assert list(sched.result[:2]) == ["fallback", "bind"]
    assert sched.image.iloc[1] == "faas-workloads/mobilenet-inference-tflite"
    assert (sim.frame("invocations").status == "completed").any()


def test_a_node_drain_replaces_the_replicas_elsewhere():
    spec = function(function="d", min_replicas=3, rate=5.0)
    sim = Simulation(scenario({"fn1": spec}, duration=300.0))
    sim.advance(100.0)
    hit = sim.inject("node_drain")
    sim.run()
    life = sim.frame("replica_lifecycle")
    drained = life[(life.state == "draining") & (life.cause == "fault")]
    assert len(drained) == len(hit["replicas"]) >= 1
    binds = sim.frame("placements")
    later = binds[(binds.action == "bind") & (binds.time >= 100.0)]
    assert len(later) >= len(hit["replicas"]) and hit["node"] not in set(later.node)
    assert sim.frame("events").query("kind == 'fault'").command.tolist() == ["node_drain"]


def _short_edge():
    s = load_scenario("faas-edge")
    s.values["run"]["duration"] = 600
    return s


def _frames(sim: Simulation) -> dict[str, str]:
    return {t: frame_digest(sim.frame(t)) for t in sim.tables}


def test_same_inputs_same_frames_however_advance_is_chunked():
    changes = {"fn2.max_replicas": 6, "fn1.rate": 3.0}
    one = Simulation(_short_edge())
    one.advance(300.0)
    one.set_params(changes)
    one.advance(600.0)
    chunked = Simulation(_short_edge())
    t = 0.0
    while t < 300.0:
        t = min(300.0, t + 3.7)
        chunked.advance(t)
    chunked.set_params(changes)
    for t in np.arange(303.1, 600.0, 11.3):
        chunked.advance(float(t))
    chunked.advance(600.0)
    assert _frames(one) == _frames(chunked)
    replayed = Simulation.replay(one.recording())
    assert _frames(replayed) == _frames(one)


def test_the_cli_runs_a_function_scenario_and_writes_its_tables(tmp_path, capsys):
    from engine.runs.cli import main

    assert main(["run", "faas-basic", "--until", "60", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "python-pi" in out and "resnet50-inference" in out and "p95 s" in out
    inv = pd.read_parquet(tmp_path / "invocations.parquet")
    assert set(inv.status) <= {"completed", "in_flight", "queued", "rejected"} and len(inv) > 5000
    for name in ("scale", "schedule", "replica_lifecycle", "deployments", "utilization", "function_samples"):
        assert len(pd.read_parquet(tmp_path / f"{name}.parquet")) > 0, name
    assert main(["replay", str(tmp_path / "session.scalelab")]) == 0  # every stored table reproduced


def test_bad_function_input_is_one_line_and_exit_code_2(tmp_path, capsys):
    from engine.runs.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("run: {world: functions}\nfn1: {images: [faas-workloads/nope]}\n")
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "fn1.images[0]" in err and "faas-workloads/nope" in err and "bad.yaml" in err
    bad.write_text("run: {world: functions}\nfn1: {scaler: hpa, min_replicas: 0}\n")
    assert main(["run", str(bad)]) == 2
    assert "fn1.min_replicas" in capsys.readouterr().err


def test_a_user_registered_simulator_runs_and_is_a_choice_of_every_slot():
    from engine.faas.params import FUNCTION_SLOTS, register_simulator
    from engine.faas.simulators import SIMULATORS, FunctionSimulator

    class Doubling(FunctionSimulator):
        doc = "twice execution_seconds"

        def execution(self, device, image, n, rng):
            return np.full(n, 2.0 * self.fn.execution_seconds)

    register_simulator("doubling", Doubling)
    try:
        assert "doubling" in FUNCTION_SLOTS["fn3"].param["simulator"].objects
        sim = Simulation(scenario({"fn1": function(function="u", simulator="doubling", execution_seconds=0.25, rate=2.0)}, duration=120.0))
        sim.run()
        done = sim.frame("invocations").query("status == 'completed'")
        nodes = sim.frame("nodes").set_index("node")
        speed = nodes.speed[done.node].to_numpy()
        assert len(done) > 100 and np.allclose(done.execution.to_numpy() * speed / 1.2, 0.5)  # 0.5 s at the xeoncpu's own speed
    finally:
        SIMULATORS.unregister("doubling")


def test_hpa_on_requests_per_replica_scales_with_the_request_rate():
    spec = function(
        function="h", scaler="hpa", hpa_metric="requests", target_requests_per_replica=2.0, rate=10.0, max_replicas=20, concurrency=4
    )
    sim = Simulation(scenario({"fn1": spec}, duration=300.0, hpa={"scale_down_stabilization": 30}))
    sim.run()
    r = replicas_over_time(sim, "h")
    assert 4 <= r[r.time > 200].replicas_running.median() <= 7  # 10 rps / 2 per replica = 5


def test_requests_that_read_and_write_storage_pay_the_transfer_over_their_node_link():
    spec = function(function="etl", data_in_mib=50.0, data_out_mib=10.0, execution_seconds=1.0, min_replicas=3, rate=2.0)
    scen = scenario(
        {"fn1": spec},
        duration=200.0,
        cluster={"topology": "faas_edge", "cells": 2, "devices_per_cell": 4, "cloudlets": 1, "cloud_nodes": 2},
    )
    sim = Simulation(scen)
    sim.run()
    binds = sim.frame("placements").query("action == 'bind'").set_index("owner")
    done = sim.frame("invocations").query("status == 'completed'")
    assert (binds.storage_s > 0).all()
    nodes = sim.frame("nodes").set_index("node")
    from engine.cluster.devices import reference_speed

    for replica, rows in done.groupby("replica"):
        node = binds.node[replica]
        inv_speed = reference_speed(nodes.node_class[node]) / nodes.speed[node]
        assert np.allclose(rows.execution, 1.0 * inv_speed + binds.storage_s[replica])


def test_utilization_is_sampled_per_replica_and_per_node_and_never_empty():
    sim = Simulation(load_scenario("faas-edge"))
    sim.advance(120.0)
    u = sim.frame("utilization")
    assert set(u.scope) == {"replica", "node"} and len(u) > 50
    replicas = u[u.scope == "replica"]
    assert replicas.replica.notna().all() and (replicas.cpu.between(0, 1)).all() and (replicas.busy > 0).any()
    nodes = u[u.scope == "node"]
    assert nodes.replica.isna().all() and (nodes.memory > 0).all()
    last = u.time.max()
    per_node = replicas[replicas.time == last].groupby("node").cpu.sum().clip(upper=1.0)
    assert np.allclose(nodes[nodes.time == last].set_index("node").cpu.loc[per_node.index], per_node)
