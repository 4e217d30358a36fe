"""Properties of the functions world under random deployments, loads and chunkings (hypothesis).

Every generated request ends in exactly one of completed / in flight / queued / rejected, at every sample and at
the end; replicas never exceed max_replicas; no replica is bound where it does not fit (cpu, memory, GPUs, its
image's architectures).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support_faas import function, scenario

from engine import Simulation
from engine.faas.measured import load_measurements

SCALERS = ["none", "per_request", "rps_threshold", "average_rps", "queue_per_replica", "scale_to_zero", "hpa", "kpa", "keda", "queue_drain"]
IMAGES = [
    ["faas-workloads/python-pi"],
    ["faas-workloads/resnet-inference-gpu", "faas-workloads/resnet-inference-cpu"],
    ["faas-workloads/mobilenet-inference-tpu", "faas-workloads/mobilenet-inference-tflite"],
]

slot = st.fixed_dictionaries(
    {
        "scaler": st.sampled_from(SCALERS),
        "images": st.sampled_from(IMAGES),
        "simulator": st.sampled_from(["fixed", "measured"]),
        "concurrency": st.sampled_from([0, 1, 3]),
        "rate": st.floats(0.2, 40.0),
        "burst_factor": st.sampled_from([1.0, 6.0]),
        "burst_every": st.just(120.0),
        "burst_duration": st.just(30.0),
        "max_replicas": st.integers(1, 5),
        "min_replicas": st.integers(0, 2),
        "execution_seconds": st.floats(0.05, 3.0),
        "startup_seconds": st.floats(0.0, 20.0),
        "idle_timeout": st.sampled_from([10.0, 60.0]),
        "cpu_millis": st.sampled_from([250, 1000, 3000]),
        "load_balancer": st.sampled_from(["round_robin", "least_outstanding"]),
    }
)


def _valid(spec: dict) -> dict:
    spec = dict(spec)
    spec["min_replicas"] = min(spec["min_replicas"], spec["max_replicas"])
    if spec["scaler"] in ("rps_threshold", "average_rps", "queue_per_replica", "hpa", "queue_drain"):
        spec["min_replicas"] = max(1, spec["min_replicas"])
    if spec["scaler"] == "rps_threshold":
        spec["scale_factor"] = 40
    return spec


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    slots=st.lists(slot, min_size=1, max_size=3),
    queue_limit=st.sampled_from([0, 5, 200]),
    chunks=st.lists(st.floats(0.5, 60.0), min_size=1, max_size=8),
    seed=st.integers(0, 10_000),
    topology=st.sampled_from(["cloud_regions", "faas_edge"]),
)
def test_conservation_bounds_and_fit(slots, queue_limit, chunks, seed, topology):
    functions = {f"fn{i + 1}": function(function=f"f{i}", **_valid(s)) for i, s in enumerate(slots)}
    cluster = {"topology": "cloud_regions", "nodes": 8, "regions": 2} if topology == "cloud_regions" else {
        "topology": "faas_edge", "cells": 2, "devices_per_cell": 4, "cloudlets": 1, "cloud_nodes": 3
    }  # fmt: skip
    sim = Simulation(scenario(functions, duration=240.0, seed=seed, cluster=cluster, faas={"gateway_queue_limit": queue_limit}))
    t = 0.0
    for dt in chunks * 40:
        t = min(240.0, t + dt)
        sim.advance(t)
        if t >= 240.0:
            break
    sim.advance(240.0)

    samples = sim.frame("function_samples")
    assert (samples.generated == samples.completed + samples.in_flight + samples.queued + samples.rejected).all()
    assert (samples[["completed", "in_flight", "queued", "rejected"]] >= 0).all().all()
    limits = {spec["function"]: spec["max_replicas"] for spec in functions.values()}
    counted = samples.replicas_running + samples.replicas_starting + samples.replicas_pending
    assert (counted <= samples.function.map(limits)).all()

    inv = sim.frame("invocations")
    assert inv.status.notna().all() and set(inv.status) <= {"completed", "in_flight", "queued", "rejected"}
    for rt in sim.platform.flow.functions:
        mine = inv[inv.function == rt.name]
        assert len(mine) == rt.generated and list(mine.request) == list(range(rt.generated))  # each request once
    done = inv[inv.status == "completed"]
    assert (done.end <= sim.now).all() and (inv[inv.status == "in_flight"].end > sim.now).all()
    assert (inv[inv.status == "rejected"].reason != "").all()
    summary = sim.summary()
    assert (
        summary["requests_generated"]
        == len(inv)
        == (summary["requests_completed"] + summary["requests_in_flight"] + summary["requests_queued"] + summary["requests_rejected"])
    )

    # replay of the binds and releases: never more than a node holds, and only where the image has the node's arch
    nodes = sim.frame("nodes").set_index("node_index")
    placements = sim.frame("placements")
    cpu = np.zeros(len(nodes))
    mem = np.zeros(len(nodes))
    gpu = np.zeros(len(nodes))
    sizes = load_measurements().image_sizes
    pods = {}
    for row in placements.itertuples():
        if row.action == "bind":
            i = int(row.node_index)
            cpu[i] += row.cpu_millis
            mem[i] += row.memory
            gpu[i] += row.gpus
            pods[row.owner] = i
            assert cpu[i] <= nodes.cpu_capacity[i] and mem[i] <= nodes.memory_capacity[i] and gpu[i] <= nodes.gpu_capacity[i] + 1e-9
        elif row.action in ("release", "lost"):
            i = int(row.node_index)
            cpu[i] -= row.cpu_millis
            mem[i] -= row.memory
            gpu[i] -= row.gpus
    for row in sim.frame("schedule").query("result == 'bind'").itertuples():
        arch = nodes.arch[nodes.index[nodes.node == row.node][0]] if "node" in nodes.columns else None
        assert arch in sizes[row.image], (row.image, arch)
